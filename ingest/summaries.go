package ingest

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/matrixd/matrixd/store"
)

// gridCell is one cell of the Sustained decode summary grid.
type gridCell struct {
	line                 int
	context, concurrency int
	status               string
	total, ttft          *float64
}

// gridCellReadings returns every way s can be read as a whole grid cell:
// total tok/s, a status and "N ms TTFT", each optional.
func gridCellReadings(s string) [][3]string {
	var out [][3]string
	for _, a := range append([]int{0}, dec1Lens(s)...) {
		for _, b := range append([]int{0}, literal(statusNames()...)(s[a:])...) {
			for _, c := range append([]int{0}, withUnit(intLens, "ms TTFT", false)(s[a+b:])...) {
				if a+b+c > 0 {
					out = append(out, [3]string{s[:a], s[a : a+b], s[a+b : a+b+c]})
				}
			}
		}
	}
	return out
}

func gridCellLens(s string) []int {
	var ls []int
	for _, r := range gridCellReadings(s) {
		ls = append(ls, len(r[0])+len(r[1])+len(r[2]))
	}
	slices.Sort(ls)
	return slices.Compact(ls)
}

// readGridCell reads one cell whose extent is known.
func readGridCell(n int, s string) (gridCell, error) {
	var rs [][3]string
	for _, r := range gridCellReadings(s) {
		if len(r[0])+len(r[1])+len(r[2]) == len(s) {
			rs = append(rs, r)
		}
	}
	if len(rs) != 1 {
		return gridCell{}, errorf(n, "cannot read the summary cell %q", s)
	}
	c := gridCell{line: n, status: store.StatusValid}
	if rs[0][1] != "" {
		c.status = statusValue(rs[0][1])
	}
	var err error
	if rs[0][0] != "" {
		if c.total, err = optFloat(rs[0][0]); err != nil {
			return c, errorf(n, "%v", err)
		}
	}
	if rs[0][2] != "" {
		if c.ttft, err = optFloat(rs[0][2]); err != nil {
			return c, errorf(n, "%v", err)
		}
	}
	return c, nil
}

// grid is the Sustained decode summary: contexts by concurrency levels.
type grid struct {
	head   line
	levels []int
	cells  []gridCell
}

