package trust

import (
	"strings"
	"testing"
)

func TestBits(t *testing.T) {
	for _, tt := range []struct {
		q    string
		bits float64
		ok   bool
	}{
		{"AutoRound W4A16", 4, true}, {"AWQ 4-bit", 4, true}, {"Q4_K", 4.5, true}, {"QAT Q4_0", 4.5, true}, {"Q8_0", 8.5, true}, {"Q4_K_M", 4.5, true}, {"Q2_K", 2.625, true},
		{"IQ2_XS", 2, true}, {"MXFP4", 4, true}, {"NVFP4", 4, true}, {"FP8", 8, true}, {"FP16", 16, true}, {"BF16", 16, true},
		{"GPTQ", 0, false}, {"", 0, false}, {"int4_per_token_head", 4, true}, {"Q6_K", 6.5625, true}, {"Q5_K_S", 5.5, true}, {"IQ4_XS", 4, true},
	} {
		bits, ok := Bits(tt.q)
		if bits != tt.bits || ok != tt.ok {
			t.Errorf("Bits(%q) = %v %v, want %v %v", tt.q, bits, ok, tt.bits, tt.ok)
		}
	}
}

func TestSpecDecode(t *testing.T) {
	for _, tt := range []struct {
		command string
		flags   map[string]string
		notes   []string
		want    bool
	}{
		{"vllm serve m", nil, []string{"Untuned out-of-the-box baseline. Spec decode: none. KV cache: int4_per_token_head"}, false},
		{"vllm serve m --speculative-config '{\"method\":\"eagle3\"}'", nil, nil, true},
		{"llama-server -m a.gguf -md draft.gguf", nil, nil, true},
		{"python -m sglang.launch_server", map[string]string{"speculative-algorithm": "EAGLE"}, nil, true},
		{"llama-batched-bench -m a.gguf -fa 1", nil, nil, false},
	} {
		if got := SpecDecode(tt.command, tt.flags, tt.notes); got != tt.want {
			t.Errorf("SpecDecode(%q, %v, %v) = %v, want %v", tt.command, tt.flags, tt.notes, got, tt.want)
		}
	}
}

func TestLookup(t *testing.T) {
	ms, err := ModelFacts()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"LeaderboardModel1/Fara1.5-4B-AutoRound-W4A16-RTN":     "Fara1.5-4B",
		"cyankiwi/NVIDIA-Nemotron-Nano-12B-v2-AWQ-4bit":        "NVIDIA-Nemotron-Nano-12B-v2",
		"/models/models--openai--gpt-oss-120b/snapshots/b5c9/": "gpt-oss-120b",
		"Llama-2-70B":                         "Llama-2-70B",
		"Llama-2-7B":                          "Llama-2-7B",
		"/root/models/Llama-3.1-70B-Instruct": "Llama-3.1-70B",
		"Qwen/Qwen2.5-3B-Instruct":            "Qwen2.5-3B",
		"deepseek-ai/DeepSeek-R1-0528":        "DeepSeek-R1",
		"moonshotai/Kimi-K2.5":                "Kimi-K2",
		"Qwen/Qwen3-Coder-Next":               "Qwen3-Next-80B-A3B",
		"Meta-Llama/Llama-3.3-70B-Instruct":   "Llama-3.3-70B",
	} {
		if m, ok := ms.Lookup(name); !ok || m.Name != want {
			t.Errorf("Lookup(%q) = %q %v, want %q", name, m.Name, ok, want)
		}
	}
	for _, name := range []string{"Falcon-40B-Instruct", "deepseek-ai/DeepSeek-R1-Distill-Llama-8B"} {
		if m, ok := ms.Lookup(name); ok {
			t.Errorf("Lookup(%q) = %q, want none (not in the table, or its stated size is not the entry's)", name, m.Name)
		}
	}
}

