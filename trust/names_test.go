package trust

import (
	"math"
	"testing"
)

func TestSizeFromName(t *testing.T) {
	for _, tt := range []struct {
		name          string
		total, active float64
		ok            bool
	}{
		{"meta-llama/Llama-3.3-70B-Instruct", 70, 70, true},
		{"Qwen/Qwen3-30B-A3B-Instruct-2507-FP8", 30, 3, true},
		{"mistralai/Mixtral-8x7B-Instruct-v0.1", 56, 0, true},
		{"meta-llama/Llama-4-Scout-17B-16E-Instruct", 0, 17, true},
		{"facebook/opt-125m", 0.125, 0.125, true},
		{"deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B", 1.5, 1.5, true},
		{"Qwen/Qwen3.5-397B-A17B-FP8", 397, 17, true},
		{"bartowski/Mistral-Small-24B-Instruct-2501-Q4_K_M.gguf", 24, 24, true},
		{"Qwen1.5-MoE-A2.7B", 0, 2.7, true},
		{"some-moe-16b", 16, 0, true},
		{"gemma-3-4b-it-qat", 4, 4, true},
		{"moonshotai/Kimi-K2.5", 0, 0, false},
		{"microsoft/Phi-3.5-mini-instruct", 0, 0, false},
		{"/models/models--openai--gpt-oss-120b/snapshots/b5c9/", 120, 120, true},
		{"Qwen2.5-7B-Instruct-AWQ", 7, 7, true},
		{"PowerInfer/SmallThinker-21BA3B-Instruct", 21, 3, true},
		{"Qwen3-30B.A3B-Q4_K_M.gguf", 30, 3, true},
		{"ling-mini-2.0-16b-a1.4b", 16, 1.4, true},
	} {
		got, ok := SizeFromName(tt.name)
		if ok != tt.ok || got.Total != tt.total || got.Active != tt.active {
			t.Errorf("SizeFromName(%q) = %+v %v, want total %g active %g %v", tt.name, got, ok, tt.total, tt.active, tt.ok)
		}
	}
	if _, ok := ModelFromName("mistralai/Mixtral-8x7B-v0.1"); ok {
		t.Error("a mixture whose name does not say what a token reads made a model")
	}
	if m, ok := ModelFromName("Qwen/Qwen3-30B-A3B"); !ok || m.ActiveParams() != 3 || m.ParamsB != 30 || !m.FromName {
		t.Errorf("ModelFromName(Qwen3-30B-A3B) = %+v %v", m, ok)
	}
}

// TestBitsFromName: the bits of a weight read from a model's name, where a
// run states no quantization.
func TestBitsFromName(t *testing.T) {
	for name, want := range map[string]float64{
		"Qwen/Qwen3.5-397B-A17B-FP8": 8, "cyankiwi/NVIDIA-Nemotron-Nano-12B-v2-AWQ-4bit": 4, "Mistral-Small-24B-Instruct-2501-Q4_K_M": 4.5,
		"RedHatAI/Llama-3.1-8B-Instruct-W4A16": 4, "nvidia/Llama-3.3-70B-Instruct-NVFP4": 4, "neuralmagic/Llama-2-7b-int8": 8, "Qwen3-8B-bf16": 16,
	} {
		if got, ok := Bits(name); !ok || got != want {
			t.Errorf("Bits(%q) = %v %v, want %v", name, got, ok, want)
		}
	}
	for _, name := range []string{"Qwen/Qwen3-8B", "meta-llama/Llama-3.1-70B-Instruct", "moonshotai/Kimi-K2.5", "Qwen/Qwen2.5-VL-3B-Instruct"} {
		if got, ok := Bits(name); ok {
			t.Errorf("Bits(%q) = %v, want none (the name says no bits)", name, got)
		}
	}
}

// TestNameSizeError measures the name rule against the table: for every
// entry whose name states a size, the total read from the name against the
// entry's parameters, the active part where the name states it, and the
// mixtures a name reads as dense (their names state only the total: the
// table must hold them). docs/trust.md states the figures.
func TestNameSizeError(t *testing.T) {
	ms, err := ModelFacts()
	if err != nil {
		t.Fatal(err)
	}
	n, worst, worstName, sum := 0, 0.0, "", 0.0
	var misread []string
	for _, m := range ms.All() {
		got, ok := SizeFromName(m.Name)
		if !ok {
			continue
		}
		pairs := [][2]float64{{got.Total, m.ParamsB}}
		if got.Active != got.Total {
			pairs = append(pairs, [2]float64{got.Active, m.ActiveParams()})
		} else if m.MixtureOfExperts() {
			misread = append(misread, m.Name)
		}
		for _, pair := range pairs {
			if pair[0] == 0 {
				continue
			}
			e := pair[0]/pair[1] - 1
			n, sum = n+1, sum+math.Abs(e)
			if math.Abs(e) > math.Abs(worst) {
				worst, worstName = e, m.Name
			}
		}
	}
	t.Logf("%d sizes read from the names of %d entries: mean |error| %.1f %%, worst %+.1f %% (%s); mixtures read as dense: %v", n, len(ms.All()), 100*sum/float64(n), 100*worst, worstName, misread)
	if n < 20 || math.Abs(worst) > 0.35 {
		t.Errorf("%d sizes compared, worst error %+.1f %% (%s): want at least 20 within 35 %%", n, 100*worst, worstName)
	}
}

