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
