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
