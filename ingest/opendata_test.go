package ingest

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/store"
)

// dataFile reads a file of the open dataset (the repository's data/).
func dataFile(t testing.TB, path string) ToolFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "data", filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	return ToolFile{Name: path, Data: b}
}

// dataRuns reads a shipped file with its META, as import does, and
// validates every run.
func dataRuns(t *testing.T, format, path, meta string) []store.Run {
	t.Helper()
	m := dataFile(t, meta)
	runs, err := ParseToolRuns(format, meta, m.Data, []ToolFile{dataFile(t, path)}, ToolOptions{})
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return runs
}

func decodeAt(t *testing.T, r store.Run, ctx, conc int) store.DecodeCell {
	t.Helper()
	i := slices.IndexFunc(r.Decode, func(c store.DecodeCell) bool { return c.ContextTokens == ctx && c.Concurrency == conc })
	if i < 0 {
		t.Fatalf("%s: no decode cell at context %d, concurrency %d", r.Title, ctx, conc)
	}
	return r.Decode[i]
}

func prefillAt(t *testing.T, r store.Run, ctx int) store.PrefillCell {
	t.Helper()
	i := slices.IndexFunc(r.Prefill, func(c store.PrefillCell) bool { return c.ContextTokens == ctx })
	if i < 0 {
		t.Fatalf("%s: no prefill cell at context %d", r.Title, ctx)
	}
	return r.Prefill[i]
}

func wantValue[T comparable](t *testing.T, what string, got *T, want T) {
	t.Helper()
	if got == nil || *got != want {
		t.Errorf("%s = %v, want %v", what, showPtr(got), want)
	}
}

func showPtr[T any](p *T) any {
	if p == nil {
		return "absent"
	}
	return *p
}

func TestDS4BenchShipped(t *testing.T) {
	runs := dataRuns(t, FormatDS4Bench, "antirez-ds4/gb10.csv", "antirez-ds4/gb10.META.json")
	if len(runs) != 1 {
		t.Fatalf("%d runs, want 1", len(runs))
	}
	r := runs[0]
	if len(r.Decode) != 32 || len(r.Prefill) != 32 {
		t.Fatalf("%d decode and %d prefill cells, want 32 each (2K to 64K in 2K steps)", len(r.Decode), len(r.Prefill))
	}
	// gb10.csv: 32768,2048,865.40,128,15.99,63.022,127,16.00,475014540
	c := decodeAt(t, r, 32768, 1)
	wantValue(t, "decode 32768 per_request_tok_s", c.PerRequestTokS, 15.99)
	wantValue(t, "decode 32768 total_tok_s", c.TotalTokS, 15.99)
	wantValue(t, "decode 32768 output_tokens", c.OutputTokens, 128)
	// The context 4096 is filled by the first two 2048-token steps,
	// at 832.86 and 909.55 tok/s.
	p := prefillAt(t, r, 4096)
	wantTTFT := 1000 * (2048/832.86 + 2048/909.55)
	if p.TTFTMs == nil || math.Abs(*p.TTFTMs-wantTTFT) > 1e-9 {
		t.Errorf("prefill 4096 ttft_ms = %v, want %v", showPtr(p.TTFTMs), wantTTFT)
	}
	if m := r.MethodOf(); m.Class != store.MethodDecodeAtDepth || m.OutputTokensPerRequest == nil || *m.OutputTokensPerRequest != 128 {
		t.Errorf("method = %+v, want decode_at_depth, 128 tokens a request", m)
	}
	if r.Benchmark.Tool != FormatDS4Bench || r.Engine.Name != "ds4" || r.Hardware.GPU != "DGX Spark" {
		t.Errorf("tool %q, engine %q, GPU %q", r.Benchmark.Tool, r.Engine.Name, r.Hardware.GPU)
	}
	// The oldest files have no gen_first_ms … columns.
	old := dataRuns(t, FormatDS4Bench, "antirez-ds4/m5_max.csv", "antirez-ds4/m5_max.META.json")
	wantValue(t, "m5_max decode 2048", decodeAt(t, old[0], 2048, 1).PerRequestTokS, 31.46)
}

