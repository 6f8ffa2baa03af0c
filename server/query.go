package server

import (
	"fmt"
	"net/url"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/msg"
)

// maxProblems bounds the problems one answer lists; clip bounds each value
// an answer repeats back, so a huge query cannot make a huge error.
const (
	maxProblems = 20
	maxEcho     = 64
)

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) <= maxEcho && utf8.ValidString(s) {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	if utf8.RuneCountInString(s) <= maxEcho {
		return s
	}
	return string([]rune(s)[:maxEcho]) + fmt.Sprintf("… (%d bytes)", len(s))
}

// parseQuery reads a query string strictly: a pair that does not decode
// (`gpu=%zz`), a `;` separator (`limit=1;2`) or a parameter given twice is
// a 400 naming it. Lenient parsing would drop the pair and answer
// unfiltered data.
func parseQuery(raw string) (url.Values, error) {
	values := url.Values{}
	var bad fieldErrors
	for pair := range strings.SplitSeq(raw, "&") {
		if pair == "" {
			continue
		}
		rawName, rawValue, _ := strings.Cut(pair, "=")
		name, err := url.QueryUnescape(rawName)
		if err != nil {
			bad = append(bad, fieldNotice(clip(rawName), msg.New("problem.param_name_escape")))
			continue
		}
		if strings.Contains(pair, ";") {
			bad = append(bad, fieldNotice(clip(name), msg.New("problem.param_semicolon")))
			continue
		}
		value, err := url.QueryUnescape(rawValue)
		if err != nil {
			bad = append(bad, fieldNotice(clip(name), msg.New("problem.param_value_escape", clip(rawValue))))
			continue
		}
		values[name] = append(values[name], value)
	}
	names := make([]string, 0, len(values))
	for name, vs := range values {
		if len(vs) > 1 {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		bad = append(bad, fieldNotice(clip(name), msg.New("problem.param_repeated", len(values[name]))))
	}
	if len(bad) > 0 {
		return nil, bad.capped()
	}
	return values, nil
}

// capped keeps the first maxProblems problems and says how many more
// there were.
func (f fieldErrors) capped() fieldErrors {
	if len(f) <= maxProblems {
		return f
	}
	more := len(f) - maxProblems
	return append(f[:maxProblems:maxProblems], noticeOf(api.FieldError{}, msg.New("problem.more_problems", more)))
}
