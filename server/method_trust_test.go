package server_test

import (
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/store"
)

const faraAt48K8 = "/v1/calculator/decode?model=fara&gpu=RTX%203060&context_tokens=49152&concurrency=8"

func decodeAnswer(t *testing.T, e *env, target string) api.DecodePrediction {
	t.Helper()
	rec := e.do(t, http.MethodGet, target, nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("%s: %d %s", target, rec.Code, rec.Body)
	}
	var p api.DecodePrediction
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	if p.TotalTokS == nil || p.TBTMs == nil {
		t.Fatalf("%s: no speed: %s", target, rec.Body)
	}
	return p
}

// halfWidth is an estimate's band as a share of its value.
func halfWidth(e *api.Estimate) float64 { return (e.High - e.Low) / 2 / e.Value }

// TestCopyAddsNoCertainty: a copy of fara with one cell changed, posted by
// another key, leaves the model+GPU answer's bands at least as wide and
// its value where it was; a copy 10× too fast is flagged and moves nothing.
func TestCopyAddsNoCertainty(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "mallory")
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	before := decodeAnswer(t, e, faraAt48K8)

	dup := fara
	dup.Title = "fara again"
	dup.Decode = slices.Clone(fara.Decode)
	for i, c := range dup.Decode {
		if c.ContextTokens == 0 && c.Concurrency == 1 {
			v := *c.TotalTokS + 0.9
			dup.Decode[i].TotalTokS = &v
		}
	}
	copied := postRun(t, e, k["mallory"], dup, http.StatusCreated)
	after := decodeAnswer(t, e, faraAt48K8)
	for _, m := range []struct {
		name          string
		before, after *api.Estimate
	}{{"total_tok_s", before.TotalTokS, after.TotalTokS}, {"tbt_ms", before.TBTMs, after.TBTMs}} {
		if halfWidth(m.after) < halfWidth(m.before)-1e-9 {
			t.Errorf("%s band narrowed by a copy: ±%.2f %% → ±%.2f %%", m.name, 100*halfWidth(m.before), 100*halfWidth(m.after))
		}
		if d := m.after.Value/m.before.Value - 1; d > 0.01 || d < -0.01 {
			t.Errorf("%s moved %.1f %% with a copy: %v → %v", m.name, 100*d, m.before.Value, m.after.Value)
		}
	}
	if slices.Contains(after.Basis.RunIDs, copied.ID) {
		t.Errorf("the copy %s counts as a run of its own: run_ids %v", copied.ID, after.Basis.RunIDs)
	}
	if !strings.Contains(strings.Join(after.Warnings, " "), "repeats the cells of run") {
		t.Errorf("no warning that a near-copy counts once: %v", after.Warnings)
	}
	t.Logf("fara at 48K × 8: total ±%.2f %% → ±%.2f %%, TBT ±%.2f %% → ±%.2f %%", 100*halfWidth(before.TotalTokS), 100*halfWidth(after.TotalTokS),
		100*halfWidth(before.TBTMs), 100*halfWidth(after.TBTMs))

	fast := fara
	fast.Title = "fara, ten times"
	fast.Decode = tenTimes(fara.Decode)
	flagged := postRun(t, e, k["mallory"], fast, http.StatusCreated) // accepted, never refused
	if !flagged.Trust.Flagged || flagged.Trust.Flags[0].Code != api.TrustFlagCodeBandwidth || flagged.Trust.Flags[0].Measured <= flagged.Trust.Flags[0].Limit {
		t.Fatalf("the 10× copy's trust: %+v, want a bandwidth flag with the numbers", flagged.Trust)
	}
	var got api.Run
	rec := e.do(t, http.MethodGet, "/v1/runs/"+flagged.ID, nil)
	json.Unmarshal(rec.Body.Bytes(), &got)
	if !got.Trust.Flagged || !strings.Contains(got.Trust.Flags[0].Message, "RTX 3060") {
		t.Errorf("GET of the flagged run: %+v", got.Trust)
	}
	again := decodeAnswer(t, e, faraAt48K8)
	if again.TotalTokS.Value != after.TotalTokS.Value || slices.Contains(again.Basis.RunIDs, flagged.ID) {
		t.Errorf("the flagged copy moved the answer: %v → %v, run_ids %v", after.TotalTokS.Value, again.TotalTokS.Value, again.Basis.RunIDs)
	}
	// include_flagged brings it into the calculator's pool too, and says so;
	// asked by run_id, a flagged run is answered with a warning.
	with := decodeAnswer(t, e, faraAt48K8+"&include_flagged=true")
	if !strings.Contains(strings.Join(with.Warnings, " "), "1 run a plausibility check flagged is included") {
		t.Errorf("include_flagged=true: warnings %v; want the flagged run counted in and said", with.Warnings)
	}
	byID := decodeAnswer(t, e, "/v1/calculator/decode?run_id="+flagged.ID+"&context_tokens=49152&concurrency=8")
	if !strings.Contains(strings.Join(byID.Warnings, " "), "failed a plausibility check") {
		t.Errorf("a flagged run by run_id: warnings %v; want it said", byID.Warnings)
	}
	runCases(t, e, []getCase{
		{"leaderboard leaves the flagged run out", "/v1/leaderboard?context_tokens=0&concurrency=1", 200, []string{`"method_class":"sustained_decode"`, fara.ID}},
		{"include_flagged brings it back", "/v1/leaderboard?context_tokens=0&concurrency=1&include_flagged=true", 200, []string{`"rank":1`, flagged.ID, `"flagged":true`}},
		{"the predicted leaderboard leaves it out", "/v1/leaderboard?context_tokens=20000&concurrency=6&predicted=true&model=fara", 200, []string{fara.ID, `"matched_runs":2`}},
		{"predicted with include_flagged says it failed a check", "/v1/leaderboard?context_tokens=20000&concurrency=6&predicted=true&model=fara&include_flagged=true", 200,
			[]string{`"rank":1`, flagged.ID, `"run ` + flagged.ID + ` failed a plausibility check`}},
		{"lists show it, flagged", "/v1/runs?submitted_by=mallory", 200, []string{flagged.ID, `"flagged":true`, `"flagged":false`}},
		{"the planner leaves it out", "/v1/planner?context_tokens=0&min_per_request_tok_s=1&model=fara", 200, []string{`"matched_runs":2`}},
		{"the planner with include_flagged", "/v1/planner?context_tokens=0&min_per_request_tok_s=1&model=fara&include_flagged=true", 200, []string{`"matched_runs":3`, flagged.ID}},
		{"compare warns", "/v1/compare?run_ids=" + fara.ID + "," + flagged.ID, 200, []string{"is flagged by a plausibility check"}},
	})
	for _, p := range []struct{ target, api, want string }{
		{"/runs/" + flagged.ID, "/v1/runs/" + flagged.ID, `<span class="badge flagged">flagged</span>`},
		{"/runs/" + flagged.ID, "/v1/runs/" + flagged.ID, `is more than <span translate="no">RTX 3060</span>`},
		{"/runs/" + fara.ID, "/v1/runs/" + fara.ID, `<span class="badge">sustained decode</span>`},
		{"/", "/v1/runs", `<span class="badge flagged">flagged</span>`},
	} {
		if rec := e.page(t, p.target, p.api); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), p.want) {
			t.Errorf("%s: %d, lacks %s", p.target, rec.Code, p.want)
		}
	}
	rec = e.do(t, http.MethodGet, "/v1/leaderboard?context_tokens=0&concurrency=1", nil)
	if strings.Contains(rec.Body.String(), flagged.ID) {
		t.Errorf("the default leaderboard ranks the flagged run: %s", rec.Body)
	}
}

