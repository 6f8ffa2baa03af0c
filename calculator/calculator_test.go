package calculator_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/msg"
)

func fit(t testing.TB, r calculator.Run) *calculator.Model {
	t.Helper()
	m, err := calculator.Fit(r)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func seeds() []calculator.Run { return []calculator.Run{faraRun(), nemotronRun()} }

func TestMeasuredCellReturnsItsMeasurement(t *testing.T) {
	for _, r := range seeds() {
		m := fit(t, r)
		for _, c := range r.Decode {
			if c.TotalTokS == nil {
				continue
			}
			p, err := m.Decode(calculator.Query{ContextTokens: c.ContextTokens, Concurrency: c.Concurrency})
			if err != nil {
				t.Fatalf("%s %d×%d: %v", r.ID, c.ContextTokens, c.Concurrency, err)
			}
			if p.Basis != calculator.Measured {
				t.Errorf("%s %d×%d: basis %s, want measured", r.ID, c.ContextTokens, c.Concurrency, p.Basis)
			}
			if p.TotalTokS.Value != *c.TotalTokS || p.TBTMs.Value != *c.TBTMs || p.TTFTMs.Value != *c.TTFTMs || p.PerRequestTokS.Value != *c.PerRequestTokS {
				t.Errorf("%s %d×%d: answered %v/%v/%v, measured %v/%v/%v", r.ID, c.ContextTokens, c.Concurrency,
					p.TotalTokS.Value, p.TBTMs.Value, p.TTFTMs.Value, *c.TotalTokS, *c.TBTMs, *c.TTFTMs)
			}
		}
	}
}

func TestStatusCalls(t *testing.T) {
	tests := []struct {
		run  calculator.Run
		l, b int
		want calculator.Status
	}{
		{faraRun(), 0, 128, calculator.OverCapacity},
		{faraRun(), 253952, 1, calculator.TTFTExceedsWindow}, // published "Over capacity", but it ran
		{faraRun(), 253952, 2, calculator.TTFTExceedsWindow},
		{faraRun(), 253952, 4, calculator.OverCapacity},
		{faraRun(), 131072, 1, calculator.RequestsQueued}, // as published
		{faraRun(), 49152, 8, calculator.Fits},
		{faraRun(), 49152, 12, calculator.BoundaryUncertain}, // 12·(48K+8K) is between the largest that ran and the smallest refused
		{faraRun(), 300 << 10, 1, calculator.ExceedsMaxModelLen},
		{nemotronRun(), 0, 128, calculator.RequestsQueued},
		{nemotronRun(), 0, 96, calculator.RequestsQueued}, // beyond the ~67 sequences it admits
		{nemotronRun(), 16384, 64, calculator.OverCapacity},
		{func() calculator.Run { r := faraRun(); r.MaxNumSeqs = 16; return r }(), 0, 24, calculator.RequestsQueued}, // --max-num-seqs 16
		{nemotronRun(), 120 << 10, 8, calculator.Fits},
		{nemotronRun(), 126 << 10, 1, calculator.ExceedsMaxModelLen},
	}
	for _, tt := range tests {
		p, err := fit(t, tt.run).Decode(calculator.Query{ContextTokens: tt.l, Concurrency: tt.b})
		if err != nil {
			t.Errorf("%s %d×%d: %v", tt.run.ID, tt.l, tt.b, err)
			continue
		}
		if p.Status != tt.want {
			t.Errorf("%s %d×%d: status %s, want %s (warnings %v)", tt.run.ID, tt.l, tt.b, p.Status, tt.want, p.Warnings)
		}
		noSpeed := tt.want == calculator.OverCapacity || tt.want == calculator.ExceedsMaxModelLen || tt.want == calculator.TTFTExceedsWindow
		if noSpeed && p.TotalTokS != nil {
			t.Errorf("%s %d×%d: %s answer carries a speed %v", tt.run.ID, tt.l, tt.b, p.Status, p.TotalTokS.Value)
		}
		// The decode answer's capacity agrees with the capacity answer's
		// (0 past max_model_len).
		c, err := fit(t, tt.run).Capacity(calculator.Query{ContextTokens: tt.l})
		if err != nil {
			t.Fatal(err)
		}
		if p.Capacity.MaxConcurrencyAtContext != c.MaxConcurrency {
			t.Errorf("%s %d×%d: decode says %d fit, capacity %d", tt.run.ID, tt.l, tt.b, p.Capacity.MaxConcurrencyAtContext, c.MaxConcurrency)
		}
		if tt.want == calculator.ExceedsMaxModelLen && p.Capacity.MaxConcurrencyAtContext != 0 {
			t.Errorf("%s %d×%d: %d fit past max_model_len", tt.run.ID, tt.l, tt.b, p.Capacity.MaxConcurrencyAtContext)
		}
	}
}

func TestInterpolatedAndExtrapolatedAnswers(t *testing.T) {
	m := fit(t, faraRun())
	p, err := m.Decode(calculator.Query{ContextTokens: 48 << 10, Concurrency: 6})
	if err != nil {
		t.Fatal(err)
	}
	if p.Basis != calculator.Interpolated || len(p.Cells) < 2 {
		t.Fatalf("48K×6: basis %s cells %v, want interpolated from its neighbours", p.Basis, p.Cells)
	}
	// Between the four surrounding cells' totals.
	if p.TotalTokS.Value < 94.5 || p.TotalTokS.Value > 190.8 {
		t.Errorf("48K×6 total %v outside its neighbours 94.5…190.8", p.TotalTokS.Value)
	}
	if math.Abs(p.PerRequestTokS.Value-1000/p.TBTMs.Value) > 1e-9 {
		t.Errorf("per-request %v is not 1000/TBT (%v)", p.PerRequestTokS.Value, p.TBTMs.Value)
	}
	// 24·(16K+8K) = 589,824 is within the 655,360 that ran; B = 24 is beyond
	// the 16K row's 16, within 2×.
	p, err = m.Decode(calculator.Query{ContextTokens: 16384, Concurrency: 24})
	if err != nil || p.Status != calculator.Fits || p.Basis != calculator.Extrapolated {
		t.Errorf("16K×24: status %s basis %s err %v, want fits, extrapolated", p.Status, p.Basis, err)
	}
	if p.TotalTokS == nil || p.TotalTokS.Value <= 353.7 || p.TBTMs.Value <= 56.6 {
		t.Errorf("16K×24 total %v TBT %v, want both above 16K×16's 353.7 tok/s and 56.6 ms", p.TotalTokS, p.TBTMs)
	}
	// 28·24K = 688,128 lies between the largest that ran and the smallest refused.
	p, err = m.Decode(calculator.Query{ContextTokens: 16384, Concurrency: 28})
	if err != nil || p.Status != calculator.BoundaryUncertain || p.TotalTokS == nil {
		t.Errorf("16K×28: status %s err %v, want boundary_uncertain with a speed", p.Status, err)
	}
	p, err = fit(t, nemotronRun()).Decode(calculator.Query{ContextTokens: 140 << 10, Concurrency: 1})
	if !errors.Is(err, calculator.ErrRefused) {
		// 140K is beyond nemotron's max_model_len anyway: status, not refusal.
		if err != nil || p.Status != calculator.ExceedsMaxModelLen {
			t.Errorf("nemotron 140K×1: %v %v", p.Status, err)
		}
	}
}

func TestRefusals(t *testing.T) {
	long := faraRun()
	long.MaxModelLen = 0 // so the context limit, not max_model_len, speaks
	noParams := faraRun()
	noParams.ParamsB = 0
	tests := []struct {
		name string
		run  calculator.Run
		q    calculator.Query
		want string
	}{
		{"context beyond 1.25× the longest measured", long, calculator.Query{ContextTokens: 200 << 10, Concurrency: 1}, "beyond 1.25×"},
		{"concurrency beyond 2× measured", long, calculator.Query{ContextTokens: 16384, Concurrency: 40, VRAMGB: 48}, "beyond 2× the largest"},
		{"vram without model size", noParams, calculator.Query{ContextTokens: 0, Concurrency: 1, VRAMGB: 24}, "model's size is unknown"},
		{"vram too small for weights", faraRun(), calculator.Query{ContextTokens: 0, Concurrency: 1, VRAMGB: 2}, "no room for the KV cache"},
		{"not a cell", faraRun(), calculator.Query{ContextTokens: -1, Concurrency: 1}, "not a cell"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := fit(t, tt.run).Decode(tt.q)
			var r *calculator.Refusal
			if !errors.As(err, &r) || !strings.Contains(r.Error(), tt.want) {
				t.Fatalf("err = %v, want a refusal mentioning %q", err, tt.want)
			}
		})
	}
}

