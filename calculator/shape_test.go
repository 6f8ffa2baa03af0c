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
