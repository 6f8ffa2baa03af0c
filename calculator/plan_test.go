package calculator_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/calculator"
)

// next predicts concurrency b at the target's context.
func next(t *testing.T, m *calculator.Model, tg calculator.Target, b int) calculator.Prediction {
	t.Helper()
	q := tg.Base
	q.ContextTokens, q.Concurrency = tg.ContextTokens, b
	p, err := m.Decode(q)
	if err != nil {
		t.Fatalf("Decode(%d, %d): %v", q.ContextTokens, b, err)
	}
	return p
}

func TestPlanFindsTheLargestConcurrencyMeetingTheTarget(t *testing.T) {
	m := fit(t, faraRun())
	tg := calculator.Target{ContextTokens: 0, MinPerRequestTokS: 50}
	pl, err := m.Plan(tg)
	if err != nil {
		t.Fatal(err)
	}
	if !pl.Meets || pl.At == nil {
		t.Fatalf("plan %+v does not meet 50 tok/s at context 0, where 16 requests ran at 50.9 each", pl)
	}
	// Concurrency 16 measured 50.9 tok/s each, 32 measured 33.2.
	if pl.Concurrency < 16 || pl.Concurrency >= 32 {
		t.Errorf("concurrency %d, want between the measured 16 and 32", pl.Concurrency)
	}
	if v := pl.At.PerRequestTokS.Value; v < 50 {
		t.Errorf("per-request %.2f tok/s at the planned concurrency, under the target", v)
	}
	if v := next(t, m, tg, pl.Concurrency+1).PerRequestTokS.Value; v >= 50 {
		t.Errorf("concurrency %d still gives %.2f tok/s each: the plan is not the largest", pl.Concurrency+1, v)
	}
	if pl.Binding != calculator.BindSpeed || !strings.Contains(pl.BindingDetail, "per-request speed") {
		t.Errorf("binding %q (%s), want speed", pl.Binding, pl.BindingDetail)
	}
	if pl.Shortfall != nil {
		t.Errorf("a met target has a shortfall: %+v", pl.Shortfall)
	}
	if pl.Surely != (pl.At.PerRequestTokS.Low >= 50) {
		t.Errorf("surely %v, but the low bound is %.2f", pl.Surely, pl.At.PerRequestTokS.Low)
	}
}

func TestPlanBindingLimits(t *testing.T) {
	m := fit(t, faraRun())
	t.Run("kv tokens", func(t *testing.T) {
		tg := calculator.Target{ContextTokens: 16384, MinPerRequestTokS: 5}
		pl, err := m.Plan(tg)
		if err != nil {
			t.Fatal(err)
		}
		if !pl.Meets || pl.Binding != calculator.BindKVTokens {
			t.Fatalf("plan %+v, want met and bound by the KV cache", pl)
		}
		p := next(t, m, tg, pl.Concurrency+1)
		if p.Capacity.ReservedTokens <= p.Capacity.KVTokensLow || p.Status == calculator.Fits {
			t.Errorf("one more request reserves %d of the %d that ran (%s): the KV cache does not bind", p.Capacity.ReservedTokens, p.Capacity.KVTokensLow, p.Status)
		}
		if pl.At.Status != calculator.Fits {
			t.Errorf("planned concurrency has status %s", pl.At.Status)
		}
	})
	t.Run("ttft", func(t *testing.T) {
		tg := calculator.Target{ContextTokens: 16384, MinPerRequestTokS: 5, MaxTTFTMs: 2500}
		pl, err := m.Plan(tg)
		if err != nil {
			t.Fatal(err)
		}
		if !pl.Meets || pl.Binding != calculator.BindTTFT || !pl.TTFTChecked {
			t.Fatalf("plan %+v, want met and bound by TTFT", pl)
		}
		if pl.At.TTFTMs.Value > 2500 {
			t.Errorf("TTFT %.0f ms at the planned concurrency, over the bound", pl.At.TTFTMs.Value)
		}
		if v := next(t, m, tg, pl.Concurrency+1).TTFTMs.Value; v <= 2500 {
			t.Errorf("one more request still has TTFT %.0f ms", v)
		}
	})
	t.Run("users", func(t *testing.T) {
		pl, err := m.Plan(calculator.Target{ContextTokens: 0, MinPerRequestTokS: 50, Users: 100})
		if err != nil {
			t.Fatal(err)
		}
		if want := (100 + pl.Concurrency - 1) / pl.Concurrency; pl.Instances != want || pl.Instances < 2 {
			t.Errorf("%d instances of %d requests for 100 users, want %d", pl.Instances, pl.Concurrency, want)
		}
	})
}

