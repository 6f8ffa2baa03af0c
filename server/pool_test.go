package server_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/store"
)

// another is r as another source would send it: its cells f times r's,
// under its own title, with no publisher of r's.
func another(r store.Run, title string, f float64) store.Run {
	out := r
	out.Title, out.SourceURL, out.Publisher, out.License, out.RetrievedAt = title, "", "", "", ""
	out.Decode = fasterBy(r.Decode, f)
	return out
}

// byRun is the decode answer of run id alone at fara's 48K × 8.
func byRun(t *testing.T, e *env, id string) api.DecodePrediction {
	t.Helper()
	return decodeAnswer(t, e, "/v1/calculator/decode?run_id="+id+"&context_tokens=49152&concurrency=8")
}

func sources(p api.DecodePrediction) int { return p.Basis.Sources }

// TestPoolTwoSources: a copy 1.3× as fast sent by a second key is a
// second source: the answer by model and GPU moves by at most half the
// copy's deviation, its band widens to hold both, it says it pools 2
// sources and names them; asked by run_id, each run answers alone.
func TestPoolTwoSources(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "mallory")
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	before := decodeAnswer(t, e, faraAt48K8)
	if sources(before) != 1 {
		t.Fatalf("one run: sources %d, want 1", sources(before))
	}
	copied := postRun(t, e, k["mallory"], another(fara, "fara, 1.3× as fast", 1.3), http.StatusCreated)
	after := decodeAnswer(t, e, faraAt48K8)
	cp := byRun(t, e, copied.ID)
	old, now, dev := before.TotalTokS.Value, after.TotalTokS.Value, cp.TotalTokS.Value-before.TotalTokS.Value
	t.Logf("fara at 48K × 8: %.1f ±%.2f %% → %.1f ±%.2f %% with a copy at %.1f", old, 100*halfWidth(before.TotalTokS), now, 100*halfWidth(after.TotalTokS), cp.TotalTokS.Value)
	if sources(after) != 2 || !slices.Contains(after.Basis.RunIDs, copied.ID) {
		t.Fatalf("sources %d, run_ids %v: want 2 sources, the copy among them", sources(after), after.Basis.RunIDs)
	}
	if math.Abs(now-old) > 0.5*math.Abs(dev)+0.001 {
		t.Errorf("the second source moved the answer %.1f → %.1f, more than half its deviation %.1f", old, now, dev)
	}
	if now == old {
		t.Errorf("the second source did not move the answer at all")
	}
	if halfWidth(after.TotalTokS) <= halfWidth(before.TotalTokS) || after.TotalTokS.Low > old || after.TotalTokS.High < cp.TotalTokS.Value-0.001 {
		t.Errorf("band %+v: want it wider than ±%.2f %%, holding %.1f and %.1f", *after.TotalTokS, 100*halfWidth(before.TotalTokS), old, cp.TotalTokS.Value)
	}
	if w := strings.Join(after.Warnings, " "); !strings.Contains(w, "pooled from 2 independent sources") || !strings.Contains(w, copied.ID) || !strings.Contains(w, "the sources disagree") {
		t.Errorf("warnings %q: want the 2 sources named and their disagreement said", after.Warnings)
	}
	if alone := byRun(t, e, fara.ID); alone.TotalTokS.Value != old || sources(alone) != 1 {
		t.Errorf("fara by run_id: %.1f from %d sources; want %.1f from itself alone", alone.TotalTokS.Value, sources(alone), old)
	}
}

