package ingest

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/matrixd/matrixd/store"
)

// ParsePage parses a published matrix-run page: markdown tables and
// "- key" lists, text copied from the web page with cells and fields run
// together, or a mix, detected line by line. Everything before the line
// "Speed test matrix" is page chrome and ignored.
//
// The cells come from the All measurements table, which the page must
// have and which must hold every context × concurrency cell. The summary
// grid, the prefill summary and the counts on the summary line are checked
// against it; any disagreement, and any run-together value the page's
// redundancies cannot decide, is a *ParseError naming the line.
func ParsePage(b []byte) (store.Run, error) {
	ls, err := splitLines(b)
	if err != nil {
		return store.Run{}, err
	}
	p, err := outline(ls)
	if err != nil {
		return store.Run{}, err
	}
	r, err := p.run()
	if err != nil {
		return store.Run{}, err
	}
	return finish(r)
}

// run interprets the page's parts. The table is read first: the summaries
// and the summary line are checked against it.
func (p *page) run() (store.Run, error) {
	r := store.Run{Title: p.title.text}
	var err error
	if s := p.secs[secHardware]; s != nil {
		if r.Hardware, err = parseHardware(s); err != nil {
			return r, err
		}
	}
	if s := p.secs[secEngine]; s != nil {
		if r.Engine, err = parseEngine(s); err != nil {
			return r, err
		}
	}
	toolField := ""
	if s := p.secs[secRun]; s != nil {
		if r.Benchmark, toolField, err = parseRun(s); err != nil {
			return r, err
		}
	}
	var lc launched
	if s := p.secs[secLaunch]; s != nil {
		if lc, err = parseLaunch(s); err != nil {
			return r, err
		}
	}
	r.Launch = lc.launch

	all := p.secs[secAll]
	if all == nil {
		return r, errorf(p.last, "the page ends without an All measurements table")
	}
	b := &budget{steps: pageBudget}
	t, err := parseMeasurements(all, r.Benchmark.SecondsPerMeasurement, b)
	if err != nil {
		return r, err
	}
	if s := p.secs[secDecode]; s != nil {
		g, err := parseGrid(s, t.levels(), b)
		if err != nil {
			return r, err
		}
		if err := checkGrid(g, t); err != nil {
			return r, err
		}
	}
	if s := p.secs[secPrefill]; s != nil {
		ps, err := parsePrefillSummary(s, b)
		if err != nil {
			return r, err
		}
		if err := checkPrefill(ps, t); err != nil {
			return r, err
		}
	}
	sum, err := parseSummary(p.header, r.Engine, len(t.contexts()))
	if err != nil {
		return r, err
	}
	if err := checkSummary(sum, t); err != nil {
		return r, err
	}
	if err := checkComplete(t); err != nil {
		return r, err
	}

	r.Engine.Name = cmp.Or(r.Engine.Name, sum.engine)
	r.Engine.Version = cmp.Or(r.Engine.Version, sum.version)
	r.Engine.Quantization = cmp.Or(r.Engine.Quantization, sum.quant)
	r.Model.Quantization = r.Engine.Quantization
	if p.byline.n != 0 {
		sub, tool, version, err := parseByline(p.byline, toolField)
		if err != nil {
			return r, err
		}
		r.Submitter = sub
		if toolField == "" {
			r.Benchmark.Tool, r.Benchmark.ToolVersion = tool, version
		}
	}
	fillHardware(&r.Hardware, lc.hw)
	r.Model.Name = lc.model
	if r.Model.Name == "" {
		if i := strings.LastIndex(r.Title, " on "); i > 0 {
			r.Model.Name = strings.TrimSpace(r.Title[:i])
		}
	}
	if r.Hardware.GPU == "" {
		n := p.title.n
		if s := p.secs[secHardware]; s != nil {
			n = s.head.n
		}
		return r, errorf(n, "the page names no GPU (the Hardware section's GPU field)")
	}
	for _, m := range t.prefill {
		r.Prefill = append(r.Prefill, store.PrefillCell{ContextTokens: m.context, Status: m.status, PromptTokS: m.total, TTFTMs: m.ttft})
	}
	for _, m := range t.decode {
		r.Decode = append(r.Decode, store.DecodeCell{
			ContextTokens: m.context, Concurrency: m.concurrency, Status: m.status,
			TotalTokS: m.total, PerRequestTokS: m.perRequest, TTFTMs: m.ttft, TBTMs: m.tbt,
			AvgActiveRequests: m.avgActive, CompletedRequests: m.completed, OutputTokens: m.output,
			DurationS: m.duration,
		})
	}
	// A published page is a sustained-decode grid (a fixed-duration test
	// at each held concurrency, its prefill measured apart), whether or not
	// its Run section says so.
	if _, ok := store.InferMethod(r); !ok {
		r.Method = &store.Method{Class: store.MethodSustainedDecode, MeasurementS: r.Benchmark.SecondsPerMeasurement, Prefill: store.PrefillExcluded}
	}
	return r, nil
}