// TestMethodClasses: a run says its method; unlike classes are never
// ranked together, compare warns, and a run whose text names no method
// must state one.
func TestMethodClasses(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "alice")
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	burst := fara
	burst.Title = "fara as a burst"
	burst.Method = &store.Method{Class: store.MethodBatchedBurst, OutputTokensPerRequest: new(32), Prefill: store.PrefillExcluded}
	b := postRun(t, e, k["alice"], burst, http.StatusCreated)
	if b.ID == fara.ID || b.Method.Class != api.BatchedBurst {
		t.Fatalf("another method is another run: id %s (fara %s), method %+v", b.ID, fara.ID, b.Method)
	}
	runCases(t, e, []getCase{
		{"a run states its method", "/v1/runs/" + fara.ID, 200, []string{`"method":{"class":"sustained_decode","measurement_s":30,"output_tokens_per_request":null,"prefill":"excluded"}`}},
		{"sustained decode by default", "/v1/leaderboard?context_tokens=0&concurrency=1", 200, []string{`"method_class":"sustained_decode"`, fara.ID}},
		{"one class at a time", "/v1/leaderboard?context_tokens=0&concurrency=1&method_class=batched_burst", 200, []string{`"method_class":"batched_burst"`, b.ID}},
		{"compare warns of unlike methods", "/v1/compare?run_ids=" + fara.ID + "," + b.ID, 200, []string{"measured by different methods", b.ID + " is batched_burst"}},
		{"lists say each run's class", "/v1/runs?model=fara", 200, []string{`"method_class":"batched_burst"`, `"method_class":"sustained_decode"`}},
		{"an unknown class", "/v1/leaderboard?context_tokens=0&concurrency=1&method_class=vibes", 400, []string{"method_class"}},
	})
	page := e.page(t, "/leaderboard?context_tokens=0&concurrency=1&method_class=batched_burst", "/v1/leaderboard?context_tokens=0&concurrency=1&method_class=batched_burst")
	if page.Code != http.StatusOK || !strings.Contains(page.Body.String(), "batched burst runs ranked") || !strings.Contains(page.Body.String(), b.ID) {
		t.Errorf("the leaderboard page of batched_burst: %d %.2000s", page.Code, page.Body)
	}
	rec := e.do(t, http.MethodGet, "/v1/leaderboard?context_tokens=0&concurrency=1", nil)
	if strings.Contains(rec.Body.String(), b.ID) {
		t.Errorf("a burst is ranked beside sustained decode: %s", rec.Body)
	}
	bare := fara
	bare.Title, bare.Benchmark, bare.Method = "no method", store.Benchmark{}, nil
	for i := range bare.Decode {
		bare.Decode[i].DurationS = nil
	}
	rec = e.send(t, http.MethodPost, "/v1/runs", k["alice"], runJSON(t, bare))
	if rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(), `"pointer":"/method"`) || !strings.Contains(rec.Body.String(), "serving_sweep") {
		t.Errorf("a run whose text names no method: %d %s, want 422 at /method naming the classes", rec.Code, rec.Body)
	}
	trustSent := strings.Replace(string(runJSON(t, burst)), `"title"`, `"trust": {"flagged": false}, "title"`, 1)
	rec = e.send(t, http.MethodPost, "/v1/runs", k["alice"], []byte(trustSent))
	if rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(), "assigned by the server") {
		t.Errorf("a run sending its own trust: %d %s", rec.Code, rec.Body)
	}
}

