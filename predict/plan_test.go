package predict

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

// TestPlanDoesNotWaitForEveryFit: once a plan has spent its fit budget,
// runs not yet fitted are listed as being fitted and are fitted in the
// background; the next plan answers for them.
func TestPlanDoesNotWaitForEveryFit(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "p.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, _, err := st.CreateRuns(ctx, storetest.Runs(3, 6)); err != nil {
		t.Fatal(err)
	}
	c := New(st, 64, nil)
	c.planBudget = 0 // spent before the first fit
	pq := PlanQuery{Target: calculator.Target{ContextTokens: 4096, MinPerRequestTokS: 1, Base: calculator.Query{MaxOutputTokens: 512}}}
	first, err := c.Plan(ctx, pq)
	if err != nil {
		t.Fatal(err)
	}
	waiting := 0
	for _, o := range first.Options {
		if strings.Contains(o.Err, "being fitted") {
			waiting++
		}
	}
	if first.Matched != 6 || waiting != 6 {
		t.Fatalf("%d matched, %d listed as being fitted; want all 6 waiting", first.Matched, waiting)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		again, err := c.Plan(ctx, pq)
		if err != nil {
			t.Fatal(err)
		}
		waiting = 0
		for _, o := range again.Options {
			if strings.Contains(o.Err, "being fitted") {
				waiting++
			}
		}
		if waiting == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d runs still being fitted after 20 s", waiting)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
