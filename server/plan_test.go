package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/predict"
	"github.com/matrixd/matrixd/server"

	"github.com/matrixd/matrixd/store/storetest"
)

// plan asks the planner and decodes its answer (e.do validates it against
// openapi.yaml).
func plan(t *testing.T, e *env, q url.Values) api.CapacityPlan {
	t.Helper()
	rec := e.do(t, http.MethodGet, "/v1/planner?"+q.Encode(), nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("%s: %d %s", q.Encode(), rec.Code, rec.Body)
	}
	var p api.CapacityPlan
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPlanner(t *testing.T) {
	e := newEnv(t, 0)
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	nemo := e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090")

	t.Run("ranked by total at the target", func(t *testing.T) {
		p := plan(t, e, url.Values{"context_tokens": {"0"}, "min_per_request_tok_s": {"40"}})
		if p.MatchedRuns != 2 || len(p.Options) != 2 {
			t.Fatalf("%d runs matched, %d options; want both seeds", p.MatchedRuns, len(p.Options))
		}
		last := 1e18
		for _, o := range p.Options {
			if !o.Meets || o.Concurrency < 1 || o.Binding == nil || o.TotalTokS == nil {
				t.Fatalf("option %+v: both seeds run at 40 tok/s each at context 0", o)
			}
			if o.PerRequestTokS.Value < 40 {
				t.Errorf("%s: %.1f tok/s each at the planned concurrency", o.RunID, o.PerRequestTokS.Value)
			}
			if o.TotalTokS.Value > last {
				t.Errorf("options are not ranked by total tok/s: %.1f after %.1f", o.TotalTokS.Value, last)
			}
			last = o.TotalTokS.Value
		}
	})
	t.Run("the fara run at 50 tok/s", func(t *testing.T) {
		p := plan(t, e, url.Values{"context_tokens": {"0"}, "min_per_request_tok_s": {"50"}, "gpu": {"3060"}, "users": {"100"}})
		if p.MatchedRuns != 1 || len(p.Options) != 1 || p.Options[0].RunID != fara.ID {
			t.Fatalf("gpu=3060 matched %d runs: %+v", p.MatchedRuns, p.Options)
		}
		o := p.Options[0]
		// 16 requests measured 50.9 tok/s each, 32 measured 33.2.
		if o.Concurrency < 16 || o.Concurrency >= 32 || *o.Binding != api.Speed {
			t.Errorf("concurrency %d bound by %v, want 16–31 bound by speed", o.Concurrency, *o.Binding)
		}
		want := (100 + o.Concurrency - 1) / o.Concurrency
		if o.Instances == nil || *o.Instances != want || *o.GpusNeeded != want*o.GPUCount {
			t.Errorf("instances %v gpus %v, want %d for 100 users at %d each", o.Instances, o.GpusNeeded, want, o.Concurrency)
		}
		if p.Target.Users == nil || *p.Target.Users != 100 {
			t.Errorf("target %+v does not echo the users", p.Target)
		}
	})
	t.Run("missed targets say how far off", func(t *testing.T) {
		p := plan(t, e, url.Values{"context_tokens": {"0"}, "min_per_request_tok_s": {"1000"}})
		for _, o := range p.Options {
			if o.Meets || o.Shortfall == nil || o.Shortfall.Metric != api.PlanShortfallMetricPerRequestTokS || *o.Shortfall.Target != 1000 {
				t.Fatalf("option %+v meets 1000 tok/s per request", o)
			}
			if !contains(o.Shortfall.Reason, "per-request speed at concurrency 1 is", "target 1000") {
				t.Errorf("reason %q", o.Shortfall.Reason)
			}
		}
		if len(p.Options) == 2 && *p.Options[0].Shortfall.Value < *p.Options[1].Shortfall.Value {
			t.Errorf("the closer miss is not first: %.1f before %.1f", *p.Options[0].Shortfall.Value, *p.Options[1].Shortfall.Value)
		}
	})
	t.Run("measured options first", func(t *testing.T) {
		p := plan(t, e, url.Values{"context_tokens": {"0"}, "min_per_request_tok_s": {"50"}, "model": {"fara"}, "include_scaled": {"true"}, "limit": {"3"}})
		if len(p.Options) != 3 || p.Options[0].ScaledFrom != nil || p.Options[0].RunID != fara.ID || !p.Options[0].Meets {
			t.Fatalf("first option %+v, want the measured run, which meets the target", p.Options[0])
		}
		if p.Options[1].ScaledFrom == nil || p.Omitted == 0 {
			t.Errorf("then scaled GPUs: %+v, %d omitted", p.Options[1], p.Omitted)
		}
	})
	t.Run("ttft_checked says whether TTFT was predicted", func(t *testing.T) {
		// With no TTFT bound asked, as with one: a scaled GPU has no TTFT
		// prediction, so nothing could check one (docs/calculator.md, openapi.yaml).
		p := plan(t, e, url.Values{"context_tokens": {"0"}, "min_per_request_tok_s": {"50"}, "model": {"fara"}, "include_scaled": {"true"}, "limit": {"3"}})
		for _, o := range p.Options {
			if scaled := o.ScaledFrom != nil; o.TTFTChecked == scaled {
				t.Errorf("%s (scaled %v): ttft_checked %v, ttft_ms %v", o.GPU, scaled, o.TTFTChecked, o.TTFTMs)
			}
			for _, w := range o.Warnings {
				if contains(w, "was not applied") {
					t.Errorf("%s: no bound was asked, yet %q", o.GPU, w)
				}
			}
		}
	})
	t.Run("scaled to a catalog GPU", func(t *testing.T) {
		p := plan(t, e, url.Values{"context_tokens": {"0"}, "min_per_request_tok_s": {"50"}, "model": {"fara"}, "gpu": {"RTX 3090"}, "include_scaled": {"true"}, "max_ttft_ms": {"2000"}})
		if p.MatchedRuns != 0 || len(p.Options) != 1 {
			t.Fatalf("fara has no RTX 3090 run: matched %d, options %+v", p.MatchedRuns, p.Options)
		}
		o := p.Options[0]
		if o.GPU != "RTX 3090" || o.ScaledFrom == nil || *o.ScaledFrom != fara.Hardware.GPU || o.RunID != fara.ID || *o.Basis != api.PlanOptionBasisScaledGPU {
			t.Fatalf("option %+v, want the RTX 3060 run scaled to the RTX 3090", o)
		}
		if !strings.HasPrefix(o.Title, fara.Model.Name+" on RTX 3090, scaled from run "+fara.ID) {
			t.Errorf("title %q names the run's own GPU; want the GPU planned for and the run it is scaled from", o.Title)
		}
		if o.TTFTChecked || !contains(o.Warnings[len(o.Warnings)-1], "TTFT bound of 2000 ms was not applied") {
			t.Errorf("TTFT checked %v, warnings %q", o.TTFTChecked, o.Warnings)
		}
	})
	t.Run("a catalog GPU the weights fill does not meet", func(t *testing.T) {
		// The nemotron run's 6.2 GB of weights leave a 6 GB card no KV
		// cache: it does not serve anyone, let alone at the measured
		// card's concurrency.
		p := plan(t, e, url.Values{"context_tokens": {"16384"}, "min_per_request_tok_s": {"10"}, "model": {"nemotron"}, "gpu": {"RTX A2000"}, "include_scaled": {"true"}})
		if len(p.Options) != 1 {
			t.Fatalf("options %+v, want the 6 GB RTX A2000 scaled from the RTX 3090 run", p.Options)
		}
		o := p.Options[0]
		if o.Meets || o.Concurrency != 0 || o.Shortfall == nil || !contains(o.Shortfall.Reason, "leaves no room for the KV cache") {
			t.Errorf("RTX A2000: meets %v at %d, shortfall %+v; want no concurrency, the weights filling the card", o.Meets, o.Concurrency, o.Shortfall)
		}
	})
	runCases(t, e, []getCase{
		{"a GPU filter with no run", "/v1/planner?context_tokens=0&min_per_request_tok_s=10&gpu=H100", 200, []string{`"matched_runs":0`, `"options":[]`}},
		{"nemotron by name", "/v1/planner?context_tokens=16384&min_per_request_tok_s=10&model=nemotron", 200, []string{`"run_id":"` + nemo.ID + `"`, `"matched_runs":1`}},
		{"a target is required", "/v1/planner?context_tokens=0", 400, []string{`"field":"min_per_request_tok_s"`}},
		{"limit bounded", "/v1/planner?context_tokens=0&min_per_request_tok_s=1&limit=101", 400, []string{`"field":"limit"`}},
		{"unknown parameter", "/v1/planner?context_tokens=0&min_per_request_tok_s=1&concurrency=4", 400, []string{"concurrency"}},
	})
}

func TestHardwareCatalog(t *testing.T) {
	e := newEnv(t, 0)
	var list api.HardwareList
	rec := e.do(t, http.MethodGet, "/v1/hardware", nil)
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil || rec.Code != 200 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	measured := map[string]int{}
	for _, g := range list.Items {
		measured[g.Name] = g.MeasuredRuns
		if g.Source == "" || g.MemoryBandwidthGbs <= 0 || g.VRAMGB <= 0 {
			t.Errorf("%s: %+v", g.Name, g)
		}
	}
	if measured["RTX 3090"] != 1 || measured["RTX 3060"] != 1 {
		t.Errorf("measured runs %v, want the two seeds' GPUs once each", measured)
	}
	for _, name := range []string{"RTX 3090", "3090", "GeForce RTX 3090", "NVIDIA GeForce RTX 3090", "nvidia-geforce-rtx-3090"} {
		rec := e.do(t, http.MethodGet, "/v1/hardware/"+url.PathEscape(name), nil)
		var g api.HardwareGPU
		if err := json.Unmarshal(rec.Body.Bytes(), &g); err != nil || rec.Code != 200 {
			t.Fatalf("%q: %d %s", name, rec.Code, rec.Body)
		}
		if g.Name != "RTX 3090" || g.MeasuredRuns != 1 {
			t.Errorf("%q resolved to %q with %d runs", name, g.Name, g.MeasuredRuns)
		}
	}
	runCases(t, e, []getCase{
		{"runs by a GPU alias", "/v1/runs?gpu=3090", 200, []string{`"gpu":"RTX 3090"`}},
		{"leaderboard by a GPU alias", "/v1/leaderboard?context_tokens=0&concurrency=1&gpu=GeForce%20RTX%203090", 200, []string{`"gpu":"RTX 3090"`, `"rank":1`}},
		{"a GPU the catalog lacks is matched by name", "/v1/runs?gpu=Voodoo", 200, []string{`"items":[]`}},
		{"unknown GPU", "/v1/hardware/Voodoo%205", 404, []string{`no GPU named \"Voodoo 5\"`}},
		{"suggestions", "/v1/hardware/RTX%20309", 404, []string{"did you mean", "RTX 3090"}},
		{"by vendor", "/v1/hardware?vendor=nvidia", 200, []string{`"name":"RTX 3090"`}},
		{"by generation", "/v1/hardware?generation=hopper", 200, []string{`"generation":"hopper"`}},
		{"a generation the catalog lacks", "/v1/hardware?generation=bogus", 400, []string{`"field":"generation"`, `the catalog has no generation \"bogus\"; it has `, "hopper"}},
		{"a vendor the catalog lacks", "/v1/hardware?vendor=bogus", 400, []string{`"field":"vendor"`, "nvidia"}},
		{"target_gpu by alias", "/v1/calculator/decode?model=nemotron&gpu=3090&context_tokens=0&concurrency=4&target_gpu=3080", 200, []string{`"method":"scaled_gpu"`}},
	})
}

func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestPartialPlanIsNotCached: a plan that lists runs as being fitted (its
// fit budget spent) is sent with no-store and kept by no cache, so that
// asking again, once the fits are made, gives the whole answer.
func TestPartialPlanIsNotCached(t *testing.T) {
	e := newEnv(t, 0)
	calc := predict.New(e.st, predict.DefaultCacheBytes, nil)
	calc.SetPlanFitBudget(0) // spent before the first fit
	h, err := server.New(e.st, server.Config{Calc: calc})
	if err != nil {
		t.Fatal(err)
	}
	e.setHandler(h)
	target := "/v1/planner?context_tokens=0&min_per_request_tok_s=1"
	rec := e.do(t, http.MethodGet, target, nil)
	var p api.CapacityPlan
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if !slices.ContainsFunc(p.Warnings, func(w string) bool { return strings.HasPrefix(w, "partial answer: 2 runs are being fitted") }) {
		t.Errorf("warnings %q do not say the answer is partial", p.Warnings)
	}
	if cc, tag := rec.Header().Get("Cache-Control"), rec.Header().Get("ETag"); cc != "no-store" || tag != "" {
		t.Errorf("partial answer sent with Cache-Control %q, ETag %q; want no-store and none", cc, tag)
	}
	storetest.WaitFor(t, "the plan whole, its runs fitted in the background", func() bool {
		rec = e.do(t, http.MethodGet, target, nil)
		p = api.CapacityPlan{}
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		return len(p.Warnings) == 0
	})
	for _, o := range p.Options {
		if o.Shortfall != nil {
			t.Errorf("%s: %s", o.RunID, o.Shortfall.Reason)
		}
	}
	if rec.Header().Get("ETag") == "" || !strings.HasPrefix(rec.Header().Get("Cache-Control"), "public") {
		t.Errorf("whole answer sent with Cache-Control %q, ETag %q; want it cached", rec.Header().Get("Cache-Control"), rec.Header().Get("ETag"))
	}
}

// TestPlanOnAnUnknownGPUSaysSo: a gpu filter that matches no run, and names
// no GPU of the catalog, gets an empty answer that says why and suggests
// names, rather than a silent empty list.
func TestPlanOnAnUnknownGPUSaysSo(t *testing.T) {
	e := newEnv(t, 0)
	p := plan(t, e, url.Values{"context_tokens": {"0"}, "min_per_request_tok_s": {"30"}, "gpu": {"RTX 3099"}})
	if len(p.Options) != 0 || len(p.Warnings) != 1 || !contains(p.Warnings[0], `no stored run matching the filters is on GPU "RTX 3099"`, "did you mean", "RTX 3090") {
		t.Fatalf("options %d, warnings %q", len(p.Options), p.Warnings)
	}
	p = plan(t, e, url.Values{"context_tokens": {"0"}, "min_per_request_tok_s": {"30"}, "gpu": {"H100"}})
	if len(p.Options) != 0 || len(p.Warnings) != 1 || strings.Contains(p.Warnings[0], "catalog") {
		t.Fatalf("a catalog GPU without runs: options %d, warnings %q", len(p.Options), p.Warnings)
	}
}

// TestAnswerBeingFittedIs503: a calculator answer whose run's fit is not
// made within the wait is a 503 problem with Retry-After, never a 500;
// asking again once the fit is made (in the background) gets the answer.
func TestAnswerBeingFittedIs503(t *testing.T) {
	e := newEnv(t, 0)
	calc := predict.New(e.st, predict.DefaultCacheBytes, nil)
	calc.SetFitWait(0)
	h, err := server.New(e.st, server.Config{Calc: calc})
	if err != nil {
		t.Fatal(err)
	}
	e.setHandler(h)
	target := "/v1/calculator/decode?run_id=" + e.seed(t, "fara1.5-4b-autoround-rtx3060").ID + "&context_tokens=16384&concurrency=8"
	rec := e.do(t, http.MethodGet, target, nil)
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" || !contains(rec.Body.String(), "is being fitted", "ask again in") {
		t.Fatalf("first answer %d (Retry-After %q): %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	storetest.WaitFor(t, "the answer once its run is fitted in the background", func() bool {
		if rec.Code != http.StatusOK && rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
		if rec.Code == http.StatusOK {
			return true
		}
		rec = e.do(t, http.MethodGet, target, nil)
		return false
	})
}

// TestTTFTBoundNotAppliedSaysWhy: where a measured run's TTFT is not
// predicted, the bound not applied is said of this run, not of another
// GPU, and in the number the caller gave.
func TestTTFTBoundNotAppliedSaysWhy(t *testing.T) {
	e := newEnv(t, 0)
	p := plan(t, e, url.Values{"context_tokens": {"200000"}, "min_per_request_tok_s": {"10"}, "max_ttft_ms": {"60000"}})
	said := false
	for _, o := range p.Options {
		for _, w := range o.Warnings {
			if strings.Contains(w, "TTFT bound") {
				said = true
				if o.ScaledFrom == nil && (strings.Contains(w, "another GPU") || !strings.Contains(w, "60000 ms")) {
					t.Errorf("%s: %q", o.RunID, w)
				}
			}
		}
	}
	if !said {
		t.Fatalf("no option says the TTFT bound was not applied: %+v", p.Options)
	}
}

// TestRunsTakeTheirCardsVRAMSize: a run on "RTX 4060 Ti" that states 16 GB
// is the 16 GB card's: the catalog counts it there, a filter naming that
// size finds it and is not offered a copy of the run scaled to its own
// card, and one naming the 8 GB card does not find it.
func TestRunsTakeTheirCardsVRAMSize(t *testing.T) {
	e := newEnv(t, 0)
	r := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	r.ID, r.Title = "", "Fara on a 16 GB RTX 4060 Ti"
	r.Hardware.GPU = "RTX 4060 Ti"
	sixteen := 16.0
	r.Hardware.VRAMGB = &sixteen
	// Cells of its own: the seed's cells under another GPU name would be a
	// copy of the seed, which no plan lists.
	r.Decode = fasterBy(r.Decode, 0.8)
	stored, _, err := e.st.CreateRun(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	runs := func(name string) int {
		rec := e.do(t, http.MethodGet, "/v1/hardware/"+url.PathEscape(name), nil)
		var g api.HardwareGPU
		if err := json.Unmarshal(rec.Body.Bytes(), &g); err != nil || rec.Code != 200 {
			t.Fatalf("%q: %d %s", name, rec.Code, rec.Body)
		}
		return g.MeasuredRuns
	}
	if n16, n8 := runs("RTX 4060 Ti 16GB"), runs("RTX 4060 Ti 8GB"); n16 != 1 || n8 != 0 {
		t.Errorf("measured runs: 16 GB card %d, 8 GB card %d; want the run on the 16 GB card", n16, n8)
	}
	p := plan(t, e, url.Values{"context_tokens": {"0"}, "min_per_request_tok_s": {"10"}, "gpu": {"RTX 4060 Ti 16GB"}, "include_scaled": {"true"}})
	if p.MatchedRuns != 1 || len(p.Options) == 0 || p.Options[0].RunID != stored.ID || p.Options[0].ScaledFrom != nil {
		t.Errorf("gpu=RTX 4060 Ti 16GB: matched %d, options %+v; want the run itself first, not scaled", p.MatchedRuns, p.Options)
	}
	for _, o := range p.Options[1:] {
		if o.Model == r.Model.Name {
			t.Errorf("gpu=RTX 4060 Ti 16GB: %s offered scaled from %v to the card it has a run on", o.Model, o.ScaledFrom)
		}
	}
	p = plan(t, e, url.Values{"context_tokens": {"0"}, "min_per_request_tok_s": {"10"}, "gpu": {"RTX 4060 Ti 8GB"}})
	if p.MatchedRuns != 0 {
		t.Errorf("gpu=RTX 4060 Ti 8GB: matched %d runs, want none (the run states 16 GB)", p.MatchedRuns)
	}
	p = plan(t, e, url.Values{"context_tokens": {"0"}, "min_per_request_tok_s": {"10"}, "gpu": {"RTX 4060 Ti"}})
	if p.MatchedRuns != 1 {
		t.Errorf("gpu=RTX 4060 Ti (any size): matched %d runs, want the 16 GB one", p.MatchedRuns)
	}
	// A sized filter names the GPU to scale to, not the runs to scale from.
	p = plan(t, e, url.Values{"context_tokens": {"0"}, "min_per_request_tok_s": {"10"}, "model": {"fara"}, "gpu": {"A100 40GB SXM"}, "include_scaled": {"true"}})
	if len(p.Options) != 1 || p.Options[0].GPU != "A100 40GB SXM" || p.Options[0].ScaledFrom == nil {
		t.Errorf("fara scaled to the A100 40GB SXM: options %+v, warnings %q", p.Options, p.Warnings)
	}
	nemo := e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090")
	p = plan(t, e, url.Values{"context_tokens": {"0"}, "min_per_request_tok_s": {"10"}, "model": {"nemotron"}, "gpu": {"RTX 4060 Ti 16GB"}, "include_scaled_model": {"true"}})
	if len(p.Options) != 1 || p.Options[0].RunID != stored.ID || p.Options[0].Basis == nil || *p.Options[0].Basis != api.PlanOptionBasisScaledModel {
		t.Errorf("nemotron on the 16 GB RTX 4060 Ti from fara's run there: options %+v, warnings %q (nemotron's own run %s)", p.Options, p.Warnings, nemo.ID)
	}
	runCases(t, e, []getCase{
		{"runs by the sized name", "/v1/runs?gpu=RTX%204060%20Ti%2016GB", 200, []string{`"id":"` + stored.ID + `"`}},
		{"not by the other size", "/v1/runs?gpu=RTX%204060%20Ti%208GB", 200, []string{`"items":[]`}},
	})
}

// TestPlannerLongContexts: at 131072 tokens Fara's cells 1 and 2 queued
// while 4 ran every request, so the plan is 4; beyond Nemotron's
// max_model_len the binding says so, not the KV cache.
func TestPlannerLongContexts(t *testing.T) {
	e := newEnv(t, 0)
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	nemo := e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090")

	p := plan(t, e, url.Values{"context_tokens": {"131072"}, "min_per_request_tok_s": {"10"}, "model": {"fara"}})
	if len(p.Options) != 1 || p.Options[0].RunID != fara.ID {
		t.Fatalf("options %+v, want Fara's run", p.Options)
	}
	if o := p.Options[0]; !o.Meets || o.Concurrency != 4 || o.Shortfall != nil {
		t.Errorf("Fara at 131072 tokens: meets %v at %d (%v), want 4, the measured valid cell", o.Meets, o.Concurrency, o.BindingDetail)
	}

	p = plan(t, e, url.Values{"context_tokens": {"150000"}, "min_per_request_tok_s": {"10"}, "model": {"nemotron"}})
	if len(p.Options) != 1 || p.Options[0].RunID != nemo.ID {
		t.Fatalf("options %+v, want Nemotron's run", p.Options)
	}
	if o := p.Options[0]; o.Meets || o.Status == nil || *o.Status != api.PlanOptionStatusExceedsMaxModelLen || o.Binding == nil || *o.Binding != api.MaxModelLen {
		t.Errorf("Nemotron at 150000 tokens: status %v, binding %v, want exceeds_max_model_len bound by max_model_len", o.Status, o.Binding)
	}
}