// TestNoRunSaysWhy: a model and GPU selection that matches no run says
// what excluded the model's runs on the GPU (a filter, with the values
// they have; the plausibility check only where flagged runs would match)
// and, for a GPU name the catalog lacks, the names near it.
func TestNoRunSaysWhy(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "mallory")
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090")
	fast := fara
	fast.Title, fast.Engine.Version = "fara, ten times, another version", "0.99.0"
	fast.Decode = tenTimes(fara.Decode)
	if flagged := postRun(t, e, k["mallory"], fast, http.StatusCreated); !flagged.Trust.Flagged {
		t.Fatalf("the 10× copy is not flagged: %+v", flagged.Trust)
	}
	const q = "/v1/calculator/decode?model=fara&context_tokens=16384&concurrency=8&gpu="
	tests := []struct {
		name, target string
		want, not    []string
	}{
		// Fara has no run on the 3090; Nemotron's there would answer it
		// scaled, but for the filter.
		{"another model's run, filtered out", q + "RTX%203090&engine_version=0.0.1",
			[]string{`no run of a model matching \"fara\" on GPU \"RTX 3090\"; runs of other models there, which could answer it scaled, have none with engine_version 0.0.1 (they have 0.32.0)`}, []string{"include_flagged"}},
		{"engine_version", q + "3060&engine_version=9.9",
			[]string{`runs of a model matching \"fara\" on RTX 3060 exist, but none with engine_version 9.9; they have 0.99.0, 0.32.0`}, []string{"include_flagged"}},
		{"kv_cache_dtype", q + "3060&kv_cache_dtype=fp8",
			[]string{"none with kv_cache_dtype fp8; they have int4_per_token_head"}, []string{"include_flagged"}},
		{"both", q + "3060&kv_cache_dtype=fp8&engine_version=9.9",
			[]string{"none with engine_version 9.9; they have 0.99.0, 0.32.0, and none with kv_cache_dtype fp8"}, []string{"include_flagged"}},
		{"only flagged runs match", q + "3060&engine_version=0.99.0",
			[]string{"a plausibility check flagged each that matches, or independent runs dispute it", "include_flagged=true brings them back"}, nil},
		{"mistyped gpu", q + "RTX%203099",
			[]string{`no run of a model matching \"fara\" on GPU \"RTX 3099\"`, "did you mean RTX 3090, RTX 3090 Ti?"}, []string{"include_flagged"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := e.do(t, http.MethodGet, tt.target, nil)
			if rec.Code != http.StatusNotFound {
				t.Fatalf("status %d, want 404: %s", rec.Code, rec.Body)
			}
			for _, w := range tt.want {
				if !strings.Contains(rec.Body.String(), w) {
					t.Errorf("detail lacks %s: %s", w, rec.Body)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(rec.Body.String(), n) {
					t.Errorf("detail names %s: %s", n, rec.Body)
				}
			}
		})
	}
}