func TestDS4BenchErrors(t *testing.T) {
	head := "ctx_tokens,prefill_tokens,prefill_tps,gen_tokens,gen_tps\n"
	tests := []struct {
		name, src string
		line      int
		want      string
	}{
		{"empty", "", 0, "no header line"},
		{"unknown column", "ctx_tokens,gen_tokens,gen_tps,speed\n", 1, `unknown column "speed"`},
		{"missing column", "ctx_tokens,gen_tokens\n2048,128\n", 1, "column gen_tps is missing"},
		{"prefill half", "ctx_tokens,gen_tokens,gen_tps,prefill_tps\n", 1, "prefill_tokens and prefill_tps come together"},
		{"no rows", head, 0, "no rows"},
		{"bad number", head + "2048,2048,400,128,23\n4096,2048,390,128,fast\n", 3, `gen_tps is "fast"`},
		{"negative", head + "2048,2048,-1,128,23\n", 2, `prefill_tps is "-1"`},
		{"zero speed", head + "2048,2048,400,128,0\n", 2, "gen_tps is 0"},
		{"fraction of a token", head + "2048.5,2048,400,128,23\n", 2, `ctx_tokens is "2048.5"`},
		{"fields", head + "2048,2048,400,128\n", 2, "4 fields, but the header names 5"},
		{"twice", head + "2048,2048,400,128,23\n2048,2048,400,128,22\n", 3, "ctx_tokens 2048 was measured twice: here and at line 2"},
		{"lengths", head + "2048,2048,400,128,23\n4096,2048,390,256,22\n", 3, "gen_tokens is 256, but line 2 generated 128"},
		{"empty required", head + "2048,2048,400,,23\n", 2, "gen_tokens is empty"},
		{"prefill over context", head + "2048,4096,400,128,23\n", 2, "prefill_tokens is 4096, more than ctx_tokens 2048"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FromToolRuns(FormatDS4Bench, toolMeta(), []ToolFile{{Name: "m.csv", Data: []byte(tt.src)}}, ToolOptions{})
			wantParseError(t, err, "m.csv", tt.line, tt.want)
		})
	}
}

func wantParseError(t *testing.T, err error, file string, line int, want string) {
	t.Helper()
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T), want a *ParseError", err, err)
	}
	if pe.File != file || pe.Line != line || !strings.Contains(pe.Msg, want) {
		t.Errorf("error at %q line %d: %q; want %q line %d saying %q", pe.File, pe.Line, pe.Msg, file, line, want)
	}
}

