package main

import (
	"errors"
	"testing"

	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/ingest"
	"github.com/matrixd/matrixd/predict"
)

// realRuns are the corpus grids and the bundled seed pages, as the
// calculator reads them.
func realRuns(t *testing.T) []calculator.Run {
	t.Helper()
	corpus, err := loadCorpus("../../ingest/testdata/corpus")
	if err != nil {
		t.Fatal(err)
	}
	// The sparse sweeps too: grids whose concurrencies were each measured
	// at one context only.
	sparse, err := loadCorpus("../../ingest/testdata/sparse")
	if err != nil {
		t.Fatal(err)
	}
	corpus = append(corpus, sparse...)
	var out []calculator.Run
	for _, c := range corpus {
		out = append(out, predict.Run(c.Run))
	}
	for _, s := range ingest.Seeds() {
		r, err := ingest.Parse(s.Data)
		if err != nil {
			t.Fatal(err)
		}
		r.ID = s.Name
		out = append(out, predict.Run(r))
	}
	return out
}

// TestRebuildAnswersAsTheFit: a model rebuilt from a fit's stored
// parameters answers every question exactly as the fit does.
func TestRebuildAnswersAsTheFit(t *testing.T) {
	runs := realRuns(t)
	rebuilt := 0
	for _, r := range runs {
		m, err := calculator.Fit(r)
		if errors.Is(err, calculator.ErrRefused) {
			continue // no fit to rebuild
		}
		if err != nil {
			t.Fatalf("%s: %v", r.ID, err)
		}
		rebuilt++
		p, err := calculator.DecodeFitParams(m.Params().Encode())
		if err != nil {
			t.Fatalf("%s: %v", r.ID, err)
		}
		re, err := calculator.Rebuild(r, p)
		if err != nil {
			t.Fatalf("%s: rebuild: %v", r.ID, err)
		}
		if a, b := calculator.Summarize(m).Encode(), calculator.Summarize(re).Encode(); string(a) != string(b) {
			t.Errorf("%s: the rebuilt model answers differently from the fit", r.ID)
		}
		if m.Bands() != re.Bands() || m.Interpolant() != re.Interpolant() {
			t.Errorf("%s: rebuilt bands %+v / %s, fitted %+v / %s", r.ID, re.Bands(), re.Interpolant(), m.Bands(), m.Interpolant())
		}
	}
	// Every real grid is fitted (the calculator refuses none of them): a
	// test that rebuilt fewer would check less than it says.
	if rebuilt != len(runs) {
		t.Errorf("rebuilt %d of %d real runs; the others' fits were refused", rebuilt, len(runs))
	}
}

// TestSummaryBoundsHoldOnRealRuns: on every real grid, the bounds a
// summary gives are never beaten by the plan or prediction they bound, at
// the measured contexts and between them, for a ladder of targets. The
// whole-store planner and the predicted leaderboard refine runs in bound
// order and stop when no bound can beat what they hold, so a bound
// beaten could leave a better run out.
func TestSummaryBoundsHoldOnRealRuns(t *testing.T) {
	checked, beaten := 0, 0
	for _, r := range realRuns(t) {
		m, err := calculator.Fit(r)
		if err != nil {
			t.Fatalf("%s: %v", r.ID, err)
		}
		s, err := calculator.DecodeSummary(calculator.Summarize(m).Encode())
		if err != nil {
			t.Fatal(err)
		}
		ls, bs := m.MeasuredAxes()
		var contexts []int
		for i, l := range ls {
			contexts = append(contexts, l)
			if i+1 < len(ls) {
				contexts = append(contexts, (l+ls[i+1])/2)
			}
		}
		for _, l := range contexts {
			for _, speed := range []float64{0, 5, 10, 20, 40, 80} {
				for _, ttft := range []float64{0, 2000, 10000} {
					tg := calculator.Target{ContextTokens: l, MinPerRequestTokS: speed, MaxTTFTMs: ttft, Users: 100}
					pl, err := m.Plan(tg)
					if err != nil {
						t.Fatal(err)
					}
					bd := s.BoundPlan(tg)
					checked++
					switch {
					case pl.Meets && !bd.Meets, pl.Meets && pl.Concurrency > bd.Concurrency,
						pl.Meets && pl.At.TotalTokS != nil && pl.At.TotalTokS.Value > bd.TotalTokS,
						!pl.Meets && !bd.Meets && pl.Shortfall.Ratio() < bd.ShortfallRatio:
						beaten++
						total := 0.0
						if pl.At != nil && pl.At.TotalTokS != nil {
							total = pl.At.TotalTokS.Value
						}
						t.Logf("%s plan %d tokens ≥%g tok/s TTFT ≤%g: bound %+v, plan meets %v at %d, total %.1f, shortfall %.3g", r.ID, l, speed, ttft, bd, pl.Meets, pl.Concurrency, total, pl.Shortfall.Ratio())
					}
				}
			}
			for _, b := range append(bs, 3, 5, 7, 12, 24, 48) {
				p, err := m.Decode(calculator.Query{ContextTokens: l, Concurrency: b})
				if err != nil || p.Status != calculator.Fits || p.TotalTokS == nil || p.PerRequestTokS == nil {
					continue
				}
				bd := s.BoundCell(l, b)
				checked++
				if !bd.Fits || p.TotalTokS.Value > bd.TotalTokS || p.PerRequestTokS.Value > bd.PerRequestTokS ||
					(p.TTFTMs != nil && p.TTFTMs.Value < bd.TTFTMs) || (p.TBTMs != nil && p.TBTMs.Value < bd.TBTMs) {
					beaten++
					t.Logf("%s cell %d×%d: bound %+v, predicted total %.1f per-request %.1f", r.ID, l, b, bd, p.TotalTokS.Value, p.PerRequestTokS.Value)
				}
			}
		}
	}
	// Each summary row holds the best answer across its interval of
	// contexts (the measured ones in it and the midpoints), and the bounds
	// allow 15 % of departure from the monotone shape they assume between
	// those: with a row read at its ladder context alone, the sparse sweeps
	// beat 25 bounds here.
	t.Logf("%d of %d bounds beaten", beaten, checked)
	if checked == 0 {
		t.Fatal("no bound was checked")
	}
	if beaten > 0 {
		t.Errorf("%d of %d bounds beaten", beaten, checked)
	}
}
