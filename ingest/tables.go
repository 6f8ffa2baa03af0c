package ingest

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/matrixd/matrixd/store"
)

// maxReadings bounds the readings of one row; more means the row cannot
// be decided and enumerating further is wasted work.
const maxReadings = 64

// Phases and statuses as pages print them.
const (
	phasePrefill = "Prefill"
	phaseDecode  = "Sustained decode"
)

func statusNames() []string { return []string{"Valid", "Requests queued", "Over capacity"} }

func statusValue(s string) string {
	switch s {
	case "Valid":
		return store.StatusValid
	case "Requests queued":
		return store.StatusRequestsQueued
	case "Over capacity":
		return store.StatusOverCapacity
	}
	return ""
}

// col is a column of the All measurements table.
type col int

const (
	colUnknown col = iota - 1
	colPhase
	colContext
	colConcurrency
	colStatus
	colTotal
	colPerRequest
	colTTFT
	colTBT
	colAvgActive
	colCompleted
	colOutput
	colDuration
	numCols
)

func (c col) String() string {
	switch c {
	case colPhase:
		return "Phase"
	case colContext:
		return "Context"
	case colConcurrency:
		return "Requests at once"
	case colStatus:
		return "Status"
	case colTotal:
		return "Total tok/s"
	case colPerRequest:
		return "Per request tok/s"
	case colTTFT:
		return "TTFT"
	case colTBT:
		return "Time between tokens"
	case colAvgActive:
		return "Average active requests"
	case colCompleted:
		return "Completed requests"
	case colOutput:
		return "Output tokens"
	case colDuration:
		return "Measured for"
	}
	return "unknown column"
}

// matcher reads the column's cells. In markdown the cells are split
// already, so units may be left out.
func (c col) matcher(markdown bool) matcher {
	switch c {
	case colPhase:
		return literal(phasePrefill, phaseDecode)
	case colContext:
		return contextLens
	case colConcurrency:
		return intLens
	case colStatus:
		return literal(statusNames()...)
	case colTotal, colPerRequest, colAvgActive:
		return orDash(dec1Lens)
	case colTTFT:
		return orDash(withUnit(intLens, "ms", markdown))
	case colTBT:
		return orDash(withUnit(dec1Lens, "ms", markdown))
	case colCompleted, colOutput:
		return orDash(intLens)
	case colDuration:
		return orDash(withUnit(dec1Lens, "s", markdown))
	}
	return func(string) []int { return nil }
}

// colNamed finds a markdown header cell's column, allowing a unit suffix
// such as "TTFT (ms)".
func colNamed(name string) col {
	if i := strings.LastIndex(name, " ("); i > 0 && strings.HasSuffix(name, ")") {
		name = name[:i]
	}
	for c := colPhase; c < numCols; c++ {
		if strings.EqualFold(name, c.String()) {
			return c
		}
	}
	return colUnknown
}

// splitTextHeader splits a run-together header into its columns. No
// column name is a prefix of another, so the first name that fits is the
// only one.
func splitTextHeader(s string) ([]col, bool) {
	var cols []col
	for s != "" {
		c := colPhase
		for ; c < numCols && !strings.HasPrefix(s, c.String()); c++ {
		}
		if c == numCols {
			return nil, false
		}
		cols = append(cols, c)
		s = s[len(c.String()):]
	}
	return cols, len(cols) > 0
}

// measurement is one row of the All measurements table.
type measurement struct {
	line                                              int
	phase                                             string
	context, concurrency                              int
	status                                            string
	total, perRequest, ttft, tbt, avgActive, duration *float64
	completed, output                                 *int
}

func optFloat(s string) (*float64, error) {
	if isDash(s) {
		return nil, nil
	}
	f, err := atof(s)
	return &f, err
}

func optInt(s string) (*int, error) {
	if isDash(s) {
		return nil, nil
	}
	n, err := atoi(s)
	return &n, err
}