// fillHardware takes from the launch notes what the Hardware section did
// not say.
func fillHardware(hw *store.Hardware, notes store.Hardware) {
	if hw.GPUCount == nil {
		hw.GPUCount = notes.GPUCount
	}
	if hw.PowerLimitW == nil {
		hw.PowerLimitW = notes.PowerLimitW
	}
	hw.PCIe = cmp.Or(hw.PCIe, notes.PCIe)
	hw.DriverVersion = cmp.Or(hw.DriverVersion, notes.DriverVersion)
}

// sectionKeys lists the keys a key/value section may have.
func sectionKeys(name string) []string {
	switch name {
	case secHardware:
		return []string{"Type", "GPU", "VRAM", "CPU", "RAM", "OS", "Driver", "Power limit", "PCIe", "GPU count"}
	case secEngine:
		return []string{"Engine", "Version", "Quantization", "Backend", "Repository", "Build"}
	case secRun:
		return []string{"Served model", "Revision", "Benchmark tool", "Decode test", "Prefill mode", "Time per measurement", "Max output"}
	}
	return nil
}

// knownFields reads a key/value section, keeping the keys it knows, each
// at most once. Another section's key means that section's heading is
// missing, and its fields would be lost.
func knownFields(sec *section, name string) (map[string]field, error) {
	keys := sectionKeys(name)
	fs, err := fields(sec, keys)
	if err != nil {
		return nil, err
	}
	out := map[string]field{}
	for _, f := range fs {
		k := knownKey(keys, f.key)
		if k == "" {
			for _, other := range []string{secHardware, secEngine, secRun} {
				if knownKey(sectionKeys(other), f.key) != "" {
					return nil, errorf(f.n, "%s is a field of the %s section, not of %s (is a heading missing?)", f.key, other, name)
				}
			}
			continue
		}
		if first, dup := out[k]; dup {
			return nil, errorf(f.n, "a second %s field (the first is on line %d)", k, first.n)
		}
		out[k] = f
	}
	return out, nil
}

func parseHardware(sec *section) (store.Hardware, error) {
	fs, err := knownFields(sec, secHardware)
	if err != nil {
		return store.Hardware{}, err
	}
	hw := store.Hardware{
		Type: fs["Type"].value, GPU: fs["GPU"].value, OS: fs["OS"].value,
		DriverVersion: fs["Driver"].value, PCIe: fs["PCIe"].value,
	}
	if f, ok := fs["VRAM"]; ok {
		if hw.VRAMGB, err = quantity(f, "GB", "GiB"); err != nil {
			return hw, err
		}
	}
	if f, ok := fs["RAM"]; ok {
		if hw.RAMGB, err = quantity(f, "GB", "GiB"); err != nil {
			return hw, err
		}
	}
	if f, ok := fs["Power limit"]; ok {
		if hw.PowerLimitW, err = quantity(f, "W"); err != nil {
			return hw, err
		}
	}
	if f, ok := fs["GPU count"]; ok {
		n, ok := plainInt(f.value)
		if !ok {
			return hw, errorf(f.vn, "GPU count %q is not a whole number", f.value)
		}
		hw.GPUCount = &n
	}
	if f, ok := fs["CPU"]; ok {
		hw.CPU = f.value
		if i := strings.LastIndex(f.value, "("); i > 0 && strings.HasSuffix(f.value, ")") {
			inner := strings.TrimSpace(f.value[i+1 : len(f.value)-1])
			for _, suffix := range []string{"C", " cores", " core"} {
				if n, ok := plainInt(strings.TrimSuffix(inner, suffix)); ok && strings.HasSuffix(inner, suffix) {
					hw.CPU, hw.CPUCores = strings.TrimSpace(f.value[:i]), &n
					break
				}
			}
		}
	}
	return hw, nil
}

