package calculator

import (
	"context"
	"math"
	"testing"
)

// TestScatteredRunsAreReadSmoothed: a run whose cells scatter a few
// percent about a smooth surface (a serving sweep's prefill and queueing)
// is read partly from the smoothed physical model, chosen by its own
// held-out error; a run whose cells lie on the surface is not.
func TestScatteredRunsAreReadSmoothed(t *testing.T) {
	grid := func(scatter float64) Run {
		r := Run{ID: "grid", MaxOutputTokens: 128}
		k := 0
		for _, l := range []int{1024, 2048, 4096, 6144, 8192, 12288, 16384} {
			for _, b := range []int{4, 8, 16, 32, 64} {
				k++
				noise := 1 + scatter*(2*math.Mod(float64(k)*0.6180339887, 1)-1) // deterministic, ±scatter
				tbt := (10 + 0.2*float64(b) + 0.0006*float64(b*l)/1024) * noise
				total := float64(b) * 1000 / tbt
				r.Decode = append(r.Decode, Cell{ContextTokens: l, Concurrency: b, Status: CellValid, TotalTokS: &total, TBTMs: &tbt})
			}
		}
		return r
	}
	for _, c := range []struct {
		scatter  float64
		smoothed bool
	}{{0, false}, {0.1, true}} {
		ip, err := chooseInterpolant(context.Background(), grid(c.scatter))
		if err != nil {
			t.Fatal(err)
		}
		if got := ip.physS > 0; got != c.smoothed {
			t.Errorf("cells scattered ±%.0f%%: %s, want smoothed %v", 100*c.scatter, ip, c.smoothed)
		}
	}
}