func TestDS4BenchNoPrefillWhenStepsSkip(t *testing.T) {
	src := "ctx_tokens,prefill_tokens,prefill_tps,gen_tokens,gen_tps\n2048,2048,400,128,23\n8192,2048,380,128,22\n"
	runs, err := FromToolRuns(FormatDS4Bench, toolMeta(), []ToolFile{{Name: "m.csv", Data: []byte(src)}}, ToolOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(runs[0].Prefill); n != 0 {
		t.Errorf("%d prefill cells from rows that skip from 2048 to 8192, want none: the time to fill 8192 is not in the file", n)
	}
	if n := len(runs[0].Decode); n != 2 {
		t.Errorf("%d decode cells, want 2", n)
	}
}

func TestLlamaBenchShipped(t *testing.T) {
	runs := dataRuns(t, FormatLlamaBench, "ggml-org-llama.cpp/dgx-spark.llama-bench.md", "ggml-org-llama.cpp/dgx-spark.llama-bench.META.json")
	var models []string
	for _, r := range runs {
		models = append(models, r.Model.Name)
	}
	want := []string{"gpt-oss 20B MXFP4 MoE", "gpt-oss 120B MXFP4 MoE", "qwen3moe 30B.A3B Q8_0", "qwen2 7B Q8_0", "gemma3 4B Q4_0"}
	if !slices.Equal(models, want) {
		t.Fatalf("models %q, want %q", models, want)
	}
	r := runs[0]
	// | gpt-oss 20B MXFP4 MoE | … |    tg32 @ d4096 |         77.36 ± 0.13 |
	wantValue(t, "decode depth 4096", decodeAt(t, r, 4096, 1).PerRequestTokS, 77.36)
	wantValue(t, "decode depth 0", decodeAt(t, r, 0, 1).TotalTokS, 84.10)
	wantValue(t, "decode output tokens", decodeAt(t, r, 32768, 1).OutputTokens, 32)
	// pp2048 without depth is a prefill cell; pp2048 @ dD rows are not.
	if len(r.Prefill) != 1 {
		t.Fatalf("%d prefill cells, want 1 (pp2048)", len(r.Prefill))
	}
	wantValue(t, "prefill 2048", prefillAt(t, r, 2048).PromptTokS, 3782.76)
	if r.Engine.Build != "2f68ce7cf (6918)" || r.Engine.Backend != "CUDA" || r.Engine.Name != "llama.cpp" {
		t.Errorf("engine %+v, want llama.cpp CUDA build 2f68ce7cf (6918)", r.Engine)
	}
	if r.Launch.Flags["ngl"] != "99" || r.Launch.Flags["fa"] != "1" || r.Launch.Flags["n_ubatch"] != "2048" {
		t.Errorf("flags %v, want the table's ngl, fa, n_ubatch", r.Launch.Flags)
	}
	if !strings.HasSuffix(r.Title, ": gpt-oss 20B MXFP4 MoE") {
		t.Errorf("title %q does not name the model", r.Title)
	}
	if m := r.MethodOf(); m.Class != store.MethodDecodeAtDepth {
		t.Errorf("class %q, want decode_at_depth", m.Class)
	}
	// One run is not what the file holds.
	if _, err := FromTool(FormatLlamaBench, store.Run{}, []ToolFile{dataFile(t, "ggml-org-llama.cpp/dgx-spark.llama-bench.md")}, ToolOptions{}); err == nil || !strings.Contains(err.Error(), "holds 5 runs") {
		t.Errorf("FromTool on five models: %v, want holds 5 runs", err)
	}
}

// llamaBenchJSONSample is written for this test in the shape of
// llama-bench -o json (its field names and types), not copied from a run.
const llamaBenchJSONSample = `[
  {
    "build_commit": "abc1234", "build_number": 5000, "cpu_info": "x", "gpu_info": "NVIDIA GeForce RTX 4090",
    "backends": "CUDA", "model_filename": "m.gguf", "model_type": "llama 8B Q4_K - Medium",
    "model_size": 4920000000, "model_n_params": 8030000000, "n_batch": 2048, "n_ubatch": 512,
    "n_threads": 16, "type_k": "f16", "type_v": "f16", "n_gpu_layers": 99, "flash_attn": true,
    "tensor_split": "0.00", "use_mmap": true, "n_prompt": 512, "n_gen": 0, "n_depth": 0,
    "test_time": "2025-01-01T00:00:00Z", "avg_ns": 1, "stddev_ns": 1, "avg_ts": 11000.5, "stddev_ts": 20,
    "samples_ns": [1, 2], "samples_ts": [1, 2]
  },
  {
    "build_commit": "abc1234", "build_number": 5000, "cpu_info": "x", "gpu_info": "NVIDIA GeForce RTX 4090",
    "backends": "CUDA", "model_filename": "m.gguf", "model_type": "llama 8B Q4_K - Medium",
    "model_size": 4920000000, "model_n_params": 8030000000, "n_batch": 2048, "n_ubatch": 512,
    "n_threads": 16, "type_k": "f16", "type_v": "f16", "n_gpu_layers": 99, "flash_attn": true,
    "tensor_split": "0.00", "use_mmap": true, "n_prompt": 0, "n_gen": 128, "n_depth": 8192,
    "test_time": "2025-01-01T00:00:00Z", "avg_ns": 1, "stddev_ns": 1, "avg_ts": 141.25, "stddev_ts": 0.5,
    "samples_ns": [1, 2], "samples_ts": [1, 2]
  }
]`

func TestLlamaBenchJSON(t *testing.T) {
	for _, tt := range []struct{ name, src string }{
		{"json", llamaBenchJSONSample},
		{"jsonl", jsonLines(t, llamaBenchJSONSample)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			runs, err := FromToolRuns(FormatLlamaBench, store.Run{}, []ToolFile{{Name: "b.json", Data: []byte(tt.src)}}, ToolOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(runs) != 1 {
				t.Fatalf("%d runs, want 1", len(runs))
			}
			r := runs[0]
			wantValue(t, "decode at depth 8192", decodeAt(t, r, 8192, 1).PerRequestTokS, 141.25)
			wantValue(t, "prefill 512", prefillAt(t, r, 512).PromptTokS, 11000.5)
			if r.Hardware.GPU != "NVIDIA GeForce RTX 4090" || r.Engine.Build != "abc1234 (5000)" || r.Model.Name != "llama 8B Q4_K - Medium" {
				t.Errorf("GPU %q, build %q, model %q", r.Hardware.GPU, r.Engine.Build, r.Model.Name)
			}
			if r.Launch.Flags["n_gpu_layers"] != "99" || r.Launch.Flags["flash_attn"] != "true" {
				t.Errorf("flags %v", r.Launch.Flags)
			}
			if err := r.Validate(); err != nil {
				t.Errorf("the run does not validate: %v", err)
			}
		})
	}
}

// jsonLines is a JSON array's elements, one a line.
func jsonLines(t *testing.T, src string) string {
	t.Helper()
	tests, err := llamaBenchJSON("x", []byte(src))
	if err != nil || len(tests) == 0 {
		t.Fatal(err)
	}
	var b strings.Builder
	depth, start := 0, 0
	for i, c := range src {
		switch c {
		case '{':
			if depth == 0 {
				start = i
			}
			depth++
		case '}':
			depth--
			if depth == 0 {
				b.WriteString(strings.ReplaceAll(src[start:i+1], "\n", " ") + "\n")
			}
		}
	}
	return b.String()
}

func TestLlamaBenchErrors(t *testing.T) {
	head := "| model | backend | ngl | test | t/s |\n| --- | --- | --: | --: | --: |\n"
	tests := []struct {
		name, src string
		line      int
		want      string
	}{
		{"nothing", "some text\n", 0, "no llama-bench rows"},
		{"test name", head + "| m | CUDA | 99 | tgx | 5 ± 1 |\n", 3, `test is "tgx"`},
		{"depth", head + "| m | CUDA | 99 | tg32 @ 4096 |  5 ± 1 |\n", 3, "a depth is written @ dN"},
		{"speed", head + "| m | CUDA | 99 | tg32 | fast |\n", 3, `t/s is "fast"`},
		{"cells", head + "| m | CUDA | tg32 | 5 |\n", 3, "the row has 4 cells, its header 5"},
		{"twice", head + "| m | CUDA | 99 | tg32 | 5 |\n| m | CUDA | 99 | tg32 | 6 |\n", 4, "tg32 at depth 0 was measured twice: line 3 and line 4"},
		{"lengths", head + "| m | CUDA | 99 | tg32 | 5 |\n| m | CUDA | 99 | tg128 @ d512 | 6 |\n", 4, "line 4 measured tg128, but line 3 measured tg32"},
		{"only depth prefill", head + "| m | CUDA | 99 | pp512 @ d512 | 6 |\n", 3, "nothing to import"},
		{"json entry", `[{"model_type": "m", "n_prompt": 0, "n_gen": 32, "avg_ts": "x"}]`, 1, `entry 1: avg_ts is "x"`},
		{"json keys", `[{"model_type": "m", "n_gen": 32, "avg_ts": 5}]`, 1, `entry 1: has no "n_prompt"`},
		{"json not", `[{"model_type": "m",]`, 0, "not a llama-bench JSON array"},
		{"jsonl", "{\"model_type\": \"m\", \"n_prompt\": 0, \"n_gen\": 0, \"avg_ts\": 5}\n", 1, "n_prompt and n_gen are both 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FromToolRuns(FormatLlamaBench, toolMeta(), []ToolFile{{Name: "b.md", Data: []byte(tt.src)}}, ToolOptions{})
			wantParseError(t, err, "b.md", tt.line, tt.want)
		})
	}
	two := head + "| a | CUDA | 99 | tg32 | 5 |\n| b | CUDA | 99 | tg32 | 6 |\n"
	_, err := FromToolRuns(FormatLlamaBench, toolMeta(), []ToolFile{{Name: "b.md", Data: []byte(two)}}, ToolOptions{})
	wantParseError(t, err, "b.md", 0, `meta names the model "m", but the output measured 2 models (a, b)`)
}

