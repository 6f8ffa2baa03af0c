package ingest

import (
	"cmp"
	"slices"
	"testing"

	"github.com/matrixd/matrixd/store"
)

// checkToolResult holds any FromTool outcome to its promises: errors are
// *ParseErrors and a returned run's cells are in canonical order.
func checkToolResult(t *testing.T, r store.Run, err error) {
	t.Helper()
	if err != nil {
		if _, ok := err.(*ParseError); !ok {
			t.Fatalf("error %v (%T) is not a *ParseError", err, err)
		}
		return
	}
	if !slices.IsSortedFunc(r.Decode, func(a, b store.DecodeCell) int {
		return cmp.Or(cmp.Compare(a.ContextTokens, b.ContextTokens), cmp.Compare(a.Concurrency, b.Concurrency))
	}) {
		t.Fatalf("decode cells out of order: %+v", r.Decode)
	}
	if !slices.IsSortedFunc(r.Prefill, func(a, b store.PrefillCell) int { return cmp.Compare(a.ContextTokens, b.ContextTokens) }) {
		t.Fatalf("prefill cells out of order: %+v", r.Prefill)
	}
}

func FuzzLlamaBatchedBench(f *testing.F) {
	for _, name := range []string{"llama-readme-multi-tg.md", "llama-readme.jsonl", "llama-pr16894-qwen2-7b.md", "llama-pr25917-kimi-k3.log"} {
		b := toolFile(f, name).Data
		f.Add(b, 0)
		f.Add(b, 128)
		f.Add(b[:len(b)/2], 256)
	}
	f.Fuzz(func(t *testing.T, b []byte, tg int) {
		r, err := FromTool(FormatLlamaBatchedBench, toolMeta(), []ToolFile{{Name: "bench.md", Data: b}}, ToolOptions{TG: tg})
		checkToolResult(t, r, err)
	})
}

func FuzzVLLMBench(f *testing.F) {
	for _, name := range []string{"vllm-sweep-opt125m-c2.json", "vllm-opt125m-c2.json", "vllm-spec-qwen-c2.json", "vllm-all-failed.json", "vllm-request-rate.jsonl",
		"sglang-cookbook-qwen3-235b-chat.md", "vllm-gpustack-qwen3-8b-c4.md", "vllm-pp-local-c32.log", "vllm-dennislee-qwen2-7b-rate-inf.md"} {
		b := toolFile(f, name).Data
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		meta := toolMeta()
		meta.Model.Name = ""
		r, err := FromTool(FormatVLLMBench, meta, []ToolFile{{Name: "result.json", Data: b}}, ToolOptions{})
		checkToolResult(t, r, err)
	})
}

func FuzzGridCSV(f *testing.F) {
	f.Add([]byte("# c\ncontext_tokens,concurrency,total_tok_s,ttft_ms\n128,1,50,30\n128,4,180,\n"))
	f.Add([]byte("concurrency,total_tok_s,context_tokens\n\"1\",2,3\n"))
	f.Add([]byte("context_tokens,concurrency\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := FromTool(FormatGridCSV, toolMeta(), []ToolFile{{Name: "grid.csv", Data: b}}, ToolOptions{})
		checkToolResult(t, r, err)
	})
}

// checkToolRuns holds any FromToolRuns outcome to its promises, as
// checkToolResult does for one run.
func checkToolRuns(t *testing.T, runs []store.Run, err error) {
	t.Helper()
	if err != nil {
		checkToolResult(t, store.Run{}, err)
		return
	}
	if len(runs) == 0 {
		t.Fatal("no runs and no error")
	}
	for _, r := range runs {
		checkToolResult(t, r, nil)
	}
}

func FuzzDS4CSV(f *testing.F) {
	for _, name := range []string{"antirez-ds4/gb10.csv", "antirez-ds4/m5_max.csv"} {
		b := dataFile(f, name).Data
		f.Add(b)
		f.Add(b[:len(b)/3])
	}
	f.Add([]byte("ctx_tokens,gen_tokens,gen_tps\n2048,128,\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		runs, err := FromToolRuns(FormatDS4Bench, toolMeta(), []ToolFile{{Name: "m.csv", Data: b}}, ToolOptions{})
		checkToolRuns(t, runs, err)
	})
}

func FuzzLlamaBench(f *testing.F) {
	b := dataFile(f, "ggml-org-llama.cpp/dgx-spark.llama-bench.md").Data
	f.Add(b)
	f.Add(b[:len(b)/2])
	f.Add([]byte(llamaBenchJSONSample))
	f.Add([]byte(`{"model_type": "m", "n_prompt": 0, "n_gen": 32, "n_depth": 512, "avg_ts": 5}` + "\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		runs, err := FromToolRuns(FormatLlamaBench, store.Run{}, []ToolFile{{Name: "b.md", Data: b}}, ToolOptions{})
		checkToolRuns(t, runs, err)
	})
}

func FuzzLlmfit(f *testing.F) {
	for _, name := range []string{"llmfit-community/apple-m1-max/1786995154-7cbcebe0.json", "llmfit-community/tesla-t4/1784112256-43b7d49b.json"} {
		b := dataFile(f, name).Data
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		runs, err := FromToolRuns(FormatLlmfit, store.Run{}, []ToolFile{{Name: "s.json", Data: b}}, ToolOptions{})
		checkToolRuns(t, runs, err)
	})
}

func FuzzLocalMaxxing(f *testing.F) {
	f.Add([]byte(localMaxxingSample))
	f.Add([]byte(`[{"promptTokens": 40, "batchSize": 1, "tokSOut": 5, "model": {"hfId": "m"}, "hardware": {"gpuName": "G"}, "engine": {"engineName": "e"}}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		runs, err := FromToolRuns(FormatLocalMaxxing, store.Run{}, []ToolFile{{Name: "r.json", Data: b}}, ToolOptions{})
		checkToolRuns(t, runs, err)
	})
}

func FuzzDetect(f *testing.F) {
	f.Add([]byte(localMaxxingSample))
	f.Add([]byte(llamaBenchJSONSample))
	f.Add([]byte("ctx_tokens,gen_tokens,gen_tps\n"))
	f.Add([]byte("| model | test | t/s |\n| PP | TG | B |\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		format, err := Detect(b)
		if err != nil && format != "" {
			t.Fatalf("Detect = %q and %v", format, err)
		}
		if format != "" && !ReadsEachFile(format) {
			t.Fatalf("Detect = %q, a format whose runs are made of several files", format)
		}
	})
}

func FuzzInferenceX(f *testing.F) {
	b := dataFile(f, "semianalysis-inferencex/agg_kimik2.5_8k1k_int4_vllm_tp8-ep1-dpafalse_disagg-false_spec-mtp_conc64_MI355-gbt350-odcdh5-wbb3.json").Data
	f.Add(b)
	f.Add(b[:len(b)/2])
	f.Fuzz(func(t *testing.T, b []byte) {
		runs, err := FromToolRuns(FormatInferenceX, store.Run{}, []ToolFile{{Name: "a.json", Data: b}, {Name: "b.json", Data: b}}, ToolOptions{})
		checkToolRuns(t, runs, err)
	})
}