// parseGrid reads the summary grid. Copied as text its header runs the
// concurrency levels together ("Context1248163264128"), so it is read
// against the levels of the All measurements table.
func parseGrid(sec *section, levels []int, b *budget) (*grid, error) {
	g := &grid{}
	hi := -1
	for i, l := range sec.lines {
		if j := strings.IndexByte(l.text, '|'); j >= 0 {
			cells := splitCells(l.text[j:])
			if len(cells) < 2 || cells[0] != "Context" {
				continue
			}
			for _, c := range cells[1:] {
				if !whole(intLens, c) {
					return nil, errorf(l.n, "summary header cell %q is not a concurrency level", c)
				}
				n, err := atoi(c)
				if err != nil {
					return nil, errorf(l.n, "%v", err)
				}
				g.levels = append(g.levels, n)
			}
			g.head, hi = l, i
			break
		}
		if k := strings.LastIndex(l.text, "Context"); k >= 0 && k+len("Context") < len(l.text) &&
			strings.Trim(l.text[k+len("Context"):], "0123456789,") == "" {
			var want strings.Builder
			for _, n := range levels {
				want.WriteString(groupThousands(n))
			}
			if got := l.text[k+len("Context"):]; got != want.String() {
				return nil, errorf(l.n, "the summary header %q does not list the concurrency levels of All measurements (%s)", got, joinInts(levels))
			}
			g.levels, g.head, hi = levels, l, i
			break
		}
	}
	if hi < 0 {
		return nil, errorf(sec.head.n, "the Sustained decode summary has no header row (Context and the concurrency levels)")
	}
	ms := []matcher{contextLens}
	for range g.levels {
		ms = append(ms, gridCellLens)
	}
	seen := map[int]int{}
	ended, rows := false, 0
	for _, l := range sec.lines[hi+1:] {
		md := strings.HasPrefix(l.text, "|")
		if !md && !isDigit(l.text[0]) {
			ended = ended || rows > 0
			continue
		}
		var cells []string
		if md {
			cells = splitCells(l.text)
			if isSeparatorRow(cells) {
				continue
			}
			if len(cells) != len(ms) {
				return nil, errorf(l.n, "the summary row has %d cells, the header %d", len(cells), len(ms))
			}
		} else {
			readings, far, fc, err := segment(l.text, ms, 2, b)
			switch {
			case err != nil:
				return nil, errorf(l.n, "%v", err)
			case len(readings) == 0 && fc == 0:
				return nil, errorf(l.n, "cannot read the summary row's context at %s", excerpt(l.text[far:]))
			case len(readings) == 0 && fc >= len(ms):
				return nil, errorf(l.n, "unexpected %s after the summary row's last cell", excerpt(l.text[far:]))
			case len(readings) == 0:
				return nil, errorf(l.n, "cannot read the summary cell for %d requests at %s", g.levels[fc-1], excerpt(l.text[far:]))
			case len(readings) > 1:
				return nil, errorf(l.n, "the summary row can be split into cells in more than one way")
			}
			cells = readings[0]
		}
		if ended {
			return nil, errorf(l.n, "a summary row after the end of the summary grid")
		}
		ctx, ok := contextTokens(cells[0])
		if !ok {
			return nil, errorf(l.n, "summary row context %q is not 0 or a number of K", cells[0])
		}
		if first, dup := seen[ctx]; dup {
			return nil, errorf(l.n, "a second summary row for %s (the first is on line %d)", contextLabel(ctx), first)
		}
		seen[ctx] = l.n
		for i, s := range cells[1:] {
			c, err := readGridCell(l.n, s)
			if err != nil {
				return nil, err
			}
			c.context, c.concurrency = ctx, g.levels[i]
			g.cells = append(g.cells, c)
		}
		rows++
	}
	return g, nil
}

func groupThousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

// isGridHeader reports whether s is the summary grid's header row,
// "Context" and the concurrency levels, perhaps after its caption.
func isGridHeader(s string) bool {
	if j := strings.IndexByte(s, '|'); j >= 0 {
		cells := splitCells(s[j:])
		if len(cells) < 2 || cells[0] != "Context" {
			return false
		}
		for _, c := range cells[1:] {
			if !whole(intLens, c) {
				return false
			}
		}
		return true
	}
	k := strings.LastIndex(s, "Context")
	return k >= 0 && k+len("Context") < len(s) && strings.Trim(s[k+len("Context"):], "0123456789,") == ""
}

// prefillSum is one row of the Prefill summary.
type prefillSum struct {
	line    int
	context int
	prompt  float64
	rounded bool // printed without a decimal
	ttft    float64
}