func TestLlmfitShipped(t *testing.T) {
	runs := dataRuns(t, FormatLlmfit, "llmfit-community/apple-m1-max/1786995154-7cbcebe0.json", "llmfit-community/META.json")
	if len(runs) != 1 {
		t.Fatalf("%d runs, want 1", len(runs))
	}
	r := runs[0]
	// "model": "qwen3.6:27b", "provider": "ollama", "numRuns": 3, "avgTps": 9.74 … "avgOutputTokens": 300.0
	c := decodeAt(t, r, 0, 1)
	wantValue(t, "per_request_tok_s", c.PerRequestTokS, 9.74)
	wantValue(t, "completed_requests", c.CompletedRequests, 3)
	if r.Model.Name != "qwen3.6:27b" || r.Engine.Name != "Ollama" || r.Hardware.GPU != "Apple M1 Max" || r.Benchmark.ToolVersion != "1.1.10" {
		t.Errorf("model %q, engine %q, GPU %q, llmfit %q", r.Model.Name, r.Engine.Name, r.Hardware.GPU, r.Benchmark.ToolVersion)
	}
	wantValue(t, "vram_gb", r.Hardware.VRAMGB, 32.0)
	if m := r.MethodOf(); m.Class != store.MethodOneShot || m.OutputTokensPerRequest == nil || *m.OutputTokensPerRequest != 300 {
		t.Errorf("method %+v, want one_shot of 300 tokens", m)
	}
	if !strings.Contains(r.Notes, "9.71 to 9.77 tok/s") {
		t.Errorf("notes %q do not keep the spread", r.Notes)
	}
}

