package server_test

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/store/storetest"
)

// TestSeriesVerdicts lines up a generated series through the real handler:
// noise is no change, +10 % everywhere is improved, −8 % at the two
// longest contexts is regressed there, with those rows named; versions
// are ordered as versions, not as text.
func TestSeriesVerdicts(t *testing.T) {
	e := newEnv(t, 0)
	base := storetest.Runs(81, 1)[0]
	rng := rand.New(rand.NewPCG(81, 1))
	jitter := func(int, int) float64 { return 1 + 0.01*(2*rng.Float64()-1) }
	var ls []int
	for _, c := range base.Decode {
		if !slices.Contains(ls, c.ContextTokens) {
			ls = append(ls, c.ContextTokens)
		}
	}
	slices.Sort(ls)
	long := ls[len(ls)-2:]
	// Stored out of order: 0.10 must come after 0.9.
	stored := e.series(t, base, []string{"0.12.0", "0.9.0", "0.10.0", "0.11.0"}, []func(l, b int) float64{
		func(l, b int) float64 {
			f := 1.10 * jitter(l, b)
			if slices.Contains(long, l) {
				f *= 0.92
			}
			return f
		},
		func(int, int) float64 { return 1 },
		jitter,
		func(l, b int) float64 { return 1.10 * jitter(l, b) },
	})
	s := e.runSeries(t, stored[0].ID)
	var versions []string
	for _, r := range s.Runs {
		versions = append(versions, *r.EngineVersion)
	}
	if !slices.Equal(versions, []string{"0.9.0", "0.10.0", "0.11.0", "0.12.0"}) || len(s.Steps) != 3 {
		t.Fatalf("series %v with %d steps; want 0.9.0 … 0.12.0 in version order, 3 steps", versions, len(s.Steps))
	}
	if v := s.Steps[0].Verdict; v != api.Unchanged && v != api.Inconclusive {
		t.Errorf("0.9.0 → 0.10.0 (±1 %% noise): %s (%s); want unchanged or inconclusive", v, s.Steps[0].Why)
	}
	if v := s.Steps[1].Verdict; v != api.Improved || len(s.Steps[1].RegressedRows) > 0 {
		t.Errorf("0.10.0 → 0.11.0 (+10 %%): %s, regressed rows %v (%s); want improved", v, s.Steps[1].RegressedRows, s.Steps[1].Why)
	}
	if st := s.Steps[2]; st.Verdict != api.Regressed || !slices.Equal(st.RegressedRows, long) {
		t.Errorf("0.11.0 → 0.12.0 (−8 %% at %v): %s, regressed rows %v (%s); want regressed at exactly those rows", long, st.Verdict, st.RegressedRows, st.Why)
	}
	for _, st := range s.Steps {
		if b := st.NoiseFloor.Basis; b != api.StepScatter && b != api.RunScatter || st.NoiseFloor.MinFloor != 0.01 || len(st.Cells) == 0 || st.MeasuredCells == 0 {
			t.Errorf("step %s → %s: noise floor %+v, %d cells (%d measured); want the step's or the runs' own scatter stated", st.From, st.To, st.NoiseFloor, len(st.Cells), st.MeasuredCells)
		}
	}

	// Two runs at one version measure the noise: the floor says so.
	again := e.series(t, base, []string{"0.12.0"}, []func(l, b int) float64{func(l, b int) float64 {
		f := 1.10 * (1 + 0.003*(2*rng.Float64()-1))
		if slices.Contains(long, l) {
			f *= 0.92
		}
		return f
	}})
	s = e.runSeries(t, again[0].ID)
	if len(s.Steps) != 4 || s.Steps[0].NoiseFloor.Basis != api.RepeatedRuns || s.Steps[0].NoiseFloor.RepeatedCells == nil {
		t.Fatalf("with a re-measured 0.12.0: %d steps, noise floor %+v; want 4 steps measured against the repeated runs", len(s.Steps), s.Steps[0].NoiseFloor)
	}
	if v := s.Steps[3].Verdict; v != api.Unchanged {
		t.Errorf("0.12.0 re-measured with ±0.3 %% noise: %s (%s); want unchanged", v, s.Steps[3].Why)
	}

	// The list of series, and compare with two runs.
	rec := e.do(t, "GET", "/v1/series?model="+base.Model.Name, nil)
	var list api.SeriesList
	if err := json.Unmarshal(rec.Body.Bytes(), &list); rec.Code != 200 || err != nil || len(list.Series) != 1 || list.Series[0].Runs != 5 {
		t.Errorf("GET /v1/series: %d %s; want the one series of 5 runs", rec.Code, rec.Body)
	}
	rec = e.do(t, "GET", "/v1/compare?run_ids="+stored[3].ID+","+stored[0].ID, nil)
	var cmp api.Comparison
	if err := json.Unmarshal(rec.Body.Bytes(), &cmp); rec.Code != 200 || err != nil || cmp.Verdict == nil || cmp.Verdict.Verdict != api.Regressed {
		t.Errorf("compare 0.11.0 with 0.12.0: %d %.300s; want a regressed verdict", rec.Code, rec.Body)
	}
	if rec := e.do(t, "GET", "/v1/runs/nosuch/series", nil); rec.Code != 404 {
		t.Errorf("series of a run that does not exist: %d", rec.Code)
	}
}
