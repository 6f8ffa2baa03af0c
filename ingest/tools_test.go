package ingest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/store"
)

// toolFile reads a fixture of testdata/tools.
func toolFile(t testing.TB, name string) ToolFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "tools", name))
	if err != nil {
		t.Fatal(err)
	}
	return ToolFile{Name: name, Data: b}
}

// toolMeta is what a caller's META.json gives: everything but the cells.
func toolMeta() store.Run {
	return store.Run{
		Title:    "bench",
		Model:    store.Model{Name: "m"},
		Hardware: store.Hardware{GPU: "g"},
		Engine:   store.Engine{Name: "e"},
	}
}

// edited is f with old replaced by new, once.
func edited(t testing.TB, f ToolFile, old, new string) ToolFile {
	t.Helper()
	if !bytes.Contains(f.Data, []byte(old)) {
		t.Fatalf("%s has no %q", f.Name, old)
	}
	f.Data = bytes.Replace(f.Data, []byte(old), []byte(new), 1)
	return f
}

// checkToolRun holds a returned run to FromTool's promises and to the
// store's rules once meta gives what a run needs.
func checkToolRun(t *testing.T, r store.Run) {
	t.Helper()
	if !slices.IsSortedFunc(r.Decode, func(a, b store.DecodeCell) int {
		return cmp.Or(cmp.Compare(a.ContextTokens, b.ContextTokens), cmp.Compare(a.Concurrency, b.Concurrency))
	}) || !slices.IsSortedFunc(r.Prefill, func(a, b store.PrefillCell) int { return cmp.Compare(a.ContextTokens, b.ContextTokens) }) {
		t.Errorf("cells are not in canonical order")
	}
	if err := r.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func toolDecode(t *testing.T, r store.Run, ctx, conc int) store.DecodeCell {
	t.Helper()
	for _, c := range r.Decode {
		if c.ContextTokens == ctx && c.Concurrency == conc {
			return c
		}
	}
	t.Fatalf("no decode cell at context %d, concurrency %d", ctx, conc)
	return store.DecodeCell{}
}

func toolPrefill(t *testing.T, r store.Run, ctx int) (store.PrefillCell, bool) {
	t.Helper()
	for _, c := range r.Prefill {
		if c.ContextTokens == ctx {
			return c, true
		}
	}
	return store.PrefillCell{}, false
}

func sameF(t *testing.T, what string, got *float64, want float64) {
	t.Helper()
	if got == nil || *got != want {
		t.Errorf("%s = %s, want %v", what, showF(got), want)
	}
}

func sameI(t *testing.T, what string, got *int, want int) {
	t.Helper()
	if got == nil || *got != want {
		t.Errorf("%s = %v, want %d", what, got, want)
	}
}

func showF(v *float64) string {
	if v == nil {
		return "absent"
	}
	return fmt.Sprint(*v)
}

// llamaWant is one row of a llama-batched-bench fixture, as read from the
// file by hand.
type llamaWant struct {
	pp, tg, b          int
	tPP, sPP, tTG, sTG float64
}

func TestFromToolLlamaFixtures(t *testing.T) {
	tests := []struct {
		file            string
		tg              int
		decode, prefill int
		flags           map[string]string
		rows            []llamaWant
	}{
		{
			file: "llama-pr16894-qwen2-7b.md", decode: 6, prefill: 2,
			flags: map[string]string{"n_kv_max": "20480", "n_batch": "2048", "n_ubatch": "2048", "flash_attn": "1", "is_pp_shared": "0", "n_gpu_layers": "-1", "n_threads": "16", "n_threads_batch": "16"},
			rows: []llamaWant{
				{pp: 512, tg: 32, b: 4, tPP: 1.248, sPP: 1640.90, tTG: 0.570, sTG: 224.52},
				{pp: 4096, tg: 32, b: 1, tPP: 2.684, sPP: 1526.12, tTG: 0.428, sTG: 74.77},
				{pp: 4096, tg: 32, b: 2, tPP: 5.354, sPP: 1530.08, tTG: 0.514, sTG: 124.48},
			},
		},
		{
			file: "llama-readme-multi-tg.md", tg: 256, decode: 6, prefill: 1,
			rows: []llamaWant{
				{pp: 128, tg: 256, b: 1, tPP: 0.107, sPP: 1196.70, tTG: 6.329, sTG: 40.45},
				{pp: 128, tg: 256, b: 8, tPP: 0.751, sPP: 1363.92, tTG: 15.110, sTG: 135.54},
			},
		},
		{
			file: "llama-readme-multi-tg.md", tg: 128, decode: 6, prefill: 1,
			rows: []llamaWant{
				{pp: 128, tg: 128, b: 32, tPP: 3.408, sPP: 1201.73, tTG: 8.801, sTG: 465.40},
			},
		},
		{
			file: "llama-readme.jsonl", decode: 2, prefill: 1,
			flags: map[string]string{"n_kv_max": "2048", "n_batch": "2048", "n_ubatch": "512", "flash_attn": "0", "is_pp_shared": "0", "n_gpu_layers": "99", "n_threads": "8", "n_threads_batch": "8"},
			rows: []llamaWant{
				{pp: 128, tg: 128, b: 1, tPP: 0.233810, sPP: 547.453064, tTG: 3.503684, sTG: 36.532974},
				{pp: 128, tg: 128, b: 2, tPP: 0.422602, sPP: 605.770935, tTG: 11.106112, sTG: 23.050371},
			},
		},
		{
			file: "llama-pr25917-kimi-k3.log", decode: 1, prefill: 1,
			flags: map[string]string{"n_kv_max": "65536", "n_batch": "8192", "n_ubatch": "2048", "flash_attn": "1", "is_pp_shared": "0", "is_tg_separate": "0", "n_gpu_layers": "-1", "n_threads": "32", "n_threads_batch": "32"},
			rows: []llamaWant{
				{pp: 8192, tg: 128, b: 1, tPP: 162.743, sPP: 50.34, tTG: 17.982, sTG: 7.12},
			},
		},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/tg=%d", tt.file, tt.tg), func(t *testing.T) {
			r, err := FromTool(FormatLlamaBatchedBench, toolMeta(), []ToolFile{toolFile(t, tt.file)}, ToolOptions{TG: tt.tg})
			if err != nil {
				t.Fatal(err)
			}
			checkToolRun(t, r)
			if len(r.Decode) != tt.decode || len(r.Prefill) != tt.prefill {
				t.Errorf("%d decode and %d prefill cells, want %d and %d", len(r.Decode), len(r.Prefill), tt.decode, tt.prefill)
			}
			if r.Benchmark.Tool != "llama-batched-bench" {
				t.Errorf("benchmark.tool = %q", r.Benchmark.Tool)
			}
			if !maps.Equal(r.Launch.Flags, tt.flags) {
				t.Errorf("flags = %v, want %v", r.Launch.Flags, tt.flags)
			}
			for _, w := range tt.rows {
				c := toolDecode(t, r, w.pp, w.b)
				b := float64(w.b)
				if c.Status != store.StatusValid {
					t.Errorf("status = %q", c.Status)
				}
				sameF(t, "total_tok_s", c.TotalTokS, w.sTG)
				sameF(t, "per_request_tok_s", c.PerRequestTokS, w.sTG/b)
				sameF(t, "tbt_ms", c.TBTMs, 1000*w.tTG/float64(w.tg))
				sameF(t, "ttft_ms", c.TTFTMs, 1000*w.tPP)
				sameF(t, "duration_s", c.DurationS, w.tTG)
				sameF(t, "avg_active_requests", c.AvgActiveRequests, b)
				sameI(t, "output_tokens", c.OutputTokens, w.b*w.tg)
				sameI(t, "completed_requests", c.CompletedRequests, w.b)
				if w.b == 1 {
					p, ok := toolPrefill(t, r, w.pp)
					if !ok {
						t.Fatalf("no prefill cell at PP %d", w.pp)
					}
					sameF(t, "prompt_tok_s", p.PromptTokS, w.sPP)
					sameF(t, "prefill ttft_ms", p.TTFTMs, 1000*w.tPP)
					if p.Status != store.StatusValid {
						t.Errorf("prefill status = %q", p.Status)
					}
				}
			}
		})
	}
}