// toMeasurement converts one reading of a row; cols and cells align.
func toMeasurement(n int, cols []col, cells []string) (measurement, error) {
	m := measurement{line: n, concurrency: -1}
	var err error
	for i, c := range cols {
		t := cells[i]
		switch c {
		case colPhase:
			m.phase = t
		case colContext:
			v, ok := contextTokens(t)
			if !ok {
				return m, fmt.Errorf("context %q is not 0 or a number of K", t)
			}
			m.context = v
		case colConcurrency:
			m.concurrency, err = atoi(t)
		case colStatus:
			m.status = statusValue(t)
		case colTotal:
			m.total, err = optFloat(t)
		case colPerRequest:
			m.perRequest, err = optFloat(t)
		case colTTFT:
			m.ttft, err = optFloat(t)
		case colTBT:
			m.tbt, err = optFloat(t)
		case colAvgActive:
			m.avgActive, err = optFloat(t)
		case colCompleted:
			m.completed, err = optInt(t)
		case colOutput:
			m.output, err = optInt(t)
		case colDuration:
			m.duration, err = optFloat(t)
		}
		if err != nil {
			return m, fmt.Errorf("%s: %w", c, err)
		}
	}
	if m.phase == phaseDecode && m.concurrency < 1 {
		return m, fmt.Errorf("a sustained decode row needs Requests at once of 1 or more")
	}
	return m, nil
}

// check applies the page's redundancies to a reading: output tokens ≈
// total tok/s × duration, duration ≈ the time per measurement, per-request
// tok/s ≈ 1000 / time between tokens, and for prefill TTFT ≈ context /
// prompt tok/s. Tolerances cover the one-decimal rounding and medians. It
// says which one fails.
func (m measurement) check(secsPer *float64) error {
	if m.phase == phasePrefill {
		if m.total != nil && m.ttft != nil && *m.total > 0 {
			want := float64(m.context) / *m.total * 1000
			if math.Abs(*m.ttft-want) > 0.15*want {
				return fmt.Errorf("TTFT %g ms is not context / prompt tok/s (≈ %.0f ms)", *m.ttft, want)
			}
		}
		return nil
	}
	if m.avgActive != nil && *m.avgActive > float64(m.concurrency) {
		return fmt.Errorf("%g requests were active on average, more than the %d requests at once", *m.avgActive, m.concurrency)
	}
	if m.output != nil && m.total != nil && m.duration != nil {
		want := *m.total * *m.duration
		if math.Abs(float64(*m.output)-want) > 0.02*want+5 {
			return fmt.Errorf("output tokens %d are not total tok/s × duration (%g × %g s ≈ %.0f)", *m.output, *m.total, *m.duration, want)
		}
	}
	if m.duration != nil && secsPer != nil && math.Abs(*m.duration-*secsPer) > 0.1**secsPer+0.1 {
		return fmt.Errorf("measured for %g s, but the page says each measurement takes %g s", *m.duration, *secsPer)
	}
	if m.perRequest != nil && m.tbt != nil && *m.tbt > 0 {
		want := 1000 / *m.tbt
		if math.Abs(*m.perRequest-want) > 0.05*want+0.1 {
			return fmt.Errorf("per-request tok/s %g is not 1000 / time between tokens (1000 / %g ms ≈ %.1f)", *m.perRequest, *m.tbt, want)
		}
	}
	return nil
}

func (m measurement) consistent(secsPer *float64) bool { return m.check(secsPer) == nil }

// table is the All measurements table.
type table struct {
	head    line
	last    int // line of the last row
	prefill []measurement
	decode  []measurement
}

// levels returns the distinct concurrency levels of the decode rows.
func (t *table) levels() []int {
	var ls []int
	for _, m := range t.decode {
		ls = append(ls, m.concurrency)
	}
	slices.Sort(ls)
	return slices.Compact(ls)
}

// contexts returns the distinct contexts of the decode rows.
func (t *table) contexts() []int {
	var cs []int
	for _, m := range t.decode {
		cs = append(cs, m.context)
	}
	slices.Sort(cs)
	return slices.Compact(cs)
}

