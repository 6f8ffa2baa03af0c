package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/store"
)

// readVLLM reads files as vllm-bench output with meta naming the model.
func readVLLM(t *testing.T, files ...ToolFile) (store.Run, error) {
	t.Helper()
	return FromTool(FormatVLLMBench, toolMeta(), files, ToolOptions{})
}

// TestFromToolVLLMPrinted reads the result blocks the tools print, pasted
// into pages and logs, against values read from the fixtures by hand.
func TestFromToolVLLMPrinted(t *testing.T) {
	chat := toolFile(t, "sglang-cookbook-qwen3-235b-chat.md")
	vllm := toolFile(t, "vllm-gpustack-qwen3-8b-c4.md")
	// The two blocks of this log measured the same point; the first is
	// read as concurrency 16 here to hold both.
	pp := toolFile(t, "vllm-pp-local-c32.log")
	pp = edited(t, pp, "# Maximum request concurrency: 32", "# Maximum request concurrency: 16")
	tests := []struct {
		name string
		file ToolFile
		want []vllmWant // context in input, worked out by hand: round(total input / completed)
	}{
		{"SGLang cookbook page, three blocks", chat, []vllmWant{
			{completed: 10, input: 610, output: 4210, conc: 1, duration: 43.56, throughput: 96.65, ttft: 92.18, tpot: 10.12},
			{completed: 80, input: 496, output: 40725, conc: 16, duration: 48.95, throughput: 832.04, ttft: 88.82, tpot: 16.12},
			{completed: 500, input: 500, output: 252162, conc: 100, duration: 92.07, throughput: 2738.78, ttft: 122.68, tpot: 34.04},
		}},
		{"vLLM block, indented in a page", vllm, []vllmWant{
			{completed: 100, input: 233, output: 22061, conc: 4, duration: 44.40, throughput: 496.88, ttft: 60.26, tpot: 7.40},
		}},
		{"older vLLM log: the concurrency before each block, lines commented out", pp, []vllmWant{
			{completed: 32, input: 2048, output: 65536, conc: 16, duration: 150.87, throughput: 434.40, ttft: 7099.88, tpot: 70.23},
			{completed: 32, input: 2048, output: 65536, conc: 32, duration: 198.68, throughput: 329.86, ttft: 6272.98, tpot: 93.99},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := readVLLM(t, tt.file)
			if err != nil {
				t.Fatal(err)
			}
			checkToolRun(t, r)
			if len(r.Decode) != len(tt.want) {
				t.Fatalf("%d cells, want %d", len(r.Decode), len(tt.want))
			}
			tool := vllmTool
			if strings.HasPrefix(tt.name, "SGLang") {
				tool = sglangTool // its blocks say "Max request concurrency"
			}
			if r.Benchmark.Tool != tool || r.Method == nil || r.Method.Class != store.MethodServingSweep {
				t.Errorf("tool %q, method %+v", r.Benchmark.Tool, r.Method)
			}
			for _, w := range tt.want {
				c := toolDecode(t, r, w.input, w.conc)
				sameF(t, "total_tok_s", c.TotalTokS, w.throughput)
				sameF(t, "tbt_ms", c.TBTMs, w.tpot)
				sameF(t, "per_request_tok_s", c.PerRequestTokS, 1000/w.tpot)
				sameF(t, "ttft_ms", c.TTFTMs, w.ttft)
				sameF(t, "duration_s", c.DurationS, w.duration)
				sameI(t, "completed_requests", c.CompletedRequests, w.completed)
				sameI(t, "output_tokens", c.OutputTokens, w.output)
			}
		})
	}
}

