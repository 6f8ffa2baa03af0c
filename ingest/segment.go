package ingest

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Pages print numbers one way: integers, and the integer part of decimals,
// as "0" or without a leading zero, in comma-separated groups of three;
// tok/s, time between tokens, average active requests and durations with
// exactly one decimal. Text copied from a page runs table cells together,
// so a row is split by trying every reading those formats allow (segment)
// and keeping the one the page's own redundancies confirm.

// A matcher returns the length of every prefix of s that one column could
// be.
type matcher func(s string) []int

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// maxGroups keeps integers within int64 and matchers cheap.
const maxGroups = 6

// intLens matches an integer as pages print it.
func intLens(s string) []int {
	if s == "" || !isDigit(s[0]) {
		return nil
	}
	if s[0] == '0' {
		return []int{1}
	}
	var ls []int
	k := 0
	for k < 3 && k < len(s) && isDigit(s[k]) {
		k++
		ls = append(ls, k)
	}
	if k < len(s) && isDigit(s[k]) {
		return ls // a fourth digit: no thousands group can follow
	}
	for g := 0; g < maxGroups && k+4 <= len(s) && s[k] == ',' && isDigit(s[k+1]) && isDigit(s[k+2]) && isDigit(s[k+3]); g++ {
		k += 4
		ls = append(ls, k)
	}
	return ls
}

// dec1Lens matches a number with exactly one decimal.
func dec1Lens(s string) []int {
	var ls []int
	for _, k := range intLens(s) {
		if k+1 < len(s) && s[k] == '.' && isDigit(s[k+1]) {
			ls = append(ls, k+2)
		}
	}
	return ls
}

// numberLens matches an integer or a number with one decimal.
func numberLens(s string) []int { return append(intLens(s), dec1Lens(s)...) }

// contextLens matches a context label: "0", "16K" (K = 1024) or "1M".
func contextLens(s string) []int {
	if strings.HasPrefix(s, "0") {
		return []int{1}
	}
	k := 0
	for k < len(s) && isDigit(s[k]) {
		k++
	}
	if k > 0 && k < len(s) && (s[k] == 'K' || s[k] == 'M') {
		return []int{k + 1}
	}
	return nil
}

func literal(alts ...string) matcher {
	return func(s string) []int {
		var ls []int
		for _, a := range alts {
			if strings.HasPrefix(s, a) {
				ls = append(ls, len(a))
			}
		}
		return ls
	}
}

func isDash(s string) bool { return s == "—" || s == "–" || s == "-" }

// orDash also matches the dash a page prints for a value it does not have.
func orDash(m matcher) matcher {
	return func(s string) []int {
		ls := m(s)
		for _, d := range []string{"—", "–", "-"} {
			if strings.HasPrefix(s, d) {
				return append(ls, len(d))
			}
		}
		return ls
	}
}

// withUnit matches m followed by unit, with or without a space between.
// Markdown cells are already split, so there the unit may be left out.
func withUnit(m matcher, unit string, optional bool) matcher {
	return func(s string) []int {
		var ls []int
		for _, k := range m(s) {
			switch rest := s[k:]; {
			case strings.HasPrefix(rest, " "+unit):
				ls = append(ls, k+1+len(unit))
			case strings.HasPrefix(rest, unit):
				ls = append(ls, k+len(unit))
			case optional:
				ls = append(ls, k)
			}
		}
		return ls
	}
}

// whole reports whether m reads all of s as one column.
func whole(m matcher, s string) bool { return slices.Contains(m(s), len(s)) }

// numericPrefix is the number at the start of a matched column, without
// its unit.
func numericPrefix(s string) string {
	k := 0
	for k < len(s) && (isDigit(s[k]) || s[k] == ',' || s[k] == '.') {
		k++
	}
	return s[:k]
}

// atoi reads an integer printed with thousands separators.
func atoi(s string) (int, error) {
	n, err := strconv.Atoi(strings.ReplaceAll(numericPrefix(s), ",", ""))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a whole number", s)
	}
	return n, nil
}

// atof reads a decimal printed with thousands separators.
func atof(s string) (float64, error) {
	t := strings.ReplaceAll(numericPrefix(s), ",", "")
	if t == "" || strings.Count(t, ".") > 1 || t[0] == '.' {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return f, nil
}

// contextTokens converts a context label to tokens.
func contextTokens(s string) (int, bool) {
	if s == "0" {
		return 0, true
	}
	if !whole(contextLens, s) {
		return 0, false
	}
	n, err := strconv.Atoi(s[:len(s)-1])
	if err != nil || n <= 0 || n > 1<<20 || s[0] == '0' {
		return 0, false
	}
	if s[len(s)-1] == 'M' {
		return n << 20, true
	}
	return n << 10, true
}

// contextLabel prints tokens the way pages label contexts.
func contextLabel(n int) string {
	if n > 0 && n%1024 == 0 {
		return strconv.Itoa(n/1024) + "K"
	}
	return strconv.Itoa(n)
}

// budget bounds the segmenting work for one page, so that no input, however
// long or contrived, takes long to reject.
type budget struct{ steps int }

// pageBudget is far above what a real page needs (about 15 steps a row).
const pageBudget = 100_000

// errBudget reports that a page used up its budget.
var errBudget = errors.New("the row is too long or too ambiguous to read")

// segmenter enumerates the readings of a run-together row: one piece per
// matcher, covering the whole text.
type segmenter struct {
	s        string
	ms       []matcher
	limit    int
	budget   *budget
	cur      []string
	out      [][]string
	dead     map[[2]int]bool // (column, position) pairs known to lead nowhere
	far, col int             // the furthest a failed attempt got
}

// segment returns up to limit readings of s. When there is none, far is
// the byte offset and col the column index at which the best attempt
// stopped (col == len(ms) when text was left over). It fails with
// errBudget when b runs out.
func segment(s string, ms []matcher, limit int, b *budget) (readings [][]string, far, col int, err error) {
	g := &segmenter{s: s, ms: ms, limit: limit, budget: b, cur: make([]string, len(ms)), dead: map[[2]int]bool{}}
	g.walk(0, 0)
	if b.steps < 0 {
		return nil, 0, 0, errBudget
	}
	return g.out, g.far, g.col, nil
}

func (g *segmenter) walk(i, p int) bool {
	g.budget.steps--
	if len(g.out) >= g.limit || g.budget.steps < 0 {
		return true
	}
	if i == len(g.ms) {
		if p == len(g.s) {
			g.out = append(g.out, slices.Clone(g.cur))
			return true
		}
		g.stuck(i, p)
		return false
	}
	if g.dead[[2]int{i, p}] {
		return false
	}
	found := false
	for _, l := range g.ms[i](g.s[p:]) {
		g.cur[i] = g.s[p : p+l]
		if g.walk(i+1, p+l) {
			found = true
		}
	}
	if !found {
		g.dead[[2]int{i, p}] = true
		g.stuck(i, p)
	}
	return found
}

func (g *segmenter) stuck(i, p int) {
	if p > g.far || (p == g.far && i > g.col) {
		g.far, g.col = p, i
	}
}

// excerpt quotes the text at a failure point, shortened for messages.
func excerpt(s string) string {
	if len(s) > 24 {
		cut := 24
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return strconv.Quote(s)
}
