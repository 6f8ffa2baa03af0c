package calculator

import "testing"

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