// TestPoolAgreeingSourceKeepsTheBand: a copy 1.015× as fast (just beyond
// the near-copy rule) from a second key is a source that agrees within
// the band: the band stays as it was and the answer moves within noise.
func TestPoolAgreeingSourceKeepsTheBand(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "mallory")
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	befores := map[string]api.DecodePrediction{}
	targets := []string{faraAt48K8, "/v1/calculator/decode?model=fara&gpu=RTX%203060&context_tokens=40000&concurrency=5"}
	for _, target := range targets {
		befores[target] = decodeAnswer(t, e, target)
	}
	postRun(t, e, k["mallory"], another(fara, "fara, 1.5 % faster", 1.015), http.StatusCreated)
	for _, target := range targets {
		before, after := befores[target], decodeAnswer(t, e, target)
		t.Logf("%s: %.2f ±%.2f %% → %.2f ±%.2f %%", target, before.TotalTokS.Value, 100*halfWidth(before.TotalTokS), after.TotalTokS.Value, 100*halfWidth(after.TotalTokS))
		if sources(after) != 2 {
			t.Errorf("%s: sources %d, want 2", target, sources(after))
		}
		if d := math.Abs(halfWidth(after.TotalTokS) - halfWidth(before.TotalTokS)); d > 0.001 {
			t.Errorf("%s: band ±%.2f %% → ±%.2f %%: an agreeing source changed it", target, 100*halfWidth(before.TotalTokS), 100*halfWidth(after.TotalTokS))
		}
		if d := after.TotalTokS.Value/before.TotalTokS.Value - 1; d < 0 || d > 0.0076 {
			t.Errorf("%s: moved %.2f %%, want within half the copy's 1.5 %%", target, 100*d)
		}
	}
}

// TestPoolOneOfFourMovesByItsShare: among three independent sources, a
// fourth twice as fast moves the answer by at most a quarter of its
// deviation.
func TestPoolOneOfFourMovesByItsShare(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "bob", "carol", "mallory")
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	postRun(t, e, k["bob"], another(fara, "fara, measured by bob", 1.1), http.StatusCreated)
	postRun(t, e, k["carol"], another(fara, "fara, measured by carol", 0.95), http.StatusCreated)
	before := decodeAnswer(t, e, faraAt48K8)
	if sources(before) != 3 {
		t.Fatalf("sources %d, want 3 (%v)", sources(before), before.Warnings)
	}
	copied := postRun(t, e, k["mallory"], another(fara, "fara, twice as fast", 2), http.StatusCreated)
	// Three independent runs dispute the copy: by default it is left out,
	// and the answer does not move at all.
	if kept := decodeAnswer(t, e, faraAt48K8); sources(kept) != 3 || kept.TotalTokS.Value != before.TotalTokS.Value {
		t.Errorf("the disputed ×2 copy moved the default answer %.1f → %.1f (sources %d)", before.TotalTokS.Value, kept.TotalTokS.Value, sources(kept))
	}
	// Brought back (include_flagged=true), it is one source among four.
	after, cp := decodeAnswer(t, e, faraAt48K8+"&include_flagged=true"), byRun(t, e, copied.ID)
	old, now, dev := before.TotalTokS.Value, after.TotalTokS.Value, cp.TotalTokS.Value-before.TotalTokS.Value
	t.Logf("3 sources %.1f ±%.2f %%, with a ×2 copy at %.1f: %.1f ±%.2f %% from %d", old, 100*halfWidth(before.TotalTokS), cp.TotalTokS.Value, now, 100*halfWidth(after.TotalTokS), sources(after))
	if sources(after) != 4 {
		t.Fatalf("sources %d, want 4", sources(after))
	}
	if math.Abs(now-old) > math.Abs(dev)/4+0.001 || now == old {
		t.Errorf("the ×2 copy moved the answer %.1f → %.1f; want a move of at most a quarter of its deviation %.1f", old, now, dev)
	}
	if halfWidth(after.TotalTokS) <= halfWidth(before.TotalTokS) {
		t.Errorf("band ±%.2f %% → ±%.2f %%: a disagreeing source must widen it", 100*halfWidth(before.TotalTokS), 100*halfWidth(after.TotalTokS))
	}
}

