package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/matrixd/matrixd/store"
)

// lmxRow is one row of LocalMaxxing's /api/benchmarks: one submission of
// one model on one machine.
type lmxRow struct {
	ID            string          `json:"id"`
	PromptTokens  *float64        `json:"promptTokens"`
	OutputTokens  *float64        `json:"outputTokens"`
	ContextLength *float64        `json:"contextLength"`
	BatchSize     *float64        `json:"batchSize"`
	TTFTMs        *float64        `json:"ttftMs"`
	TokSOut       *float64        `json:"tokSOut"`
	TokSPrefill   *float64        `json:"tokSPrefill"`
	CreatedAt     string          `json:"createdAt"`
	EngineFlags   json.RawMessage `json:"engineFlags"`
	Model         *struct {
		HFID        string `json:"hfId"`
		DisplayName string `json:"displayName"`
	} `json:"model"`
	Hardware *struct {
		GPUName         string   `json:"gpuName"`
		GPUCount        *int     `json:"gpuCount"`
		VRAMGB          *float64 `json:"vramGb"`
		UnifiedMemoryGB *float64 `json:"unifiedMemoryGb"`
		CPU             string   `json:"cpu"`
		OS              string   `json:"os"`
	} `json:"hardware"`
	HardwareGroupLabel string `json:"hardwareGroupLabel"`
	Engine             *struct {
		Name         string `json:"engineName"`
		Version      string `json:"engineVersion"`
		Quantization string `json:"quantization"`
		Backend      string `json:"backend"`
	} `json:"engine"`
	User *struct {
		Username string `json:"username"`
	} `json:"user"`
}

// lmxRows is where rows are found: the rows of the API's answer, or of
// each preset of a scrape of it (llmfit's benchmark_cache.json).
type lmxRows struct {
	Rows    []json.RawMessage `json:"rows"`
	Presets map[string]struct {
		Rows []json.RawMessage `json:"rows"`
	} `json:"presets"`
}

