package calculator

import (
	"math"
	"testing"
)

// TestMixShapeStaysFinite: a shape estimate that is not finite never
// reaches an answer, whatever its weight (0 · Inf is NaN).
func TestMixShapeStaysFinite(t *testing.T) {
	for _, w := range []float64{0, 0.5, 1} {
		ts, ss := mixShape(10, 20, estimate{t: math.Inf(1), s: math.NaN(), ok: true}, w, w)
		if ts != 10 || ss != 20 {
			t.Errorf("weight %g: (%g, %g), want the rows' (10, 20)", w, ts, ss)
		}
	}
}

// TestShapeReadsPastRowsSharingNothing: rows that measured the asked
// concurrency but none of the asked row's own do not use up the estimate's
// reach; a farther row that shares them is still read.
func TestShapeReadsPastRowsSharingNothing(t *testing.T) {
	var samples []sample
	add := func(l float64, bs ...float64) {
		for _, b := range bs {
			samples = append(samples, sample{l: l, b: b, t: 10 + b, s: 10 + b})
		}
	}
	add(0.5, 1, 2, 4, 8, 16, 32, 64) // shares the asked row's concurrencies
	add(1, 16, 128)                  // measured 16, shares nothing
	add(2, 16, 128)                  // measured 16, shares nothing
	add(4, 1, 2, 4, 8, 32, 64)       // the asked row: no 16
	sf := newSurface(samples, interp{})
	e := sf.shape(4, 16)
	if !e.ok || math.Abs(e.s/26-1) > 1e-9 {
		t.Errorf("shape at 4K × 16: %+v, want 26 from the 512-token row", e)
	}
}

// TestColumnReach: a column measured at 128 and 1024 tokens (a span of
// 0.875K) is extended along context (step time grows close to linearly
// with it), exactly for step times linear in context, up to columnReach
// spans beyond its end (4.5K) and not further.
func TestColumnReach(t *testing.T) {
	step := func(l, b float64) float64 { return (6 + 2*b) * (1 + l/2) } // l in K tokens
	var samples []sample
	add := func(l, b float64) {
		samples = append(samples, sample{l: l, b: b, t: step(l, b), s: step(l, b)})
	}
	for _, l := range []float64{0.125, 1, 4, 16} {
		for _, b := range []float64{1, 50} {
			add(l, b)
		}
		if l <= 1 {
			add(l, 10) // concurrency 10 only at short contexts
		}
	}
	sf := newSurface(samples, interp{})
	for _, l := range []float64{2, 4, 4.5} {
		e := sf.columnFirst(sf.cols, l, 10)
		if !e.ok || !e.extended || math.Abs(e.s/step(l, 10)-1) > 1e-9 {
			t.Errorf("%gK×10 from the column at 128 and 1024: %+v, want extended to %.3f", l, e, step(l, 10))
		}
	}
	if e := sf.columnFirst(sf.cols, 4.6, 10); e.ok {
		t.Errorf("4.6K×10, %.2f spans beyond the column: %+v, want no estimate", (4.6-1)/0.875, e)
	}
}
