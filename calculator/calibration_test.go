package calculator

import (
	"math"
	"testing"
)

// TestLeastFactor: the factor is the narrowest whose bands hold the
// nearest share to the coverage asked of the answers, round(0.9·n) of n,
// among the powers and mixes offered.
func TestLeastFactor(t *testing.T) {
	total := func(h HeldOut) (float64, float64, float64) { return h.Need, h.RawBand, h.RawInterpolated }
	// Runs whose own bands are proportional to their errors: power 1 fits
	// them all at scale 1; a constant band must reach the largest need.
	var prop []HeldOut
	for i := 1; i <= 19; i++ {
		e := 0.01 * float64(i)
		prop = append(prop, HeldOut{Need: e, RawBand: e, RawInterpolated: 0.05})
	}
	f, n := leastFactor(prop, total, 0.9, calibrationPowers(), []float64{0})
	if n != 19 || f.Power != 1 || math.Abs(f.Scale-1) > 1e-9 {
		t.Errorf("proportional bands: %+v over %d, want scale 1 at power 1", f, n)
	}
	// Own bands that say nothing (largest where the error is least):
	// power 0, the round(0.9·19) = 17th smallest need.
	var flat []HeldOut
	for i := 1; i <= 19; i++ {
		flat = append(flat, HeldOut{Need: 0.01 * float64(i+1), RawBand: 0.5 - 0.01*float64(i), RawInterpolated: 0.1})
	}
	f, _ = leastFactor(flat, total, 0.9, calibrationPowers(), []float64{0})
	if f.Power != 0 || math.Abs(f.Scale-0.18) > 1e-9 {
		t.Errorf("uninformative bands: %+v, want a constant 0.18", f)
	}
	held := 0
	for _, h := range flat {
		if h.Need <= f.apply(h.RawBand, h.RawInterpolated) {
			held++
		}
	}
	if held != 17 {
		t.Errorf("the factor holds %d of 19, want 17", held)
	}
	// Needs under the noise floor are held whatever the scale.
	floor := []HeldOut{{Need: 0.005, RawBand: 0.2, RawInterpolated: 0.2}, {Need: 0.004, RawBand: 0.1, RawInterpolated: 0.1}}
	if f, _ := leastFactor(floor, total, 0.9, []float64{1}, []float64{0}); f.Scale > 0.01 {
		t.Errorf("answers within the floor: %+v, want a scale near 0", f)
	}
	// No answers: the run's own bands as they are.
	if f, n := leastFactor(nil, total, 0.9, calibrationPowers(), calibrationMixes()); n != 0 || f != (Factor{Scale: 1, Power: 1}) {
		t.Errorf("no answers: %+v over %d", f, n)
	}
}

// TestCalibrateFallsBackToPooled: a family with too few answers for a basis
// (under 10) takes the pooled factor, which keeps each run's own spread
// (power 1).
func TestCalibrateFallsBackToPooled(t *testing.T) {
	answers := map[string][]HeldOut{}
	for i := range 40 {
		e := 0.002 * float64(i+6)
		answers["big/static_batch"] = append(answers["big/static_batch"], HeldOut{Basis: Interpolated, Need: e, RawBand: 2 * e, RawInterpolated: 2 * e, TBTNeed: math.NaN()})
	}
	for i := range 5 {
		answers["small/serving_sweep"] = append(answers["small/serving_sweep"], HeldOut{Basis: Interpolated, Need: 0.05, RawBand: 0.02 * float64(i+1), RawInterpolated: 0.1, TBTNeed: math.NaN()})
	}
	// Twelve answers are enough for a family's own factor: its runs' own
	// bands say nothing (one band for all), unlike the pooled power 1.
	for i := range 12 {
		answers["mid/serving_sweep"] = append(answers["mid/serving_sweep"], HeldOut{Basis: Interpolated, Need: 0.05, RawBand: 0.01 * float64(i+1), RawInterpolated: 0.1, TBTNeed: math.NaN()})
	}
	c := Calibrate(answers, 0.9)
	pooled, small := c.factors(""), c.factors("small/serving_sweep")
	if mid := c.factors("mid/serving_sweep"); mid.InterpolatedTotal.Power != 0 || mid.AnswersInterpolated != 12 {
		t.Errorf("a twelve-answer family: %+v, want its own constant band", mid.InterpolatedTotal)
	}
	if pooled.InterpolatedTotal.Power != 1 {
		t.Errorf("pooled factor %+v, want power 1", pooled.InterpolatedTotal)
	}
	if small.InterpolatedTotal != pooled.InterpolatedTotal || small.AnswersInterpolated != 5 {
		t.Errorf("a five-answer family: %+v, want the pooled %+v", small.InterpolatedTotal, pooled.InterpolatedTotal)
	}
	if !c.Calibrated("big/static_batch") || c.Calibrated("unknown/method") {
		t.Error("Calibrated: want the big family in the table, an unknown one not")
	}
	if got := c.factors("unknown/method"); got.InterpolatedTotal != pooled.InterpolatedTotal {
		t.Errorf("an unknown family gets %+v, want the pooled factor", got.InterpolatedTotal)
	}
}

func TestBandFamily(t *testing.T) {
	for _, c := range []struct{ engine, method, want string }{
		{"vLLM", "serving_sweep", "vllm/serving_sweep"},
		{"llama.cpp", "batched_burst", "llama.cpp/batched_burst"},
		{"TensorRT-LLM", "static_batch", "tensorrt-llm/static_batch"},
		{"trtllm", "static_batch", "tensorrt-llm/static_batch"},
		{"LMDeploy (TurboMind)", "static_batch", "lmdeploy/static_batch"},
		{"SGLang", "serving_sweep", "sglang/serving_sweep"},
		{"vLLM", "", ""},
		{"ExLlamaV2", "sustained_decode", ""},
	} {
		if got := BandFamily(c.engine, c.method); got != c.want {
			t.Errorf("BandFamily(%q, %q) = %q, want %q", c.engine, c.method, got, c.want)
		}
	}
}