// parsePrefillSummary reads the rows "8K context2,3473,472 ms TTFT": a
// context, prompt tok/s (rounded to a whole number from 1,000 up) and the
// TTFT. The caption may run into the first row.
func parsePrefillSummary(sec *section, b *budget) ([]prefillSum, error) {
	var out []prefillSum
	seen := map[int]int{}
	for _, l := range sec.lines {
		if isGridHeader(l.text) {
			return nil, errorf(l.n, "the %s heading is missing: this is the header of its summary grid (add a line %q before the grid)", secDecode, secDecode)
		}
		var label, prompt, ttft string
		if strings.HasPrefix(l.text, "|") {
			cells := splitCells(l.text)
			if len(cells) < 3 || isSeparatorRow(cells) {
				continue
			}
			label = strings.TrimSpace(strings.TrimSuffix(cells[0], "context"))
			if _, ok := contextTokens(label); !ok {
				continue // the header row
			}
			// A row of three cells is a prefill row with a bad value; any
			// other row belongs to a section whose heading is lost.
			if len(cells) != 3 {
				return nil, errorf(l.n, "cannot read the prefill summary row %s: it has %d cells, not 3 (is a heading missing?)", excerpt(l.text), len(cells))
			}
			prompt, ttft = cells[1], cells[2]
			if !whole(numberLens, prompt) {
				return nil, errorf(l.n, "cannot read the prefill summary's prompt tok/s %q", prompt)
			}
			if !whole(withUnit(withUnit(intLens, "ms", true), "TTFT", true), ttft) {
				return nil, errorf(l.n, "cannot read the prefill summary's TTFT %q", ttft)
			}
		} else {
			if !strings.HasSuffix(l.text, "ms TTFT") {
				if isDigit(l.text[0]) {
					return nil, errorf(l.n, "cannot read the prefill summary row %s (is a heading missing?)", excerpt(l.text))
				}
				continue // the caption
			}
			i := strings.LastIndex(l.text, "context")
			if i < 0 {
				return nil, errorf(l.n, "cannot read the prefill summary row %s: no \"context\" (is a heading missing?)", excerpt(l.text))
			}
			label = trailingLabel(strings.TrimSpace(l.text[:i]))
			ctx, ok := contextTokens(label)
			if !ok {
				return nil, errorf(l.n, "cannot read the prefill summary row's context")
			}
			rest := strings.TrimSpace(l.text[i+len("context"):])
			readings, far, fc, err := segment(rest, []matcher{numberLens, withUnit(intLens, "ms TTFT", false)}, maxReadings, b)
			if err != nil {
				return nil, errorf(l.n, "%v", err)
			}
			if len(readings) == 0 {
				what := "prompt tok/s"
				if fc > 0 {
					what = "TTFT"
				}
				return nil, errorf(l.n, "cannot read the prefill summary's %s at %s", what, excerpt(rest[far:]))
			}
			var fit [][]string
			for _, r := range readings {
				p, err1 := atof(r[0])
				t, err2 := atof(r[1])
				want := float64(ctx) / p * 1000
				if err1 == nil && err2 == nil && (len(readings) == 1 || math.Abs(t-want) <= 0.15*want) {
					fit = append(fit, r)
				}
			}
			switch {
			case len(fit) == 0:
				return nil, errorf(l.n, "no reading of the prefill summary row fits TTFT ≈ context / prompt tok/s")
			case len(fit) > 1:
				return nil, errorf(l.n, "the prefill summary row is ambiguous: %d readings fit TTFT ≈ context / prompt tok/s", len(fit))
			}
			prompt, ttft = fit[0][0], fit[0][1]
		}
		ctx, ok := contextTokens(label)
		if !ok {
			return nil, errorf(l.n, "cannot read the prefill summary row's context %q", label)
		}
		p, err := atof(prompt)
		if err != nil {
			return nil, errorf(l.n, "%v", err)
		}
		t, err := atof(ttft)
		if err != nil {
			return nil, errorf(l.n, "%v", err)
		}
		if first, dup := seen[ctx]; dup {
			return nil, errorf(l.n, "a second prefill summary row for %s (the first is on line %d)", contextLabel(ctx), first)
		}
		seen[ctx] = l.n
		out = append(out, prefillSum{line: l.n, context: ctx, prompt: p, rounded: !strings.Contains(prompt, "."), ttft: t})
	}
	return out, nil
}

// trailingLabel returns the context label at the end of s: "0", or digits
// followed by K or M.
func trailingLabel(s string) string {
	if s == "" {
		return ""
	}
	last := s[len(s)-1]
	if last != 'K' && last != 'M' {
		if last == '0' && (len(s) == 1 || !isDigit(s[len(s)-2])) {
			return "0"
		}
		return ""
	}
	k := len(s) - 1
	for k > 0 && isDigit(s[k-1]) {
		k--
	}
	return s[k:]
}