func TestPlanSaysHowFarOff(t *testing.T) {
	m := fit(t, faraRun())
	pl, err := m.Plan(calculator.Target{ContextTokens: 0, MinPerRequestTokS: 100})
	if err != nil {
		t.Fatal(err)
	}
	if pl.Meets || pl.Concurrency != 0 || pl.Shortfall == nil {
		t.Fatalf("plan %+v meets 100 tok/s, but one request ran at 83.4", pl)
	}
	sh := pl.Shortfall
	if sh.Metric != "per_request_tok_s" || sh.Value != 83.4 || sh.Target != 100 {
		t.Errorf("shortfall %+v, want the measured 83.4 against 100", sh)
	}
	for _, want := range []string{"83.4 tok/s", "target 100", "17% short"} {
		if !strings.Contains(sh.Reason, want) {
			t.Errorf("reason %q does not say %q", sh.Reason, want)
		}
	}
	if r := sh.Ratio(); r < 1.19 || r > 1.2 {
		t.Errorf("ratio %.3f, want 100/83.4", r)
	}

	pl, err = m.Plan(calculator.Target{ContextTokens: 16384, MinPerRequestTokS: 1, MaxTTFTMs: 500})
	if err != nil {
		t.Fatal(err)
	}
	if pl.Meets || pl.Shortfall == nil || pl.Shortfall.Metric != "ttft_ms" || pl.Shortfall.Value != 1282 {
		t.Fatalf("plan %+v, want a TTFT shortfall of the measured 1282 ms", pl)
	}

	pl, err = m.Plan(calculator.Target{ContextTokens: 1 << 20, MinPerRequestTokS: 1})
	if err != nil {
		t.Fatal(err)
	}
	if pl.Meets || pl.Shortfall == nil || pl.Shortfall.Metric == "per_request_tok_s" || pl.Shortfall.Reason == "" {
		t.Fatalf("plan %+v at 1M tokens, want a reason it cannot be answered", pl)
	}
}

func TestPlanOnAnotherGPU(t *testing.T) {
	m := fit(t, faraRun()) // RTX 3060
	base := calculator.Target{ContextTokens: 0, MinPerRequestTokS: 50}
	here, err := m.Plan(base)
	if err != nil {
		t.Fatal(err)
	}
	tg := base
	tg.Base.TargetGPU = "RTX 3090"
	tg.MaxTTFTMs = 1000
	there, err := m.Plan(tg)
	if err != nil {
		t.Fatal(err)
	}
	if !there.Meets || there.At.Basis != calculator.ScaledGPU {
		t.Fatalf("plan %+v on an RTX 3090, want met and scaled_gpu", there)
	}
	if there.Concurrency <= here.Concurrency {
		t.Errorf("an RTX 3090 (936 GB/s) serves %d at 50 tok/s, the measured RTX 3060 (360 GB/s) %d", there.Concurrency, here.Concurrency)
	}
	if there.TTFTChecked || there.Surely {
		t.Errorf("TTFT is not predicted on another GPU, but the plan says it was checked (%v) or sure (%v)", there.TTFTChecked, there.Surely)
	}
	if !here.TTFTChecked {
		t.Errorf("the measured GPU's TTFT is predicted, but the plan says it was not checked")
	}
	tg.MaxTTFTMs = 0
	if unbounded, err := m.Plan(tg); err != nil || unbounded.TTFTChecked {
		t.Errorf("with no TTFT bound asked, TTFT is still not predicted on another GPU: checked %v (%v)", unbounded.TTFTChecked, err)
	}
}