// tableHeader is the header row of All measurements.
type tableHeader struct {
	line  line
	cols  []col
	names []string // the cells as printed
}

// findTableHeader recognises the header row, which may follow the table's
// caption on the same line.
func findTableHeader(l line) (tableHeader, bool) {
	if i := strings.IndexByte(l.text, '|'); i >= 0 {
		cells := splitCells(l.text[i:])
		if cells[0] != colPhase.String() {
			return tableHeader{}, false
		}
		cols := make([]col, len(cells))
		for j, c := range cells {
			cols[j] = colNamed(c)
		}
		return tableHeader{line: l, cols: cols, names: cells}, true
	}
	// Only the first column is named Phase, so a header run into its
	// caption starts at the last "Phase".
	if i := strings.LastIndex(l.text, colPhase.String()); i >= 0 {
		if cols, ok := splitTextHeader(l.text[i:]); ok {
			return tableHeader{line: l, cols: cols}, true
		}
	}
	return tableHeader{}, false
}

// isTextRow tells a run-together row ("Prefill8K1Valid…") from prose.
func isTextRow(s string) bool {
	for _, p := range []string{phasePrefill, phaseDecode} {
		if rest, ok := strings.CutPrefix(s, p); ok && rest != "" && isDigit(rest[0]) {
			return true
		}
	}
	return false
}

// parseMeasurements reads the All measurements table: markdown rows are
// split on "|", run-together rows are segmented; either way each cell must
// be in the page's number format.
func parseMeasurements(sec *section, secsPer *float64, b *budget) (*table, error) {
	hi := -1
	var h tableHeader
	for i, l := range sec.lines {
		if hh, ok := findTableHeader(l); ok {
			h, hi = hh, i
			break
		}
	}
	if hi < 0 {
		return nil, errorf(sec.head.n, "All measurements has no header row (Phase, Context, Requests at once, Status, …)")
	}
	have := map[col]bool{}
	for i, c := range h.cols {
		// A renamed column would be dropped, and its loss reported far
		// from the header as a summary that disagrees with the table.
		if c == colUnknown {
			known := make([]string, 0, numCols)
			for k := colPhase; k < numCols; k++ {
				known = append(known, k.String())
			}
			return nil, errorf(h.line.n, "unknown column %q in the All measurements header (the known columns: %s)", h.names[i], strings.Join(known, ", "))
		}
		if have[c] {
			return nil, errorf(h.line.n, "the header has two %s columns", c)
		}
		have[c] = true
	}
	for _, c := range []col{colPhase, colContext, colStatus} {
		if !have[c] {
			return nil, errorf(h.line.n, "the header has no %s column", c)
		}
	}
	t := &table{head: h.line}
	seen := map[[3]int]int{}
	ended := false
	for _, l := range sec.lines[hi+1:] {
		md := strings.HasPrefix(l.text, "|")
		if !md && !isTextRow(l.text) {
			ended = ended || t.last > 0
			continue
		}
		var cells []string
		if md {
			cells = splitCells(l.text)
			if isSeparatorRow(cells) {
				continue
			}
		}
		if ended {
			return nil, errorf(l.n, "a table row after the end of the All measurements table")
		}
		var m measurement
		var err error
		if md {
			m, err = readMarkdownRow(l, h.cols, cells)
		} else {
			m, err = readTextRow(l, h.cols, secsPer, b)
		}
		if err != nil {
			return nil, err
		}
		// A row read one way only must still add up: a typo in a number
		// is an error, not a stored run.
		if err := m.check(secsPer); err != nil {
			return nil, errorf(l.n, "%s does not add up: %v", m.name(), err)
		}
		key := [3]int{0, m.context, 0}
		if m.phase == phaseDecode {
			key = [3]int{1, m.context, m.concurrency}
		}
		if first, dup := seen[key]; dup {
			return nil, errorf(l.n, "a second row for %s (the first is on line %d)", m.name(), first)
		}
		seen[key] = l.n
		if m.phase == phasePrefill {
			t.prefill = append(t.prefill, m)
		} else {
			t.decode = append(t.decode, m)
		}
		t.last = l.n
	}
	if t.last == 0 {
		return nil, errorf(h.line.n, "All measurements has no rows")
	}
	return t, nil
}