func TestLlmfitErrors(t *testing.T) {
	ok := `{"schemaVersion": 1, "tool": {"name": "llmfit", "version": "1"}, "hardware": {"hardwareName": "G"}, "results": [%s]}`
	res := func(s string) string { return strings.Replace(ok, "%s", s, 1) }
	tests := []struct {
		name, src string
		line      int
		want      string
	}{
		{"not json", "{", 1, "not an llmfit submission"},
		{"type", "{\n\"schemaVersion\": \"one\"}", 2, "schemaVersion is a JSON string"},
		{"schema", `{"schemaVersion": 2}`, 0, "schemaVersion is 2: only schema 1 is read"},
		{"hardware", `{"schemaVersion": 1, "results": []}`, 0, "hardware.hardwareName is missing"},
		{"no results", res(""), 0, "results is empty"},
		{"speed", res(`{"model": "m", "provider": "ollama", "numRuns": 3, "avgTps": 0}`), 0, "results[0].avgTps is 0"},
		{"runs", res(`{"model": "m", "provider": "ollama", "avgTps": 5}`), 0, "results[0].numRuns is missing"},
		{"model", res(`{"provider": "ollama", "numRuns": 1, "avgTps": 5}`), 0, "results[0].model is empty"},
		{"spread", res(`{"model": "m", "provider": "ollama", "numRuns": 1, "avgTps": 5, "minTps": -1}`), 0, "results[0].minTps is -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FromToolRuns(FormatLlmfit, store.Run{}, []ToolFile{{Name: "s.json", Data: []byte(tt.src)}}, ToolOptions{})
			wantParseError(t, err, "s.json", tt.line, tt.want)
		})
	}
	_, err := FromToolRuns(FormatLlmfit, toolMeta(), []ToolFile{{Name: "s.json", Data: []byte(res(`{"model": "m", "provider": "ollama", "numRuns": 1, "avgTps": 5}`))}}, ToolOptions{})
	wantParseError(t, err, "s.json", 0, `hardware.hardwareName is "G", but meta says hardware.gpu "g"`)
}