// kvFullRun is a run whose KV cache holds kvTokens: at each context of ls
// and concurrency of bs, only the requests that fit run (each reserving
// 128 output tokens), with steps growing with them and their context.
func kvFullRun(id string, kvTokens float64, ls, bs []int) calculator.Run {
	running := func(l, b int) float64 { return min(float64(b), kvTokens/float64(l+128)) }
	step := func(l int, n float64) float64 { return 7 + 0.3*n + 0.0008*n*float64(l) }
	r := calculator.Run{ID: id, MaxOutputTokens: 128}
	for _, l := range ls {
		for _, b := range bs {
			n := running(l, b)
			r.Decode = append(r.Decode, calculator.Cell{ContextTokens: l, Concurrency: b, Status: calculator.CellValid,
				TotalTokS: f(n * 1000 / step(l, n)), TBTMs: f(step(l, n)), PerRequestTokS: f(1000 / step(l, n))})
		}
	}
	return r
}

// TestPlanStopsAtALevel: where measured throughput stops rising (a full KV
// cache: the requests that run keep their speed, the rest wait), more
// concurrency adds only waiting, so the plan stops before the level.
func TestPlanStopsAtALevel(t *testing.T) {
	const kvTokens = 60000
	r := kvFullRun("saturated", kvTokens, []int{128, 1024, 4096}, []int{1, 10, 50, 100, 200})
	pl, err := fit(t, r).Plan(calculator.Target{ContextTokens: 4096, MinPerRequestTokS: 5})
	if err != nil {
		t.Fatal(err)
	}
	if !pl.Meets || pl.Concurrency > 15 || pl.Concurrency < 10 {
		t.Fatalf("plan %+v: want the largest concurrency before the level, where about 14 requests fill the KV cache (their steps meet 5 tok/s)", pl)
	}
	// The level starts where the KV cache is full: 60000 / (4096 + 128)
	// requests, read from the rows that level off at shorter contexts.
	var from float64
	if i := strings.Index(pl.BindingDetail, "from concurrency "); i >= 0 {
		fmt.Sscanf(pl.BindingDetail[i+len("from concurrency "):], "%g", &from)
	}
	if full := kvTokens / float64(4096+128); pl.Binding != calculator.BindSequences || math.Abs(from/full-1) > 0.05 {
		t.Errorf("binding %q (%s), want sequences where the KV cache fills, from concurrency %.1f", pl.Binding, pl.BindingDetail, full)
	}
}

// TestPlanLevelDoesNotDependOnTheTarget: measured cells on a level stretch
// bind like the concurrencies between them, so whatever speed is asked
// (and wherever the search lands), the plan never goes past the level it
// names, and every target the level binds gets the same concurrency.
func TestPlanLevelDoesNotDependOnTheTarget(t *testing.T) {
	r := kvFullRun("levels", 40000, []int{512, 1024, 2048}, []int{1, 8, 16, 32, 64, 128})
	m := fit(t, r)
	if p, err := m.Decode(calculator.Query{ContextTokens: 1024, Concurrency: 64}); err != nil || p.Basis != calculator.Measured || p.LevelFrom == 0 {
		t.Errorf("measured cell 1024×64 on the level: basis %v, level from %v (%v); want measured, on the level", p.Basis, p.LevelFrom, err)
	}
	seen := map[int]float64{}
	for _, speed := range []float64{1, 5, 10, 20, 30} {
		pl, err := m.Plan(calculator.Target{ContextTokens: 1024, MinPerRequestTokS: speed})
		if err != nil {
			t.Fatal(err)
		}
		if !pl.Meets {
			continue
		}
		if pl.Binding == calculator.BindSequences {
			seen[pl.Concurrency] = speed
		}
		if pl.Concurrency > 40 {
			t.Errorf("at ≥ %g tok/s each: %d concurrent requests (%s: %s), past the level from 32", speed, pl.Concurrency, pl.Binding, pl.BindingDetail)
		}
	}
	if len(seen) != 1 {
		t.Errorf("targets bound by the level got different concurrencies: %v (concurrency → speed asked)", seen)
	}
}