func (m measurement) name() string {
	if m.phase == phasePrefill {
		return "prefill at " + contextLabel(m.context)
	}
	return fmt.Sprintf("%s × %d", contextLabel(m.context), m.concurrency)
}

func readMarkdownRow(l line, cols []col, cells []string) (measurement, error) {
	if len(cells) != len(cols) {
		return measurement{}, errorf(l.n, "the row has %d of the header's %d cells (is the page cut short?)", len(cells), len(cols))
	}
	for i, c := range cols {
		if !whole(c.matcher(true), cells[i]) {
			return measurement{}, errorf(l.n, "cannot read %s %q", c, cells[i])
		}
	}
	m, err := toMeasurement(l.n, cols, cells)
	if err != nil {
		return m, errorf(l.n, "%v", err)
	}
	return m, nil
}

func readTextRow(l line, cols []col, secsPer *float64, b *budget) (measurement, error) {
	ms := make([]matcher, len(cols))
	for i, c := range cols {
		ms[i] = c.matcher(false)
	}
	readings, far, fc, err := segment(l.text, ms, maxReadings, b)
	if err != nil {
		return measurement{}, errorf(l.n, "%v", err)
	}
	if len(readings) == 0 {
		return measurement{}, unreadable(l, cols, far, fc)
	}
	if len(readings) >= maxReadings {
		return measurement{}, errorf(l.n, "the row can be read in too many ways to decide")
	}
	var cands []measurement
	var texts [][]string
	var firstErr error
	for _, r := range readings {
		m, err := toMeasurement(l.n, cols, r)
		if err != nil {
			firstErr = cmp.Or(firstErr, err)
			continue
		}
		cands, texts = append(cands, m), append(texts, r)
	}
	switch len(cands) {
	case 0:
		return measurement{}, errorf(l.n, "%v", firstErr)
	case 1:
		return cands[0], nil
	}
	var ok []int
	for i, m := range cands {
		if m.consistent(secsPer) {
			ok = append(ok, i)
		}
	}
	switch len(ok) {
	case 1:
		return cands[ok[0]], nil
	case 0:
		return measurement{}, errorf(l.n, "no reading of the row passes the checks (output ≈ total tok/s × duration, duration ≈ time per measurement, per-request tok/s ≈ 1000 / time between tokens): %s", describe(cols, texts))
	}
	var amb [][]string
	for _, i := range ok {
		amb = append(amb, texts[i])
	}
	return measurement{}, errorf(l.n, "the row is ambiguous: %d readings pass the checks: %s", len(ok), describe(cols, amb))
}

// unreadable explains where segmenting a row stopped.
func unreadable(l line, cols []col, far, fc int) error {
	if fc >= len(cols) {
		return errorf(l.n, "unexpected %s after the last column", excerpt(l.text[far:]))
	}
	return errorf(l.n, "cannot read %s at %s", cols[fc], excerpt(l.text[far:]))
}

// describe lists readings by the columns on which they differ.
func describe(cols []col, readings [][]string) string {
	var diff []int
	for i := range cols {
		for _, r := range readings[1:] {
			if r[i] != readings[0][i] {
				diff = append(diff, i)
				break
			}
		}
	}
	var out []string
	for k, r := range readings {
		if k == 4 {
			out = append(out, "…")
			break
		}
		var parts []string
		for _, i := range diff {
			parts = append(parts, fmt.Sprintf("%s %s", cols[i], r[i]))
		}
		out = append(out, strings.Join(parts, ", "))
	}
	return strings.Join(out, " or ")
}