// vllmWant is one result of a vllm-bench fixture, as read from the file by
// hand.
type vllmWant struct {
	model                          string
	completed, input, output, conc int
	duration, throughput           float64
	ttft, tpot                     float64
}

func TestFromToolVLLMFixtures(t *testing.T) {
	sweep := vllmWant{model: "facebook/opt-125m", completed: 8, input: 256, output: 128, conc: 2,
		duration: 1.3653671270003542, throughput: 93.74767963046673, ttft: 44.92285849846667, tpot: 8.323490332986694}
	spec := vllmWant{model: "Qwen/Qwen3.8-27B-FP8", completed: 8, input: 2502, output: 3983, conc: 2,
		duration: 32.5748378210119, throughput: 122.27228948568478, ttft: 425.2609429968288, tpot: 14.416801156354207}
	sorted := vllmWant{model: "facebook/opt-125m", completed: 8, input: 256, output: 128, conc: 2,
		duration: 1.5441598830002476, throughput: 82.89297074037474, ttft: 55.68139649994919, tpot: 11.20450286665194}
	tests := []struct {
		name    string
		files   []ToolFile
		context []int // round(total_input_tokens / completed), worked out by hand
		want    []vllmWant
	}{
		{"sweep result", []ToolFile{toolFile(t, "vllm-sweep-opt125m-c2.json")}, []int{32}, []vllmWant{sweep}},
		{"sorted keys", []ToolFile{toolFile(t, "vllm-opt125m-c2.json")}, []int{32}, []vllmWant{sorted}},
		{"speculative, context rounded up", []ToolFile{toolFile(t, "vllm-spec-qwen-c2.json")}, []int{313}, []vllmWant{spec}},
		{"two files, two points", []ToolFile{
			toolFile(t, "vllm-sweep-opt125m-c2.json"),
			edited(t, toolFile(t, "vllm-opt125m-c2.json"), `"max_concurrency": 2`, `"max_concurrency": 4`),
		}, []int{32, 32}, []vllmWant{sweep, func() vllmWant { w := sorted; w.conc = 4; return w }()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			meta := toolMeta()
			meta.Model.Name = ""
			r, err := FromTool(FormatVLLMBench, meta, tt.files, ToolOptions{})
			if err != nil {
				t.Fatal(err)
			}
			checkToolRun(t, r)
			if len(r.Decode) != len(tt.want) || len(r.Prefill) != 0 {
				t.Errorf("%d decode and %d prefill cells, want %d and 0", len(r.Decode), len(r.Prefill), len(tt.want))
			}
			if r.Benchmark.Tool != "vllm bench serve" {
				t.Errorf("benchmark.tool = %q", r.Benchmark.Tool)
			}
			for i, w := range tt.want {
				if r.Model.Name != w.model {
					t.Errorf("model.name = %q, want %q", r.Model.Name, w.model)
				}
				c := toolDecode(t, r, tt.context[i], w.conc)
				if c.Status != store.StatusValid {
					t.Errorf("status = %q", c.Status)
				}
				sameF(t, "total_tok_s", c.TotalTokS, w.throughput)
				sameF(t, "tbt_ms", c.TBTMs, w.tpot)
				sameF(t, "per_request_tok_s", c.PerRequestTokS, 1000/w.tpot)
				sameF(t, "ttft_ms", c.TTFTMs, w.ttft)
				sameF(t, "duration_s", c.DurationS, w.duration)
				sameI(t, "completed_requests", c.CompletedRequests, w.completed)
				sameI(t, "output_tokens", c.OutputTokens, w.output)
				if c.AvgActiveRequests != nil {
					t.Errorf("avg_active_requests = %v, want absent", *c.AvgActiveRequests)
				}
			}
		})
	}
}

