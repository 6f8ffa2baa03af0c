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
	// What the KV pool and prefill of each need: all weights' memory, KV
	// bytes a token at 16 bits (the KV cache dtype unstated), FLOPs.
	wantFrom := calculator.ModelSize{WeightsGB: 6.74 * 2, KVBytesPerToken: 32 * 32 * 128 * 2 * 2, FLOPsPerToken: 2 * 6.74e9, AttentionFLOPs: 4 * 32 * 32 * 128}
	wantTo := calculator.ModelSize{WeightsGB: 13.0 * 2, KVBytesPerToken: 40 * 40 * 128 * 2 * 2, FLOPsPerToken: 2 * 13.0e9, AttentionFLOPs: 4 * 40 * 40 * 128}
	if r.From != wantFrom || r.To != wantTo {
		t.Errorf("sizes %+v → %+v, want %+v → %+v", r.From, r.To, wantFrom, wantTo)
	}
	fp8 := from
	fp8.Launch.KVCacheDtype = "fp8"
	if r, err := ModelRatios(facts, fp8, "Llama-2-13B", "FP16"); err != nil || r.From.KVBytesPerToken != 32*32*128*2 || r.To.KVBytesPerToken != 40*40*128*2 {
		t.Errorf("fp8 KV cache: %+v %v, want a byte an element", r, err)
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
