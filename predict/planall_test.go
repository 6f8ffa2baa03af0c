package predict

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/msg"
	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

// manyRuns is a store of n generated runs, none fitted.
func manyRuns(t *testing.T, n int) (*store.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "p.db")
	st, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, _, err := st.CreateRuns(context.Background(), storetest.Runs(11, n)); err != nil {
		t.Fatal(err)
	}
	return st, path
}

// bruteForce plans pq by modelling every matching run, as a planner
// without summaries would.
func bruteForce(t *testing.T, c *Service, pq PlanQuery) []PlanOption {
	t.Helper()
	ctx := context.Background()
	configs, _, err := c.store.RunConfigs(ctx, store.RunFilter{ExcludeFlagged: true, MethodClass: pq.MethodClass}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var out []PlanOption
	for _, cfg := range configs {
		opt := PlanOption{Run: cfg, GPU: cfg.GPU, GPUCount: gpuCount(cfg)}
		m, err := c.modelWithin(ctx, -1, cfg.ID)
		if err != nil {
			opt.Err = cannotModel(err)
		} else if opt.Plan, err = m.Plan(pq.Target); err != nil {
			t.Fatal(err)
		}
		if pq.Price.Given() {
			price(pq, &opt)
		}
		out = append(out, opt)
	}
	slices.SortStableFunc(out, pq.compare())
	return out
}

func optionKey(o PlanOption) string {
	total := 0.0
	if o.Plan.At != nil && o.Plan.At.TotalTokS != nil {
		total = o.Plan.At.TotalTokS.Value
	}
	return fmt.Sprintf("%s meets=%v B=%d total=%.3f", o.Run.ID, o.Plan.Meets, o.Plan.Concurrency, total)
}

// TestPlanConsidersEveryRun: with more runs than the planner once read
// (the newest 50), an unfiltered plan answers from every one of them: its
// options are those a planner modelling every run would list, in the same
// order, while it models only the few whose bounds could make the answer.
func TestPlanConsidersEveryRun(t *testing.T) {
	ctx := context.Background()
	st, _ := manyRuns(t, 160)
	c := patient(st, DefaultCacheBytes, nil)
	if n, err := c.Backfill(ctx, 1); err != nil || n != 160 {
		t.Fatalf("backfill fitted %d runs (%v), want 160", n, err)
	}
	gpuHour := 2.0
	for _, pq := range []PlanQuery{
		{Target: calculator.Target{ContextTokens: 4096, MinPerRequestTokS: 20}, Limit: 10},
		{Target: calculator.Target{ContextTokens: 30000, MinPerRequestTokS: 8, MaxTTFTMs: 20000, Users: 200}, Limit: 5},
		{Target: calculator.Target{ContextTokens: 1000, MinPerRequestTokS: 5, Users: 500}, Limit: 10, Price: calculator.Price{GPUHourUSD: &gpuHour}, SortByCost: true},
		{Target: calculator.Target{ContextTokens: 60000, MinPerRequestTokS: 400}, Limit: 10}, // nothing meets: ranked by shortfall
	} {
		pq.MethodClass = store.MethodSustainedDecode
		got, err := c.Plan(ctx, pq)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%+v: %d of %d runs modelled", pq.Target, got.Modelled, got.Matched)
		if got.Modelled*2 > got.Matched {
			t.Errorf("%+v: %d of %d runs modelled: the bounds should rule most out", pq.Target, got.Modelled, got.Matched)
		}
		want := bruteForce(t, c, pq)
		if got.Matched != len(want) {
			t.Errorf("%+v: %d matched, want %d", pq.Target, got.Matched, len(want))
		}
		if got.Omitted != len(want)-pq.Limit {
			t.Errorf("%+v: %d omitted, want %d", pq.Target, got.Omitted, len(want)-pq.Limit)
		}
		for _, w := range msg.Texts(got.Warnings) {
			if strings.Contains(w, "newest") {
				t.Errorf("warning %q: the plan should read every run", w)
			}
		}
		for i := range pq.Limit {
			if i >= len(got.Options) || optionKey(got.Options[i]) != optionKey(want[i]) {
				var g []string
				for _, o := range got.Options {
					g = append(g, optionKey(o))
				}
				t.Fatalf("%+v: option %d differs\n got %q\nwant %q", pq.Target, i, g, optionKey(want[i]))
			}
		}
	}
}

// TestFitsAreStoredAndOutliveARestart: a fit is stored with the method
// that made it; a new service on the reopened database answers the same
// from the stored fit without fitting again, and a fit stored by another
// method is made again.
func TestFitsAreStoredAndOutliveARestart(t *testing.T) {
	ctx := context.Background()
	st, path := manyRuns(t, 8)
	c := patient(st, DefaultCacheBytes, nil)
	if n, err := c.Backfill(ctx, 1); err != nil || n != 8 {
		t.Fatalf("backfill fitted %d (%v), want 8", n, err)
	}
	configs, _, err := st.RunConfigs(ctx, store.RunFilter{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	id := configs[0].ID
	sf, ok, err := st.Fit(ctx, id, calculator.MethodVersion)
	if err != nil || !ok {
		t.Fatalf("no stored fit of run %s (%v)", id, err)
	}
	if n := len(sf.Params) + len(sf.Summary); n > 2400 {
		t.Errorf("a stored fit takes %d bytes; the documented bound is 2,400", n)
	}
	q := calculator.Query{ContextTokens: 12345, Concurrency: 3}
	before, err := c.Decode(ctx, Selection{RunID: id}, q)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()

	st2, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	c2 := patient(st2, DefaultCacheBytes, nil)
	if n, err := c2.Backfill(ctx, 1); err != nil || n != 0 {
		t.Fatalf("after a restart the backfill fitted %d runs (%v), want none", n, err)
	}
	after, err := c2.Decode(ctx, Selection{RunID: id}, q)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(after.Result, before.Result) {
		t.Errorf("after a restart the answer is\n%v\nbefore it was\n%v", after.Result, before.Result)
	}
	again, _, _ := st2.Fit(ctx, id, calculator.MethodVersion)
	if string(again.Params) != string(sf.Params) {
		t.Error("the stored fit was replaced although its method is current")
	}
	// A fit of an earlier method is made again.
	if err := st2.PutFit(ctx, store.StoredFit{RunID: id, Method: "an earlier method", Params: sf.Params, Summary: sf.Summary}); err != nil {
		t.Fatal(err)
	}
	c3 := patient(st2, DefaultCacheBytes, nil)
	if n, err := c3.Backfill(ctx, 1); err != nil || n != 1 {
		t.Fatalf("with one fit of an earlier method the backfill fitted %d (%v), want 1", n, err)
	}
	if _, ok, _ := st2.Fit(ctx, id, calculator.MethodVersion); !ok {
		t.Error("the refit was not stored under the current method")
	}
}

// TestPlanOverUnfittedRunsIsPartial: on a store whose runs have no fit
// (after an upgrade), a plan over every run says how many are pending,
// lists at most maxPlanFits of them, and once they are fitted answers in
// full.
func TestPlanOverUnfittedRunsIsPartial(t *testing.T) {
	ctx := context.Background()
	st, _ := manyRuns(t, maxPlanFits+30)
	c := New(st, DefaultCacheBytes, nil)
	c.SetPlanFitBudget(0) // spent before the first fit
	pq := PlanQuery{Target: calculator.Target{ContextTokens: 4096, MinPerRequestTokS: 10}, Limit: 100}
	first, err := c.Plan(ctx, pq)
	if err != nil {
		t.Fatal(err)
	}
	if first.Matched != maxPlanFits+30 || first.Pending != maxPlanFits+30 || len(first.Options) > maxPlanFits {
		t.Fatalf("first plan: %d matched, %d pending, %d options; want all %d pending and at most %d listed", first.Matched, first.Pending, len(first.Options), maxPlanFits+30, maxPlanFits)
	}
	if !slices.ContainsFunc(msg.Texts(first.Warnings), func(w string) bool {
		return strings.HasPrefix(w, "partial answer: 30 more matching runs have no fit yet")
	}) {
		t.Errorf("warnings %q do not count the runs not listed", first.Warnings)
	}
	if _, err := c.Backfill(ctx, 2); err != nil {
		t.Fatal(err)
	}
	again, err := c.Plan(ctx, pq)
	if err != nil {
		t.Fatal(err)
	}
	if again.Pending != 0 || len(again.Warnings) != 0 || len(again.Options) == 0 {
		t.Errorf("after the backfill: %d pending, warnings %q, %d options", again.Pending, again.Warnings, len(again.Options))
	}
}

// TestPlanWithOverridesSaysHowManyWerePlanned: a question with
// max_output_tokens or vram_gb is planned over the newest 50 matching runs;
// when more match, a warning says how many of how many, and with no more
// there is none.
func TestPlanWithOverridesSaysHowManyWerePlanned(t *testing.T) {
	ctx := context.Background()
	st, _ := manyRuns(t, maxPlanRuns+3)
	c := New(st, DefaultCacheBytes, nil)
	t.Cleanup(c.Close)    // before the store closes
	c.SetPlanFitBudget(0) // the warning does not wait for fits
	const want = "with vram_gb or max_output_tokens only the newest 50 of the 53 matching runs are planned: narrow with model, gpu or engine"
	for _, base := range []calculator.Query{{MaxOutputTokens: 1024}, {VRAMGB: 16}} {
		pl, err := c.Plan(ctx, PlanQuery{Target: calculator.Target{ContextTokens: 4096, MinPerRequestTokS: 10, Base: base}})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(msg.Texts(pl.Warnings), want) || pl.Matched != maxPlanRuns {
			t.Errorf("max_output_tokens %d, vram_gb %g: %d matched, warnings %q; want %d and %q", base.MaxOutputTokens, base.VRAMGB, pl.Matched, pl.Warnings, maxPlanRuns, want)
		}
	}
	runs, _, err := st.RunConfigs(ctx, store.RunFilter{}, 1)
	if err != nil || len(runs) != 1 {
		t.Fatal(runs, err)
	}
	few := PlanQuery{Model: runs[0].ModelName, Target: calculator.Target{ContextTokens: 4096, MinPerRequestTokS: 10, Base: calculator.Query{MaxOutputTokens: 1024}}}
	pl, err := c.Plan(ctx, few)
	if err != nil {
		t.Fatal(err)
	}
	if pl.Matched == 0 || pl.Matched >= maxPlanRuns || slices.ContainsFunc(msg.Texts(pl.Warnings), func(w string) bool { return strings.Contains(w, "newest") }) {
		t.Errorf("model %s: %d matched, warnings %q; want fewer than %d and no warning of runs left out", few.Model, pl.Matched, pl.Warnings, maxPlanRuns)
	}
}