func TestFromToolVLLMOptionalMetrics(t *testing.T) {
	sweep := toolFile(t, "vllm-sweep-opt125m-c2.json")
	tests := []struct {
		name      string
		file      ToolFile
		ttft, tbt bool
	}{
		{"no percentile metrics", edited(t, edited(t, sweep, `"median_ttft_ms": 44.92285849846667`, `"median_ttft_x": 1`), `"median_tpot_ms": 8.323490332986694`, `"median_tpot_x": 1`), false, false},
		{"null ttft", edited(t, sweep, `"median_ttft_ms": 44.92285849846667`, `"median_ttft_ms": null`), false, true},
		{"one token each: tpot 0", edited(t, sweep, `"median_tpot_ms": 8.323490332986694`, `"median_tpot_ms": 0.0`), true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			meta := toolMeta()
			meta.Model.Name = "facebook/opt-125m"
			r, err := FromTool(FormatVLLMBench, meta, []ToolFile{tt.file}, ToolOptions{})
			if err != nil {
				t.Fatal(err)
			}
			checkToolRun(t, r)
			c := r.Decode[0]
			if (c.TTFTMs != nil) != tt.ttft || (c.TBTMs != nil) != tt.tbt || (c.PerRequestTokS != nil) != tt.tbt {
				t.Errorf("ttft %s, tbt %s, per-request %s: want present %v, %v, %v", showF(c.TTFTMs), showF(c.TBTMs), showF(c.PerRequestTokS), tt.ttft, tt.tbt, tt.tbt)
			}
			sameF(t, "total_tok_s", c.TotalTokS, 93.74767963046673)
		})
	}
}

