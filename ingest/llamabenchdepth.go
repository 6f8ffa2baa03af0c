package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/matrixd/matrixd/store"
)

// llamaBenchTest is one measured row of llama.cpp's llama-bench: a prompt
// of prompt tokens processed, or gen tokens generated, after the context
// was filled to depth tokens.
type llamaBenchTest struct {
	file, where         string // where: "line N" or "entry N"
	line                int
	prompt, gen, depth  int
	tokS                float64
	model, backend, gpu string
	build               string
	settings            map[string]string // the row's other columns: ngl, fa, n_ubatch …
	descr               []string          // size and params, which tell models apart but set nothing
}

// llamaBenchMeasure are the keys of llama-bench's JSON that are the
// measurement, not the settings it ran with.
func llamaBenchMeasure() []string {
	return []string{"n_prompt", "n_gen", "n_depth", "test_time", "avg_ns", "stddev_ns", "avg_ts", "stddev_ts", "samples_ns", "samples_ts",
		"model_type", "model_filename", "model_size", "model_n_params", "backends", "gpu_info", "cpu_info", "build_commit", "build_number"}
}

// readLlamaBench reads llama-bench's output: its markdown table (-o md, the
// default, as pasted in discussions and benches/*.md, several tables and
// text around them allowed), its -o json array or its -o jsonl lines.
// Rows of one model with the same settings make one run: each tgN row a
// decode cell at its depth (0, or D of "tgN @ dD"), concurrency 1, of the
// decode_at_depth class; each ppN row without depth a prefill cell. ppN
// rows at a depth (a prompt added to a filled context) and pp+tg rows
// are not cells of either table, and are left out.
func readLlamaBench(meta store.Run, f ToolFile) ([]store.Run, error) {
	data := bytes.TrimSpace(bytes.TrimPrefix(f.Data, []byte(bom)))
	var (
		tests []llamaBenchTest
		err   error
	)
	switch {
	case len(data) > 0 && data[0] == '[':
		tests, err = llamaBenchJSON(f.Name, data)
	case len(data) > 0 && data[0] == '{':
		tests, err = llamaBenchJSONL(f.Name, data)
	default:
		tests, err = llamaBenchMarkdown(f.Name, data)
	}
	if err != nil {
		return nil, err
	}
	if len(tests) == 0 {
		return nil, &ParseError{File: f.Name, Msg: "no llama-bench rows: want its markdown table (| model | … | test | t/s |), its -o json array or its -o jsonl lines"}
	}
	return llamaBenchRuns(meta, f.Name, tests)
}