// localMaxxingSample is written for this test in the shape of
// LocalMaxxing's /api/benchmarks rows (as llmfit's scrape of them keeps
// them); its numbers are made up. No LocalMaxxing data is shipped: the
// rows' licence is not stated.
const localMaxxingSample = `{
  "scraped_at": "2026-01-01T00:00:00Z",
  "presets": {
    "RTX 5090 (32 GB)": {"rows": [
      {"id": "row1", "promptTokens": 40, "outputTokens": 256, "contextLength": 2048, "batchSize": 1,
       "ttftMs": 50.5, "tokSOut": 200.25, "tokSPrefill": 800, "createdAt": "2026-01-01T00:00:00Z",
       "engineFlags": {"commandSnippet": "x", "gpuLayers": 99, "flashAttn": true, "kvCacheDtype": null},
       "model": {"hfId": "org/model-A", "displayName": "model-A"},
       "hardware": {"gpuName": "RTX 5090", "gpuCount": 1, "vramGb": 32, "cpu": "c", "os": "Linux"},
       "engine": {"engineName": "llama.cpp", "engineVersion": "b5000", "quantization": "Q4_K_M", "backend": "cuda"},
       "user": {"username": "someone"}}
    ], "total": 1},
    "Apple M4 Max": {"rows": [
      {"id": "row2", "promptTokens": 1000, "outputTokens": 128, "batchSize": 4, "tokSOut": 90,
       "model": {"displayName": "model-B"}, "hardware": {"gpuName": "", "unifiedMemoryGb": 128},
       "hardwareGroupLabel": "Apple M4 Max", "engine": {"engineName": "mlx"}}
    ], "total": 1}
  }
}`

func TestLocalMaxxing(t *testing.T) {
	runs, err := FromToolRuns(FormatLocalMaxxing, store.Run{}, []ToolFile{{Name: "rows.json", Data: []byte(localMaxxingSample)}}, ToolOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 {
		t.Fatalf("%d runs, want 2", len(runs))
	}
	// Presets are read in name order: Apple M4 Max, then RTX 5090.
	b, a := runs[0], runs[1]
	c := decodeAt(t, a, 40, 1)
	wantValue(t, "A total_tok_s", c.TotalTokS, 200.25)
	wantValue(t, "A per_request_tok_s", c.PerRequestTokS, 200.25)
	wantValue(t, "A ttft_ms", c.TTFTMs, 50.5)
	wantValue(t, "A prefill 40", prefillAt(t, a, 40).PromptTokS, 800.0)
	if a.Model.Name != "org/model-A" || a.Model.Quantization != "Q4_K_M" || a.Hardware.GPU != "RTX 5090" || a.Submitter != "someone" {
		t.Errorf("A: model %q %q, GPU %q, submitter %q", a.Model.Name, a.Model.Quantization, a.Hardware.GPU, a.Submitter)
	}
	if a.Launch.Flags["gpuLayers"] != "99" || a.Launch.Flags["flashAttn"] != "true" || len(a.Launch.Flags) != 2 {
		t.Errorf("A flags %v, want gpuLayers and flashAttn only", a.Launch.Flags)
	}
	cb := decodeAt(t, b, 1000, 4)
	if cb.PerRequestTokS != nil {
		t.Errorf("B per_request_tok_s = %v from a batch of 4, want absent", *cb.PerRequestTokS)
	}
	if b.Hardware.GPU != "Apple M4 Max" || b.Model.Name != "model-B" {
		t.Errorf("B: GPU %q, model %q", b.Hardware.GPU, b.Model.Name)
	}
	wantValue(t, "B vram_gb", b.Hardware.VRAMGB, 128.0)
	for _, r := range runs {
		if m := r.MethodOf(); m.Class != store.MethodOneShot {
			t.Errorf("%s: class %q, want one_shot", r.Title, m.Class)
		}
		if err := r.Validate(); err != nil {
			t.Errorf("%s: %v", r.Title, err)
		}
	}
}

func TestLocalMaxxingErrors(t *testing.T) {
	row := `{"promptTokens": 40, "batchSize": 1, "tokSOut": 5, "model": {"hfId": "m"}, "hardware": {"gpuName": "G"}, "engine": {"engineName": "e"}}`
	tests := []struct{ name, src, want string }{
		{"empty", `[]`, "no rows"},
		{"not json", `[`, "not LocalMaxxing rows"},
		{"batch", `{"rows": [` + strings.Replace(row, `"batchSize": 1`, `"batchSize": 0`, 1) + `]}`, "rows[0].batchSize is 0: want a whole number of at least 1"},
		{"speed", `[` + strings.Replace(row, `"tokSOut": 5`, `"tokSOut": null`, 1) + `]`, "[0].tokSOut is missing"},
		{"prompt", `[` + strings.Replace(row, `"promptTokens": 40`, `"promptTokens": 4.5`, 1) + `]`, "[0].promptTokens is 4.5"},
		{"model", `[` + strings.Replace(row, `"hfId": "m"`, `"hfId": ""`, 1) + `]`, "[0].model names no model"},
		{"gpu", `[` + strings.Replace(row, `"gpuName": "G"`, `"gpuName": ""`, 1) + `]`, "[0].hardware.gpuName is missing"},
		{"type", `{"presets": {"p": {"rows": [{"tokSOut": "fast"}]}}}`, `presets["p"].rows[0]: not a LocalMaxxing row: tokSOut is a JSON string`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FromToolRuns(FormatLocalMaxxing, store.Run{}, []ToolFile{{Name: "r.json", Data: []byte(tt.src)}}, ToolOptions{})
			var pe *ParseError
			if !errors.As(err, &pe) || pe.File != "r.json" || !strings.Contains(pe.Msg, tt.want) {
				t.Errorf("error %v, want r.json: …%s…", err, tt.want)
			}
		})
	}
}