func TestFromToolKeepsMeta(t *testing.T) {
	meta := toolMeta()
	meta.SourceURL = "https://example.com/run"
	meta.Benchmark.Tool = "LLAMA-batched-bench"
	meta.Launch.Flags = map[string]string{"n_batch": "2048", "--mlock": ""}
	r, err := FromTool(FormatLlamaBatchedBench, meta, []ToolFile{toolFile(t, "llama-pr16894-qwen2-7b.md")}, ToolOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Title != "bench" || r.SourceURL != meta.SourceURL || r.Model.Name != "m" || r.Benchmark.Tool != "LLAMA-batched-bench" {
		t.Errorf("meta not kept: %+v", r)
	}
	if r.Launch.Flags["--mlock"] != "" || r.Launch.Flags["n_kv_max"] != "20480" || len(r.Launch.Flags) != 9 {
		t.Errorf("flags = %v, want meta's with the header's", r.Launch.Flags)
	}
	if len(meta.Launch.Flags) != 2 {
		t.Errorf("the caller's flags map changed: %v", meta.Launch.Flags)
	}
}

func TestFormats(t *testing.T) {
	if got := Formats(); !slices.Equal(got, []string{FormatLlamaBatchedBench, FormatVLLMBench, FormatGridCSV, FormatDS4Bench, FormatLlamaBench, FormatLlmfit, FormatLocalMaxxing, FormatInferenceX}) {
		t.Errorf("Formats() = %v", got)
	}
}

// manyLlamaRows is a table of n distinct rows.
func manyLlamaRows(n int) ToolFile {
	var b strings.Builder
	b.WriteString("|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |\n")
	for i := range n {
		fmt.Fprintf(&b, "| %d | 32 | 1 | %d | 0.1 | 10.0 | 0.4 | 80.0 | 0.5 | 70.0 |\n", i, i+32)
	}
	return ToolFile{Name: "many.md", Data: []byte(b.String())}
}

// manyVLLMResults is an --append-result file of n distinct results.
func manyVLLMResults(n int) ToolFile {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"model_id": "m", "max_concurrency": %d, "completed": %[1]d, "total_input_tokens": %d, "total_output_tokens": 8, "duration": 1.0, "output_throughput": 8.0}`+"\n", i+1, 8*(i+1))
	}
	return ToolFile{Name: "many.jsonl", Data: []byte(b.String())}
}

func TestFromToolErrors(t *testing.T) {
	pr := toolFile(t, "llama-pr16894-qwen2-7b.md")
	multi := toolFile(t, "llama-readme-multi-tg.md")
	sweep := toolFile(t, "vllm-sweep-opt125m-c2.json")
	opt125 := func(r *store.Run) { r.Model.Name = "facebook/opt-125m" }
	tests := []struct {
		name     string
		format   string
		meta     func(*store.Run)
		files    []ToolFile
		opts     ToolOptions
		file     string
		line     int
		contains []string
	}{
		{name: "unknown format", format: "llama-benchmark", files: []ToolFile{pr},
			contains: []string{`"llama-benchmark"`, "llama-batched-bench, vllm-bench, grid-csv, ds4-bench, llama-bench, llmfit, localmaxxing, inferencex"}},
		{name: "no files", format: FormatLlamaBatchedBench, contains: []string{"no tool output files"}},
		{name: "too many files", format: FormatVLLMBench, files: slices.Repeat([]ToolFile{sweep}, maxToolFiles+1),
			contains: []string{"257 files", "at most 256"}},
		{name: "file too large", format: FormatLlamaBatchedBench, files: []ToolFile{{Name: "big.log", Data: make([]byte, 4<<20+1)}},
			file: "big.log", contains: []string{"4 MiB"}},
		{name: "too many llama rows", format: FormatLlamaBatchedBench, files: []ToolFile{manyLlamaRows(maxToolRows + 1)},
			file: "many.md", line: maxToolRows + 2, contains: []string{"more than 4096 rows"}},
		{name: "too many llama rows across files", format: FormatLlamaBatchedBench, files: []ToolFile{manyLlamaRows(maxToolRows), pr},
			file: pr.Name, line: 5, contains: []string{"more than 4096 rows"}},
		{name: "too many vLLM results", format: FormatVLLMBench, meta: func(r *store.Run) { r.Model.Name = "" }, files: []ToolFile{manyVLLMResults(maxToolRows + 1)},
			file: "many.jsonl", line: maxToolRows + 1, contains: []string{"more than 4096 rows"}},
		{name: "meta with cells", format: FormatLlamaBatchedBench, files: []ToolFile{pr},
			meta: func(r *store.Run) { r.Decode = []store.DecodeCell{{Concurrency: 1}} }, contains: []string{"meta must hold no cells (it holds 1)"}},

		{name: "llama: meta names another tool", format: FormatLlamaBatchedBench, files: []ToolFile{pr},
			meta: func(r *store.Run) { r.Benchmark.Tool = "llama-bench" }, contains: []string{`"llama-bench"`, `"llama-batched-bench"`}},
		{name: "vllm: a TG is refused", format: FormatVLLMBench, files: []ToolFile{toolFile(t, "vllm-sweep-opt125m-c2.json")}, opts: ToolOptions{TG: 5}, contains: []string{"applies only to llama-batched-bench"}},
		{name: "llama: negative TG", format: FormatLlamaBatchedBench, files: []ToolFile{pr}, opts: ToolOptions{TG: -1}, contains: []string{"TG -1"}},
		{name: "llama: several TG without --tg", format: FormatLlamaBatchedBench, files: []ToolFile{multi},
			file: multi.Name, line: 9, contains: []string{"PP 128, B 1", "TG 128, 256", "--tg N"}},
		{name: "llama: a TG no row has", format: FormatLlamaBatchedBench, files: []ToolFile{multi}, opts: ToolOptions{TG: 64},
			contains: []string{"no row has TG 64", "TG 128, 256"}},
		{name: "llama: row repeated", format: FormatLlamaBatchedBench,
			files: []ToolFile{edited(t, pr, "|  4096 |     32 |    1 |", "|   512 |     32 |    1 |")},
			file:  pr.Name, line: 8, contains: []string{"PP 512, TG 32, B 1 was measured twice", pr.Name + " line 5"}},
		{name: "llama: row repeated across files", format: FormatLlamaBatchedBench, files: []ToolFile{pr, {Name: "again.md", Data: pr.Data}},
			file: "again.md", line: 5, contains: []string{"measured twice", "at " + pr.Name + " line 5"}},
		{name: "llama: header contradicts meta", format: FormatLlamaBatchedBench, files: []ToolFile{pr},
			meta: func(r *store.Run) { r.Launch.Flags = map[string]string{"n_batch": "4096"} },
			file: pr.Name, line: 1, contains: []string{"n_batch is 2048 here", "meta's launch.flags says 4096"}},
		{name: "llama: headers contradict each other", format: FormatLlamaBatchedBench,
			files: []ToolFile{pr, toolFile(t, "llama-pr25917-kimi-k3.log")},
			file:  "llama-pr25917-kimi-k3.log", line: 5, contains: []string{"n_kv_max is 65536 here", pr.Name + " line 1 says 20480"}},
		{name: "llama: jsonl contradicts meta", format: FormatLlamaBatchedBench, files: []ToolFile{toolFile(t, "llama-readme.jsonl")},
			meta: func(r *store.Run) { r.Launch.Flags = map[string]string{"n_gpu_layers": "-1"} },
			file: "llama-readme.jsonl", line: 1, contains: []string{"n_gpu_layers is 99 here", "says -1"}},
		{name: "llama: no rows", format: FormatLlamaBatchedBench,
			files: []ToolFile{{Name: "log.txt", Data: []byte("llama_model_loader: - kv 0: general.architecture str = llama\nmain: n_kv_max = 4096, n_batch = 2048\n")}},
			file:  "log.txt", contains: []string{"no llama-batched-bench rows"}},
		{name: "llama: inf speed", format: FormatLlamaBatchedBench, files: []ToolFile{edited(t, pr, "224.52", "   inf")},
			file: pr.Name, line: 7, contains: []string{`S_TG t/s is "inf"`}},
		{name: "llama: TG 0", format: FormatLlamaBatchedBench, files: []ToolFile{edited(t, pr, "|   512 |     32 |    2 |", "|   512 |      0 |    2 |")},
			file: pr.Name, line: 6, contains: []string{"TG is 0"}},
		{name: "llama: row cut short", format: FormatLlamaBatchedBench, files: []ToolFile{edited(t, pr, "|    1.108 |   982.06 |", "")},
			file: pr.Name, line: 6, contains: []string{"8 cells, its header 10"}},
		{name: "llama: unknown column", format: FormatLlamaBatchedBench,
			files: []ToolFile{{Name: "dp.md", Data: []byte("|REP |     PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |\n")}},
			file:  "dp.md", line: 1, contains: []string{`unexpected column "REP"`}},
		{name: "llama: jsonl without a key", format: FormatLlamaBatchedBench,
			files: []ToolFile{{Name: "b.jsonl", Data: []byte(`{"pp": 128, "tg": 128, "pl": 1, "t_pp": 0.2, "speed_pp": 500, "t_tg": 3.5}`)}},
			file:  "b.jsonl", line: 1, contains: []string{`no "speed_tg"`}},
		{name: "llama: jsonl cut short", format: FormatLlamaBatchedBench,
			files: []ToolFile{{Name: "b.jsonl", Data: []byte("log\n" + `{"pp": 128, "tg": 128, "pl": 1, "t_pp": 0.2`)}},
			file:  "b.jsonl", line: 2, contains: []string{"invalid JSONL row"}},
		{name: "llama: bad setting", format: FormatLlamaBatchedBench, files: []ToolFile{edited(t, pr, "n_batch = 2048", "n_batch 2048")},
			file: pr.Name, line: 1, contains: []string{`"n_batch 2048"`}},

		{name: "vllm: meta names another tool", format: FormatVLLMBench, files: []ToolFile{sweep},
			meta: func(r *store.Run) { r.Benchmark.Tool = "guidellm" }, contains: []string{`"guidellm"`, `"vllm bench serve"`}},
		{name: "vllm: a request rate, no max_concurrency", format: FormatVLLMBench, files: []ToolFile{toolFile(t, "vllm-request-rate.jsonl")},
			meta: func(r *store.Run) { r.Model.Name = "" }, file: "vllm-request-rate.jsonl", line: 1,
			contains: []string{"no max_concurrency (request_rate 10.0)", "--max-concurrency N"}},
		{name: "vllm: max_concurrency absent", format: FormatVLLMBench, meta: opt125,
			files: []ToolFile{edited(t, sweep, `"max_concurrency": 2,`, ``)}, file: sweep.Name, line: 1,
			contains: []string{"no max_concurrency", "measured a request rate"}},
		{name: "vllm: nothing completed", format: FormatVLLMBench, files: []ToolFile{toolFile(t, "vllm-all-failed.json")},
			meta: opt125, file: "vllm-all-failed.json", line: 1, contains: []string{"completed is 0", "8 failed"}},
		{name: "vllm: model_id contradicts meta", format: FormatVLLMBench, files: []ToolFile{sweep},
			meta: func(r *store.Run) { r.Model.Name = "OPT 125M" }, file: sweep.Name, line: 6,
			contains: []string{`model_id is "facebook/opt-125m"`, `meta's model.name is "OPT 125M"`}},
		{name: "vllm: two models", format: FormatVLLMBench, files: []ToolFile{sweep, toolFile(t, "vllm-spec-qwen-c2.json")},
			meta: func(r *store.Run) { r.Model.Name = "" }, file: "vllm-spec-qwen-c2.json", line: 19,
			contains: []string{`"Qwen/Qwen3.8-27B-FP8"`, `model_id at ` + sweep.Name + ` line 6 is "facebook/opt-125m"`}},
		{name: "vllm: one point twice", format: FormatVLLMBench, files: []ToolFile{sweep, toolFile(t, "vllm-opt125m-c2.json")},
			meta: opt125, file: "vllm-opt125m-c2.json", line: 1,
			contains: []string{"context 32 tokens at concurrency 2 was measured twice", sweep.Name + " line 1"}},
		{name: "vllm: a set request rate", format: FormatVLLMBench, meta: opt125,
			files: []ToolFile{edited(t, sweep, `"request_rate": "inf"`, `"request_rate": 5.0`)}, file: sweep.Name, line: 9,
			contains: []string{"request_rate is 5.0", "--request-rate inf"}},
		{name: "vllm: fewer prompts than the concurrency", format: FormatVLLMBench, meta: opt125,
			files: []ToolFile{edited(t, sweep, `"max_concurrency": 2`, `"max_concurrency": 16`)}, file: sweep.Name, line: 8,
			contains: []string{"num_prompts 8 is below max_concurrency 16"}},
		{name: "sglang jsonl: fewer requests than the concurrency", format: FormatVLLMBench, // it writes no num_prompts
			files: []ToolFile{{Name: "sglang.jsonl", Data: []byte(`{"backend": "sglang", "request_rate": Infinity, "max_concurrency": 16, "duration": 3.73, "completed": 20, "total_input_tokens": 10240, "total_output_tokens": 5120, "output_throughput": 1370.99}
{"backend": "sglang", "request_rate": Infinity, "max_concurrency": 32, "duration": 2.12, "completed": 20, "total_input_tokens": 10240, "total_output_tokens": 5120, "output_throughput": 2410.71}`)}},
			file: "sglang.jsonl", line: 2, contains: []string{"20 requests completed", "records neither num_prompts nor failed", "fewer than max_concurrency 32", "never reached", "--num-prompts"}},
		{name: "sglang jsonl: a mean in flight above the limit", format: FormatVLLMBench,
			files: []ToolFile{{Name: "sglang.jsonl", Data: []byte(`{"backend": "sglang", "request_rate": Infinity, "max_concurrency": 16, "duration": 3.73, "completed": 20, "total_input_tokens": 10240, "total_output_tokens": 5120, "output_throughput": 1370.99, "concurrency": 16.5}`)}},
			file:  "sglang.jsonl", line: 1, contains: []string{"concurrency 16.5 is above max_concurrency 16", "cannot exceed the limit"}},
		{name: "vllm: NaN throughput", format: FormatVLLMBench, meta: opt125,
			files: []ToolFile{edited(t, sweep, `"output_throughput": 93.74767963046673`, `"output_throughput": NaN`)}, file: sweep.Name, line: 19,
			contains: []string{`output_throughput is "NaN": want a number`}},
		{name: "vllm: Infinity duration", format: FormatVLLMBench, meta: opt125,
			files: []ToolFile{edited(t, sweep, `"duration": 1.3653671270003542`, `"duration": Infinity`)}, file: sweep.Name, line: 12,
			contains: []string{`duration is "inf": want a number`}},
		{name: "vllm: output_throughput missing", format: FormatVLLMBench, meta: opt125,
			files: []ToolFile{edited(t, sweep, `"output_throughput"`, `"output_tps"`)}, file: sweep.Name, line: 1,
			contains: []string{"output_throughput is missing"}},
		{name: "vllm: completed a string", format: FormatVLLMBench, meta: opt125,
			files: []ToolFile{edited(t, sweep, `"completed": 8`, `"completed": "8"`)}, file: sweep.Name, line: 13,
			contains: []string{`completed is "8": want a number`}},
		{name: "vllm: fractional count", format: FormatVLLMBench, meta: opt125,
			files: []ToolFile{edited(t, sweep, `"total_output_tokens": 128`, `"total_output_tokens": 128.5`)}, file: sweep.Name, line: 16,
			contains: []string{"want a whole number"}},
		{name: "vllm: key twice", format: FormatVLLMBench, meta: opt125,
			files: []ToolFile{edited(t, sweep, `"failed": 0`, `"completed": 0`)}, file: sweep.Name, line: 14,
			contains: []string{`"completed" appears twice`}},
		{name: "vllm: not an object after a result", format: FormatVLLMBench, meta: opt125, files: []ToolFile{{Name: "a.json", Data: append(bytes.Clone(sweep.Data), "\n[1, 2]"...)}},
			file: "a.json", line: strings.Count(string(sweep.Data), "\n") + 2, contains: []string{"want a JSON object"}},
		{name: "vllm: neither JSON nor a block", format: FormatVLLMBench, files: []ToolFile{{Name: "a.json", Data: []byte("\n[1, 2]")}},
			file: "a.json", contains: []string{"no result", "--save-result", `"Serving Benchmark Result" block`}},
		{name: "vllm: empty file", format: FormatVLLMBench, files: []ToolFile{{Name: "a.json", Data: []byte(" \n")}},
			file: "a.json", contains: []string{"no result"}},
		{name: "vllm: cut short", format: FormatVLLMBench, meta: opt125, files: []ToolFile{{Name: "a.json", Data: sweep.Data[:300]}},
			file: "a.json", line: 12, contains: []string{"ends early"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			meta := toolMeta()
			if tt.meta != nil {
				tt.meta(&meta)
			}
			_, err := FromTool(tt.format, meta, tt.files, tt.opts)
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T), want a *ParseError", err, err)
			}
			if pe.File != tt.file || pe.Line != tt.line {
				t.Errorf("at %q line %d, want %q line %d: %v", pe.File, pe.Line, tt.file, tt.line, err)
			}
			for _, s := range tt.contains {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%q does not say %q", err, s)
				}
			}
		})
	}
}