// quantity reads a number and one of its units: "12 GB", "170 W".
func quantity(f field, units ...string) (*float64, error) {
	for _, u := range units {
		if num, ok := strings.CutSuffix(f.value, u); ok {
			if v, ok := plainFloat(strings.TrimSpace(num)); ok {
				return &v, nil
			}
		}
	}
	return nil, errorf(f.vn, "%s %q is not a number of %s", f.key, f.value, units[0])
}

func parseEngine(sec *section) (store.Engine, error) {
	fs, err := knownFields(sec, secEngine)
	if err != nil {
		return store.Engine{}, err
	}
	return store.Engine{
		Name: fs["Engine"].value, Version: fs["Version"].value, Quantization: fs["Quantization"].value,
		Backend: fs["Backend"].value, Repository: fs["Repository"].value, Build: fs["Build"].value,
	}, nil
}

// parseRun reads the Run section; toolField is its Benchmark tool as
// printed, which tells where the byline's submitter ends.
func parseRun(sec *section) (b store.Benchmark, toolField string, err error) {
	fs, err := knownFields(sec, secRun)
	if err != nil {
		return b, "", err
	}
	b = store.Benchmark{
		ServedModel: fs["Served model"].value, Revision: fs["Revision"].value,
		DecodeTest: fs["Decode test"].value, PrefillMode: fs["Prefill mode"].value,
	}
	toolField = fs["Benchmark tool"].value
	b.Tool, b.ToolVersion = splitTool(toolField)
	if f, ok := fs["Time per measurement"]; ok {
		if b.SecondsPerMeasurement, err = seconds(f); err != nil {
			return b, "", err
		}
	}
	if f, ok := fs["Max output"]; ok {
		num := strings.TrimSpace(strings.TrimSuffix(f.value, "tokens"))
		if !whole(intLens, num) {
			return b, "", errorf(f.vn, "Max output %q is not a number of tokens", f.value)
		}
		n, err := atoi(num)
		if err != nil {
			return b, "", errorf(f.vn, "Max output %q is not a number of tokens", f.value)
		}
		b.MaxOutputTokens = &n
	}
	return b, toolField, nil
}

// seconds reads a duration such as "30 s" or "2 min".
func seconds(f field) (*float64, error) {
	for _, u := range []struct {
		unit string
		mult float64
	}{{"seconds", 1}, {"sec", 1}, {"s", 1}, {"minutes", 60}, {"min", 60}} {
		if num, ok := strings.CutSuffix(f.value, u.unit); ok {
			if v, ok := plainFloat(strings.TrimSpace(num)); ok {
				v *= u.mult
				return &v, nil
			}
		}
	}
	return nil, errorf(f.vn, "%s %q is not a number of seconds", f.key, f.value)
}

// checkGrid holds the summary grid to the table: the same cells, and in
// each the same status, total tok/s and TTFT.
func checkGrid(g *grid, t *table) error {
	rows := map[[2]int]measurement{}
	for _, m := range t.decode {
		rows[[2]int{m.context, m.concurrency}] = m
	}
	inGrid := map[[2]int]bool{}
	for _, c := range g.cells {
		key := [2]int{c.context, c.concurrency}
		inGrid[key] = true
		m, ok := rows[key]
		name := contextLabel(c.context) + " × " + strconv.Itoa(c.concurrency)
		switch {
		case !ok:
			return errorf(c.line, "the summary grid has %s but All measurements has no row for it (is the page cut short?)", name)
		case c.status != m.status:
			return errorf(c.line, "the summary grid says %s is %s, All measurements (line %d) says %s", name, c.status, m.line, m.status)
		case !sameValue(c.total, m.total):
			return errorf(c.line, "the summary grid says %s has total tok/s %s, All measurements (line %d) says %s", name, show(c.total), m.line, show(m.total))
		case !sameValue(c.ttft, m.ttft):
			return errorf(c.line, "the summary grid says %s has TTFT %s ms, All measurements (line %d) says %s", name, show(c.ttft), m.line, show(m.ttft))
		}
	}
	for _, m := range t.decode {
		if !inGrid[[2]int{m.context, m.concurrency}] {
			return errorf(m.line, "%s is not in the summary grid", m.name())
		}
	}
	return nil
}

