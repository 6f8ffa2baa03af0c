package calculator_test

import (
	"math"
	"testing"

	"github.com/matrixd/matrixd/calculator"
)

// oddRun is a run a careless calculator turns into impossible intervals:
// a huge throughput, a near-zero TTFT, a prefill whose fit is poor, three
// cells.
func oddRun() calculator.Run {
	f := func(v float64) *float64 { return &v }
	return calculator.Run{ID: "odd", GPU: "RTX 3090", MaxModelLen: 65536, MaxOutputTokens: 256, VRAMGB: 24, WindowS: 30,
		Prefill: []calculator.PrefillPoint{{ContextTokens: 1024, TTFTMs: 0.6}, {ContextTokens: 8192, TTFTMs: 900}, {ContextTokens: 16384, TTFTMs: 95}},
		Decode: []calculator.Cell{
			{ContextTokens: 0, Concurrency: 1, Status: calculator.CellValid, TotalTokS: f(9e8), PerRequestTokS: f(9e8), TBTMs: f(1000 / 9e8), TTFTMs: f(0.001)},
			{ContextTokens: 0, Concurrency: 4, Status: calculator.CellValid, TotalTokS: f(1e6), PerRequestTokS: f(2.5e5), TBTMs: f(0.004), TTFTMs: f(900)},
			{ContextTokens: 4096, Concurrency: 1, Status: calculator.CellValid, TotalTokS: f(5), PerRequestTokS: f(5), TBTMs: f(200), TTFTMs: f(3)},
		}}
}

func checkEstimate(t *testing.T, what string, e *calculator.Estimate) {
	t.Helper()
	if e == nil {
		return
	}
	for _, v := range []float64{e.Value, e.Low, e.High} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("%s: non-finite %+v", what, *e)
		}
	}
	if e.Low < 0 || e.Low > e.Value || e.Value > e.High {
		t.Fatalf("%s: impossible interval %+v (want 0 ≤ low ≤ value ≤ high)", what, *e)
	}
}

// TestIntervalsArePhysical asks every run, odd ones included, across a
// wide grid of queries: every answer is finite, never negative, with low ≤
// value ≤ high, and a stated band matches its bounds.
func TestIntervalsArePhysical(t *testing.T) {
	runs := append(seeds(), bigRun(6), oddRun())
	contexts := []int{0, 1, 512, 4096, 16384, 49152, 131072, 300000}
	concurrencies := []int{1, 2, 3, 7, 16, 64, 200}
	for _, r := range runs {
		m, err := calculator.Fit(r)
		if err != nil {
			t.Fatalf("%s: %v", r.ID, err)
		}
		answered := 0
		for _, l := range contexts {
			if p, err := m.Prefill(max(l, 1)); err == nil {
				answered++
				checkEstimate(t, r.ID+" prefill ttft", &p.TTFTMs)
				checkEstimate(t, r.ID+" prefill tok/s", &p.PromptTokS)
			}
			for _, b := range concurrencies {
				for _, q := range []calculator.Query{
					{ContextTokens: l, Concurrency: b},
					{ContextTokens: l, Concurrency: b, VRAMGB: 16},
					{ContextTokens: l, Concurrency: b, TargetGPU: "RTX 4090", Rough: true},
				} {
					p, err := m.Decode(q)
					if err != nil {
						continue
					}
					answered++
					name := r.ID + " decode"
					checkEstimate(t, name+" total", p.TotalTokS)
					checkEstimate(t, name+" per-request", p.PerRequestTokS)
					checkEstimate(t, name+" tbt", p.TBTMs)
					checkEstimate(t, name+" ttft", p.TTFTMs)
					if p.TotalTokS != nil && p.Basis != calculator.Measured && p.TotalTokS.Low > 0 {
						if got := p.TotalTokS.High/p.TotalTokS.Value - 1; math.Abs(got-p.BandTotal) > 1e-9 {
							t.Fatalf("%s at %d×%d: total band stated %.4f, interval says +%.4f", name, l, b, p.BandTotal, got)
						}
					}
				}
			}
		}
		if answered < 10 {
			t.Errorf("%s: only %d answers; the test checked too little", r.ID, answered)
		}
	}
}