// TestFromToolSampleMeta runs the sample META.json files docs/submitting.md shows
// with their fixtures: the result must be a run the store accepts.
func TestFromToolSampleMeta(t *testing.T) {
	tests := []struct {
		meta, format string
		files        []string
	}{
		{"llama-pr16894.META.json", FormatLlamaBatchedBench, []string{"llama-pr16894-qwen2-7b.md"}},
		{"vllm-sweep.META.json", FormatVLLMBench, []string{"vllm-sweep-opt125m-c2.json"}},
	}
	for _, tt := range tests {
		t.Run(tt.meta, func(t *testing.T) {
			dec := json.NewDecoder(bytes.NewReader(toolFile(t, tt.meta).Data))
			dec.DisallowUnknownFields()
			var meta store.Run
			if err := dec.Decode(&meta); err != nil {
				t.Fatal(err)
			}
			var files []ToolFile
			for _, name := range tt.files {
				files = append(files, toolFile(t, name))
			}
			r, err := FromTool(tt.format, meta, files, ToolOptions{})
			if err != nil {
				t.Fatal(err)
			}
			checkToolRun(t, r)
		})
	}
}

// TestLlamaTGPerCell: rows of different TG are one run as long as each
// (PP, B) has one TG; each cell reads its own.
func TestLlamaTGPerCell(t *testing.T) {
	multi := toolFile(t, "llama-readme-multi-tg.md")
	mixed := ToolFile{Name: "mixed.md", Data: bytes.ReplaceAll(multi.Data, []byte("|   128 |    256 |"), []byte("|   512 |    256 |"))}
	r, err := FromTool(FormatLlamaBatchedBench, store.Run{}, []ToolFile{mixed}, ToolOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Decode) != 12 {
		t.Fatalf("%d cells, want 12", len(r.Decode))
	}
	for _, c := range r.Decode {
		// From the fixture: PP 128 B 8 has T_TG 7.344 s for TG 128; PP 512 B 8
		// (was 128) has T_TG 15.110 s for TG 256.
		switch {
		case c.ContextTokens == 128 && c.Concurrency == 8:
			if want := 1000 * 7.344 / 128; math.Abs(*c.TBTMs-want) > 1e-9 || *c.OutputTokens != 8*128 {
				t.Errorf("PP 128 B 8: tbt %v output %v, want %v, %d", *c.TBTMs, *c.OutputTokens, want, 8*128)
			}
		case c.ContextTokens == 512 && c.Concurrency == 8:
			if want := 1000 * 15.110 / 256; math.Abs(*c.TBTMs-want) > 1e-9 || *c.OutputTokens != 8*256 {
				t.Errorf("PP 512 B 8: tbt %v output %v, want %v, %d", *c.TBTMs, *c.OutputTokens, want, 8*256)
			}
		}
	}
}