// TestVLLMPrintedAsJSON: the same numbers as a printed block and as the
// JSON give the same run.
func TestVLLMPrintedAsJSON(t *testing.T) {
	tests := []struct {
		name string
		text ToolFile
		json string
	}{
		{"SGLang", toolFile(t, "sglang-cookbook-qwen3-235b-chat.md"),
			`{"backend": "sglang", "request_rate": Infinity, "max_concurrency": 1, "duration": 43.56, "completed": 10, "total_input_tokens": 6101, "total_output_tokens": 4210, "output_throughput": 96.65, "median_ttft_ms": 92.18, "median_tpot_ms": 10.12, "concurrency": 1.00}
{"backend": "sglang", "request_rate": Infinity, "max_concurrency": 16, "duration": 48.95, "completed": 80, "total_input_tokens": 39668, "total_output_tokens": 40725, "output_throughput": 832.04, "median_ttft_ms": 88.82, "median_tpot_ms": 16.12, "concurrency": 13.61}
{"backend": "sglang", "request_rate": Infinity, "max_concurrency": 100, "duration": 92.07, "completed": 500, "total_input_tokens": 249831, "total_output_tokens": 252162, "output_throughput": 2738.78, "median_ttft_ms": 122.68, "median_tpot_ms": 34.04, "concurrency": 90.50}`},
		{"vLLM", toolFile(t, "vllm-gpustack-qwen3-8b-c4.md"),
			`{"request_rate": "inf", "max_concurrency": 4, "duration": 44.40, "completed": 100, "failed": 0, "total_input_tokens": 23260, "total_output_tokens": 22061, "output_throughput": 496.88, "median_ttft_ms": 60.26, "median_tpot_ms": 7.40}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, err := readVLLM(t, tt.text)
			if err != nil {
				t.Fatal(err)
			}
			json, err := readVLLM(t, ToolFile{Name: "result.jsonl", Data: []byte(tt.json)})
			if err != nil {
				t.Fatal(err)
			}
			text.Benchmark.Tool = json.Benchmark.Tool // the blocks name SGLang's tool, the JSON does not
			if !reflect.DeepEqual(text, json) {
				t.Errorf("printed block read as\n%+v\nthe JSON as\n%+v", text, json)
			}
		})
	}
}

func TestFromToolVLLMPrintedErrors(t *testing.T) {
	chat := toolFile(t, "sglang-cookbook-qwen3-235b-chat.md")
	vllm := toolFile(t, "vllm-gpustack-qwen3-8b-c4.md")
	tests := []struct {
		name     string
		files    []ToolFile
		file     string
		line     int
		contains []string
	}{
		{name: "no concurrency: a request rate was measured", files: []ToolFile{toolFile(t, "vllm-dennislee-qwen2-7b-rate-inf.md")},
			file: "vllm-dennislee-qwen2-7b-rate-inf.md", line: 9,
			contains: []string{"no request concurrency in this block", "measured a request rate", "--max-concurrency N"}},
		{name: "SGLang's concurrency not set", files: []ToolFile{edited(t, chat, "Max request concurrency:                 16", "Max request concurrency:                 not set")},
			file: chat.Name, line: 88, contains: []string{"no request concurrency in this block", "request rate inf", "--max-concurrency N"}},
		{name: "a required line missing", files: []ToolFile{edited(t, chat, "Total generated tokens:                  40725\n", "")},
			file: chat.Name, line: 85, contains: []string{`no "Total generated tokens" line in this block`}},
		{name: "SGLang at a set request rate", files: []ToolFile{edited(t, chat, "Traffic request rate:                    inf", "Traffic request rate:                    10.0")},
			file: chat.Name, line: 31, contains: []string{`"Traffic request rate" is 10.0`, `"Max request concurrency" 1 was a cap`, "--request-rate inf"}},
		{name: "vLLM at a set request rate", files: []ToolFile{edited(t, vllm, "    Benchmark duration (s):", "    Request rate configured (RPS):           1.50\n    Benchmark duration (s):")},
			file: vllm.Name, line: 14, contains: []string{`"Request rate configured (RPS)" is 1.50`, "--request-rate inf"}},
		{name: "nothing completed", files: []ToolFile{edited(t, vllm, "Successful requests:                     100", "Successful requests:                     0")},
			file: vllm.Name, line: 12, contains: []string{`"Successful requests" is 0`}},
		{name: "not a number", files: []ToolFile{edited(t, vllm, "44.40", "n/a")},
			file: vllm.Name, line: 14, contains: []string{`"Benchmark duration (s)" is n/a: want a number`}},
		{name: "a count not whole", files: []ToolFile{edited(t, vllm, "22061", "22061.5")},
			file: vllm.Name, line: 16, contains: []string{`"Total generated tokens" is 22061.5: want a whole number`}},
		{name: "a line twice", files: []ToolFile{edited(t, vllm, "    Total input tokens:", "    Successful requests:                     99\n    Total input tokens:")},
			file: vllm.Name, line: 15, contains: []string{`"Successful requests" appears twice in the block that starts at line 11`}},
		{name: "the concurrency before the block contradicts it", files: []ToolFile{{Name: "log.txt",
			Data: bytes.Replace(vllm.Data, []byte("??? info \"Benchmark result\""), []byte("Maximum request concurrency: 8"), 1)}},
			file: "log.txt", line: 13, contains: []string{`"Maximum request concurrency" is 4 here, but line 9 before the block says 8`}},
		{name: "one point twice", files: []ToolFile{toolFile(t, "vllm-pp-local-c32.log")},
			file: "vllm-pp-local-c32.log", line: 31, contains: []string{"context 2048 tokens at concurrency 32 was measured twice", "vllm-pp-local-c32.log line 5"}},
		{name: "one point in two files", files: []ToolFile{vllm, {Name: "again.md", Data: vllm.Data}},
			file: "again.md", line: 11, contains: []string{"measured twice", vllm.Name + " line 11"}},
		{name: "neither JSON nor a block", files: []ToolFile{{Name: "notes.md", Data: []byte("# Results\n\nMaximum request concurrency: 4\n")}},
			file: "notes.md", contains: []string{"no result", "vllm bench serve --save-result", `"Serving Benchmark Result" block`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readVLLM(t, tt.files...)
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

// TestVLLMPrintedTooMany: blocks count against the same bound as results.
func TestVLLMPrintedTooMany(t *testing.T) {
	var b strings.Builder
	for i := range maxToolRows + 1 {
		fmt.Fprintf(&b, "============ Serving Benchmark Result ============\nMax request concurrency: %d\nSuccessful requests: %[1]d\nBenchmark duration (s): 1.00\nTotal input tokens: 8\nTotal generated tokens: 8\nOutput token throughput (tok/s): 8.00\n==================================================\n", i+1)
	}
	_, err := readVLLM(t, ToolFile{Name: "many.log", Data: []byte(b.String())})
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != 8*maxToolRows+1 || !strings.Contains(err.Error(), "more than 4096 rows") {
		t.Errorf("got %v, want more than 4096 rows at line %d", err, 8*maxToolRows+1)
	}
}

// TestVLLMRateThatPacedNothing: a request rate set so high that every
// request arrived within 1 % of the run (9999 written for "all at once")
// measured the concurrency as an unlimited rate does; a rate that spread
// the arrivals over the run is still refused.
func TestVLLMRateThatPacedNothing(t *testing.T) {
	chat := toolFile(t, "sglang-cookbook-qwen3-235b-chat.md")
	want, err := readVLLM(t, chat)
	if err != nil {
		t.Fatal(err)
	}
	const inf = "Traffic request rate:                    inf"
	fast := chat
	fast.Data = bytes.ReplaceAll(chat.Data, []byte(inf), []byte("Traffic request rate:                    9999.0"))
	got, err := readVLLM(t, fast)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Decode, want.Decode) {
		t.Errorf("at 9999 req/s the cells differ from an unlimited rate's")
	}
	// 500 requests at 50 req/s arrive over 10 s of a 92 s run: paced.
	slow := chat
	slow.Data = bytes.ReplaceAll(chat.Data, []byte(inf), []byte("Traffic request rate:                    50.0"))
	_, err = readVLLM(t, slow)
	var pe *ParseError
	if !errors.As(err, &pe) || !strings.Contains(pe.Msg, "came at a set rate") {
		t.Errorf("at 50 req/s: %v, want a set rate refused", err)
	}
	// The same in the JSON: num_prompts over the rate, against the duration.
	js := ToolFile{Name: "r.json", Data: []byte(`{"request_rate": 1000, "num_prompts": 100, "max_concurrency": 4, "duration": 44.40, "completed": 100, "total_input_tokens": 23260, "total_output_tokens": 22061, "output_throughput": 496.88}`)}
	if _, err := readVLLM(t, js); err != nil {
		t.Errorf("100 prompts at 1000 req/s in a 44 s run: %v", err)
	}
	js.Data = bytes.Replace(js.Data, []byte(`"request_rate": 1000`), []byte(`"request_rate": 100`), 1)
	if _, err := readVLLM(t, js); !errors.As(err, &pe) || !strings.Contains(pe.Msg, "set rate") {
		t.Errorf("100 prompts at 100 req/s in a 44 s run: %v, want a set rate refused", err)
	}
}

// TestVLLMPrintedCutOffAndShort: a block cut off before its latencies is
// refused (one printed without them still ends in its line of '='), as is
// a block whose requests were fewer than its concurrency; meta may name
// SGLang's tool.
func TestVLLMPrintedCutOffAndShort(t *testing.T) {
	chat := toolFile(t, "sglang-cookbook-qwen3-235b-chat.md")
	header := 1 + bytes.Count(chat.Data[:bytes.Index(chat.Data, []byte(vllmHeader))], []byte("\n"))
	cut := chat.Data[:bytes.Index(chat.Data, []byte("---------------Time to First Token"))]
	_, err := readVLLM(t, ToolFile{Name: "cut.md", Data: cut})
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != header || !strings.Contains(pe.Msg, "looks cut off") || !strings.Contains(pe.Msg, `"Median TTFT (ms)"`) {
		t.Errorf("a block cut off before its TTFT: %v, want it refused at line %d", err, header)
	}
	// The same lines closed by the block's last line: printed without the
	// percentile metrics, read without TTFT and TBT.
	closed := append(append([]byte{}, cut...), []byte("==================================================\n")...)
	r, err := readVLLM(t, ToolFile{Name: "closed.md", Data: closed})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Decode) != 1 || r.Decode[0].TTFTMs != nil || r.Decode[0].TBTMs != nil || r.Decode[0].TotalTokS == nil {
		t.Errorf("a closed block without latencies: %+v", r.Decode)
	}
	// 10 requests at a concurrency of 16 never ran 16 at once.
	short := edited(t, chat, "Max request concurrency:                 1\n", "Max request concurrency:                 16\n")
	short = edited(t, short, "Max request concurrency:                 16\nSuccessful requests:                     80", "Max request concurrency:                 32\nSuccessful requests:                     80")
	_, err = readVLLM(t, short)
	if !errors.As(err, &pe) || !strings.Contains(pe.Msg, "10 requests completed") || !strings.Contains(pe.Msg, "fewer than \"Max request concurrency\" 16") {
		t.Errorf("10 requests at concurrency 16: %v, want refused", err)
	}
	meta := toolMeta()
	meta.Benchmark.Tool = "sglang.bench_serving"
	if r, err := FromTool(FormatVLLMBench, meta, []ToolFile{chat}, ToolOptions{}); err != nil || r.Benchmark.Tool != "sglang.bench_serving" {
		t.Errorf("meta naming sglang.bench_serving: %v (tool %q)", err, r.Benchmark.Tool)
	}
}
