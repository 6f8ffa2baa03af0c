package predict

import (
	"errors"
	"math"
	"testing"

	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/trust"
)

func TestModelRatios(t *testing.T) {
	facts, err := trust.ModelFacts()
	if err != nil {
		t.Fatal(err)
	}
	from := store.Run{Model: store.Model{Name: "Llama-2-7B", Quantization: "FP16"}}
	r, err := ModelRatios(facts, from, "Llama-2-13B", "FP16")
	if err != nil {
		t.Fatal(err)
	}
	// 13.0 / 6.74 B parameters at 2 bytes each; 40·40·128 / 32·32·128 KV.
	if math.Abs(r.Weights-13.0/6.74) > 1e-9 || math.Abs(r.KV-1600.0/1024) > 1e-9 {
		t.Errorf("ratios %+v", r)
	}
	if r, err := ModelRatios(facts, from, "Llama-2-7B", "AWQ 4-bit"); err != nil || math.Abs(r.Weights-0.26) > 1e-9 || r.KV != 1 {
		t.Errorf("4-bit copy: %+v %v, want weights ×0.26, KV ×1", r, err)
	}
	for _, c := range []struct{ model, quant string }{
		{"gpt-oss-20b", "MXFP4"}, // a mixture of experts from a dense model
		{"Unknown-9B", "FP16"},
		{"Llama-2-13B", ""},
	} {
		if _, err := ModelRatios(facts, from, c.model, c.quant); !errors.Is(err, calculator.ErrRefused) {
			t.Errorf("%s %q: %v, want a refusal", c.model, c.quant, err)
		}
	}
}
