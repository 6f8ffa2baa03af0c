package trust

import (
	"strings"
	"testing"
)

func pi(v int) *int { return &v }

// flagsOf runs every check of r and returns the codes flagged.
func flagsOf(r Run, gpu *GPU, model *Model) []string {
	var out []string
	for _, f := range Assess(r, gpu, model).Flags {
		out = append(out, f.Code)
	}
	return out
}

// TestCalibratedBound: the cap is the family's highest real share × the
// margin, never below the physical ceiling; a family no real run covers
// keeps the uncalibrated × 1.5; the detail says which.
func TestCalibratedBound(t *testing.T) {
	for _, tt := range []struct {
		engine string
		bits   float64
		cap    float64
		runs   bool
	}{
		{"llama.cpp", 8.5, 0.90 * CalibrationMargin, true},
		{"llama.cpp", 4.5, PhysicalCeiling, true},
		{"vLLM", 16, PhysicalCeiling, true},
		{"TensorRT-LLM", 16, PhysicalCeiling, true},
		{"TensorRT-LLM", 4, UncalibratedCap, false},
		{"mlc-llm", 16, UncalibratedCap, false},
		{"", 16, UncalibratedCap, false},
	} {
		c := Calibrated(tt.engine, tt.bits)
		if c.Cap != tt.cap || (c.Runs > 0) != tt.runs {
			t.Errorf("Calibrated(%q, %g) = %+v, want cap %g, calibrated %v", tt.engine, tt.bits, c, tt.cap, tt.runs)
		}
	}
	gpu := &GPU{Name: "g", BandwidthGBs: 1000}
	model := &Model{Name: "m", ParamsB: 8}
	run := func(engine string, tok float64) Run {
		return Run{Model: "m", Quantization: "BF16", Engine: engine, GPU: "g", GPUCount: 1,
			Cells: []Cell{{Concurrency: 1, TotalTokS: f(tok), PerRequestTokS: f(tok)}}}
	}
	// The physical bound: 1000 GB/s ÷ 16 GB = 62.5 tok/s.
	for _, tt := range []struct {
		engine  string
		tok     float64
		flagged bool
	}{
		{"vLLM", 68, false},        // 109 % of peak: within the ceiling
		{"vLLM", 70, true},         // 112 %: above vLLM's 1.1
		{"TensorRT-LLM", 70, true}, // the same for a calibrated family
		{"some-engine", 70, false}, // uncalibrated: × 1.5
		{"some-engine", 95, true},  // 152 %
	} {
		rep := Assess(run(tt.engine, tt.tok), gpu, model)
		if rep.Flagged != tt.flagged {
			t.Errorf("%s at %g tok/s: flagged %v, want %v (%+v)", tt.engine, tt.tok, rep.Flagged, tt.flagged, rep.Checks[0])
		}
	}
	if d := Assess(run("vLLM", 30), gpu, model).Checks[0].Detail; !strings.Contains(d, "vLLM at 16 bits") || !strings.Contains(d, "one GPU") {
		t.Errorf("detail %q does not say the calibration and the split", d)
	}
}