// TestRenamedCopyCountsOnce: fara's cells under another model name, sent
// by another key, are a copy of fara: asked by its name, the answer says
// so; the planner and the predicted leaderboard list fara only, naming
// the copy.
func TestRenamedCopyCountsOnce(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "mallory")
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	renamed := another(fara, "a new model, fast on the 3060", 1)
	renamed.Model.Name = "Mallory-4B-Instruct"
	copied := postRun(t, e, k["mallory"], renamed, http.StatusCreated)

	// The copy is disputed (a copy of fara under another name) and left
	// out by default; brought back, it is answered as fara's copy.
	if rec := e.do(t, http.MethodGet, "/v1/calculator/decode?model=Mallory-4B&gpu=RTX%203060&context_tokens=49152&concurrency=8", nil); rec.Code != http.StatusNotFound {
		t.Errorf("asked by the disputed copy's name: %d, want 404", rec.Code)
	}
	p := decodeAnswer(t, e, "/v1/calculator/decode?model=Mallory-4B&gpu=RTX%203060&context_tokens=49152&concurrency=8&include_flagged=true")
	want := fmt.Sprintf("run %s repeats the cells of run %s (model %s", copied.ID, fara.ID, fara.Model.Name)
	if !strings.Contains(strings.Join(p.Warnings, " "), want) || sources(p) != 1 {
		t.Errorf("asked by the copy's name: sources %d, warnings %q; want 1 and %q", sources(p), p.Warnings, want)
	}

	// By default the disputed copy is neither planned nor ranked.
	rec := e.do(t, http.MethodGet, "/v1/planner?context_tokens=0&min_per_request_tok_s=40&gpu=RTX%203060", nil)
	if strings.Contains(rec.Body.String(), copied.ID) {
		t.Errorf("the planner lists the disputed copy %s by default", copied.ID)
	}

	// Brought back (include_flagged=true), on the GPU both are
	// candidates; asked for the copy's model alone, the original is not,
	// and the copy is left out all the same, as a copy.
	for _, filter := range []struct {
		q          string
		wantOrigin bool
	}{{"gpu=RTX%203060&include_flagged=true", true}, {"model=Mallory-4B&include_flagged=true", false}} {
		rec := e.do(t, http.MethodGet, "/v1/planner?context_tokens=0&min_per_request_tok_s=40&"+filter.q, nil)
		var plan api.CapacityPlan
		if err := json.Unmarshal(rec.Body.Bytes(), &plan); rec.Code != http.StatusOK || err != nil {
			t.Fatalf("planner: %d %s", rec.Code, rec.Body)
		}
		var listed []string
		for _, o := range plan.Options {
			listed = append(listed, o.RunID)
			if o.Sources != 1 {
				t.Errorf("option %s: sources %d, want 1", o.RunID, o.Sources)
			}
		}
		if slices.Contains(listed, copied.ID) || slices.Contains(listed, fara.ID) != filter.wantOrigin || !strings.Contains(strings.Join(plan.Warnings, " "), want) {
			t.Errorf("planner (%s) options %v, warnings %q: want fara (%s) listed %v and not its renamed copy, %q", filter.q, listed, plan.Warnings, fara.ID, filter.wantOrigin, want)
		}

		lb := leaderboard(t, e, "/v1/leaderboard?predicted=true&context_tokens=49152&concurrency=8&"+filter.q)
		var ranked []string
		for _, it := range lb.Items {
			ranked = append(ranked, it.Run.ID)
			if it.Prediction == nil || it.Prediction.Basis.Sources != 1 {
				t.Errorf("ranked %s without its source count", it.Run.ID)
			}
		}
		var w []string
		if lb.Warnings != nil {
			w = *lb.Warnings
		}
		if slices.Contains(ranked, copied.ID) || slices.Contains(ranked, fara.ID) != filter.wantOrigin || !strings.Contains(strings.Join(w, " "), want) {
			t.Errorf("predicted board (%s) %v, warnings %q: want fara (%s) ranked %v and not its renamed copy, %q", filter.q, ranked, w, fara.ID, filter.wantOrigin, want)
		}
	}
}