// TestNamesOfShippedRuns holds the name rules the shipped runs need: an
// underscore between digits is a decimal point, llama.cpp's "30B.A3B"
// names the active part, so does "A800M", a dense family's one size is
// what a token reads, Ollama tags match the table, and of entries matched
// as long the nearest in size wins.
func TestNamesOfShippedRuns(t *testing.T) {
	for _, tt := range []struct {
		name          string
		total, active float64
	}{
		{"internlm2_5-1_8b-chat-Q4_K_M.gguf", 1.8, 1.8},
		{"qwen3moe 30B.A3B Q8_0", 30, 3},
		{"granite-3.1-3b-a800m-instruct-Q4_K_M.gguf", 3, 0.8},
	} {
		got, ok := SizeFromName(tt.name)
		if !ok || math.Abs(got.Total-tt.total) > 1e-9 || math.Abs(got.Active-tt.active) > 1e-9 {
			t.Errorf("SizeFromName(%q) = %+v, %v; want %g total, %g active", tt.name, got, ok, tt.total, tt.active)
		}
	}
	for name, dense := range map[string]bool{
		"Qwen2.5-Coder-3B-Instruct-Q4_K_M.gguf": true, "gemma-2-9b-it-Q4_K_M.gguf": true, "granite4.1:8b": true,
		"Frontis-MA1-35B-Q4_K_M.gguf": false, "Qwen2.5-MoE-14B": false,
	} {
		m, ok := ModelFromName(name)
		if judged := ok && !m.DenseByName; judged != dense {
			t.Errorf("ModelFromName(%q) = %+v, %v: judged %v, want %v", name, m, ok, judged, dense)
		}
	}
	ms, err := ModelFacts()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"qwen3.6:27b-mlx": "Qwen3.6-27B", "qwen3.5:35b-mlx": "Qwen3.5-35B-A3B", "qwen3.5:27b-mlx": "Qwen3.5-27B",
		"DeepSeek V4 Flash": "DeepSeek-V4-Flash", "lfm2.5:8b": "LFM2-8B-A1B", "microsoft_Phi-4-mini-instruct-Q4_K_M.gguf": "Phi-4-mini",
	} {
		if m, ok := ms.Lookup(name); !ok || m.Name != want {
			t.Errorf("Lookup(%q) = %q, %v; want %q", name, m.Name, ok, want)
		}
	}
}

// TestBitsOfShippedRuns holds the widths the shipped runs are read at
// where they state none: an Ollama tag its library's default (not an MLX
// tag, whose width is unknown), ds4 its smallest own file; and an Ollama
// tag that names multi-token prediction is speculative decoding.
func TestBitsOfShippedRuns(t *testing.T) {
	published := &Model{Name: "Qwen3-8B", ParamsB: 8.2, WeightsBits: 16}
	for _, tt := range []struct {
		run   Run
		model *Model
		bits  float64
		ok    bool
	}{
		{Run{Model: "qwen3:8b", Engine: "ollama"}, published, 4, true},
		{Run{Model: "qwen3:8b-q8_0", Engine: "ollama"}, published, 8.5, true},
		{Run{Model: "qwen3.6:27b-mlx", Engine: "ollama"}, nil, 0, false},
		{Run{Model: "Qwen/Qwen3-8B", Engine: "vLLM"}, published, 16, true},
		{Run{Model: "DeepSeek V4 Flash", Engine: "ds4"}, nil, 2, true},
		{Run{Model: "DeepSeek V4 Flash", Engine: "ds4", Quantization: "q4"}, nil, 4, true},
	} {
		bits, _, ok := WeightBits(tt.run, tt.model)
		if ok != tt.ok || bits != tt.bits {
			t.Errorf("WeightBits(%q, %q) = %g, %v; want %g, %v", tt.run.Model, tt.run.Engine, bits, ok, tt.bits, tt.ok)
		}
	}
	if _, _, ok := StatedBits(Run{Model: "qwen3:8b"}, published); ok {
		t.Error("StatedBits of an Ollama tag: a width its run does not state")
	}
	if !SpecDecodeName("qwen3.6:27b-mtp-q8_0") || SpecDecodeName("qwen3.6:27b-q8_0") {
		t.Error("SpecDecodeName: an -mtp tag is speculative decoding, another is not")
	}
}