// TestSplit: multi-GPU runs are held per GPU with the split stated: the
// tensor-parallel size where the launch states it, else every GPU.
func TestSplit(t *testing.T) {
	gpu := &GPU{Name: "g", BandwidthGBs: 1000}
	model := &Model{Name: "m", ParamsB: 70}
	r := Run{Model: "m", Quantization: "BF16", Engine: "vLLM", GPU: "g", GPUCount: 8,
		Cells: []Cell{{Concurrency: 1, TotalTokS: f(60), PerRequestTokS: f(60)}}}
	// 8 GPUs: 8000 GB/s ÷ 140 GB = 57 tok/s physical, 63 with the ceiling.
	if rep := Assess(r, gpu, model); rep.Flagged || !strings.Contains(rep.Checks[0].Detail, "split not stated") {
		t.Errorf("8 GPUs, split unstated: %+v", rep)
	}
	r.TensorParallel = 4 // two copies of TP4: one request reads with 4 GPUs
	if rep := Assess(r, gpu, model); !rep.Flagged || !strings.Contains(rep.Flags[0].Message, "tensor parallel over 4 GPUs") {
		t.Errorf("TP4 on 8 GPUs at 60 tok/s: %+v, want flagged with the split", rep)
	}
	for cmd, want := range map[string]int{
		"vllm serve m --tensor-parallel-size 4 --data-parallel-size 2": 4,
		"python -m sglang.launch_server --model m --tp 8":              8,
		"sglang serve --model-path m --tp-size=2":                      2,
		"vllm serve m --pipeline-parallel-size 2":                      0,
	} {
		if got := TensorParallel(cmd, nil); got != want {
			t.Errorf("TensorParallel(%q) = %d, want %d", cmd, got, want)
		}
	}
	if got := TensorParallel("", map[string]string{"tp": "2"}); got != 2 {
		t.Errorf("TensorParallel of flag tp 2 = %d", got)
	}
	// Pipeline stages: a token passes them in turn, so 8 GPUs in 2 stages
	// read one request's weights with 4 GPUs' bandwidth, and 2 in 2 with
	// one's.
	for _, tc := range []struct {
		cmd             string
		gpus, pp, split int
	}{
		{"vllm serve m --pipeline-parallel-size 2", 2, 2, 1},
		{"vllm serve m --pipeline-parallel-size=2", 8, 2, 4},
		{"python -m sglang.launch_server --model m --pp 4", 8, 4, 2},
		{"vllm serve m --tensor-parallel-size 4 --pipeline-parallel-size 2", 8, 2, 4},
		{"vllm serve m", 2, 0, 2},
	} {
		run := Run{GPUCount: tc.gpus, TensorParallel: TensorParallel(tc.cmd, nil), PipelineParallel: PipelineParallel(tc.cmd, nil)}
		if run.PipelineParallel != tc.pp || Split(run) != tc.split {
			t.Errorf("%q on %d GPUs: pipeline %d, split %d; want %d and %d", tc.cmd, tc.gpus, run.PipelineParallel, Split(run), tc.pp, tc.split)
		}
	}
	r.TensorParallel, r.PipelineParallel, r.GPUCount = 0, 2, 2
	r.Cells[0].TotalTokS, r.Cells[0].PerRequestTokS = f(10), f(10)
	if rep := Assess(r, gpu, model); !strings.Contains(rep.Checks[0].Detail, "2 pipeline stages") {
		t.Errorf("PP2 on 2 GPUs: %+v, want the split said", rep)
	}
	if got := LaunchQuantization("python -m sglang.launch_server --quantization w8a8_fp8 --tp 2", nil); got != "w8a8_fp8" {
		t.Errorf("LaunchQuantization = %q", got)
	}
}

