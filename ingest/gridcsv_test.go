package ingest

import (
	"errors"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/store"
)

func TestGridCSV(t *testing.T) {
	src := `# LMDeploy profile_generation, written out by hand
concurrency, context_tokens ,total_tok_s,ttft_ms,tbt_ms,per_request_tok_s,output_tokens,duration_s
1,2048,50.5,120,19.8,50.5,,
4,2048,180,,,,,
1,128,52,31.5,19.2,52.08,2101,40.4

16,128,640.25,90,25,40,,
`
	meta := toolMeta()
	meta.Method = &store.Method{Class: store.MethodStaticBatch, Prefill: store.PrefillIncluded}
	r, err := FromTool(FormatGridCSV, meta, []ToolFile{{Name: "grid.csv", Data: []byte(src)}}, ToolOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkToolRun(t, r)
	// Without a method or a tool that names one, the run says what to send.
	bare, err := FromTool(FormatGridCSV, toolMeta(), []ToolFile{{Name: "grid.csv", Data: []byte(src)}}, ToolOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ve *store.ValidationError
	if err := bare.Validate(); !errors.As(err, &ve) || ve.Problems[0].Pointer != "/method" || !strings.Contains(ve.Problems[0].Message, "static_batch") {
		t.Errorf("grid-csv without a method: Validate = %v, want a problem at /method naming the classes", err)
	}
	if len(r.Decode) != 4 || len(r.Prefill) != 0 {
		t.Fatalf("got %d decode and %d prefill cells, want 4 and 0", len(r.Decode), len(r.Prefill))
	}
	powered, err := FromTool(FormatGridCSV, meta, []ToolFile{{Name: "grid.csv", Data: []byte("context_tokens,concurrency,total_tok_s,avg_power_w\n128,1,52,287.5\n128,4,190,\n")}}, ToolOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p := toolDecode(t, powered, 128, 1).AvgPowerW; p == nil || *p != 287.5 || toolDecode(t, powered, 128, 4).AvgPowerW != nil {
		t.Fatalf("avg_power_w read as %v", p)
	}
	c := toolDecode(t, r, 128, 1)
	if c.Status != store.StatusValid {
		t.Errorf("status %q", c.Status)
	}
	sameF(t, "total", c.TotalTokS, 52)
	sameF(t, "ttft", c.TTFTMs, 31.5)
	sameF(t, "tbt", c.TBTMs, 19.2)
	sameF(t, "per request", c.PerRequestTokS, 52.08)
	sameI(t, "output", c.OutputTokens, 2101)
	sameF(t, "duration", c.DurationS, 40.4)
	c = toolDecode(t, r, 2048, 4)
	sameF(t, "total", c.TotalTokS, 180)
	if c.TTFTMs != nil || c.TBTMs != nil || c.OutputTokens != nil || c.DurationS != nil {
		t.Errorf("empty fields were read as values: %+v", c)
	}
	if r.Benchmark.Tool != "" {
		t.Errorf("benchmark.tool = %q: grid-csv names no tool, meta's stays", r.Benchmark.Tool)
	}
}

func TestGridCSVErrors(t *testing.T) {
	tests := []struct {
		name, src string
		line      int
		contains  []string
	}{
		{"no header", "# only comments\n", 0, []string{"no header line"}},
		{"header only", "context_tokens,concurrency,total_tok_s\n", 0, []string{"no cells"}},
		{"unknown column", "context_tokens,concurrency,total_tok_s,tps\n1,1,1,1\n", 1, []string{`unknown column "tps"`, "per_request_tok_s"}},
		{"missing column", "# x\ncontext_tokens,total_tok_s\n", 2, []string{"no concurrency column"}},
		{"twice named", "context_tokens,concurrency,total_tok_s,concurrency\n", 1, []string{`"concurrency" is named twice`}},
		{"short row", "context_tokens,concurrency,total_tok_s\n1,2\n", 2, []string{"2 fields", "3 columns"}},
		{"not whole", "context_tokens,concurrency,total_tok_s\n1.5,2,3\n", 2, []string{`context_tokens "1.5" is not a whole number`}},
		{"negative", "context_tokens,concurrency,total_tok_s\n1,2,-3\n", 2, []string{`total_tok_s "-3"`}},
		{"not finite", "context_tokens,concurrency,total_tok_s,ttft_ms\n1,2,3,Inf\n", 2, []string{`ttft_ms "Inf"`}},
		{"no total", "context_tokens,concurrency,total_tok_s\n1,2,\n", 2, []string{"total_tok_s is required"}},
		{"twice measured", "context_tokens,concurrency,total_tok_s\n1,2,3\n1,2,4\n", 3, []string{"measured twice", "grid.csv line 2"}},
		{"bad quoting", "context_tokens,concurrency,total_tok_s\n1,\"2,3\n", 2, []string{"not CSV"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FromTool(FormatGridCSV, toolMeta(), []ToolFile{{Name: "grid.csv", Data: []byte(tt.src)}}, ToolOptions{})
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *ParseError", err)
			}
			if tt.line != 0 && (pe.File != "grid.csv" || pe.Line != tt.line) {
				t.Errorf("at %s:%d, want grid.csv:%d (%v)", pe.File, pe.Line, tt.line, err)
			}
			for _, c := range tt.contains {
				if !strings.Contains(err.Error(), c) {
					t.Errorf("%q does not say %q", err, c)
				}
			}
		})
	}
	if _, err := FromTool(FormatGridCSV, toolMeta(), []ToolFile{{Name: "g.csv", Data: []byte("context_tokens,concurrency,total_tok_s\n1,1,1\n")}}, ToolOptions{TG: 3}); err == nil || !strings.Contains(err.Error(), "applies only to llama-batched-bench") {
		t.Errorf("TG with grid-csv: %v", err)
	}
}
