// Package textcheck holds every request's text to what a store can hold:
// no NUL byte, only UTF-8, read in NFC. Its refusal is an Error naming
// each bad parameter, which the server's error map renders as a 400.
package textcheck

import (
	"maps"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/matrixd/matrixd/store"
)

// Field is one bad parameter (or argument): its name and what is wrong.
type Field struct {
	Name, Message string
}

// Error is a request whose text is unfit, with each bad parameter named.
type Error []Field

func (e Error) Error() string {
	msgs := make([]string, len(e))
	for i, f := range e {
		msgs[i] = f.Name + ": " + f.Message
	}
	return strings.Join(msgs, "; ")
}

// Request refuses a request whose path or query holds text no store
// can hold: a NUL byte or bytes that are not UTF-8 (PostgreSQL refuses
// both). It is the one check of every route's text, the API's, the
// pages' and the feeds' alike, before anything reads it; a 400 names
// each parameter. A query pair that does not decode is left to
// the server's strict query parser, which names it.
//
// Fit text is then read in NFC, as names are stored: a value or a path
// segment spelt decomposed (e and U+0301) is rewritten composed (é), so
// that it finds the name it spells, and caches, the validator and the
// handlers all read the one spelling.
func Request(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		var bad Error
		r := c.Request()
		if msg := badText(r.URL.Path); msg != "" {
			bad = append(bad, Field{pathParam(c), msg})
		}
		pairs := strings.Split(r.URL.RawQuery, "&")
		composed := false
		for i, pair := range pairs {
			rawName, rawValue, _ := strings.Cut(pair, "=")
			name, err := url.QueryUnescape(rawName)
			if err != nil {
				continue
			}
			if msg := badText(name); msg != "" {
				bad = append(bad, Field{url.QueryEscape(name), "the parameter's name " + msg})
				continue
			}
			if value, err := url.QueryUnescape(rawValue); err == nil {
				if msg := badText(value); msg != "" {
					bad = append(bad, Field{name, msg})
				} else if nfc := store.NFC(value); nfc != value {
					pairs[i], composed = rawName+"="+url.QueryEscape(nfc), true
				}
			}
		}
		if len(bad) > 0 {
			return bad
		}
		if composed {
			r.URL.RawQuery = strings.Join(pairs, "&")
		}
		if nfc := store.NFC(r.URL.Path); nfc != r.URL.Path {
			// The pages read their path; guard.NoEncodedSlash has refused a %2F,
			// so the raw path says nothing the path does not.
			r.URL.Path, r.URL.RawPath, composed = nfc, "", true
		}
		if composed {
			r.RequestURI = r.URL.RequestURI()
		}
		values := c.ParamValues()
		for i, v := range values {
			values[i] = store.NFC(v) // an escaped value is ASCII: unchanged
		}
		c.SetParamValues(values...)
		return next(c)
	}
}

// Arguments holds a tool call's arguments to the rule Request holds a
// query to: a NUL byte is a 400 naming the argument (JSON
// decoding has already made any other byte UTF-8), and text is read in
// NFC.
func Arguments(args map[string]any) error {
	var bad Error
	for _, name := range slices.Sorted(maps.Keys(args)) {
		switch v := args[name].(type) {
		case string:
			if msg := badText(v); msg != "" {
				bad = append(bad, Field{name, msg})
			} else {
				args[name] = store.NFC(v)
			}
		case []any:
			for i, item := range v {
				if s, ok := item.(string); ok {
					if msg := badText(s); msg != "" {
						bad = append(bad, Field{name, msg})
					} else {
						v[i] = store.NFC(s)
					}
				}
			}
		}
	}
	if len(bad) > 0 {
		return bad
	}
	return nil
}

// badText says what makes s unfit to be read as text, or "" when it is
// fit.
func badText(s string) string {
	switch {
	case strings.IndexByte(s, 0) >= 0:
		return "holds a NUL byte (%00), which is never part of a name or a filter: remove it"
	case !utf8.ValidString(s):
		return "is not valid UTF-8 (a byte such as %FF): percent-encode the UTF-8 bytes of the text"
	}
	return ""
}

// pathParam names the path parameter whose value is unfit, as the route
// names it (run_id, gpu), or "path" when no parameter holds it.
func pathParam(c echo.Context) string {
	values := c.ParamValues()
	for i, name := range c.ParamNames() {
		if i >= len(values) || name == "*" {
			continue
		}
		v := values[i]
		if u, err := url.PathUnescape(v); err == nil {
			v = u
		}
		if badText(v) != "" {
			return name
		}
	}
	return "path"
}