// readLocalMaxxing reads rows of LocalMaxxing's /api/benchmarks: a JSON
// array of rows, an object with "rows", or a scrape with "presets", each
// holding "rows". Each row is a run of the one_shot class (a submitter's
// own short benchmark): a decode cell at the prompt's length and the
// batch size, and a prefill cell when the row states a prefill speed.
func readLocalMaxxing(meta store.Run, f ToolFile) ([]store.Run, error) {
	data := bytes.TrimSpace(bytes.TrimPrefix(f.Data, []byte(bom)))
	type placed struct {
		at  string
		raw json.RawMessage
	}
	var rows []placed
	if len(data) > 0 && data[0] == '[' {
		var list []json.RawMessage
		if err := strictJSON(data, &list); err != nil {
			return nil, &ParseError{File: f.Name, Line: err.line, Msg: "not LocalMaxxing rows: " + err.msg}
		}
		for i, r := range list {
			rows = append(rows, placed{fmt.Sprintf("[%d]", i), r})
		}
	} else {
		var in lmxRows
		if err := strictJSON(data, &in); err != nil {
			return nil, &ParseError{File: f.Name, Line: err.line, Msg: "not LocalMaxxing rows: " + err.msg}
		}
		for i, r := range in.Rows {
			rows = append(rows, placed{fmt.Sprintf("rows[%d]", i), r})
		}
		names := make([]string, 0, len(in.Presets))
		for name := range in.Presets {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			for i, r := range in.Presets[name].Rows {
				rows = append(rows, placed{fmt.Sprintf("presets[%q].rows[%d]", name, i), r})
			}
		}
	}
	if len(rows) == 0 {
		return nil, &ParseError{File: f.Name, Msg: "no rows: want LocalMaxxing's /api/benchmarks rows, as a JSON array, under \"rows\", or under \"presets\" (a scrape)"}
	}
	if len(rows) > maxToolRows {
		return nil, &ParseError{File: f.Name, Msg: fmt.Sprintf("%d rows: one import reads at most %d; split the file", len(rows), maxToolRows)}
	}
	runs := make([]store.Run, 0, len(rows))
	for _, p := range rows {
		var row lmxRow
		if err := strictJSON(p.raw, &row); err != nil {
			return nil, &ParseError{File: f.Name, Msg: fmt.Sprintf("%s: not a LocalMaxxing row: %s", p.at, err.msg)}
		}
		r, err := lmxRun(meta, row, p.at)
		if err != nil {
			return nil, &ParseError{File: f.Name, Msg: err.Error()}
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// lmxRun makes the run of one row; its errors name the row's field.
func lmxRun(meta store.Run, row lmxRow, at string) (store.Run, error) {
	whole := func(name string, v *float64, least int) (int, error) {
		if v == nil {
			return 0, fmt.Errorf("%s.%s is missing", at, name)
		}
		if *v != math.Trunc(*v) || *v < float64(least) || *v > store.MaxContextTokens {
			return 0, fmt.Errorf("%s.%s is %s: want a whole number of at least %d", at, name, gnum(*v), least)
		}
		return int(*v), nil
	}
	prompt, err := whole("promptTokens", row.PromptTokens, 0)
	if err != nil {
		return store.Run{}, err
	}
	batch, err := whole("batchSize", row.BatchSize, 1)
	if err != nil {
		return store.Run{}, err
	}
	switch {
	case row.TokSOut == nil || !toolFinite(*row.TokSOut) || *row.TokSOut == 0:
		return store.Run{}, fmt.Errorf("%s.tokSOut is %s: want the output tokens per second, above 0", at, showFloat(row.TokSOut))
	case row.Model == nil || strings.TrimSpace(row.Model.HFID+row.Model.DisplayName) == "":
		return store.Run{}, fmt.Errorf("%s.model names no model: want model.hfId or model.displayName", at)
	case row.Engine == nil || strings.TrimSpace(row.Engine.Name) == "":
		return store.Run{}, fmt.Errorf("%s.engine.engineName is missing: it names the engine", at)
	}
	for _, p := range []struct {
		name string
		v    *float64
	}{{"ttftMs", row.TTFTMs}, {"tokSPrefill", row.TokSPrefill}, {"outputTokens", row.OutputTokens}, {"contextLength", row.ContextLength}} {
		if p.v != nil && !toolFinite(*p.v) {
			return store.Run{}, fmt.Errorf("%s.%s is %s: want a finite number, not negative", at, p.name, gnum(*p.v))
		}
	}
	gpu := row.HardwareGroupLabel
	if row.Hardware != nil && row.Hardware.GPUName != "" {
		gpu = row.Hardware.GPUName
	}
	gpu = strings.TrimSpace(gpu)
	if gpu == "" {
		return store.Run{}, fmt.Errorf("%s.hardware.gpuName is missing: it names the machine's GPU or chip", at)
	}
	r := metaRun(meta)
	if err := claimTool(&r, FormatLocalMaxxing); err != nil {
		return store.Run{}, err
	}
	model := strings.TrimSpace(row.Model.HFID)
	if model == "" {
		model = strings.TrimSpace(row.Model.DisplayName)
	}
	if meta.Model.Name != "" && meta.Model.Name != model {
		return store.Run{}, fmt.Errorf("%s.model is %q, but meta says model.name %q: leave model out of meta, each row states it", at, model, meta.Model.Name)
	}
	if meta.Hardware.GPU != "" && meta.Hardware.GPU != gpu {
		return store.Run{}, fmt.Errorf("%s.hardware.gpuName is %q, but meta says hardware.gpu %q: leave hardware out of meta, each row states it", at, gpu, meta.Hardware.GPU)
	}
	r.Model.Name = model
	r.Model.Quantization = strOr(r.Model.Quantization, row.Engine.Quantization)
	r.Hardware.GPU = gpu
	if h := row.Hardware; h != nil {
		r.Hardware.GPUCount = cmpOr(r.Hardware.GPUCount, h.GPUCount)
		r.Hardware.VRAMGB = cmpOr(r.Hardware.VRAMGB, cmpOr(h.VRAMGB, h.UnifiedMemoryGB))
		r.Hardware.CPU = strOr(r.Hardware.CPU, h.CPU)
		r.Hardware.OS = strOr(r.Hardware.OS, h.OS)
	}
	r.Engine.Name = strOr(r.Engine.Name, row.Engine.Name)
	r.Engine.Version = strOr(r.Engine.Version, row.Engine.Version)
	r.Engine.Backend = strOr(r.Engine.Backend, row.Engine.Backend)
	r.Engine.Quantization = strOr(r.Engine.Quantization, row.Engine.Quantization)
	if row.User != nil {
		r.Submitter = strOr(r.Submitter, row.User.Username)
	}
	if r.Title == "" {
		r.Title = fmt.Sprintf("%s on %s, %s (LocalMaxxing)", model, gpu, r.Engine.Name)
	}
	if row.ID != "" || row.CreatedAt != "" {
		r.Notes = joinNotes(r.Notes, strings.TrimSpace(fmt.Sprintf("LocalMaxxing row %s, created %s.", row.ID, row.CreatedAt)))
	}
	flags, err := lmxFlags(row.EngineFlags, at)
	if err != nil {
		return store.Run{}, err
	}
	tf := newToolFlags(r.Launch.Flags)
	for _, k := range slices.Sorted(maps.Keys(flags)) {
		if err := tf.set(k, flags[k], "", 0); err != nil {
			return store.Run{}, fmt.Errorf("%s.engineFlags: %v", at, err)
		}
	}
	r.Launch.Flags = tf.result()
	cell := store.DecodeCell{ContextTokens: prompt, Concurrency: batch, Status: store.StatusValid, TotalTokS: new(*row.TokSOut), TTFTMs: row.TTFTMs}
	if batch == 1 {
		cell.PerRequestTokS = new(*row.TokSOut)
	}
	r.Decode = []store.DecodeCell{cell}
	if row.TokSPrefill != nil && *row.TokSPrefill > 0 && prompt > 0 {
		r.Prefill = []store.PrefillCell{{ContextTokens: prompt, Status: store.StatusValid, PromptTokS: new(*row.TokSPrefill)}}
	}
	if r.Method == nil {
		r.Method = &store.Method{Class: store.MethodOneShot}
		if out, err := whole("outputTokens", row.OutputTokens, 1); err == nil {
			r.Method.OutputTokensPerRequest = new(out)
		}
	}
	return r, nil
}

// lmxFlags are the engine flags a row states (null ones left out), as
// launch flags; commandSnippet is free text and stays out.
func lmxFlags(raw json.RawMessage, at string) (map[string]string, error) {
	out := map[string]string{}
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return out, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("%s.engineFlags is not an object: %v", at, err)
	}
	for k, v := range obj {
		if k == "commandSnippet" {
			continue
		}
		if t := bytes.TrimSpace(v); len(t) > 0 && (t[0] == '[' || t[0] == '{') {
			continue
		}
		s, ok, err := jsonScalar(v)
		if err != nil {
			return nil, fmt.Errorf("%s.engineFlags.%s: %v", at, k, err)
		}
		if ok {
			out[k] = s
		}
	}
	return out, nil
}