func TestNoValidCellsIsARefusal(t *testing.T) {
	r := faraRun()
	for i := range r.Decode {
		r.Decode[i].Status = calculator.CellOverCapacity
	}
	if _, err := calculator.Fit(r); !errors.Is(err, calculator.ErrRefused) {
		t.Fatalf("Fit on a run with no valid cell: %v, want a refusal", err)
	}
}

func TestDegenerateValuesNeverReachAnswers(t *testing.T) {
	r := faraRun()
	r.Decode[3].TBTMs = f(0)     // a zero step time
	r.Decode[4].TotalTokS = f(0) // a zero throughput
	r.Prefill = r.Prefill[:1]    // too few prefill points to fit
	m := fit(t, r)
	// Measured cells answer their measurement; the other paths (another
	// output reservation, another VRAM) go through the model, where a zero
	// step time would become +Inf.
	for _, q := range []calculator.Query{{}, {MaxOutputTokens: 4096}, {VRAMGB: 16}} {
		estimates := 0
		for _, l := range []int{0, 8192, 24 << 10, 100 << 10} {
			for _, b := range []int{1, 3, 4, 5, 8, 16} {
				q.ContextTokens, q.Concurrency = l, b
				p, err := m.Decode(q)
				if errors.Is(err, calculator.ErrRefused) {
					continue
				}
				if err != nil {
					t.Fatalf("%+v: %v", q, err)
				}
				for _, e := range []*calculator.Estimate{p.TotalTokS, p.PerRequestTokS, p.TBTMs, p.TTFTMs} {
					if e == nil {
						continue
					}
					estimates++
					if bad(e.Value) || bad(e.Low) || bad(e.High) || e.Low < 0 {
						t.Fatalf("%+v: estimate %+v is not a finite, non-negative interval", q, *e)
					}
				}
			}
		}
		// Each path must have answered with speeds, or this checks nothing.
		if estimates < 24 {
			t.Errorf("output %d, VRAM %g GB: %d estimates checked over 24 cells, want one a cell at least", q.MaxOutputTokens, q.VRAMGB, estimates)
		}
	}
	if _, err := m.Prefill(50000); !errors.Is(err, calculator.ErrRefused) {
		t.Errorf("prefill with one point: %v, want a refusal", err)
	}
}

func bad(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }

// TestProperties checks random queries inside the supported range.
func TestProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, r := range seeds() {
		m := fit(t, r)
		answered, compared := 0, 0
		for range 3000 {
			l := rng.IntN(140<<10) / 1024 * 1024
			b := 1 + rng.IntN(64)
			p, err := m.Decode(calculator.Query{ContextTokens: l, Concurrency: b})
			if errors.Is(err, calculator.ErrRefused) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			answered++
			for _, e := range []*calculator.Estimate{p.TotalTokS, p.PerRequestTokS, p.TBTMs, p.TTFTMs} {
				if e != nil && !(e.Low <= e.Value && e.Value <= e.High) {
					t.Fatalf("%s %d×%d: interval %+v does not contain its value", r.ID, l, b, *e)
				}
			}
			if p.Status == calculator.Fits && p.Capacity.KVTokensHigh > 0 && p.Capacity.ReservedTokens >= p.Capacity.KVTokensHigh {
				t.Fatalf("%s %d×%d: reserves %d ≥ capacity %d but fits", r.ID, l, b, p.Capacity.ReservedTokens, p.Capacity.KVTokensHigh)
			}
			if p.Status == calculator.Fits && p.Capacity.ReservedTokens > p.Capacity.KVTokensLow {
				t.Fatalf("%s %d×%d: reserves %d beyond the largest that ran (%d) but fits", r.ID, l, b, p.Capacity.ReservedTokens, p.Capacity.KVTokensLow)
			}
			if p.TBTMs == nil || p.Basis == calculator.Measured {
				continue
			}
			// TBT never decreases as context or concurrency grows.
			for _, next := range []calculator.Query{{ContextTokens: l + 1024, Concurrency: b}, {ContextTokens: l, Concurrency: b + 1}} {
				q, err := m.Decode(next)
				if err != nil || q.TBTMs == nil || q.Status == calculator.RequestsQueued || p.Status == calculator.RequestsQueued {
					continue
				}
				compared++
				if q.TBTMs.Value < p.TBTMs.Value*(1-1e-9) {
					t.Fatalf("%s: TBT falls from %.3f at %d×%d (%s) to %.3f at %d×%d (%s)", r.ID,
						p.TBTMs.Value, l, b, p.Basis, q.TBTMs.Value, next.ContextTokens, next.Concurrency, q.Basis)
				}
			}
		}
		t.Logf("%s: %d of 3000 queries answered, %d steps of TBT compared", r.ID, answered, compared)
		if answered < 2000 || compared < 500 {
			t.Errorf("%s: %d of 3000 queries answered, %d steps of TBT compared: the test checked too little", r.ID, answered, compared)
		}
	}
}

func TestVRAMScaling(t *testing.T) {
	m := fit(t, faraRun())
	base, err := m.Capacity(calculator.Query{ContextTokens: 32768})
	if err != nil {
		t.Fatal(err)
	}
	big, err := m.Capacity(calculator.Query{ContextTokens: 32768, VRAMGB: 16})
	if err != nil {
		t.Fatal(err)
	}
	if big.Basis != calculator.ScaledVRAM || big.KVTokensLow <= base.KVTokensLow || big.MaxConcurrency <= base.MaxConcurrency {
		t.Errorf("16 GB: %+v, want more capacity than 12 GB's %+v, scaled_vram", big, base)
	}
	small, err := m.Capacity(calculator.Query{ContextTokens: 32768, VRAMGB: 8})
	if err != nil {
		t.Fatal(err)
	}
	if small.KVTokensHigh >= base.KVTokensHigh || small.MaxConcurrency >= base.MaxConcurrency {
		t.Errorf("8 GB: %+v, want less capacity than %+v", small, base)
	}
	if !strings.Contains(strings.Join(msg.Texts(small.Warnings), " "), "low confidence") {
		t.Errorf("8 GB is far from the measured pool: warnings %v lack low confidence", small.Warnings)
	}
	// A cell over capacity on 12 GB fits on a much larger card.
	p, err := m.Decode(calculator.Query{ContextTokens: 16384, Concurrency: 32, VRAMGB: 24})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status == calculator.OverCapacity || p.Basis != calculator.ScaledVRAM || p.TotalTokS == nil {
		t.Errorf("16K×32 on 24 GB: status %s basis %s, want a scaled_vram speed", p.Status, p.Basis)
	}
}

func TestCapacityAnswers(t *testing.T) {
	a, err := fit(t, faraRun()).Capacity(calculator.Query{ContextTokens: 16384, Concurrency: 8})
	if err != nil {
		t.Fatal(err)
	}
	// Largest that ran: 16·(32K+8K) = 655,360; smallest refused 32·(16K+8K) = 786,432.
	if a.KVTokensLow != 655360 || a.KVTokensHigh != 786432 {
		t.Errorf("KV interval %d–%d, want 655360–786432", a.KVTokensLow, a.KVTokensHigh)
	}
	if a.MaxConcurrency != 26 || a.MaxConcurrencyPossible == nil || *a.MaxConcurrencyPossible != 31 {
		t.Errorf("max concurrency at 16K %d (possible %v), want 26 (31)", a.MaxConcurrency, a.MaxConcurrencyPossible)
	}
	if a.MaxContextTokens == nil || *a.MaxContextTokens != 655360/8-8192 {
		t.Errorf("max context at 8 requests %v, want %d", a.MaxContextTokens, 655360/8-8192)
	}
	// 100 requests fit at no context; at context 0 no more than the 64 ever
	// seen running together surely fit.
	a, err = fit(t, faraRun()).Capacity(calculator.Query{ContextTokens: 0, Concurrency: 100})
	if err != nil {
		t.Fatal(err)
	}
	if a.MaxContextTokens != nil || a.MaxConcurrency != 64 {
		t.Errorf("0×100: max context %v, max concurrency %d; want none and 64", a.MaxContextTokens, a.MaxConcurrency)
	}
	n, err := fit(t, nemotronRun()).Capacity(calculator.Query{ContextTokens: 0})
	if err != nil {
		t.Fatal(err)
	}
	if n.SequenceLimit != 67 || n.MaxConcurrency != 67 {
		t.Errorf("nemotron at context 0: sequence limit %d, max concurrency %d, want 67, 67", n.SequenceLimit, n.MaxConcurrency)
	}
}