// TestPoolBoundsItsSources: seven independent sources of one model and
// GPU are more than an answer fits: it pools the newest five and says so.
func TestPoolBoundsItsSources(t *testing.T) {
	e := newEnv(t, 0)
	names := []string{"k1", "k2", "k3", "k4", "k5", "k6"}
	k := e.keys(t, names...)
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	var posted []string
	for i, f := range []float64{1.05, 1.1, 0.9, 0.95, 1.15, 0.85} {
		posted = append(posted, postRun(t, e, k[names[i]], another(fara, "fara by "+names[i], f), http.StatusCreated).ID)
	}
	p := decodeAnswer(t, e, faraAt48K8)
	if sources(p) != 5 || !strings.Contains(strings.Join(p.Warnings, " "), "more than 5 independent sources match; only the newest 5 are pooled") {
		t.Errorf("sources %d, warnings %q; want 5 and the bound said", sources(p), p.Warnings)
	}
	if slices.Contains(p.Basis.RunIDs, fara.ID) || !slices.Contains(p.Basis.RunIDs, posted[5]) {
		t.Errorf("run_ids %v: want the newest five, not the oldest (%s)", p.Basis.RunIDs, fara.ID)
	}
}

// TestPoolGridAndPrefill: a grid by model and GPU pools each cell over the
// sources, its value the mean of each run's own grid there; a prefill
// answer pools too, and each says how many sources it rests on.
func TestPoolGridAndPrefill(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "mallory")
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	copied := postRun(t, e, k["mallory"], another(fara, "fara, 1.2× as fast", 1.2), http.StatusCreated)
	grid := func(sel string) api.GridPrediction {
		t.Helper()
		rec := e.do(t, http.MethodGet, "/v1/calculator/grid?"+sel+"&contexts=16384,49152&concurrencies=2,8", nil)
		var g api.GridPrediction
		if err := json.Unmarshal(rec.Body.Bytes(), &g); rec.Code != http.StatusOK || err != nil {
			t.Fatalf("grid %s: %d %s", sel, rec.Code, rec.Body)
		}
		return g
	}
	pooled, a, b := grid("model=fara&gpu=RTX%203060"), grid("run_id="+fara.ID), grid("run_id="+copied.ID)
	if pooled.Sources != 2 || a.Sources != 1 {
		t.Errorf("grid sources: pooled %d, by run_id %d; want 2 and 1", pooled.Sources, a.Sources)
	}
	for i, row := range pooled.Rows {
		for j, c := range row.Cells {
			ca, cb := a.Rows[i].Cells[j], b.Rows[i].Cells[j]
			if c.TotalTokS == nil || ca.TotalTokS == nil || cb.TotalTokS == nil {
				t.Fatalf("cell %d × %d without speed", row.ContextTokens, c.Concurrency)
			}
			if want := (ca.TotalTokS.Value + cb.TotalTokS.Value) / 2; math.Abs(c.TotalTokS.Value-want) > 0.002 {
				t.Errorf("cell %d × %d: %.3f, want the mean of %.3f and %.3f", row.ContextTokens, c.Concurrency, c.TotalTokS.Value, ca.TotalTokS.Value, cb.TotalTokS.Value)
			}
			if c.TotalTokS.Low > ca.TotalTokS.Value || c.TotalTokS.High < cb.TotalTokS.Value-0.002 {
				t.Errorf("cell %d × %d: interval %+v does not hold both sources", row.ContextTokens, c.Concurrency, *c.TotalTokS)
			}
		}
	}
	rec := e.do(t, http.MethodGet, "/v1/calculator/prefill?model=fara&gpu=RTX%203060&context_tokens=16384", nil)
	var p api.PrefillPrediction
	if err := json.Unmarshal(rec.Body.Bytes(), &p); rec.Code != http.StatusOK || err != nil {
		t.Fatalf("prefill: %d %s", rec.Code, rec.Body)
	}
	if p.Basis.Sources != 2 {
		t.Errorf("prefill sources %d, want 2", p.Basis.Sources)
	}
	rec = e.do(t, http.MethodGet, "/v1/calculator/capacity?model=fara&gpu=RTX%203060&context_tokens=16384&concurrency=8", nil)
	var c api.CapacityEstimate
	if err := json.Unmarshal(rec.Body.Bytes(), &c); rec.Code != http.StatusOK || err != nil {
		t.Fatalf("capacity: %d %s", rec.Code, rec.Body)
	}
	if c.Basis.Sources != 1 || !strings.Contains(strings.Join(c.Warnings, " "), "capacity is run "+copied.ID+"'s") {
		t.Errorf("capacity: sources %d, warnings %q; want 1, the newest source's, said", c.Basis.Sources, c.Warnings)
	}
}