// tenTimes is decode cells whose valid ones ran ten times as fast: a copy
// the plausibility checks flag (it outruns the GPU's memory bandwidth).
func tenTimes(cells []store.DecodeCell) []store.DecodeCell { return fasterBy(cells, 10) }

// fasterBy is cells with every valid cell's speeds and output f times
// theirs and its time between tokens 1/f.
func fasterBy(cells []store.DecodeCell, f float64) []store.DecodeCell {
	out := slices.Clone(cells)
	for i, c := range out {
		if c.Status != store.StatusValid {
			continue
		}
		tot, per, tbt, n := *c.TotalTokS*f, *c.PerRequestTokS*f, *c.TBTMs/f, int(math.Round(float64(*c.OutputTokens)*f))
		out[i].TotalTokS, out[i].PerRequestTokS, out[i].TBTMs, out[i].OutputTokens = &tot, &per, &tbt, &n
	}
	return out
}

// TestPlannerAndPredictedBoardListAMeasurementOnce: a copy of fara posted
// by another key (its cells fara's own) is neither a second planner
// option nor a second predicted place, on either planner path; fara, the
// earlier run, is the one listed and a warning says a copy was left out.
// A re-measurement whose cells differ by 10 % is listed beside it.
func TestPlannerAndPredictedBoardListAMeasurementOnce(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "mallory", "alice")
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	dup := fara
	dup.Title = "fara, posted again"
	// Half a percent faster: within noise, a copy; ranked above fara, so
	// a list meets it first and must put fara in its place.
	dup.Decode = fasterBy(fara.Decode, 1.005)
	copied := postRun(t, e, k["mallory"], dup, http.StatusCreated)
	if copied.ID == fara.ID {
		t.Fatalf("the copy was stored as fara itself (%s)", copied.ID)
	}
	ids := func(items []string) string { return strings.Join(items, ",") }
	for _, q := range []string{
		"context_tokens=0&min_per_request_tok_s=40&model=fara",                       // every run, by their summaries
		"context_tokens=0&min_per_request_tok_s=40&model=fara&max_output_tokens=512", // the newest runs, modelled in full
		"context_tokens=0&min_per_request_tok_s=40&model=fara&include_scaled=true&gpu_hour_usd=1",
		"context_tokens=0&min_per_request_tok_s=40&model=fara&max_output_tokens=512&include_scaled=true",
	} {
		rec := e.do(t, http.MethodGet, "/v1/planner?"+q, nil)
		var p api.CapacityPlan
		if err := json.Unmarshal(rec.Body.Bytes(), &p); rec.Code != http.StatusOK || err != nil {
			t.Fatalf("%s: %d %s", q, rec.Code, rec.Body)
		}
		var got []string
		for _, o := range p.Options {
			if o.ScaledFrom != nil {
				if o.RunID != fara.ID {
					t.Errorf("%s: scaled to %s from %s; want from fara (%s), the measurement listed", q, o.GPU, o.RunID, fara.ID)
				}
				continue
			}
			got = append(got, o.RunID)
		}
		if ids(got) != fara.ID || !strings.Contains(strings.Join(p.Warnings, " "), "1 run was left out as a near-copy of a listed run") {
			t.Errorf("%s: options %s, warnings %q; want fara (%s) alone and the copy said to be left out", q, ids(got), p.Warnings, fara.ID)
		}
	}
	board := func() (got []string, warnings []string) {
		lb := leaderboard(t, e, "/v1/leaderboard?predicted=true&model=fara&context_tokens=49152&concurrency=8")
		for _, it := range lb.Items {
			got = append(got, it.Run.ID)
		}
		if lb.Warnings != nil {
			warnings = *lb.Warnings
		}
		return got, warnings
	}
	if got, w := board(); ids(got) != fara.ID || !strings.Contains(strings.Join(w, " "), "1 run was left out as a near-copy of a listed run") {
		t.Errorf("predicted board %s, warnings %q; want fara (%s) alone and the copy said to be left out", ids(got), w, fara.ID)
	}

	again := fara
	again.Title = "fara, measured again"
	again.Decode = fasterBy(fara.Decode, 0.9)
	remeasured := postRun(t, e, k["alice"], again, http.StatusCreated)
	if got, _ := board(); len(got) != 2 || !slices.Contains(got, remeasured.ID) || !slices.Contains(got, fara.ID) {
		t.Errorf("predicted board %s; want fara and its re-measurement %s both", ids(got), remeasured.ID)
	}
}
