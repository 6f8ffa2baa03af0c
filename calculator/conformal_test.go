package calculator

import (
	"math"
	"testing"
)

func TestConformal90(t *testing.T) {
	errs := func(n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = float64(n-i) / 100 // descending: the function sorts
		}
		return out
	}
	for _, c := range []struct {
		n    int
		want float64
	}{
		{3, 0.03},   // fewer than 9: the largest
		{9, 0.09},   // ⌈0.9·10⌉ = 9th of 9
		{19, 0.18},  // ⌈0.9·20⌉ = 18th of 19
		{99, 0.90},  // ⌈0.9·100⌉ = 90th of 99
		{100, 0.91}, // ⌈0.9·101⌉ = 91st of 100
	} {
		if got := conformal90(errs(c.n)); got != c.want {
			t.Errorf("n=%d: %v, want %v", c.n, got, c.want)
		}
	}
}

// TestExtrapolatedBandIsTheSpread: a run's extrapolated band is twice the
// root mean square of its whole-line errors, not their conformal bound
// (which, for a few errors, is the largest); the interpolated one stays
// the conformal bound widened by 1 + 1/√n.
func TestExtrapolatedBandIsTheSpread(t *testing.T) {
	var r Report
	for _, e := range []float64{0.01, 0.01, 0.01, 0.01, 0.2} {
		r.Extrapolated.Total.add(e)
		r.Extrapolated.TBT.add(e / 2)
	}
	for i := range 10 {
		r.Interpolated.Total.add(0.001 * float64(i+1))
		r.Interpolated.TBT.add(0.001 * float64(i+1))
	}
	b := r.bands()
	want := 2 * math.Sqrt((4*0.01*0.01+0.2*0.2)/5) // 0.1798; the conformal bound would be 0.2·(1 + 1/√5) = 0.289
	if math.Abs(b.ExtrapolatedTotal-want) > 1e-9 || math.Abs(b.ExtrapolatedTBT-want/2) > 1e-9 {
		t.Errorf("extrapolated bands %v, %v, want %v, %v", b.ExtrapolatedTotal, b.ExtrapolatedTBT, want, want/2)
	}
	if in := 0.01 * (1 + 1/math.Sqrt(10)); math.Abs(b.InterpolatedTotal-math.Max(in, bandFloor)) > 1e-9 {
		t.Errorf("interpolated band %v, want the conformal bound %v", b.InterpolatedTotal, in)
	}
	// Never under the interpolated band.
	var flat Report
	for range 5 {
		flat.Extrapolated.Total.add(0.001)
	}
	for i := range 10 {
		flat.Interpolated.Total.add(0.01 * float64(i+1))
	}
	if fb := flat.bands(); fb.ExtrapolatedTotal < fb.InterpolatedTotal {
		t.Errorf("extrapolated band %v under the interpolated %v", fb.ExtrapolatedTotal, fb.InterpolatedTotal)
	}
}