// llamaBenchRuns groups the tests into runs, one per model and settings,
// in the order they first appear.
func llamaBenchRuns(meta store.Run, file string, tests []llamaBenchTest) ([]store.Run, error) {
	type group struct {
		tests []llamaBenchTest
	}
	var order []string
	groups := map[string]*group{}
	models := map[string]bool{}
	for _, t := range tests {
		k := t.model + "\x00" + t.backend + "\x00" + strings.Join(t.descr, "\x00")
		for _, s := range slices.Sorted(maps.Keys(t.settings)) {
			k += "\x00" + s + "=" + t.settings[s]
		}
		if groups[k] == nil {
			groups[k] = &group{}
			order = append(order, k)
		}
		groups[k].tests = append(groups[k].tests, t)
		models[t.model] = true
	}
	if meta.Model.Name != "" && len(models) > 1 {
		return nil, &ParseError{File: file, Msg: fmt.Sprintf("meta names the model %q, but the output measured %d models (%s): leave model.name out of meta, each run is named by its model column", meta.Model.Name, len(models), strings.Join(slices.Sorted(maps.Keys(models)), ", "))}
	}
	runs := make([]store.Run, 0, len(order))
	for _, k := range order {
		r, err := llamaBenchRun(meta, groups[k].tests, len(order) > 1)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// llamaBenchRun makes the run of one model and settings.
func llamaBenchRun(meta store.Run, tests []llamaBenchTest, several bool) (store.Run, error) {
	r := metaRun(meta)
	if err := claimTool(&r, FormatLlamaBench); err != nil {
		return store.Run{}, err
	}
	t0 := tests[0]
	if r.Model.Name == "" {
		r.Model.Name = t0.model
	}
	if r.Engine.Name == "" {
		r.Engine.Name = "llama.cpp"
	}
	if r.Engine.Backend == "" {
		r.Engine.Backend = t0.backend
	}
	if r.Engine.Build == "" {
		r.Engine.Build = t0.build
	}
	if r.Hardware.GPU == "" {
		r.Hardware.GPU = t0.gpu
	}
	switch {
	case r.Title == "":
		r.Title = t0.model + ", llama-bench"
		if r.Hardware.GPU != "" {
			r.Title += " on " + r.Hardware.GPU
		}
	case several:
		r.Title += ": " + t0.model
	}
	flags := newToolFlags(r.Launch.Flags)
	for _, s := range slices.Sorted(maps.Keys(t0.settings)) {
		if err := flags.set(s, t0.settings[s], t0.file, t0.line); err != nil {
			return store.Run{}, err
		}
	}
	r.Launch.Flags = flags.result()
	gen := 0
	var genAt llamaBenchTest
	seen := map[[2]int]string{}
	for _, t := range tests {
		switch {
		case t.gen > 0 && t.prompt == 0:
			if gen != 0 && t.gen != gen {
				return store.Run{}, &ParseError{File: t.file, Line: t.line, Msg: fmt.Sprintf("%s measured tg%d, but %s measured tg%d for the same model and settings: one run generates one length; split the output", t.where, t.gen, genAt.where, gen)}
			}
			gen, genAt = t.gen, t
			k := [2]int{1, t.depth}
			if at, ok := seen[k]; ok {
				return store.Run{}, &ParseError{File: t.file, Line: t.line, Msg: fmt.Sprintf("tg%d at depth %d was measured twice: %s and %s", t.gen, t.depth, at, t.where)}
			}
			seen[k] = t.where
			r.Decode = append(r.Decode, store.DecodeCell{
				ContextTokens:  t.depth,
				Concurrency:    1,
				Status:         store.StatusValid,
				TotalTokS:      new(t.tokS),
				PerRequestTokS: new(t.tokS),
				OutputTokens:   new(t.gen),
			})
		case t.prompt > 0 && t.gen == 0 && t.depth == 0:
			k := [2]int{0, t.prompt}
			if at, ok := seen[k]; ok {
				return store.Run{}, &ParseError{File: t.file, Line: t.line, Msg: fmt.Sprintf("pp%d was measured twice: %s and %s", t.prompt, at, t.where)}
			}
			seen[k] = t.where
			r.Prefill = append(r.Prefill, store.PrefillCell{ContextTokens: t.prompt, Status: store.StatusValid, PromptTokS: new(t.tokS)})
		}
	}
	if len(r.Decode)+len(r.Prefill) == 0 {
		return store.Run{}, &ParseError{File: t0.file, Line: t0.line, Msg: fmt.Sprintf("%s (%s) has no tgN row and no ppN row without a depth: nothing to import", t0.model, t0.where)}
	}
	if r.Method == nil && gen > 0 {
		r.Method = &store.Method{Class: store.MethodDecodeAtDepth, OutputTokensPerRequest: new(gen), Prefill: store.PrefillExcluded}
	}
	if r.Method == nil {
		r.Method = &store.Method{Class: store.MethodDecodeAtDepth, Prefill: store.PrefillExcluded}
	}
	if r.Benchmark.MaxOutputTokens == nil && gen > 0 {
		r.Benchmark.MaxOutputTokens = new(gen)
	}
	return r, nil
}

// llamaBenchMarkdown reads every llama-bench table of a markdown text; a
// "build: …" line after a table is the build of its rows.
func llamaBenchMarkdown(file string, data []byte) ([]llamaBenchTest, error) {
	var (
		tests      []llamaBenchTest
		header     []string // column names, while in a table
		tableStart int      // index in tests of the table's first row
	)
	for n := 1; len(data) > 0; n++ {
		raw, rest, _ := bytes.Cut(data, []byte("\n"))
		data = rest
		t := strings.TrimSpace(string(raw))
		if !strings.HasPrefix(t, "|") {
			header = nil
			if b, ok := strings.CutPrefix(t, "build: "); ok {
				for i := tableStart; i < len(tests); i++ {
					if tests[i].build == "" {
						tests[i].build = strings.TrimSpace(b)
					}
				}
				tableStart = len(tests)
			}
			continue
		}
		cells := llamaCells(t)
		if slices.Contains(cells, "model") && slices.Contains(cells, "test") && slices.Contains(cells, "t/s") {
			header = cells
			tableStart = len(tests)
			continue
		}
		if header == nil || isLlamaSeparator(cells) {
			continue
		}
		if len(tests) == maxToolRows {
			return nil, tooManyRows(file, n)
		}
		w, err := llamaBenchMDRow(file, n, header, cells)
		if err != nil {
			return nil, err
		}
		tests = append(tests, w)
	}
	return tests, nil
}

func llamaBenchMDRow(file string, n int, header, cells []string) (llamaBenchTest, error) {
	w := llamaBenchTest{file: file, line: n, where: fmt.Sprintf("line %d", n), settings: map[string]string{}}
	if len(cells) != len(header) {
		return w, &ParseError{File: file, Line: n, Msg: fmt.Sprintf("the row has %d cells, its header %d", len(cells), len(header))}
	}
	for i, name := range header {
		c := cells[i]
		switch name {
		case "model":
			w.model = c
		case "backend":
			w.backend = c
		case "size", "params":
			w.descr = append(w.descr, c)
		case "test":
			var err error
			if w.prompt, w.gen, w.depth, err = llamaBenchTestName(c); err != nil {
				return w, &ParseError{File: file, Line: n, Msg: err.Error()}
			}
		case "t/s":
			mean, _, _ := strings.Cut(c, "±")
			v, ok := toolNumber(strings.TrimSpace(mean))
			if !ok || v == 0 {
				return w, &ParseError{File: file, Line: n, Msg: fmt.Sprintf("t/s is %q: want a speed above 0, such as 84.10 ± 0.52", c)}
			}
			w.tokS = v
		default:
			if name == "" {
				return w, &ParseError{File: file, Line: n, Msg: fmt.Sprintf("column %d of the header has no name", i+1)}
			}
			w.settings[name] = c
		}
	}
	if w.model == "" {
		return w, &ParseError{File: file, Line: n, Msg: "the model cell is empty"}
	}
	return w, nil
}

// llamaBenchTestName reads llama-bench's test names: pp512, tg128,
// pp512+tg128, each optionally followed by " @ d4096".
func llamaBenchTestName(s string) (prompt, gen, depth int, err error) {
	name, at, hasDepth := strings.Cut(s, "@")
	name = strings.TrimSpace(name)
	if hasDepth {
		d, ok := strings.CutPrefix(strings.TrimSpace(at), "d")
		if depth, ok = toolWholeOK(d, ok); !ok {
			return 0, 0, 0, fmt.Errorf("test is %q: a depth is written @ dN, such as tg128 @ d4096", s)
		}
	}
	for part := range strings.SplitSeq(name, "+") {
		switch {
		case strings.HasPrefix(part, "pp") && prompt == 0:
			v, ok := toolWholeOK(part[2:], true)
			if !ok || v == 0 {
				return 0, 0, 0, fmt.Errorf("test is %q: want ppN, tgN or ppN+tgN, N above 0, optionally @ dN", s)
			}
			prompt = v
		case strings.HasPrefix(part, "tg") && gen == 0:
			v, ok := toolWholeOK(part[2:], true)
			if !ok || v == 0 {
				return 0, 0, 0, fmt.Errorf("test is %q: want ppN, tgN or ppN+tgN, N above 0, optionally @ dN", s)
			}
			gen = v
		default:
			return 0, 0, 0, fmt.Errorf("test is %q: want ppN, tgN or ppN+tgN, optionally @ dN", s)
		}
	}
	return prompt, gen, depth, nil
}

func toolWholeOK(s string, ok bool) (int, bool) {
	if !ok {
		return 0, false
	}
	return toolWhole(s, store.MaxContextTokens)
}

// llamaBenchJSON reads llama-bench -o json: an array of test objects.
func llamaBenchJSON(file string, data []byte) ([]llamaBenchTest, error) {
	var entries []json.RawMessage
	if err := json.Unmarshal(data, &entries); err != nil {
		return nil, &ParseError{File: file, Msg: fmt.Sprintf("not a llama-bench JSON array: %v", err)}
	}
	if len(entries) > maxToolRows {
		return nil, &ParseError{File: file, Msg: fmt.Sprintf("%d entries: one import reads at most %d; split the output", len(entries), maxToolRows)}
	}
	lines := &lineCounter{src: data}
	tests := make([]llamaBenchTest, 0, len(entries))
	off := 0
	for i, e := range entries {
		// The entry's line: where its bytes first appear after the last one.
		at := bytes.Index(data[off:], e)
		line := 0
		if at >= 0 {
			off += at
			line = lines.at(off)
		}
		w, err := llamaBenchObject(file, line, fmt.Sprintf("entry %d", i+1), e)
		if err != nil {
			return nil, err
		}
		tests = append(tests, w)
	}
	return tests, nil
}

// llamaBenchJSONL reads llama-bench -o jsonl: one test object a line.
func llamaBenchJSONL(file string, data []byte) ([]llamaBenchTest, error) {
	var tests []llamaBenchTest
	for n := 1; len(data) > 0; n++ {
		raw, rest, _ := bytes.Cut(data, []byte("\n"))
		data = rest
		t := bytes.TrimSpace(raw)
		if len(t) == 0 {
			continue
		}
		if len(tests) == maxToolRows {
			return nil, tooManyRows(file, n)
		}
		w, err := llamaBenchObject(file, n, fmt.Sprintf("line %d", n), t)
		if err != nil {
			return nil, err
		}
		tests = append(tests, w)
	}
	return tests, nil
}

// llamaBenchObject reads one test object of llama-bench's JSON output.
func llamaBenchObject(file string, line int, where string, raw []byte) (llamaBenchTest, error) {
	w := llamaBenchTest{file: file, line: line, where: where, settings: map[string]string{}}
	fail := func(format string, args ...any) (llamaBenchTest, error) {
		return w, &ParseError{File: file, Line: line, Msg: where + ": " + fmt.Sprintf(format, args...)}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return fail("not a JSON object: %v", err)
	}
	whole := func(k string) (int, error) {
		s, ok := obj[k]
		if !ok {
			return 0, fmt.Errorf("has no %q: a llama-bench test has n_prompt, n_gen, n_depth (newer versions) and avg_ts", k)
		}
		v, good := toolWhole(string(s), store.MaxContextTokens)
		if !good {
			return 0, fmt.Errorf("%s is %s: want a whole number", k, s)
		}
		return v, nil
	}
	var err error
	if w.prompt, err = whole("n_prompt"); err != nil {
		return fail("%v", err)
	}
	if w.gen, err = whole("n_gen"); err != nil {
		return fail("%v", err)
	}
	if _, ok := obj["n_depth"]; ok {
		if w.depth, err = whole("n_depth"); err != nil {
			return fail("%v", err)
		}
	}
	if w.prompt == 0 && w.gen == 0 {
		return fail("n_prompt and n_gen are both 0: the test measured nothing")
	}
	ts, ok := obj["avg_ts"]
	if !ok {
		return fail("has no \"avg_ts\": the mean tokens per second of the test")
	}
	if w.tokS, ok = toolNumber(string(ts)); !ok || w.tokS == 0 {
		return fail("avg_ts is %s: want a speed above 0", ts)
	}
	text := func(k string) (string, error) {
		v, ok, err := jsonScalar(obj[k])
		if err != nil {
			return "", fmt.Errorf("%s: %v", k, err)
		}
		if !ok {
			return "", nil
		}
		return strings.TrimSpace(v), nil
	}
	for _, p := range []struct {
		key string
		to  *string
	}{{"model_type", &w.model}, {"backends", &w.backend}, {"gpu_info", &w.gpu}} {
		if *p.to, err = text(p.key); err != nil {
			return fail("%v", err)
		}
	}
	if w.model == "" {
		return fail("model_type is missing or empty: it names the model")
	}
	commit, err := text("build_commit")
	if err != nil {
		return fail("%v", err)
	}
	number, err := text("build_number")
	if err != nil {
		return fail("%v", err)
	}
	w.build = commit
	if number != "" {
		w.build = strings.TrimSpace(commit + " (" + number + ")")
	}
	for _, k := range []string{"model_filename", "model_size", "model_n_params"} {
		v, err := text(k)
		if err != nil {
			return fail("%v", err)
		}
		w.descr = append(w.descr, v)
	}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if v := bytes.TrimSpace(obj[k]); slices.Contains(llamaBenchMeasure(), k) || len(v) > 0 && (v[0] == '[' || v[0] == '{') {
			continue // the measurement, or a list no flag holds
		}
		v, err := text(k)
		if err != nil {
			return fail("%v", err)
		}
		if v != "" {
			w.settings[k] = v
		}
	}
	return w, nil
}