func sameValue(a, b *float64) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

func show(v *float64) string {
	if v == nil {
		return "—"
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}

// checkPrefill holds the prefill summary to the table's prefill rows. The
// summary rounds prompt tok/s to a whole number from 1,000 up.
func checkPrefill(ps []prefillSum, t *table) error {
	rows := map[int]measurement{}
	for _, m := range t.prefill {
		rows[m.context] = m
	}
	inSum := map[int]bool{}
	for _, s := range ps {
		inSum[s.context] = true
		m, ok := rows[s.context]
		tol := 0.0
		if s.rounded {
			tol = 0.5
		}
		switch {
		case !ok:
			return errorf(s.line, "the prefill summary has %s but All measurements has no prefill row for it", contextLabel(s.context))
		case m.total == nil || math.Abs(*m.total-s.prompt) > tol:
			return errorf(s.line, "the prefill summary says %s has prompt tok/s %s, All measurements (line %d) says %s", contextLabel(s.context), show(&s.prompt), m.line, show(m.total))
		case m.ttft == nil || *m.ttft != s.ttft:
			return errorf(s.line, "the prefill summary says %s has TTFT %s ms, All measurements (line %d) says %s", contextLabel(s.context), show(&s.ttft), m.line, show(m.ttft))
		}
	}
	if len(ps) > 0 {
		for _, m := range t.prefill {
			if !inSum[m.context] {
				return errorf(m.line, "%s is not in the prefill summary", m.name())
			}
		}
	}
	return nil
}

// checkSummary holds the summary line's counts and ranges to the table.
func checkSummary(s summary, t *table) error {
	ctxs, levels := t.contexts(), t.levels()
	if len(ctxs) == 0 {
		return errorf(t.head.n, "All measurements has no sustained decode rows")
	}
	labels := func(ns []int) string {
		out := make([]string, len(ns))
		for i, n := range ns {
			out[i] = contextLabel(n)
		}
		return strings.Join(out, ", ")
	}
	switch {
	case s.contexts != len(ctxs):
		return errorf(s.n, "the summary declares %d contexts, All measurements has %d (%s)", s.contexts, len(ctxs), labels(ctxs))
	case s.ctxLo != ctxs[0] || s.ctxHi != ctxs[len(ctxs)-1]:
		return errorf(s.n, "the summary's context range %s–%s differs from All measurements' %s–%s", contextLabel(s.ctxLo), contextLabel(s.ctxHi), contextLabel(ctxs[0]), contextLabel(ctxs[len(ctxs)-1]))
	case s.levels != len(levels):
		return errorf(s.n, "the summary declares %d concurrency levels, All measurements has %d (%s)", s.levels, len(levels), joinInts(levels))
	case s.concLo != levels[0] || s.concHi != levels[len(levels)-1]:
		return errorf(s.n, "the summary's concurrency range %d–%d differs from All measurements' %d–%d", s.concLo, s.concHi, levels[0], levels[len(levels)-1])
	}
	if s.prefill != nil {
		var got []int
		for _, m := range t.prefill {
			got = append(got, m.context)
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(s.prefill))
		if !slices.Equal(got, want) {
			return errorf(s.n, "the summary says prefill at %s, All measurements has prefill rows at %s", labels(want), labels(got))
		}
	}
	return nil
}

// checkComplete requires a row for every context × concurrency cell:
// pages print cells that were not run as Over capacity, so a missing one
// means a damaged page.
func checkComplete(t *table) error {
	have := map[[2]int]bool{}
	for _, m := range t.decode {
		have[[2]int{m.context, m.concurrency}] = true
	}
	for _, c := range t.contexts() {
		for _, l := range t.levels() {
			if !have[[2]int{c, l}] {
				return errorf(t.last, "All measurements has no row for %s × %d (is the page cut short?)", contextLabel(c), l)
			}
		}
	}
	return nil
}