func TestPrefill(t *testing.T) {
	m := fit(t, faraRun())
	p, err := m.Prefill(8192)
	if err != nil || p.Basis != calculator.Measured || p.TTFTMs.Value != 3472 {
		t.Fatalf("8K: %+v %v, want the measured 3472 ms", p, err)
	}
	p, err = m.Prefill(96 << 10)
	if err != nil || p.Basis != calculator.Interpolated {
		t.Fatalf("96K: %+v %v", p, err)
	}
	if p.TTFTMs.Value < 64442 || p.TTFTMs.Value > 212786 || !(p.TTFTMs.Low < p.TTFTMs.Value && p.TTFTMs.Value < p.TTFTMs.High) {
		t.Errorf("96K TTFT %+v, want between the 64K and 128K measurements with an interval", p.TTFTMs)
	}
	if math.Abs(p.PromptTokS.Value-float64(96<<10)/p.TTFTMs.Value*1000) > 1e-6 {
		t.Errorf("prompt tok/s %v is not context/TTFT", p.PromptTokS.Value)
	}
	if _, err := m.Prefill(300 << 10); !errors.Is(err, calculator.ErrRefused) {
		t.Errorf("300K: %v, want refused (beyond max_model_len)", err)
	}
}

// TestHeldOutAccuracy is the accuracy bar on the published runs: held-out
// mean absolute error of total tok/s and TBT, interpolated and extrapolated,
// and the status calls.
func TestHeldOutAccuracy(t *testing.T) {
	var reps []calculator.Report
	for _, r := range seeds() {
		reps = append(reps, calculator.Evaluate(r))
	}
	p := calculator.Pool(reps)
	checks := []struct {
		name  string
		stats calculator.ErrorStats
		bar   float64
	}{
		{"interpolated total tok/s", p.Interpolated.Total, 0.010},
		{"extrapolated total tok/s", p.Extrapolated.Total, 0.025},
		// T read from S and the cells' ratio T/S (chooseRatio): 1.82 %
		// and 5.10 % with T read alone.
		{"interpolated TBT", p.Interpolated.TBT, 0.015},
		{"extrapolated TBT", p.Extrapolated.TBT, 0.035},
	}
	for _, c := range checks {
		if c.stats.N < 20 {
			t.Errorf("%s: only %d held-out cells", c.name, c.stats.N)
		}
		if c.stats.Mean > c.bar {
			t.Errorf("%s: mean error %.2f%% over the %.1f%% bar", c.name, 100*c.stats.Mean, 100*c.bar)
		}
	}
	if p.Status.Wrong != 0 {
		t.Errorf("wrong status calls: %v", p.Status.Misses)
	}
	if p.Status.Boundary > 6 {
		t.Errorf("%d boundary_uncertain calls: %v", p.Status.Boundary, p.Status.Misses)
	}
}