// TestModelFactsSourced: every entry of the table says where its figures
// were read, and the parser refuses one that does not.
func TestModelFactsSourced(t *testing.T) {
	ms, err := ModelFacts()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms.All() {
		if !strings.Contains(m.Source, "https://") {
			t.Errorf("%s: source %q names no page", m.Name, m.Source)
		}
	}
	if _, err := ParseModels([]byte(`[{"name": "m", "match": ["m"], "params_b": 1}]`)); err == nil {
		t.Error("an entry without a source was accepted")
	}
}

func f(v float64) *float64 { return &v }

// TestAssess: a batch-1 speed above bandwidth ÷ weights × Margin is
// flagged with the numbers compared; an unknown GPU or model, or
// speculative decoding, is not checked, never guessed.
func TestAssess(t *testing.T) {
	model := &Model{Name: "m", ParamsB: 4}
	gpu := &GPU{Name: "g", BandwidthGBs: 360}
	run := func(tok float64) Run {
		return Run{Model: "m", Quantization: "W4A16", GPU: "g", GPUCount: 1,
			Cells: []Cell{{ContextTokens: 0, Concurrency: 1, TotalTokS: f(tok), PerRequestTokS: f(tok)}}}
	}
	if rep := Assess(run(83), gpu, model); rep.Flagged {
		t.Errorf("83 tok/s flagged: %+v", rep)
	}
	rep := Assess(run(831), gpu, model)
	if !rep.Flagged || rep.Flags[0].Code != CodeBandwidth || rep.Flags[0].Limit != 270 || rep.Flags[0].Measured != 831 {
		t.Errorf("831 tok/s: %+v, want a bandwidth flag at 270 tok/s (360 GB/s ÷ 2 GB × 1.5)", rep)
	}
	for name, r := range map[string]Report{
		"unknown GPU":   Assess(run(831), nil, model),
		"unknown model": Assess(run(831), gpu, nil),
		"spec decode":   Assess(func() Run { r := run(831); r.SpecDecode = true; return r }(), gpu, model),
		"unknown quant": Assess(func() Run { r := run(831); r.Quantization = "GPTQ"; return r }(), gpu, model),
		// A name stating one size may be a mixture of experts named by
		// its total (a 35B fine-tune of a 35B-A3B base, on a DGX Spark at
		// 72 tok/s): not judged on a dense reading.
		"total only in the name": func() Report {
			byName, ok := ModelFromName("Frontis-MA1-35B-Q4_K_M.gguf")
			if !ok || !byName.DenseByName {
				t.Fatalf("ModelFromName: %+v %v, want a dense reading", byName, ok)
			}
			return Assess(run(831), gpu, &byName)
		}(),
	} {
		if r.Flagged || r.Checks[0].Status != StatusNotChecked {
			t.Errorf("%s: %+v, want bandwidth not checked and no flag", name, r)
		}
	}
	over := run(83)
	over.Cells[0].TotalTokS = f(200)
	if rep := Assess(over, gpu, model); !rep.Flagged || rep.Flags[0].Code != CodeTotalVsPerRequest {
		t.Errorf("total 200 at 83 per request × 1: %+v, want a total_vs_per_request flag", rep)
	}
}

// TestCheckpointBits: a model's published checkpoint width applies where
// the engine loads that checkpoint, not where it runs a conversion of it
// (llama.cpp, Ollama, LM Studio, ONNX Runtime and MLX name models like
// the checkpoint and run converted files, often 4-bit).
func TestCheckpointBits(t *testing.T) {
	model := &Model{Name: "Qwen3.6-27B", ParamsB: 27, WeightsBits: 16}
	for engine, want := range map[string]float64{"vLLM": 16, "SGLang": 16, "TensorRT-LLM": 16, "LM Studio": 0, "llama.cpp": 0, "Ollama": 0, "ONNX Runtime GenAI": 0, "MLX": 0, "": 0} {
		bits, _, ok := StatedBits(Run{Model: "qwen/qwen3.6-27b", Engine: engine}, model)
		if !ok {
			bits = 0
		}
		if bits != want {
			t.Errorf("%s: bits %v, want %v", engine, bits, want)
		}
	}
}