// TestSpeedShortfallReadsAsShort: a per-request speed just under the
// target is printed with the digits that show it is under.
func TestSpeedShortfallReadsAsShort(t *testing.T) {
	checked := 0
	for _, r := range []calculator.Run{faraRun(), nemotronRun()} {
		m := fit(t, r)
		for _, l := range []int{0, 16384, 32768} {
			for target := 10.0; target <= 60; target++ {
				pl, err := m.Plan(calculator.Target{ContextTokens: l, MinPerRequestTokS: target})
				if err != nil {
					t.Fatal(err)
				}
				if pl.Binding != calculator.BindSpeed {
					continue
				}
				checked++
				var v float64
				if _, err := fmt.Sscanf(pl.BindingDetail[strings.Index(pl.BindingDetail, "would be ")+len("would be "):], "%g", &v); err != nil {
					t.Fatalf("%q: %v", pl.BindingDetail, err)
				}
				if v >= target {
					t.Errorf("%s at %d, target %g: %q reads as meeting it", r.ID, l, target, pl.BindingDetail)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no plan was bound by speed")
	}
}

// At 131072 tokens the Fara run's cells 1 and 2 queued (each request spent
// part of the window in its prefill: 0.9 and 1.8 active on average) while
// 4 ran every request at 12.4 tok/s: the plan is 4, not "not even one".
func TestPlanStepsOverQueuedCells(t *testing.T) {
	m := fit(t, faraRun())
	tg := calculator.Target{ContextTokens: 131072, MinPerRequestTokS: 10}
	if p := next(t, m, tg, 1); p.Status != calculator.RequestsQueued {
		t.Fatalf("131072 × 1 is %s, want the published requests_queued", p.Status)
	}
	pl, err := m.Plan(tg)
	if err != nil {
		t.Fatal(err)
	}
	if !pl.Meets || pl.Concurrency != 4 || pl.Shortfall != nil {
		t.Fatalf("plan meets %v at %d (%s: %s), want 4: the measured valid cell at 12.4 tok/s each", pl.Meets, pl.Concurrency, pl.Binding, pl.BindingDetail)
	}
	if pl.At.Status != calculator.Fits || pl.Binding != calculator.BindKVTokens {
		t.Errorf("status %s, binding %s (%s), want fits and bound by the KV cache", pl.At.Status, pl.Binding, pl.BindingDetail)
	}
	// Queued cells below a queued one, and nothing valid above: not met.
	pl, err = m.Plan(calculator.Target{ContextTokens: 131072, MinPerRequestTokS: 30})
	if err != nil {
		t.Fatal(err)
	}
	if pl.Meets || pl.Shortfall == nil {
		t.Errorf("plan at 30 tok/s each meets at %d, though only queued cells reach it", pl.Concurrency)
	}
	// A cell queued by a sequence limit is no gap: every larger
	// concurrency queues too.
	nemo := fit(t, nemotronRun())
	tg = calculator.Target{ContextTokens: 0, MinPerRequestTokS: 1}
	pl, err = nemo.Plan(tg)
	if err != nil {
		t.Fatal(err)
	}
	limit := next(t, nemo, tg, 1).Capacity.SequenceLimit
	if !pl.Meets || limit == 0 || pl.Concurrency != limit || pl.Binding != calculator.BindSequences {
		t.Errorf("Nemotron at context 0: meets %v at %d (%s: %s), want its sequence limit %d", pl.Meets, pl.Concurrency, pl.Binding, pl.BindingDetail, limit)
	}
}

// The summary's bound steps over queued cells as Plan does: a bound that
// said "not met" would leave the run out of a plan over every run.
func TestSummaryBoundStepsOverQueuedCells(t *testing.T) {
	m := fit(t, faraRun())
	s, err := calculator.DecodeSummary(calculator.Summarize(m).Encode())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []int{131072, 150000} {
		tg := calculator.Target{ContextTokens: l, MinPerRequestTokS: 10}
		pl, err := m.Plan(tg)
		if err != nil {
			t.Fatal(err)
		}
		bd := s.BoundPlan(tg)
		if !pl.Meets || !bd.Meets || bd.Concurrency < pl.Concurrency || bd.TotalTokS < pl.At.TotalTokS.Value {
			t.Errorf("context %d: bound %+v beaten by the plan (meets %v at %d)", l, bd, pl.Meets, pl.Concurrency)
		}
	}
}

// Beyond max_model_len no request is served, however few: the binding says
// so, not the KV cache.
func TestPlanBeyondMaxModelLen(t *testing.T) {
	m := fit(t, nemotronRun())
	pl, err := m.Plan(calculator.Target{ContextTokens: 150000, MinPerRequestTokS: 10})
	if err != nil {
		t.Fatal(err)
	}
	if pl.Meets || pl.At == nil || pl.At.Status != calculator.ExceedsMaxModelLen {
		t.Fatalf("plan %+v at 150000 tokens, want missed with status exceeds_max_model_len", pl)
	}
	if pl.Binding != calculator.BindMaxModelLen || pl.Shortfall == nil || pl.Shortfall.Metric != "capacity" || !strings.Contains(pl.Shortfall.Reason, "max_model_len") {
		t.Errorf("binding %q, shortfall %+v: want max_model_len and a capacity shortfall naming it", pl.Binding, pl.Shortfall)
	}
}

// One request whose reservation lies above the largest that ran, with none
// refused, may or may not fit: the plan says it is uncertain, in the
// singular, not that it does not fit.
func TestPlanUncertainWhetherOneRequestFits(t *testing.T) {
	r := calculator.Run{ID: "edge", MaxModelLen: 262144, MaxOutputTokens: 8192}
	for _, l := range []int{0, 16384, 32768} {
		for _, b := range []int{1, 2, 4} {
			if l > 0 && b > 1 {
				continue
			}
			step := 10 + 0.5*float64(b) + 0.0001*float64(b*l)
			r.Decode = append(r.Decode, cell(l, b, "valid", f(float64(b)*1000/step), f(1000/step), f(100), f(step), f(float64(b)), n(b*3000), f(30)))
		}
	}
	m := fit(t, r)
	// 1 × (40000 + 8192) is over the 40960 that ran at 32768 × 1.
	pl, err := m.Plan(calculator.Target{ContextTokens: 40000, MinPerRequestTokS: 1})
	if err != nil {
		t.Fatal(err)
	}
	if pl.Meets || pl.At == nil || pl.At.Status != calculator.BoundaryUncertain || pl.Shortfall == nil {
		t.Fatalf("plan %+v, want missed at a boundary_uncertain concurrency 1", pl)
	}
	want := "whether even one request fits is uncertain: 1 request of 40000 tokens reserves 48192 KV tokens, more than the 40960 that ran"
	if pl.Shortfall.Reason != want || pl.Binding != calculator.BindKVTokens {
		t.Errorf("binding %s, reason %q, want kv_tokens and %q", pl.Binding, pl.Shortfall.Reason, want)
	}
}

// A fitted run's summary is stored compactly and reads back as it was.
func TestSummaryOfSeedsRoundTrips(t *testing.T) {
	for _, r := range []calculator.Run{faraRun(), nemotronRun()} {
		s := calculator.Summarize(fit(t, r))
		b := s.Encode()
		got, err := calculator.DecodeSummary(b)
		if err != nil {
			t.Fatal(err)
		}
		if got != s {
			t.Errorf("%s: the summary reads back changed", r.ID)
		}
		t.Logf("%s: %d bytes of at most %d", r.ID, len(b), calculator.SummaryBytes)
	}
}
