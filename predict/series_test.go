package predict

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/matrixd/matrixd/history"
)

// TestStepNoise: a change by context and by concurrency is not noise; the
// noise of the ratios is measured, at an upper bound; too few cells
// measure nothing.
func TestStepNoise(t *testing.T) {
	grid := func(f func(l, b int) float64) []history.Cell {
		var out []history.Cell
		for _, l := range []int{512, 4096, 8192, 16384} {
			for _, b := range []int{1, 2, 4, 8, 16, 32} {
				out = append(out, history.Cell{ContextTokens: l, Concurrency: b, Value: f(l, b)})
			}
		}
		return out
	}
	base := func(l, b int) float64 { return 1000 * float64(b) / (1 + float64(l)/4096) }
	a := grid(base)
	shaped := grid(func(l, b int) float64 { return base(l, b) * (1 + float64(l)/1e5) * (1 + 0.02*float64(b%5)) })
	if s, _ := stepNoise(a, shaped); s > 0.002 {
		t.Errorf("a change by row and by column alone: noise %.4f; want about 0", s)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	const sd = 0.01
	var sum float64
	for range 200 {
		noisy := grid(func(l, b int) float64 { return base(l, b) * 1.05 * math.Exp(sd*rng.NormFloat64()) })
		s, n := stepNoise(a, noisy)
		if n != 24 {
			t.Fatalf("%d cells measured it; want 24", n)
		}
		sum += s
	}
	if mean := sum / 200; mean < sd || mean > 1.6*sd {
		t.Errorf("noise %.4f of ratios with σ = %.3f, on average; want an upper bound, not far above", mean, sd)
	}
	few := []history.Cell{{ContextTokens: 512, Concurrency: 1, Value: 1}, {ContextTokens: 512, Concurrency: 2, Value: 2}, {ContextTokens: 4096, Concurrency: 1, Value: 1}}
	if s, n := stepNoise(few, few); s != 0 || n != 0 {
		t.Errorf("3 cells: noise %.4f from %d; want none", s, n)
	}
}
