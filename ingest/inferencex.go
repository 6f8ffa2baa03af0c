package ingest

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/matrixd/matrixd/store"
)

// ixResult is one aggregated result of SemiAnalysis's InferenceX
// (agg_*.json): one configuration served at one concurrency, input length
// isl and output length osl; speeds per GPU, times in seconds.
type ixResult struct {
	HW               string   `json:"hw"`
	Conc             *int     `json:"conc"`
	Image            string   `json:"image"`
	Model            string   `json:"model"`
	Framework        string   `json:"framework"`
	Precision        string   `json:"precision"`
	SpecDecoding     string   `json:"spec_decoding"`
	Disagg           *bool    `json:"disagg"`
	ISL              *int     `json:"isl"`
	OSL              *int     `json:"osl"`
	IsMultinode      *bool    `json:"is_multinode"`
	TP               *int     `json:"tp"`
	EP               *int     `json:"ep"`
	DPAttention      any      `json:"dp_attention"`
	OutputTputPerGPU *float64 `json:"output_tput_per_gpu"`
	MedianTTFT       *float64 `json:"median_ttft"`
	MedianTPOT       *float64 `json:"median_tpot"`
}

// readInferenceX reads InferenceX's aggregated results, one file per
// concurrency and input length: files of one configuration (hardware,
// model, framework and image, precision, parallelism, speculative
// decoding, output length) make one run of the serving_sweep class, a
// decode cell per file at context isl and its concurrency. Multi-node and
// disaggregated results are refused: the file does not say how many GPUs
// each role had.
func readInferenceX(meta store.Run, files []ToolFile) ([]store.Run, error) {
	type group struct {
		run  store.Run
		seen map[[2]int]string
	}
	var order []string
	groups := map[string]*group{}
	for _, f := range files {
		var x ixResult
		if err := strictJSON(f.Data, &x); err != nil {
			return nil, &ParseError{File: f.Name, Line: err.line, Msg: "not an InferenceX result: " + err.msg}
		}
		c, key, err := ixCell(x)
		if err != nil {
			return nil, &ParseError{File: f.Name, Msg: err.Error()}
		}
		g := groups[key]
		if g == nil {
			r, err := ixRun(meta, x)
			if err != nil {
				return nil, &ParseError{File: f.Name, Msg: err.Error()}
			}
			g = &group{run: r, seen: map[[2]int]string{}}
			groups[key] = g
			order = append(order, key)
		}
		k := [2]int{c.ContextTokens, c.Concurrency}
		if at, ok := g.seen[k]; ok {
			return nil, &ParseError{File: f.Name, Msg: fmt.Sprintf("isl %d at conc %d was measured twice: here and in %s", k[0], k[1], at)}
		}
		g.seen[k] = f.Name
		g.run.Decode = append(g.run.Decode, c)
	}
	runs := make([]store.Run, 0, len(order))
	for _, k := range order {
		runs = append(runs, groups[k].run)
	}
	return runs, nil
}

