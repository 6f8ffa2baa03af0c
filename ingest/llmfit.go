package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/matrixd/matrixd/store"
)

// llmfitFile is a community submission of AlexsJones/llmfit (schema 1),
// as `llmfit bench --share` writes it.
type llmfitFile struct {
	SchemaVersion   *int   `json:"schemaVersion"`
	SubmittedAtUnix *int64 `json:"submittedAtUnix"`
	Tool            *struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"tool"`
	Hardware *struct {
		HWClass       string   `json:"hwClass"`
		HardwareName  string   `json:"hardwareName"`
		VRAMGB        *float64 `json:"vramGb"`
		GPUCount      *int     `json:"gpuCount"`
		UnifiedMemory *bool    `json:"unifiedMemory"`
		CPU           string   `json:"cpu"`
		CPUCores      *int     `json:"cpuCores"`
		RAMGB         *float64 `json:"ramGb"`
		OS            string   `json:"os"`
	} `json:"hardware"`
	Results []llmfitResult `json:"results"`
}

type llmfitResult struct {
	Model           string   `json:"model"`
	Provider        string   `json:"provider"`
	NumRuns         *int     `json:"numRuns"`
	AvgTps          *float64 `json:"avgTps"`
	MinTps          *float64 `json:"minTps"`
	MaxTps          *float64 `json:"maxTps"`
	AvgTTFTMs       *float64 `json:"avgTtftMs"`
	AvgOutputTokens *float64 `json:"avgOutputTokens"`
}

// llmfitEngines are the engine names of llmfit's providers.
func llmfitEngines() map[string]string {
	return map[string]string{"llamacpp": "llama.cpp", "ollama": "Ollama", "mlx": "MLX", "vllm": "vLLM", "lmstudio": "LM Studio"}
}

// readLlmfit reads one llmfit community submission: each result (a model
// on a provider, a few short generations averaged) is a run of the
// one_shot class with one decode cell, context 0 (llmfit's prompts are a
// sentence long and their length is not kept) at concurrency 1. The
// hardware and the engine are the file's; meta gives the rest (source,
// licence notes), and may not name another machine or model.
func readLlmfit(meta store.Run, f ToolFile) ([]store.Run, error) {
	var in llmfitFile
	if err := strictJSON(f.Data, &in); err != nil {
		return nil, &ParseError{File: f.Name, Line: err.line, Msg: "not an llmfit submission: " + err.msg}
	}
	bad := func(field, format string, args ...any) error {
		return &ParseError{File: f.Name, Msg: field + " " + fmt.Sprintf(format, args...)}
	}
	switch {
	case in.SchemaVersion == nil:
		return nil, bad("schemaVersion", "is missing: an llmfit submission states its schema version (1)")
	case *in.SchemaVersion != 1:
		return nil, bad("schemaVersion", "is %d: only schema 1 is read", *in.SchemaVersion)
	case in.Hardware == nil || strings.TrimSpace(in.Hardware.HardwareName) == "":
		return nil, bad("hardware.hardwareName", "is missing: it names the machine's GPU or chip")
	case len(in.Results) == 0:
		return nil, bad("results", "is empty: the submission measured nothing")
	}
	h := in.Hardware
	gpu := strings.TrimSpace(h.HardwareName)
	if meta.Hardware.GPU != "" && meta.Hardware.GPU != gpu {
		return nil, bad("hardware.hardwareName", "is %q, but meta says hardware.gpu %q: leave hardware out of meta, the file states it", gpu, meta.Hardware.GPU)
	}
	var runs []store.Run
	for i, res := range in.Results {
		at := fmt.Sprintf("results[%d].", i)
		switch {
		case strings.TrimSpace(res.Model) == "":
			return nil, bad(at+"model", "is empty: it names the model measured")
		case strings.TrimSpace(res.Provider) == "":
			return nil, bad(at+"provider", "is empty: it names the engine that served the model")
		case res.AvgTps == nil || !toolFinite(*res.AvgTps) || *res.AvgTps == 0:
			return nil, bad(at+"avgTps", "is %s: want the mean tokens per second, above 0", showFloat(res.AvgTps))
		case res.NumRuns == nil || *res.NumRuns < 1:
			return nil, bad(at+"numRuns", "is %s: want how many generations were averaged, at least 1", showInt(res.NumRuns))
		case meta.Model.Name != "" && meta.Model.Name != res.Model:
			return nil, bad(at+"model", "is %q, but meta says model.name %q: leave model out of meta, the file states it", res.Model, meta.Model.Name)
		}
		for _, p := range []struct {
			name string
			v    *float64
		}{{"minTps", res.MinTps}, {"maxTps", res.MaxTps}, {"avgTtftMs", res.AvgTTFTMs}, {"avgOutputTokens", res.AvgOutputTokens}} {
			if p.v != nil && !toolFinite(*p.v) {
				return nil, bad(at+p.name, "is %s: want a finite number, not negative", showFloat(p.v))
			}
		}
		r := metaRun(meta)
		if err := claimTool(&r, FormatLlmfit); err != nil {
			return nil, err
		}
		if in.Tool != nil && r.Benchmark.ToolVersion == "" {
			r.Benchmark.ToolVersion = in.Tool.Version
		}
		r.Model.Name = res.Model
		engine := llmfitEngines()[strings.ToLower(res.Provider)]
		if engine == "" {
			engine = res.Provider
		}
		if r.Engine.Name != "" && !strings.EqualFold(r.Engine.Name, engine) {
			return nil, bad(at+"provider", "is %q, but meta says engine.name %q: leave engine.name out of meta, the file states it", res.Provider, r.Engine.Name)
		}
		r.Engine.Name = engine
		r.Hardware.GPU = gpu
		r.Hardware.GPUCount = cmpOr(r.Hardware.GPUCount, h.GPUCount)
		r.Hardware.VRAMGB = cmpOr(r.Hardware.VRAMGB, h.VRAMGB)
		r.Hardware.CPUCores = cmpOr(r.Hardware.CPUCores, h.CPUCores)
		r.Hardware.RAMGB = cmpOr(r.Hardware.RAMGB, h.RAMGB)
		r.Hardware.CPU = strOr(r.Hardware.CPU, h.CPU)
		r.Hardware.OS = strOr(r.Hardware.OS, h.OS)
		if r.Title == "" {
			r.Title = fmt.Sprintf("%s on %s, %s (llmfit bench)", res.Model, gpu, engine)
		}
		r.Notes = joinNotes(r.Notes, llmfitNote(in, res))
		cell := store.DecodeCell{
			ContextTokens:     0,
			Concurrency:       1,
			Status:            store.StatusValid,
			TotalTokS:         new(*res.AvgTps),
			PerRequestTokS:    new(*res.AvgTps),
			CompletedRequests: new(*res.NumRuns),
		}
		r.Decode = []store.DecodeCell{cell}
		if r.Method == nil {
			r.Method = &store.Method{Class: store.MethodOneShot}
			if res.AvgOutputTokens != nil && *res.AvgOutputTokens >= 1 && *res.AvgOutputTokens <= store.MaxContextTokens {
				r.Method.OutputTokensPerRequest = new(int(math.Round(*res.AvgOutputTokens)))
			}
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// llmfitNote is what a result says that no field holds: the spread of its
// generations and when it was submitted. Its TTFT is left here, not in
// the cell: for OpenAI-style providers llmfit estimates it from the
// total time rather than measuring it.
func llmfitNote(in llmfitFile, res llmfitResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "llmfit bench: %d generations averaged", *res.NumRuns)
	if res.MinTps != nil && res.MaxTps != nil {
		fmt.Fprintf(&b, ", %s to %s tok/s", gnum(*res.MinTps), gnum(*res.MaxTps))
	}
	if res.AvgOutputTokens != nil {
		fmt.Fprintf(&b, ", %s output tokens each on average", gnum(*res.AvgOutputTokens))
	}
	if res.AvgTTFTMs != nil {
		fmt.Fprintf(&b, ", TTFT %s ms as llmfit reports it", gnum(*res.AvgTTFTMs))
	}
	if in.SubmittedAtUnix != nil && *in.SubmittedAtUnix > 0 {
		fmt.Fprintf(&b, "; submitted %s", time.Unix(*in.SubmittedAtUnix, 0).UTC().Format(time.DateOnly))
	}
	return b.String() + "."
}

func joinNotes(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n" + b
}

func cmpOr[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}

func strOr(a, b string) string {
	if a != "" {
		return a
	}
	return strings.TrimSpace(b)
}

func showFloat(v *float64) string {
	if v == nil {
		return "missing"
	}
	return gnum(*v)
}

func showInt(v *int) string {
	if v == nil {
		return "missing"
	}
	return fmt.Sprint(*v)
}

// jsonErr is a JSON decoding problem with its line.
type jsonErr struct {
	line int
	msg  string
}

// strictJSON decodes one JSON value into v, which must be all the input;
// a type error names the field and its line.
func strictJSON(data []byte, v any) *jsonErr {
	data = bytes.TrimPrefix(data, []byte(bom))
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &te):
			return &jsonErr{line: lineAt(data, int(te.Offset)), msg: fmt.Sprintf("%s is a JSON %s, want a %s", te.Field, te.Value, te.Type)}
		case errors.As(err, &se):
			return &jsonErr{line: lineAt(data, int(se.Offset)), msg: err.Error()}
		case errors.Is(err, io.ErrUnexpectedEOF):
			return &jsonErr{line: lineAt(data, len(data)), msg: "the JSON ends before its value does"}
		}
		return &jsonErr{msg: err.Error()}
	}
	if dec.More() {
		return &jsonErr{line: lineAt(data, int(dec.InputOffset())), msg: "more than one JSON value"}
	}
	return nil
}

// gnum writes a number as briefly as it reads back.
func gnum(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