// TestSeedsHeldOutCellByCell: each valid cell of the bundled runs held
// out in turn and the run refitted without it, as matrixd eval reports
// it. Time between tokens read alone erred 2.62 % here; read from the
// total and the ratio of the cells around, it errs as little as the total.
func TestSeedsHeldOutCellByCell(t *testing.T) {
	var reps []calculator.HoldoutReport
	for _, r := range seeds() {
		rep, err := calculator.LeaveOneOut(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		reps = append(reps, rep)
	}
	p := calculator.PoolHoldouts("seeds", reps)
	if p.Total.N < 40 || p.TBT.N < 40 {
		t.Fatalf("only %d / %d held-out answers", p.Total.N, p.TBT.N)
	}
	if p.Total.Mean > 0.008 {
		t.Errorf("total tok/s held out cell by cell: %.2f%%, over 0.8%%", 100*p.Total.Mean)
	}
	if p.TBT.Mean > 0.02 {
		t.Errorf("TBT held out cell by cell: %.2f%%, over 2.0%%", 100*p.TBT.Mean)
	}
}

func TestBandsComeFromHeldOutErrors(t *testing.T) {
	r := faraRun()
	b := fit(t, r).Bands()
	rep := calculator.Evaluate(r)
	// The band is an order statistic of the held-out errors at or above
	// their p90 (the conformal 90 % bound), widened by 1 + 1/√n for the
	// few errors a run has, then scaled by the pooled calibration (the run
	// names no engine).
	e := rep.Interpolated.Total
	var k calculator.Factor
	for _, f := range calculator.Calibration().Families {
		if f.Family == "" {
			k = f.InterpolatedTotal
		}
	}
	if k.Power != 1 || !(k.Scale > 0) {
		t.Fatalf("pooled calibration %+v, want a scale of the run's own band (power 1)", k)
	}
	widen := k.Scale * (1 + 1/math.Sqrt(float64(e.N)))
	if !b.Calibrated || b.Family != "" || b.InterpolatedTotal < math.Max(e.P90*widen, 0.01) || b.InterpolatedTotal > math.Max(e.Max*widen, 0.01) {
		t.Errorf("interpolated total band %v (family %q), want between the run's held-out p90 %v and max %v, × %.3f", b.InterpolatedTotal, b.Family, e.P90, e.Max, widen)
	}
	// A run too small to hold anything out gets the wide, flagged default.
	tiny := calculator.Run{ID: "tiny", MaxOutputTokens: 100, Decode: r.Decode[:2]}
	m := fit(t, tiny)
	p, err := m.Decode(calculator.Query{ContextTokens: 0, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	if m.Bands().Calibrated {
		t.Error("a two-cell run claims calibrated bands")
	}
	if !strings.Contains(strings.Join(msg.Texts(p.Warnings), " "), "too few cells to calibrate") {
		t.Errorf("uncalibrated answer lacks the warning: %v", p.Warnings)
	}
}

func TestGPUScaling(t *testing.T) {
	r := faraRun()
	r.GPU = "RTX 3060"
	m := fit(t, r)
	base, err := m.Decode(calculator.Query{ContextTokens: 16384, Concurrency: 8})
	if err != nil {
		t.Fatal(err)
	}
	// Same generation, 2.6× the bandwidth: faster, but never faster than
	// the bandwidth alone makes it (memory-bound work within one
	// architecture), with the measured within-generation band and the
	// 3090's 24 GB.
	p, err := m.Decode(calculator.Query{ContextTokens: 16384, Concurrency: 8, TargetGPU: "NVIDIA GeForce RTX 3090"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Basis != calculator.ScaledGPU || p.SpeedBasis != calculator.Measured {
		t.Errorf("basis %s/%s, want scaled_gpu from a measured cell", p.Basis, p.SpeedBasis)
	}
	if !(p.TBTMs.Value < base.TBTMs.Value && p.TBTMs.Value >= base.TBTMs.Value*360/936*(1-1e-9)) {
		t.Errorf("TBT on the 3090 %.2f ms, want below the 3060's %.2f and at least %.2f (bandwidth alone)", p.TBTMs.Value, base.TBTMs.Value, base.TBTMs.Value*360/936)
	}
	mv := calculator.Calibration().GPUMoveFor("")
	if mv.Alpha > 1 || mv.Gamma > 1 {
		t.Errorf("within a generation the move is %+v, want exponents at most 1", mv)
	}
	if p.BandTBT < mv.Band || p.TTFTMs != nil {
		t.Errorf("band %v (want ≥ the measured %v), TTFT %v (want none across GPUs)", p.BandTBT, mv.Band, p.TTFTMs)
	}
	if p.Capacity.KVTokensLow <= base.Capacity.KVTokensLow {
		t.Errorf("capacity on 24 GB %d, want more than 12 GB's %d", p.Capacity.KVTokensLow, base.Capacity.KVTokensLow)
	}
	// Across generations: refused unless rough.
	if _, err := m.Decode(calculator.Query{ContextTokens: 16384, Concurrency: 8, TargetGPU: "RTX 4090"}); !errors.Is(err, calculator.ErrRefused) || !strings.Contains(err.Error(), "generations") {
		t.Errorf("ampere → ada without rough: %v, want a refusal", err)
	}
	rough, err := m.Decode(calculator.Query{ContextTokens: 16384, Concurrency: 8, TargetGPU: "RTX 4090", Rough: true})
	if err != nil || rough.BandTBT < 0.4 || !strings.Contains(strings.Join(msg.Texts(rough.Warnings), " "), "rough") {
		t.Errorf("rough ampere → ada: band %v warnings %v err %v", rough.BandTBT, rough.Warnings, err)
	}
	if _, err := m.Decode(calculator.Query{ContextTokens: 0, Concurrency: 1, TargetGPU: "Voodoo 5"}); !errors.Is(err, calculator.ErrRefused) {
		t.Errorf("unknown GPU: %v, want a refusal", err)
	}
	same, err := m.Decode(calculator.Query{ContextTokens: 16384, Concurrency: 8, TargetGPU: "rtx 3060"})
	if err != nil || same.Basis != calculator.Measured {
		t.Errorf("target = the measured GPU: basis %s err %v, want measured", same.Basis, err)
	}
}

// TestGPUMoveWithoutSourceVRAM: a run that does not say its VRAM (or its
// memory utilization) still moves to another GPU, whose speed does not
// depend on them; only its capacity is not moved, and the answer says so.
func TestGPUMoveWithoutSourceVRAM(t *testing.T) {
	for _, unset := range []func(*calculator.Run){
		func(r *calculator.Run) { r.VRAMGB = 0 },
		func(r *calculator.Run) { r.GPUMemoryUtilization = 0 },
	} {
		r := faraRun()
		r.GPU = "RTX 3060"
		unset(&r)
		m := fit(t, r)
		p, err := m.Decode(calculator.Query{ContextTokens: 16384, Concurrency: 8, TargetGPU: "RTX 3090"})
		if err != nil {
			t.Fatal(err)
		}
		if p.Basis != calculator.ScaledGPU || p.TotalTokS == nil || !strings.Contains(strings.Join(msg.Texts(p.Warnings), " "), "KV capacity is not moved") {
			t.Errorf("basis %s, total %v, warnings %v; want scaled_gpu with a speed and the capacity warning", p.Basis, p.TotalTokS, p.Warnings)
		}
		// A VRAM size asked for explicitly still needs the run's own.
		if _, err := m.Decode(calculator.Query{ContextTokens: 16384, Concurrency: 8, TargetGPU: "RTX 3090", VRAMGB: 24}); !errors.Is(err, calculator.ErrRefused) {
			t.Errorf("explicit VRAM from a run without its own: %v, want a refusal", err)
		}
	}
}

// TestOtherModel: another model on the run's GPU is the run's surface with
// its weight and KV terms scaled, labelled scaled_model, with at least the
// band measured across models, and no TTFT.
func TestOtherModel(t *testing.T) {
	m := fit(t, faraRun())
	q := calculator.Query{ContextTokens: 16384, Concurrency: 8}
	base, err := m.Decode(q)
	if err != nil {
		t.Fatal(err)
	}
	q.OtherModel = calculator.ModelRatios{Weights: 2, KV: 1.5}
	p, err := m.Decode(q)
	if err != nil {
		t.Fatal(err)
	}
	band := calculator.Calibration().ModelMoveFor("").Band
	if p.Basis != calculator.ScaledModel || p.TTFTMs != nil || p.BandTotal < band || p.TBTMs.Value <= base.TBTMs.Value || p.TotalTokS.Value >= base.TotalTokS.Value {
		t.Errorf("basis %s, TTFT %v, band %v (want ≥ %v), TBT %v vs %v, total %v vs %v", p.Basis, p.TTFTMs, p.BandTotal, band, p.TBTMs.Value, base.TBTMs.Value, p.TotalTokS.Value, base.TotalTokS.Value)
	}
	if p.Capacity.KVTokensLow >= base.Capacity.KVTokensLow {
		t.Errorf("KV capacity %d for 1.5× the KV bytes per token, want less than the run's %d", p.Capacity.KVTokensLow, base.Capacity.KVTokensLow)
	}
	for _, bad := range []calculator.Query{
		{ContextTokens: 16384, Concurrency: 8, OtherModel: calculator.ModelRatios{Weights: -1, KV: 1}},
		{ContextTokens: 16384, Concurrency: 8, OtherModel: calculator.ModelRatios{Weights: 2, KV: 1}, TargetGPU: "RTX 3090"},
		{ContextTokens: 16384, Concurrency: 8, OtherModel: calculator.ModelRatios{Weights: 2, KV: 1}, VRAMGB: 48},
	} {
		if _, err := m.Decode(bad); !errors.Is(err, calculator.ErrRefused) {
			t.Errorf("%+v: %v, want a refusal", bad, err)
		}
	}
}

// TestRoughGridIsNotBridged: throughput that does not rise from B = 8 to 16
// and then doubles at 32 is a kernel switch; nothing across it is
// interpolated.
func TestRoughGridIsNotBridged(t *testing.T) {
	r := calculator.Run{ID: "switch", MaxOutputTokens: 1024}
	for _, l := range []int{0, 8192} {
		for _, c := range []struct {
			b     int
			total float64
		}{{1, 100}, {2, 190}, {4, 350}, {8, 600}, {16, 590}, {32, 1200}} {
			slow := 1 + float64(l)/65536
			total := c.total / slow
			tbt := float64(c.b) * 1000 / total
			r.Decode = append(r.Decode, calculator.Cell{ContextTokens: l, Concurrency: c.b, Status: calculator.CellValid,
				TotalTokS: f(total), TBTMs: f(tbt), DurationS: f(30), AvgActiveRequests: f(float64(c.b)), OutputTokens: n(int(total * 30))})
		}
	}
	m := fit(t, r)
	for _, c := range []struct {
		b    int
		want string
	}{{12, "between concurrency 8 and 16"}, {24, "between concurrency 16 and 32"}, {48, "between concurrency 16 and 32"}} {
		_, err := m.Decode(calculator.Query{ContextTokens: 4096, Concurrency: c.b})
		if !errors.Is(err, calculator.ErrRefused) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("B=%d across the switch: %v, want a refusal naming %s", c.b, err, c.want)
		}
	}
	if p, err := m.Decode(calculator.Query{ContextTokens: 4096, Concurrency: 3}); err != nil || p.Basis != calculator.Interpolated {
		t.Errorf("B=3, where the grid is smooth: %v %v, want interpolated", p.Basis, err)
	}
}

// TestInterpolantChosenPerRun: a mixture-of-experts-like run, whose step
// time rises steeply from B = 1 to 4 and then flattens, interpolates in
// log2 B; the dense seed runs stay in B.
func TestInterpolantChosenPerRun(t *testing.T) {
	moe := calculator.Run{ID: "moe", MaxOutputTokens: 1024}
	for _, l := range []int{0, 16384, 32768} {
		for _, b := range []int{1, 2, 4, 8, 16, 32} {
			tbt := (8 + 6*math.Log2(float64(b))) * (1 + float64(l)/131072)
			total := float64(b) * 1000 / tbt
			moe.Decode = append(moe.Decode, calculator.Cell{ContextTokens: l, Concurrency: b, Status: calculator.CellValid,
				TotalTokS: f(math.Round(total*10) / 10), TBTMs: f(math.Round(tbt*10) / 10)})
		}
	}
	if got := fit(t, moe).Interpolant(); !strings.Contains(got, "in log2 concurrency") {
		t.Errorf("MoE-like run interpolates in %s, want log2 concurrency", got)
	}
	rep := calculator.Evaluate(moe)
	if !strings.Contains(rep.Interpolant, "in log2 concurrency") || rep.Interpolated.TBT.N == 0 || rep.Interpolated.TBT.Mean > 0.02 {
		t.Errorf("MoE-like run held out: %s, TBT mean %.2f%% over %d cells; want log2 and under 2%%", rep.Interpolant, 100*rep.Interpolated.TBT.Mean, rep.Interpolated.TBT.N)
	}
	for _, r := range seeds() {
		if got := fit(t, r).Interpolant(); !strings.Contains(got, " in concurrency") {
			t.Errorf("%s interpolates %s, want in concurrency", r.ID, got)
		}
	}
}

// TestJumpIsRefusedInside: a grid whose throughput jumps between
// concurrency 16 and 32 (as Metal kernels switch on an M2 Ultra) is not
// interpolated across the jump: where in between it happens is unknown.
// Measured concurrencies are still answered at other contexts.
func TestJumpIsRefusedInside(t *testing.T) {
	r := calculator.Run{ID: "jump", MaxOutputTokens: 32}
	totals := map[int][]float64{ // B = 1, 2, 4, 8, 16, 32
		512:  {78.17, 132.45, 218.67, 254.83, 321.07, 611.12},
		4096: {74.31, 122.04, 193.45, 221.11, 269.32, 440.42},
		8192: {71.20, 114.59, 175.80, 200.09, 232.97, 335.50},
	}
	for _, l := range []int{512, 4096, 8192} {
		for i, b := range []int{1, 2, 4, 8, 16, 32} {
			if l == 4096 && b == 32 {
				continue // asked below
			}
			r.Decode = append(r.Decode, calculator.Cell{ContextTokens: l, Concurrency: b, Status: calculator.CellValid, TotalTokS: f(totals[l][i])})
		}
	}
	m := fit(t, r)
	_, err := m.Decode(calculator.Query{ContextTokens: 4096, Concurrency: 24})
	if !errors.Is(err, calculator.ErrRefused) || !strings.Contains(err.Error(), "jumps between concurrency 16 and 32") {
		t.Errorf("B=24 across the jump: %v, want a refusal naming it", err)
	}
	p, err := m.Decode(calculator.Query{ContextTokens: 4096, Concurrency: 32})
	if err != nil || p.TotalTokS == nil {
		t.Fatalf("B=32, measured at the other contexts: %v", err)
	}
	if got := p.TotalTokS.Value; math.Abs(got/440.42-1) > 0.1 {
		t.Errorf("4096×32 predicted %.1f from its column, measured 440.4", got)
	}
	if _, err := m.Decode(calculator.Query{ContextTokens: 4096, Concurrency: 12}); err != nil {
		t.Errorf("B=12, below the jump: %v", err)
	}
}

// TestPlateauIsAnswered: an engine that is saturated serves the same
// total at 50, 100 and 200 requests (a published vLLM sweep on two L40S);
// a level row is not a kernel switch, so cells on the plateau are answered.
func TestPlateauIsAnswered(t *testing.T) {
	r := calculator.Run{ID: "plateau", MaxOutputTokens: 128}
	for _, c := range []struct {
		l, b  int
		total float64
	}{
		{128, 1, 25.7}, {128, 10, 207.6}, {128, 50, 662.0}, {128, 100, 856.0}, {128, 200, 854.7},
		{4096, 1, 21.8}, {4096, 10, 91.1}, {4096, 50, 115.6}, {4096, 100, 115.6}, {4096, 200, 115.6},
	} {
		r.Decode = append(r.Decode, calculator.Cell{ContextTokens: c.l, Concurrency: c.b, Status: calculator.CellValid, TotalTokS: f(c.total)})
	}
	m := fit(t, r)
	p, err := m.Decode(calculator.Query{ContextTokens: 4096, Concurrency: 150})
	if err != nil || p.TotalTokS == nil {
		t.Fatalf("150 requests on the plateau: %v", err)
	}
	if v := p.TotalTokS.Value; math.Abs(v-115.6) > 2 {
		t.Errorf("150 requests on a plateau of 115.6 tok/s: %.1f", v)
	}
}

// TestShapeTransfer: rows of one run differ mostly by a factor, so a row's
// missing concurrency is read from the shape of the rows around it, where a
// curve through the row's own points and a line along context both miss
// (step time rising steeply with B and then flattening, and growing faster
// than linearly with context).
func TestShapeTransfer(t *testing.T) {
	step := func(l, b int) float64 {
		g := 10 + 30*(1-math.Exp(-float64(b)/3)) + 0.4*float64(b)
		return g * (1 + math.Pow(float64(l)/8192, 1.5))
	}
	r := calculator.Run{ID: "shape", MaxOutputTokens: 128}
	for _, l := range []int{512, 4096, 8192, 16384} {
		for _, b := range []int{1, 4, 16, 64} {
			if l == 8192 && b == 16 {
				continue // asked below
			}
			total := float64(b) * 1000 / step(l, b)
			r.Decode = append(r.Decode, calculator.Cell{ContextTokens: l, Concurrency: b, Status: calculator.CellValid,
				TotalTokS: f(math.Round(total*100) / 100), TBTMs: f(math.Round(step(l, b)*100) / 100)})
		}
	}
	m := fit(t, r)
	if got := m.Interpolant(); !strings.Contains(got, "from other rows' shape") {
		t.Errorf("interpolant %q, want one that reads other rows' shape", got)
	}
	p, err := m.Decode(calculator.Query{ContextTokens: 8192, Concurrency: 16})
	if err != nil || p.TotalTokS == nil {
		t.Fatalf("8192×16: %v", err)
	}
	want := 16 * 1000 / step(8192, 16)
	if got := p.TotalTokS.Value; math.Abs(got/want-1) > 0.005 {
		t.Errorf("8192×16 predicted %.2f tok/s, truth %.2f (%.1f%% off)", got, want, 100*math.Abs(got/want-1))
	}
	// The answer names the other rows' cells it read, not only its own row's.
	for _, c := range []calculator.CellRef{{ContextTokens: 4096, Concurrency: 16}, {ContextTokens: 16384, Concurrency: 16}} {
		found := false
		for _, u := range p.Cells {
			found = found || u == c
		}
		if !found {
			t.Errorf("8192×16 leans on %v, want %v among them", p.Cells, c)
		}
	}
}

// TestSaturatedEngineIsHeldLevel: an engine whose KV cache is full runs no
// more requests at once however many are sent, so a row's throughput levels
// off; a cell on or past that level is answered on it (and says so), not
// from a surface fitted for a rising curve: the total held, the time
// between tokens of the requests that run held too, and no further than
// 2× the concurrency measured.
func TestSaturatedEngineIsHeldLevel(t *testing.T) {
	const kvTokens = 60000
	running := func(l, b int) float64 { return min(float64(b), kvTokens/float64(l+128)) }
	step := func(l int, n float64) float64 { return 7 + 0.3*n + 0.0008*n*float64(l) }
	total := func(l, b int) float64 { return running(l, b) * 1000 / step(l, running(l, b)) }
	run := func(skip calculator.CellRef) calculator.Run {
		r := calculator.Run{ID: "saturated", MaxOutputTokens: 128, VRAMGB: 24, GPUMemoryUtilization: 0.9, ParamsB: 4, Quantization: "AWQ 4-bit"}
		for _, l := range []int{128, 1024, 4096} {
			for _, b := range []int{1, 10, 50, 100, 200} {
				if l == skip.ContextTokens && b == skip.Concurrency {
					continue
				}
				r.Decode = append(r.Decode, calculator.Cell{ContextTokens: l, Concurrency: b, Status: calculator.CellValid,
					TotalTokS: f(math.Round(total(l, b)*10) / 10), TBTMs: f(math.Round(step(l, running(l, b))*100) / 100)})
			}
		}
		return r
	}
	says := func(p calculator.Prediction) bool {
		for _, w := range msg.Texts(p.Warnings) {
			if strings.Contains(w, "stops rising") {
				return true
			}
		}
		return false
	}
	for _, h := range []struct {
		calculator.CellRef
		basis calculator.Basis
	}{
		{calculator.CellRef{ContextTokens: 1024, Concurrency: 100}, calculator.Interpolated}, // on the level
		{calculator.CellRef{ContextTokens: 4096, Concurrency: 200}, calculator.Extrapolated}, // past the row's end
	} {
		p, err := fit(t, run(h.CellRef)).Decode(calculator.Query{ContextTokens: h.ContextTokens, Concurrency: h.Concurrency})
		if err != nil || p.TotalTokS == nil || p.TBTMs == nil {
			t.Fatalf("%v: %v", h.CellRef, err)
		}
		want := total(h.ContextTokens, h.Concurrency)
		if got := p.TotalTokS.Value; math.Abs(got/want-1) > 0.005 {
			t.Errorf("%v predicted %.1f tok/s, the level is %.1f (%.1f%% off)", h.CellRef, got, want, 100*math.Abs(got/want-1))
		}
		wantTBT := step(h.ContextTokens, running(h.ContextTokens, h.Concurrency))
		if got := p.TBTMs.Value; math.Abs(got/wantTBT-1) > 0.03 {
			t.Errorf("%v time between tokens %.2f ms, the running requests' is %.2f", h.CellRef, got, wantTBT)
		}
		if p.SpeedBasis != h.basis {
			t.Errorf("%v basis %s, want %s", h.CellRef, p.SpeedBasis, h.basis)
		}
		if !says(p) {
			t.Errorf("%v: warnings %q do not say throughput stops rising", h.CellRef, p.Warnings)
		}
	}
	m := fit(t, run(calculator.CellRef{}))
	if _, err := m.Decode(calculator.Query{ContextTokens: 4096, Concurrency: 1000}); !errors.Is(err, calculator.ErrRefused) {
		t.Errorf("4096×1000, 5× the largest concurrency measured: %v, want a refusal", err)
	}
	// Another VRAM size moves a level the KV cache set: it is not held.
	p, err := m.Decode(calculator.Query{ContextTokens: 4096, Concurrency: 150, VRAMGB: 48})
	if err != nil {
		t.Fatal(err)
	}
	if says(p) {
		t.Errorf("4096×150 on 48 GB: %q, a level read from the 24 GB run's KV cache", p.Warnings)
	}
}

// TestBatchPastItsLevelTakesLongerSteps: in a batch whose requests all run
// (a static-batch benchmark that publishes throughput only), a level total
// means each step serves more requests more slowly: past the row's end the
// time between tokens grows with the batch.
func TestBatchPastItsLevelTakesLongerSteps(t *testing.T) {
	r := calculator.Run{ID: "batch"}
	for _, c := range []struct {
		l, b  int
		total float64
	}{
		{512, 1, 82.5}, {512, 16, 903.4}, {512, 32, 1381.6}, {512, 64, 1378.6},
		{1024, 1, 80.1}, {1024, 16, 716.8}, {1024, 32, 729.2}, {1024, 64, 722.4},
		{2048, 1, 75.8}, {2048, 16, 375.7}, {2048, 32, 371.5}, {2048, 64, 370.0},
	} {
		r.Decode = append(r.Decode, calculator.Cell{ContextTokens: c.l, Concurrency: c.b, Status: calculator.CellValid, TotalTokS: f(c.total)})
	}
	p, err := fit(t, r).Decode(calculator.Query{ContextTokens: 1024, Concurrency: 96, MaxOutputTokens: 1})
	if err != nil || p.TotalTokS == nil || p.TBTMs == nil {
		t.Fatalf("1024×96: %v", err)
	}
	if v := p.TotalTokS.Value; math.Abs(v/722.4-1) > 0.01 {
		t.Errorf("1024×96 total %.1f tok/s, want the level 722.4", v)
	}
	// Every request of the batch runs: per-request speed × 96 is the total.
	if v := 96 * 1000 / p.TBTMs.Value; math.Abs(v/p.TotalTokS.Value-1) > 0.02 {
		t.Errorf("1024×96: TBT %.1f ms gives %.1f tok/s over 96 requests, but the total is %.1f", p.TBTMs.Value, v, p.TotalTokS.Value)
	}
}

// TestSwitchIsNotALevel: where throughput rises much faster over one step
// of concurrency than over the step before (a kernel switch, here at
// B = 32 after a nearly level 8 → 16), a level stretch is not the engine's
// last word and is not held.
func TestSwitchIsNotALevel(t *testing.T) {
	r := calculator.Run{ID: "switch"}
	for _, row := range []struct {
		l      int
		totals []float64
	}{
		{512, []float64{76.3, 111.4, 152.2, 192.5, 199.1, 393.3}},
		{4096, []float64{67.6, 98.2, 129.2, 156.8, 161.7, 270.9}},
		{8192, []float64{66.3, 88.6, 114.3, 136.7, 137.7}}, // 32 asked below
	} {
		for i, v := range row.totals {
			r.Decode = append(r.Decode, calculator.Cell{ContextTokens: row.l, Concurrency: 1 << i, Status: calculator.CellValid, TotalTokS: f(v)})
		}
	}
	p, err := fit(t, r).Decode(calculator.Query{ContextTokens: 8192, Concurrency: 32, MaxOutputTokens: 32})
	if err != nil || p.TotalTokS == nil {
		t.Fatalf("8192×32: %v", err)
	}
	if v := p.TotalTokS.Value; v < 1.3*137.7 {
		t.Errorf("8192×32 predicted %.1f tok/s: held near the 16-request level (137.7) though the other rows jump at 32", v)
	}
	for _, w := range msg.Texts(p.Warnings) {
		if strings.Contains(w, "stops rising") {
			t.Errorf("warning %q on a run whose level stretch is a switch", w)
		}
	}
}

// TestSharedCellsSetNoLevel: cells shared from a run with other capacity
// settings inform speed, never capacity; a level is a capacity effect, so
// one they show is not this run's.
func TestSharedCellsSetNoLevel(t *testing.T) {
	r := calculator.Run{ID: "own", MaxOutputTokens: 128}
	step := func(l, b int) float64 { return (7 + 0.3*float64(b)) * (1 + float64(l)/8192) }
	for _, l := range []int{1024, 4096} {
		for _, b := range []int{1, 2, 4, 8} {
			r.Decode = append(r.Decode, calculator.Cell{ContextTokens: l, Concurrency: b, Status: calculator.CellValid, TotalTokS: f(float64(b) * 1000 / step(l, b))})
		}
		for _, b := range []int{16, 32, 64} { // a sibling with less KV cache levels off from 16
			r.SharedSpeed = append(r.SharedSpeed, calculator.Cell{ContextTokens: l, Concurrency: b, Status: calculator.CellValid, TotalTokS: f(16 * 1000 / step(l, 16))})
		}
	}
	p, err := fit(t, r).Decode(calculator.Query{ContextTokens: 1024, Concurrency: 48})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range msg.Texts(p.Warnings) {
		if strings.Contains(w, "stops rising") {
			t.Errorf("1024×48: %q, a level only the shared cells show", w)
		}
	}
}

// TestAnotherVRAMKeepsAMeasuredCell: asked at a measured cell with another
// VRAM size under which it still fits, the answer keeps the cell's
// published per-request speed and TTFT (the speed is the measured GPU's)
// rather than refitted ones.
func TestAnotherVRAMKeepsAMeasuredCell(t *testing.T) {
	r := faraRun()
	m := fit(t, r)
	var cell calculator.Cell
	for _, c := range r.Decode {
		if c.ContextTokens == 16384 && c.Concurrency == 8 {
			cell = c
		}
	}
	if cell.Status != calculator.CellValid || cell.TTFTMs == nil || cell.PerRequestTokS == nil {
		t.Fatalf("fara 16K×8 is %+v, want a valid measured cell", cell)
	}
	p, err := m.Decode(calculator.Query{ContextTokens: 16384, Concurrency: 8, VRAMGB: r.VRAMGB + 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if p.Basis != calculator.ScaledVRAM || p.SpeedBasis != calculator.Measured || p.Status != calculator.Fits {
		t.Fatalf("basis %s, speed %s, status %s", p.Basis, p.SpeedBasis, p.Status)
	}
	if p.PerRequestTokS.Value != *cell.PerRequestTokS || p.TTFTMs.Value != *cell.TTFTMs {
		t.Errorf("per-request %v, TTFT %v; the cell published %v and %v", p.PerRequestTokS.Value, p.TTFTMs.Value, *cell.PerRequestTokS, *cell.TTFTMs)
	}
	// A VRAM size under which the cell may or may not fit: where it runs,
	// it runs as measured, TTFT included.
	for _, c := range r.Decode {
		if c.ContextTokens == 16384 && c.Concurrency == 16 {
			cell = c
		}
	}
	p, err = m.Decode(calculator.Query{ContextTokens: 16384, Concurrency: 16, VRAMGB: 8})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != calculator.BoundaryUncertain || p.SpeedBasis != calculator.Measured || p.TTFTMs == nil || p.TTFTMs.Value != *cell.TTFTMs {
		t.Errorf("16K × 16 on 8 GB: status %s, speed %s, TTFT %v; want boundary_uncertain at the measured speed and TTFT %v", p.Status, p.SpeedBasis, p.TTFTMs, *cell.TTFTMs)
	}
}

// TestRangeRefusalNamesTheContextWithSpeeds: Fara measured up to 253,952
// tokens, but a speed only up to 131,072 (the longer rows gave no token in
// the window): the refusal names the limit it applies.
func TestRangeRefusalNamesTheContextWithSpeeds(t *testing.T) {
	m := fit(t, faraRun())
	_, err := m.Decode(calculator.Query{ContextTokens: 180000, Concurrency: 1})
	if err == nil || !strings.Contains(err.Error(), "beyond 1.25× the longest context at which this run measured a speed (131072 tokens)") {
		t.Errorf("%v; want the refusal naming 131072 tokens", err)
	}
}

// TestMovedSpeedIntervalsAgree: moved to another GPU, an answer's band is
// the move's, measured on speed: per-request speed spans it as the total
// does (its high end was 4.3× the value on a rough move, 12 requests at
// it twice the total's high end), and the time between tokens spans its
// inverse.
func TestMovedSpeedIntervalsAgree(t *testing.T) {
	m := fit(t, faraRun())
	for _, q := range []calculator.Query{
		{ContextTokens: 16384, Concurrency: 11, TargetGPU: "RTX 3090"},
		{ContextTokens: 16384, Concurrency: 12, TargetGPU: "GB200", Rough: true},
	} {
		p, err := m.Decode(q)
		if err != nil {
			t.Fatal(err)
		}
		tot, pr, tbt := p.TotalTokS, p.PerRequestTokS, p.TBTMs
		if p.Basis != calculator.ScaledGPU || tot == nil || pr == nil || tbt == nil {
			t.Fatalf("%s: basis %s, %+v", q.TargetGPU, p.Basis, p)
		}
		rel := func(e *calculator.Estimate) (float64, float64) { return 1 - e.Low/e.Value, e.High/e.Value - 1 }
		tl, th := rel(tot)
		pl, ph := rel(pr)
		if math.Abs(tl-pl) > 1e-6 || math.Abs(th-ph) > 1e-6 {
			t.Errorf("%s: per-request −%.3f/+%.3f, total −%.3f/+%.3f: want the same band", q.TargetGPU, pl, ph, tl, th)
		}
		if math.Abs(tbt.Low*pr.High-1000) > 1e-6*1000 || math.Abs(tbt.High*pr.Low-1000) > 1e-6*1000 {
			t.Errorf("%s: TBT %+v is not the inverse of per-request %+v", q.TargetGPU, tbt, pr)
		}
	}
}

// TestAnotherOutputKeepsAQueuedCell: Nemotron's empty-prompt cell at 128
// requests queued at its sequence limit (about 67 at once), not its KV
// cache; a shorter output reservation runs the same requests, so the
// measured cell stands (it was extrapolated from 64 requests: 1482 tok/s
// against the 1214.7 measured).
func TestAnotherOutputKeepsAQueuedCell(t *testing.T) {
	r := nemotronRun()
	m := fit(t, r)
	for _, out := range []int{0, 1024, 4096} {
		p, err := m.Decode(calculator.Query{ContextTokens: 0, Concurrency: 128, MaxOutputTokens: out})
		if err != nil {
			t.Fatal(err)
		}
		if p.Status != calculator.RequestsQueued || p.Basis != calculator.Measured || p.TotalTokS == nil || p.TotalTokS.Value != 1214.7 {
			t.Errorf("max output %d: status %s, basis %s, total %v; want the measured queued cell, 1214.7 tok/s", out, p.Status, p.Basis, p.TotalTokS)
		}
	}
}

// TestExtrapolationHasNoDip: past the end of fara's 16K row (measured to
// 16 requests), the extrapolated total rises with concurrency up to the
// capacity limit; a single nearest anchor made it fall 1 % where the
// nearest measured cell changed (393.6 tok/s at 26 requests, 390.3 at 27).
func TestExtrapolationHasNoDip(t *testing.T) {
	m := fit(t, faraRun())
	last := 0.0
	for b := 17; b <= 30; b++ {
		p, err := m.Decode(calculator.Query{ContextTokens: 16384, Concurrency: b})
		if err != nil {
			t.Fatal(err)
		}
		if p.TotalTokS == nil {
			break // over capacity
		}
		if p.TotalTokS.Value < last {
			t.Errorf("16K×%d: %.1f tok/s, below %.1f at %d", b, p.TotalTokS.Value, last, b-1)
		}
		last = p.TotalTokS.Value
	}
}

// TestLongerOutputReservesMoreOfTheSamePool: asking with another
// max_output_tokens changes what each request reserves, not the KV pool the
// run's cells showed: 8 × (1000 + 100,000) tokens is more than the largest
// pool fara's grid allows (786,432), so it is over capacity.
func TestLongerOutputReservesMoreOfTheSamePool(t *testing.T) {
	m := fit(t, faraRun())
	base, err := m.Decode(calculator.Query{ContextTokens: 1000, Concurrency: 8})
	if err != nil {
		t.Fatal(err)
	}
	long, err := m.Decode(calculator.Query{ContextTokens: 1000, Concurrency: 8, MaxOutputTokens: 100000})
	if err != nil {
		t.Fatal(err)
	}
	if long.Capacity.KVTokensLow != base.Capacity.KVTokensLow || long.Capacity.KVTokensHigh != base.Capacity.KVTokensHigh {
		t.Errorf("KV pool %d–%d with a longer reservation, %d–%d without", long.Capacity.KVTokensLow, long.Capacity.KVTokensHigh, base.Capacity.KVTokensLow, base.Capacity.KVTokensHigh)
	}
	if long.Status != calculator.OverCapacity || long.Capacity.ReservedTokens != 8*101000 {
		t.Errorf("8 × (1000 + 100,000): status %s, reserved %d", long.Status, long.Capacity.ReservedTokens)
	}
	c, err := m.Capacity(calculator.Query{ContextTokens: 32768, MaxOutputTokens: 100000})
	if err != nil {
		t.Fatal(err)
	}
	if want := base.Capacity.KVTokensHigh / (32768 + 100000); c.MaxConcurrency > want {
		t.Errorf("%d requests of 32K + 100,000 fit, more than the pool's %d", c.MaxConcurrency, want)
	}
}

// TestOtherModelCapacity: another model's KV capacity is the run's KV pool
// in bytes plus its model's weights less the other's, over the other's KV
// bytes per token, ±otherModelOverheadGB; a model whose weights leave no
// pool is refused, as are ratios without the models' sizes.
func TestOtherModelCapacity(t *testing.T) {
	m := fit(t, faraRun())
	q := calculator.Query{ContextTokens: 16384, Concurrency: 8}
	base, err := m.Capacity(q)
	if err != nil {
		t.Fatal(err)
	}
	from := calculator.ModelSize{WeightsGB: 2, KVBytesPerToken: 8192}
	to := calculator.ModelSize{WeightsGB: 4, KVBytesPerToken: 16384}
	q.OtherModel = calculator.ModelRatios{Weights: 2, KV: 2, From: from, To: to}
	a, err := m.Capacity(q)
	if err != nil {
		t.Fatal(err)
	}
	pool := func(tokens int) float64 { return float64(tokens) * 8192 / 1e9 }
	wantLo := int(math.Floor((pool(base.KVTokensLow) - 2 - 1.5) * 1e9 / 16384))
	wantHi := int(math.Ceil((pool(base.KVTokensHigh) - 2 + 1.5) * 1e9 / 16384))
	if a.Basis != calculator.ScaledModel || a.KVTokensLow != wantLo || a.KVTokensHigh != wantHi || a.SequenceLimit != 0 {
		t.Errorf("capacity %+v, want scaled_model %d–%d tokens (the run's %d–%d), no sequence limit", a, wantLo, wantHi, base.KVTokensLow, base.KVTokensHigh)
	}
	// The decode answer's capacity is the same.
	p, err := m.Decode(calculator.Query{ContextTokens: 16384, Concurrency: 8, OtherModel: q.OtherModel})
	if err != nil || p.Capacity.KVTokensLow != wantLo || p.Capacity.KVTokensHigh != wantHi {
		t.Errorf("decode capacity %+v (%v), want %d–%d", p.Capacity, err, wantLo, wantHi)
	}
	huge := q
	huge.OtherModel.To.WeightsGB = 2 + pool(base.KVTokensLow) + 0.1
	bare := q
	bare.OtherModel.From, bare.OtherModel.To = calculator.ModelSize{}, calculator.ModelSize{}
	vram := q
	vram.VRAMGB = 24
	for name, bad := range map[string]calculator.Query{"does not fit": huge, "no sizes": bare, "another VRAM size": vram} {
		if _, err := m.Capacity(bad); !errors.Is(err, calculator.ErrRefused) {
			t.Errorf("%s: %v, want a refusal", name, err)
		}
	}
	if _, err := m.Decode(calculator.Query{ContextTokens: 16384, Concurrency: 8, OtherModel: huge.OtherModel}); !errors.Is(err, calculator.ErrRefused) {
		t.Errorf("decode of a model that does not fit: %v, want a refusal", err)
	}
}

// TestPrefillOtherModel: another model's cold prefill is the run's scaled
// by the FLOPs of a prompt token, at least ±PrefillModelBand, and refused
// without the attention geometry.
func TestPrefillOtherModel(t *testing.T) {
	m := fit(t, faraRun())
	base, err := m.Prefill(16384)
	if err != nil {
		t.Fatal(err)
	}
	r := calculator.ModelRatios{Weights: 2, KV: 2,
		From: calculator.ModelSize{FLOPsPerToken: 8e9, AttentionFLOPs: 1e5},
		To:   calculator.ModelSize{FLOPsPerToken: 16e9, AttentionFLOPs: 4e5}}
	p, err := m.PrefillOtherModel(16384, r)
	if err != nil {
		t.Fatal(err)
	}
	k := (16e9 + 4e5*16384/2) / (8e9 + 1e5*16384/2)
	band := calculator.PrefillModelBand
	if want := base.TTFTMs.Value * k; p.Basis != calculator.ScaledModel || math.Abs(p.TTFTMs.Value-want) > 1e-6*want ||
		math.Abs(p.TTFTMs.High-want*(1+band)) > 1e-6*want || math.Abs(p.PromptTokS.Value-16384/want*1000) > 1e-6 {
		t.Errorf("prefill %+v, want %v ms ±%v", p, want, band)
	}
	noHeads := r
	noHeads.To.AttentionFLOPs = 0
	if _, err := m.PrefillOtherModel(16384, noHeads); !errors.Is(err, calculator.ErrRefused) {
		t.Errorf("without the heads: %v, want a refusal", err)
	}
	if _, err := m.PrefillOtherModel(10_000_000, r); !errors.Is(err, calculator.ErrRefused) {
		t.Errorf("beyond the run's prefill table: %v, want a refusal", err)
	}
}

// TestQueuedAtAShorterContextQueuesAtALongerOne: Fara's 131,072-token row
// published 1 and 2 requests as queued (a long prefill keeps each request
// out of the decode batch for part of the 30 s window): at a longer
// context the same requests are not answered as fitting, nor faster.
func TestQueuedAtAShorterContextQueuesAtALongerOne(t *testing.T) {
	r := faraRun()
	m := fit(t, r)
	measured := map[int]calculator.Cell{}
	for _, c := range r.Decode {
		if c.ContextTokens == 131072 {
			measured[c.Concurrency] = c
		}
	}
	for _, b := range []int{1, 2} {
		if measured[b].Status != calculator.CellRequestsQueued {
			t.Fatalf("fara 131072 × %d is %s, want requests_queued", b, measured[b].Status)
		}
		for _, l := range []int{140000, 150000, 160000} {
			p, err := m.Decode(calculator.Query{ContextTokens: l, Concurrency: b})
			if err != nil {
				t.Fatal(err)
			}
			if p.Status != calculator.RequestsQueued || p.TotalTokS == nil || p.TotalTokS.High > *measured[b].TotalTokS+1e-9 {
				t.Errorf("%d × %d: status %s, total %v; want requests_queued, its interval at most the %v tok/s measured at 131072", l, b, p.Status, p.TotalTokS, *measured[b].TotalTokS)
			}
			// The queueing comes from the prefill, not the KV pool.
			if p, err := m.Decode(calculator.Query{ContextTokens: l, Concurrency: b, VRAMGB: 16}); err != nil || p.Status != calculator.RequestsQueued {
				t.Errorf("%d × %d on 16 GB: %v, %v; want requests_queued", l, b, p.Status, err)
			}
		}
		// The measured queued cell stands under another VRAM size.
		p, err := m.Decode(calculator.Query{ContextTokens: 131072, Concurrency: b, VRAMGB: 12.5})
		if err != nil || p.Status != calculator.RequestsQueued || p.Basis != calculator.ScaledVRAM || p.SpeedBasis != calculator.Measured || p.TotalTokS.Value != *measured[b].TotalTokS {
			t.Errorf("131072 × %d on 12.5 GB: %v %v %v (%v); want the measured queued cell", b, p.Status, p.SpeedBasis, p.TotalTokS, err)
		}
	}
	// 4 requests ran valid at 131,072 tokens: nothing queued there.
	if p, err := m.Decode(calculator.Query{ContextTokens: 150000, Concurrency: 4}); err != nil || p.Status != calculator.Fits {
		t.Errorf("150000 × 4: %v, %v; want fits", p.Status, err)
	}
}

// TestQueuedByALimitReadsTheQueueMeasured: where a request limit queues the
// rest (Nemotron's state limit of about 67), an answer near the run's cell
// published as requests queued runs as that cell measured the queue to
// run, not as 67 requests would alone; and where the reservations may not
// fit the KV cache, those that run are still the limit's.
func TestQueuedByALimitReadsTheQueueMeasured(t *testing.T) {
	m := fit(t, nemotronRun())
	at := func(l, b int) calculator.Prediction {
		t.Helper()
		p, err := m.Decode(calculator.Query{ContextTokens: l, Concurrency: b})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	measured := at(0, 128)
	if measured.Status != calculator.RequestsQueued || measured.TotalTokS.Value != 1214.7 {
		t.Fatalf("0 × 128: %s %v, want the published requests_queued 1214.7", measured.Status, measured.TotalTokS)
	}
	for _, b := range []int{100, 127, 129} {
		p := at(0, b)
		if p.Status != calculator.RequestsQueued || math.Abs(p.TotalTokS.Value-1214.7) > 0.5 {
			t.Errorf("0 × %d: %s %.1f tok/s, want requests_queued at the measured queue's 1214.7", b, p.Status, p.TotalTokS.Value)
		}
		if p.TotalTokS.Low > 1214.7 || p.TotalTokS.High < 1214.7 {
			t.Errorf("0 × %d: interval %.1f–%.1f leaves out the measured queue's 1214.7", b, p.TotalTokS.Low, p.TotalTokS.High)
		}
		if p.TTFTMs == nil || p.TTFTMs.Value < 1137 || p.TTFTMs.Value > 1.2*1137 {
			t.Errorf("0 × %d: TTFT %v, want about the 1,137 ms measured with 64 running (1,024 with 128 queued)", b, p.TTFTMs)
		}
	}
	// At 2048 tokens, 116 requests' reservations may not fit, 115 surely
	// do: either way 67 run, so the speed is the same.
	q115, q116 := at(2048, 115), at(2048, 116)
	if q116.Status != calculator.BoundaryUncertain || q115.Status != calculator.RequestsQueued {
		t.Fatalf("2048 × 115 / 116: %s / %s, want requests_queued / boundary_uncertain", q115.Status, q116.Status)
	}
	if math.Abs(q116.TotalTokS.Value-q115.TotalTokS.Value) > 1e-9 || !strings.Contains(strings.Join(msg.Texts(q116.Warnings), " "), "about 67 run at once") {
		t.Errorf("2048 × 116: %.1f tok/s (115: %.1f), warnings %v; want the 67 running's speed, said", q116.TotalTokS.Value, q115.TotalTokS.Value, q116.Warnings)
	}
	if alone := at(2048, 67); alone.Status != calculator.Fits || q115.TotalTokS.Value >= 0.9*alone.TotalTokS.Value {
		t.Errorf("2048 × 115: %.1f tok/s, 67 alone %s %.1f; want the measured queue's cost (×0.82) on the 67 running", q115.TotalTokS.Value, alone.Status, alone.TotalTokS.Value)
	}
}

// TestOneConcurrencyIsNotScaled: a run that measured one concurrency says
// how its speed changes with the context there, not with the number of
// requests; another concurrency is refused, not answered by assumption.
func TestOneConcurrencyIsNotScaled(t *testing.T) {
	r := faraRun()
	var keep []calculator.Cell
	for _, c := range r.Decode {
		if c.Concurrency == 4 {
			keep = append(keep, c)
		}
	}
	r.Decode = keep
	m := fit(t, r)
	_, err := m.Decode(calculator.Query{ContextTokens: 16384, Concurrency: 8})
	if !errors.Is(err, calculator.ErrRefused) || !strings.Contains(err.Error(), "measured one concurrency (4) only") {
		t.Errorf("concurrency 8 from a run of concurrency 4 alone: %v, want it refused", err)
	}
	p, err := m.Decode(calculator.Query{ContextTokens: 24576, Concurrency: 4})
	if err != nil || p.TotalTokS == nil {
		t.Errorf("concurrency 4 at an unmeasured context: %v, want an answer", err)
	}
}