// ixCell checks a result and makes its cell; key names its configuration.
func ixCell(x ixResult) (store.DecodeCell, string, error) {
	for _, p := range []struct {
		name string
		v    *int
	}{{"conc", x.Conc}, {"isl", x.ISL}, {"osl", x.OSL}, {"tp", x.TP}} {
		if p.v == nil || *p.v < 1 || *p.v > store.MaxContextTokens {
			return store.DecodeCell{}, "", fmt.Errorf("%s is %s: want a whole number of at least 1", p.name, showInt(p.v))
		}
	}
	for _, p := range []struct{ name, v string }{{"hw", x.HW}, {"model", x.Model}, {"framework", x.Framework}} {
		if strings.TrimSpace(p.v) == "" {
			return store.DecodeCell{}, "", fmt.Errorf("%s is missing: an InferenceX result names its hardware, model and framework", p.name)
		}
	}
	if (x.IsMultinode != nil && *x.IsMultinode) || (x.Disagg != nil && *x.Disagg) {
		return store.DecodeCell{}, "", fmt.Errorf("a multi-node or disaggregated result: the file does not say how many GPUs each role had, so its per-GPU speeds cannot be made whole")
	}
	if x.OutputTputPerGPU == nil || !toolFinite(*x.OutputTputPerGPU) || *x.OutputTputPerGPU == 0 {
		return store.DecodeCell{}, "", fmt.Errorf("output_tput_per_gpu is %s: want the output tokens per second per GPU, above 0", showFloat(x.OutputTputPerGPU))
	}
	for _, p := range []struct {
		name string
		v    *float64
	}{{"median_ttft", x.MedianTTFT}, {"median_tpot", x.MedianTPOT}} {
		if p.v != nil && (!toolFinite(*p.v) || *p.v > store.MaxMs/1000) {
			return store.DecodeCell{}, "", fmt.Errorf("%s is %s: want seconds, a finite number, not negative", p.name, gnum(*p.v))
		}
	}
	c := store.DecodeCell{
		ContextTokens: *x.ISL,
		Concurrency:   *x.Conc,
		Status:        store.StatusValid,
		TotalTokS:     new(*x.OutputTputPerGPU * float64(*x.TP)),
	}
	if x.MedianTTFT != nil {
		c.TTFTMs = new(1000 * *x.MedianTTFT)
	}
	if x.MedianTPOT != nil && *x.MedianTPOT > 0 {
		c.TBTMs = new(1000 * *x.MedianTPOT)
		c.PerRequestTokS = new(1 / *x.MedianTPOT)
	}
	key := strings.Join([]string{x.HW, x.Model, x.Framework, x.Image, x.Precision, x.SpecDecoding, fmt.Sprint(x.DPAttention),
		strconv.Itoa(*x.TP), showInt(x.EP), strconv.Itoa(*x.OSL)}, "\x00")
	return c, key, nil
}

// ixRun is the run of a result's configuration, before its cells.
func ixRun(meta store.Run, x ixResult) (store.Run, error) {
	r := metaRun(meta)
	if err := claimTool(&r, "InferenceX"); err != nil {
		return store.Run{}, err
	}
	switch {
	case r.Model.Name != "" && r.Model.Name != x.Model:
		return store.Run{}, fmt.Errorf("model is %q, but meta says model.name %q", x.Model, r.Model.Name)
	case r.Engine.Name != "" && !strings.EqualFold(r.Engine.Name, x.Framework):
		return store.Run{}, fmt.Errorf("framework is %q, but meta says engine.name %q", x.Framework, r.Engine.Name)
	case r.Hardware.GPUCount != nil && *r.Hardware.GPUCount != *x.TP:
		return store.Run{}, fmt.Errorf("tp is %d, but meta says hardware.gpu_count %d", *x.TP, *r.Hardware.GPUCount)
	}
	r.Model.Name = x.Model
	r.Model.Quantization = strOr(r.Model.Quantization, x.Precision)
	r.Engine.Name = strOr(r.Engine.Name, x.Framework)
	r.Engine.Build = strOr(r.Engine.Build, x.Image)
	r.Hardware.GPU = strOr(r.Hardware.GPU, x.HW)
	r.Hardware.GPUCount = new(*x.TP)
	if r.Title == "" {
		r.Title = fmt.Sprintf("%s %s, %s on %d× %s, InferenceX", x.Model, x.Precision, x.Framework, *x.TP, r.Hardware.GPU)
	}
	flags := newToolFlags(r.Launch.Flags)
	set := map[string]string{"tp": strconv.Itoa(*x.TP), "spec_decoding": x.SpecDecoding}
	if x.EP != nil {
		set["ep"] = strconv.Itoa(*x.EP)
	}
	if x.DPAttention != nil {
		set["dp_attention"] = fmt.Sprint(x.DPAttention)
	}
	for _, k := range []string{"tp", "ep", "dp_attention", "spec_decoding"} {
		if v := set[k]; v != "" {
			if err := flags.set(k, v, "", 0); err != nil {
				return store.Run{}, err
			}
		}
	}
	r.Launch.Flags = flags.result()
	if r.Method == nil {
		r.Method = &store.Method{Class: store.MethodServingSweep, OutputTokensPerRequest: new(*x.OSL), Prefill: store.PrefillIncluded}
	}
	if r.Benchmark.MaxOutputTokens == nil {
		r.Benchmark.MaxOutputTokens = new(*x.OSL)
	}
	return r, nil
}