// TestVLLMPythonWords: Python's json writes NaN and Infinity for values it
// could not compute, and SGLang's bench_serving writes an unlimited request
// rate as Infinity. Those are read (an unlimited rate is a fixed
// concurrency; NaN in a value not needed is absent); the same words inside
// strings are left alone.
func TestVLLMPythonWords(t *testing.T) {
	sweep := toolFile(t, "vllm-sweep-opt125m-c2.json")
	f := edited(t, sweep, `"request_rate": "inf"`, `"request_rate": Infinity`)
	f = edited(t, f, `"std_ttft_ms": 309.1373405846827`, `"std_ttft_ms": NaN`)
	f = edited(t, f, `"rtfx": 0.0`, `"rtfx": -Infinity, "note": "NaN \"Infinity\""`)
	meta := toolMeta()
	meta.Model.Name = "facebook/opt-125m"
	r, err := FromTool(FormatVLLMBench, meta, []ToolFile{f}, ToolOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := FromTool(FormatVLLMBench, meta, []ToolFile{sweep}, ToolOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Decode) != 1 || *r.Decode[0].TotalTokS != *want.Decode[0].TotalTokS {
		t.Errorf("read %+v, want the unedited result's cell", r.Decode)
	}
	if got := string(pythonWords([]byte(`{"a": "x\"NaN", "b": NaN, "c": -Infinity}`))); got != `{"a": "x\"NaN", "b": "NaN", "c": "-inf"}` {
		t.Errorf("pythonWords: %s", got)
	}
}

// TestFromToolSGLangConcurrency: SGLang writes the mean number of requests
// in flight as "concurrency" (JSONL) or "Concurrency:" (a printed block);
// it is the run's average active requests, beside the limit it was held to.
func TestFromToolSGLangConcurrency(t *testing.T) {
	line := `{"backend": "sglang", "request_rate": Infinity, "max_concurrency": 16, "duration": 3.73, "completed": 20, "total_input_tokens": 10240, "total_output_tokens": 5120, "output_throughput": 1370.99, "median_ttft_ms": 179.59, "median_tpot_ms": 7.26, "concurrency": 10.500797695844993}`
	r, err := FromTool(FormatVLLMBench, toolMeta(), []ToolFile{{Name: "sglang.jsonl", Data: []byte(line)}}, ToolOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkToolRun(t, r)
	sameF(t, "avg_active_requests", toolDecode(t, r, 512, 16).AvgActiveRequests, 10.500797695844993)

	// vLLM's --metadata concurrency=16 is text, and a mean of 0 or null
	// measured nothing: the cell goes without.
	for _, v := range []string{`"16"`, `0`, `null`, `NaN`} {
		other := strings.Replace(line, `10.500797695844993`, v, 1)
		r, err := FromTool(FormatVLLMBench, toolMeta(), []ToolFile{{Name: "sglang.jsonl", Data: []byte(other)}}, ToolOptions{})
		if err != nil {
			t.Fatalf("concurrency %s: %v", v, err)
		}
		if a := toolDecode(t, r, 512, 16).AvgActiveRequests; a != nil {
			t.Errorf("concurrency %s: avg_active_requests = %v, want absent", v, *a)
		}
	}

	printed, err := FromTool(FormatVLLMBench, toolMeta(), []ToolFile{toolFile(t, "sglang-cookbook-qwen3-235b-chat.md")}, ToolOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range printed.Decode {
		want := map[int]float64{1: 1.00, 16: 13.61, 100: 90.50}[c.Concurrency] // the blocks' Concurrency lines
		sameF(t, fmt.Sprintf("avg_active_requests at %d", c.Concurrency), c.AvgActiveRequests, want)
	}
}
