package predict

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/msg"
	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

// sixRuns is a store of six generated runs, none fitted.
func sixRuns(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "p.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, _, err := st.CreateRuns(context.Background(), storetest.Runs(3, 6)); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestPlanDoesNotWaitForEveryFit: once a plan has spent its fit budget,
// runs not yet fitted are listed as being fitted and are fitted in the
// background; the next plan answers for them.
func TestPlanDoesNotWaitForEveryFit(t *testing.T) {
	ctx := context.Background()
	st := sixRuns(t)
	c := New(st, DefaultCacheBytes, nil)
	c.SetPlanFitBudget(0) // spent before the first fit
	pq := PlanQuery{Target: calculator.Target{ContextTokens: 4096, MinPerRequestTokS: 1, Base: calculator.Query{MaxOutputTokens: 512}}}
	first, err := c.Plan(ctx, pq)
	if err != nil {
		t.Fatal(err)
	}
	waiting := 0
	for _, o := range first.Options {
		if strings.Contains(o.Err.Text, "being fitted") {
			waiting++
		}
	}
	if first.Matched != 6 || waiting != 6 || first.Pending != 6 {
		t.Fatalf("%d matched, %d listed as being fitted, %d pending; want all 6 waiting", first.Matched, waiting, first.Pending)
	}
	if !slices.ContainsFunc(msg.Texts(first.Warnings), func(w string) bool { return strings.HasPrefix(w, "partial answer: 6 runs are being fitted") }) {
		t.Errorf("warnings %q do not say the answer is partial", first.Warnings)
	}
	storetest.WaitFor(t, "every run fitted in the background", func() bool {
		again, err := c.Plan(ctx, pq)
		if err != nil {
			t.Fatal(err)
		}
		waiting = 0
		for _, o := range again.Options {
			if strings.Contains(o.Err.Text, "being fitted") {
				waiting++
			}
		}
		if waiting == 0 && (again.Pending != 0 || len(again.Warnings) != 0) {
			t.Fatalf("whole answer still says %d pending: %q", again.Pending, again.Warnings)
		}
		return waiting == 0
	})
}

// TestPlanWaitsForEveryFitWhenTold: with a negative budget (a one-shot
// command, which keeps no fits for a next time) a plan fits every run
// rather than listing some as being fitted; and runs being fitted count
// once even when scaled options read them too.
func TestPlanWaitsForEveryFitWhenTold(t *testing.T) {
	ctx := context.Background()
	st := sixRuns(t)
	pq := PlanQuery{Target: calculator.Target{ContextTokens: 4096, MinPerRequestTokS: 1, Base: calculator.Query{MaxOutputTokens: 512}}, IncludeScaled: true}

	spent := New(st, DefaultCacheBytes, nil)
	spent.SetPlanFitBudget(0)
	partial, err := spent.Plan(ctx, pq)
	if err != nil {
		t.Fatal(err)
	}
	if partial.Pending != 6 {
		t.Errorf("budget spent: %d pending, want each of the 6 runs once", partial.Pending)
	}

	patient := New(st, DefaultCacheBytes, nil)
	patient.SetPlanFitBudget(-1)
	whole, err := patient.Plan(ctx, pq)
	if err != nil {
		t.Fatal(err)
	}
	if whole.Pending != 0 || whole.Matched != 6 {
		t.Fatalf("no budget: %d pending of %d matched, want 0 of 6", whole.Pending, whole.Matched)
	}
	if !slices.ContainsFunc(whole.Options, func(o PlanOption) bool { return o.Scaled }) {
		t.Fatal("no scaled options: the runs' GPUs are not in the catalog")
	}
	for _, o := range whole.Options {
		if o.Err.Code != "" {
			t.Errorf("%s on %s: %s", o.Run.ID, o.GPU, o.Err.Text)
		}
	}
}

// TestAnswerWaitsForItsFitAWhileOnly: an answer whose run is not fitted
// within the wait says the run is being fitted and when to ask again; the
// fit goes on in the background, once, however often it is asked for.
func TestAnswerWaitsForItsFitAWhileOnly(t *testing.T) {
	ctx := context.Background()
	st := sixRuns(t)
	var fits atomic.Int32
	c := New(st, DefaultCacheBytes, func(time.Duration) { fits.Add(1) })
	c.SetFitWait(0)
	configs, _, err := st.RunConfigs(ctx, store.RunFilter{}, 1)
	if err != nil || len(configs) != 1 {
		t.Fatal(configs, err)
	}
	q := calculator.Query{ContextTokens: 0, Concurrency: 1, MaxOutputTokens: 512}
	_, err = c.Decode(ctx, Selection{RunID: configs[0].ID}, q)
	var fitting *Fitting
	if !errors.As(err, &fitting) || fitting.RunID != configs[0].ID || fitting.RetryAfter < time.Second || fitting.Queued < 1 {
		t.Fatalf("first answer: %v, want the run being fitted", err)
	}
	storetest.WaitFor(t, "the run fitted in the background", func() bool {
		_, err := c.Decode(ctx, Selection{RunID: configs[0].ID}, q)
		if err != nil && !errors.As(err, &fitting) {
			t.Fatalf("while fitting: %v", err)
		}
		return err == nil
	})
	if n := fits.Load(); n != 1 {
		t.Errorf("%d fits made for one run asked again and again, want 1", n)
	}
}

// TestPlanNamesOtherMethodClasses: a plan no run of its method class
// matches says which classes do, and how to ask for them, instead of an
// empty answer with no reason.
func TestPlanNamesOtherMethodClasses(t *testing.T) {
	ctx := context.Background()
	st := sixRuns(t)
	class, other := classAndOther(t, st)
	c := patient(st, DefaultCacheBytes, nil)
	pq := PlanQuery{Target: calculator.Target{ContextTokens: 4096, MinPerRequestTokS: 1}, MethodClass: other}
	plan, err := c.Plan(ctx, pq)
	if err != nil {
		t.Fatal(err)
	}
	want := "method_class=" + class
	if plan.Matched != 0 || !slices.ContainsFunc(msg.Texts(plan.Warnings), func(w string) bool { return strings.Contains(w, "6 "+class+" runs do") && strings.Contains(w, want) }) {
		t.Errorf("matched %d, warnings %q: want none matched and a warning naming 6 %s runs and %s", plan.Matched, plan.Warnings, class, want)
	}
	pq.MethodClass = class
	if plan, err = c.Plan(ctx, pq); err != nil || slices.ContainsFunc(msg.Texts(plan.Warnings), func(w string) bool { return strings.Contains(w, "method_class=") }) {
		t.Errorf("a plan its class matches: %v, warnings %q", err, plan.Warnings)
	}
}

// TestEmptyBoardNamesOtherMethodClasses: a leaderboard no run of its
// method class matches says which classes have runs, and how to rank them.
func TestEmptyBoardNamesOtherMethodClasses(t *testing.T) {
	ctx := context.Background()
	st := sixRuns(t)
	class, other := classAndOther(t, st)
	c := patient(st, DefaultCacheBytes, nil)
	w, err := c.EmptyBoardWarning(ctx, store.RunFilter{MethodClass: other}, 4096, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(w.Text, "6 runs match them of method class "+class) || !strings.Contains(w.Text, "method_class="+class) {
		t.Errorf("warning %q does not name the 6 %s runs", w, class)
	}
	if w, err = c.EmptyBoardWarning(ctx, store.RunFilter{MethodClass: class}, 4096, 3); err != nil || strings.Contains(w.Text, "method_class=") {
		t.Errorf("a board its class matches: %q, %v", w, err)
	}
}

// classAndOther is the method class of st's generated runs (all of one)
// and a class none of them has.
func classAndOther(t *testing.T, st *store.Store) (class, other string) {
	t.Helper()
	configs, _, err := st.RunConfigs(context.Background(), store.RunFilter{}, 1)
	if err != nil || len(configs) != 1 {
		t.Fatalf("%d runs, %v", len(configs), err)
	}
	class, other = configs[0].MethodClass, store.MethodServingSweep
	if class == other {
		other = store.MethodSustainedDecode
	}
	return class, other
}