// TestConsistency: total vs per-request × active both ways, and TBT vs
// per-request speed, each with its measured tolerance.
func TestConsistency(t *testing.T) {
	cell := func(total, perReq, tbt float64, conc int) Cell {
		c := Cell{Concurrency: conc, TotalTokS: f(total), PerRequestTokS: f(perReq)}
		if tbt > 0 {
			c.TBTMs = f(tbt)
		}
		return c
	}
	for _, tt := range []struct {
		name string
		cell Cell
		want string // the code flagged, "" for none
	}{
		{"consistent", cell(400, 50, 20, 8), ""},
		{"serving sweep with ramp-up", cell(100, 50, 20, 8), ""}, // 0.25 of 8 × 50
		{"totals over per-request × active", cell(800, 50, 20, 8), CodeTotalVsPerRequest},
		{"per-request ×20, total unchanged", cell(400, 1000, 1, 8), CodeTotalVsPerRequest},
		{"per-request over 1000 / TBT", cell(400, 50, 40, 8), CodeTBTVsPerRequest}, // 50 × 40 / 1000 = 2
		{"TTFT-heavy per-request speed", cell(200, 25, 20, 8), ""},                 // 0.5 of 1000 / TBT
		{"per-request far below 1000 / TBT", cell(30, 4, 20, 8), CodeTBTVsPerRequest},
	} {
		got := flagsOf(Run{Cells: []Cell{tt.cell}}, nil, nil)
		if (tt.want == "" && len(got) > 0) || (tt.want != "" && (len(got) == 0 || got[0] != tt.want)) {
			t.Errorf("%s: flags %v, want %q", tt.name, got, tt.want)
		}
	}
	// A cell of 32-token requests is not held to the low side: its TBT is a
	// median of a few bunched gaps.
	short := cell(167.7, 3642.7, 0.2745, 16)
	short.OutputTokens, short.CompletedRequests = pi(640), pi(20)
	if got := flagsOf(Run{Cells: []Cell{short}}, nil, nil); len(got) > 0 {
		t.Errorf("a 32-token cell: flags %v, want none", got)
	}
	// A serving sweep's concurrency is a limit: a published sweep at
	// concurrency 1024 whose client kept about 30 requests in flight
	// reads 2371 tok/s in total at 79.1 tok/s a request (0.029 of
	// 1024 × 79.1). Its low side is judged only where the requests in
	// flight are stated; the high side always.
	paced := cell(2371.2, 79.1, 0, 1024)
	for _, tc := range []struct {
		name   string
		class  string
		active *float64
		want   string
	}{
		{"serving sweep, active not stated", "serving_sweep", nil, ""},
		{"serving sweep, 1024 active stated", "serving_sweep", f(1024), CodeTotalVsPerRequest},
		{"sustained decode holds its concurrency", "sustained_decode", nil, CodeTotalVsPerRequest},
	} {
		c := paced
		c.AvgActiveRequests = tc.active
		got := flagsOf(Run{Class: tc.class, Cells: []Cell{c}}, nil, nil)
		if (tc.want == "" && len(got) > 0) || (tc.want != "" && (len(got) == 0 || got[0] != tc.want)) {
			t.Errorf("%s: flags %v, want %q", tc.name, got, tc.want)
		}
	}
	over := cell(2371.2*100, 79.1, 0, 8)
	if got := flagsOf(Run{Class: "serving_sweep", Cells: []Cell{over}}, nil, nil); len(got) == 0 {
		t.Error("a serving sweep whose total is 375× per-request × concurrency: not flagged")
	}
	rep := Assess(Run{Class: "serving_sweep", Cells: []Cell{paced}}, nil, nil)
	if d := rep.Checks[1].Detail; !strings.Contains(d, "the low side is not judged") {
		t.Errorf("a serving sweep's totals detail %q does not say the low side is not judged", d)
	}
}

// TestMethodShape: a sustained_decode run whose requests produce a
// burst's few tokens is flagged, with the detail saying how many.
func TestMethodShape(t *testing.T) {
	burst := Run{Class: "sustained_decode", Cells: []Cell{{Concurrency: 4, TotalTokS: f(400), PerRequestTokS: f(100), OutputTokens: pi(128), DurationS: f(0.32)}}}
	rep := Assess(burst, nil, nil)
	if !rep.Flagged || rep.Flags[0].Code != CodeMethodShape || !strings.Contains(rep.Flags[0].Message, "32 tokens each in 0.3 s") {
		t.Errorf("a 32-token sustained_decode: %+v", rep)
	}
	sustained := Run{Class: "sustained_decode", MeasurementS: f(30), Cells: []Cell{{Concurrency: 4, TotalTokS: f(400), PerRequestTokS: f(100)}}}
	if rep := Assess(sustained, nil, nil); rep.Flagged {
		t.Errorf("30 s of sustained decode: %+v", rep)
	}
	slow := Run{Class: "sustained_decode", Cells: []Cell{{Concurrency: 64, TotalTokS: f(128), PerRequestTokS: f(2), OutputTokens: pi(3840), DurationS: f(30)}}}
	if rep := Assess(slow, nil, nil); rep.Flagged {
		t.Errorf("30 s at 2 tok/s a request (60 tokens each): %+v", rep)
	}
	stated := Run{Class: "sustained_decode", OutputTokensPerRequest: pi(32), Cells: []Cell{{Concurrency: 1, TotalTokS: f(50), PerRequestTokS: f(50)}}}
	if rep := Assess(stated, nil, nil); !rep.Flagged {
		t.Errorf("sustained_decode stating 32 output tokens: %+v", rep)
	}
	same := burst
	same.Class = "batched_burst"
	if rep := Assess(same, nil, nil); rep.Flagged {
		t.Errorf("the same cells as a batched_burst: %+v", rep)
	}
}