func TestDetect(t *testing.T) {
	seed := Seeds()[0].Data
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"ds4", dataFile(t, "antirez-ds4/m4_max.csv").Data, FormatDS4Bench},
		{"llama-bench md", dataFile(t, "ggml-org-llama.cpp/dgx-spark.llama-bench.md").Data, FormatLlamaBench},
		{"llama-bench json", []byte(llamaBenchJSONSample), FormatLlamaBench},
		{"llama-bench jsonl", []byte(jsonLines(t, llamaBenchJSONSample)), FormatLlamaBench},
		{"llmfit", dataFile(t, "llmfit-community/tesla-t4/1784112256-43b7d49b.json").Data, FormatLlmfit},
		{"localmaxxing", []byte(localMaxxingSample), FormatLocalMaxxing},
		{"localmaxxing array", []byte(`[{"tokSOut": 5}]`), FormatLocalMaxxing},
		{"page", seed, ""},
		{"run json", dataFile(t, "llmfit-community/META.json").Data, ""},
		{"batched-bench", toolFile(t, "llama-pr16894-qwen2-7b.md").Data, ""},
		{"grid csv", []byte("context_tokens,concurrency,total_tok_s\n1,1,1\n"), ""},
		{"empty", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Detect(tt.data)
			if err != nil || got != tt.want {
				t.Errorf("Detect = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	both := append(slices.Clone(toolFile(t, "llama-pr16894-qwen2-7b.md").Data), dataFile(t, "ggml-org-llama.cpp/dgx-spark.llama-bench.md").Data...)
	if got, err := Detect(both); err == nil || !strings.Contains(err.Error(), "--format llama-bench or --format llama-batched-bench") {
		t.Errorf("Detect of both tables = %q, %v; want an error naming both formats", got, err)
	}
}

func TestInferenceXShipped(t *testing.T) {
	dir := "semianalysis-inferencex/"
	names := []string{
		"agg_kimik2.5_1k1k_int4_vllm_tp8-ep1-dpafalse_disagg-false_spec-mtp_conc4_MI355-gbt350-odcdh5-wbb3.json",
		"agg_kimik2.5_8k1k_int4_vllm_tp8-ep1-dpafalse_disagg-false_spec-mtp_conc32_MI355-gbt350-odcdh5-wbb3.json",
		"agg_kimik2.5_8k1k_int4_vllm_tp8-ep1-dpafalse_disagg-false_spec-mtp_conc64_MI355-gbt350-odcdh5-wbb3.json",
	}
	var files []ToolFile
	for _, n := range names {
		files = append(files, dataFile(t, dir+n))
	}
	meta := dataFile(t, dir+"META.json")
	runs, err := ParseToolRuns(FormatInferenceX, "META.json", meta.Data, files, ToolOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || len(runs[0].Decode) != 3 {
		t.Fatalf("%d runs, want 1 of 3 cells (one configuration at three loads)", len(runs))
	}
	r := runs[0]
	// conc32 file: "output_tput_per_gpu": 17.57057269511527, "median_ttft": 1.816827566944994,
	// "median_tpot": 0.23031720386957874, "tp": 8, "isl": 8192
	c := decodeAt(t, r, 8192, 32)
	wantValue(t, "total_tok_s", c.TotalTokS, 17.57057269511527*8)
	wantValue(t, "ttft_ms", c.TTFTMs, 1000*1.816827566944994)
	wantValue(t, "tbt_ms", c.TBTMs, 1000*0.23031720386957874)
	wantValue(t, "gpu_count", r.Hardware.GPUCount, 8)
	if r.Hardware.GPU != "MI355X" || r.Model.Name != "moonshotai/Kimi-K2.5" || r.Model.Quantization != "int4" || r.Engine.Build != "vllm/vllm-openai-rocm:v0.21.0" {
		t.Errorf("GPU %q, model %q %q, build %q", r.Hardware.GPU, r.Model.Name, r.Model.Quantization, r.Engine.Build)
	}
	if m := r.MethodOf(); m.Class != store.MethodServingSweep || m.OutputTokensPerRequest == nil || *m.OutputTokensPerRequest != 1024 {
		t.Errorf("method %+v, want serving_sweep of 1024 tokens", m)
	}
	if r.Launch.Flags["spec_decoding"] != "mtp" || r.Launch.Flags["tp"] != "8" {
		t.Errorf("flags %v", r.Launch.Flags)
	}
}

func TestInferenceXErrors(t *testing.T) {
	ok := `{"hw": "h100", "conc": 4, "model": "m", "framework": "sglang", "precision": "fp8", "isl": 1024, "osl": 1024, "tp": 8, "output_tput_per_gpu": 100, "median_ttft": 0.1, "median_tpot": 0.01}`
	tests := []struct{ name, src, want string }{
		{"not json", `{"hw": `, "not an InferenceX result"},
		{"conc", strings.Replace(ok, `"conc": 4`, `"conc": 0`, 1), "conc is 0"},
		{"hw", strings.Replace(ok, `"hw": "h100"`, `"hw": ""`, 1), "hw is missing"},
		{"multinode", strings.Replace(ok, `"tp": 8`, `"tp": 8, "is_multinode": true`, 1), "a multi-node or disaggregated result"},
		{"speed", strings.Replace(ok, `"output_tput_per_gpu": 100`, `"output_tput_per_gpu": 0`, 1), "output_tput_per_gpu is 0"},
		{"type", strings.Replace(ok, `"isl": 1024`, `"isl": "1k"`, 1), "isl is a JSON string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FromToolRuns(FormatInferenceX, store.Run{}, []ToolFile{{Name: "a.json", Data: []byte(tt.src)}}, ToolOptions{})
			var pe *ParseError
			if !errors.As(err, &pe) || pe.File != "a.json" || !strings.Contains(pe.Msg, tt.want) {
				t.Errorf("error %v, want a.json: …%s…", err, tt.want)
			}
		})
	}
	_, err := FromToolRuns(FormatInferenceX, store.Run{}, []ToolFile{{Name: "a.json", Data: []byte(ok)}, {Name: "b.json", Data: []byte(ok)}}, ToolOptions{})
	wantParseError(t, err, "b.json", 0, "isl 1024 at conc 4 was measured twice: here and in a.json")
	// Two configurations are two runs.
	other := strings.Replace(ok, `"precision": "fp8"`, `"precision": "fp4"`, 1)
	runs, err := FromToolRuns(FormatInferenceX, store.Run{}, []ToolFile{{Name: "a.json", Data: []byte(ok)}, {Name: "b.json", Data: []byte(other)}}, ToolOptions{})
	if err != nil || len(runs) != 2 {
		t.Errorf("two precisions: %d runs, %v; want 2", len(runs), err)
	}
}
