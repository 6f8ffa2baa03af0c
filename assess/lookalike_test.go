package assess

import (
	"strings"
	"testing"

	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/store"
)

// TestLookAlikes: a GPU or model named so as to read as a catalog's name
// while spelt otherwise is refused at its pointer, saying how to write it;
// names the catalogs know as written, and names that read as none of
// theirs, are not.
func TestLookAlikes(t *testing.T) {
	w, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	refused := []struct{ gpu, model, pointer, want string }{
		{"RTX 3O60", "", "/hardware/gpu", `reads as "RTX 3060"`},
		{"NVIDIA GeForce RTX 3O9O", "", "/hardware/gpu", `reads as "RTX 3090"`},
		{"RТХ 3060", "", "/hardware/gpu", `reads as "RTX 3060"`}, // Cyrillic Т and Х
		{"Н1ОО", "", "/hardware/gpu", "H100"},                    // Cyrillic letters only
		{"ＲＴＸ ３０６０", "", "/hardware/gpu", `reads as "RTX 3060"`},
		{"H1OO SXM", "", "/hardware/gpu", "H100"},
		{"A1OO", "", "/hardware/gpu", "A100"},
		{"", "Llama-2-l3B", "/model/name", "Llama-2-13B"},
		{"", "Qwen3-3ZB", "", ""}, // reads as no model: not a look-alike
		{"", "gpt-oss-2Ob", "/model/name", "gpt-oss-20b"},
	}
	for _, c := range refused {
		r := store.Run{Hardware: store.Hardware{GPU: c.gpu}, Model: store.Model{Name: c.model}}
		probs := w.lookAlikes(r)
		if c.pointer == "" {
			if len(probs) > 0 {
				t.Errorf("%q %q: %v; want none", c.gpu, c.model, probs)
			}
			continue
		}
		if len(probs) != 1 || probs[0].Pointer != c.pointer || !strings.Contains(probs[0].Message, c.want) {
			t.Errorf("%q %q: %v; want one at %s saying %s", c.gpu, c.model, probs, c.pointer, c.want)
		}
	}
	// What real runs name (the corpus's and the seeds' GPUs and models)
	// and every catalog name is no look-alike.
	gpus := []string{"A100", "A100 80GB", "B300 SXM6", "DGX Spark", "GH200", "H100 80GB HBM3", "H100 SXM", "H200", "L40S", "M2 Ultra", "MI355X",
		"RTX 3060", "RTX 3090", "not published", "rtx3060", "NVIDIA GeForce RTX 3060", "Tesla T4", "Some GPU 9000", "Radeon Pro W7900", "L4", "l40s", "Orin 64GB", "Ol0"}
	for _, g := range calculator.Hardware().GPUs() {
		gpus = append(gpus, g.Name)
	}
	for _, g := range gpus {
		if probs := w.lookAlikes(store.Run{Hardware: store.Hardware{GPU: g}}); len(probs) > 0 {
			t.Errorf("GPU %q: %v", g, probs)
		}
	}
	models := []string{"/models/models--MiniMaxAI--MiniMax-M2.5/snapshots/f710177d938eff80b684d42c5aa84b382612f21f/", "/root/models/Llama-3.1-70B-Instruct",
		"LeaderboardModel1/Fara1.5-4B-AutoRound-W4A16-RTN", "Mistral-7B-v0.1", "Qwen/Qwen2.5-VL-3B-Instruct", "cyankiwi/NVIDIA-Nemotron-Nano-12B-v2-AWQ-4bit",
		"gemma-3-4b-it-qat", "SmolLM2-1.7B", "OLMo-2-1124-7B", "o1-mini", "Llama-3.2-1B", "Phi-3.5-mini", "Qwen3 中文"}
	for _, m := range w.models.All() {
		models = append(models, m.Name)
	}
	for _, m := range models {
		if probs := w.lookAlikes(store.Run{Model: store.Model{Name: m}}); len(probs) > 0 {
			t.Errorf("model %q: %v", m, probs)
		}
	}
}
