package predict

import (
	"context"
	"testing"
	"time"

	"github.com/matrixd/matrixd/store"
)

// pollTimeout bounds waitFor: far beyond what the background work takes
// on a loaded two-core machine under the race detector, so that it fails
// only a condition that will never hold.
const pollTimeout = 2 * time.Minute

// waitFor asks cond again until it holds. It is for work the service does
// in the background, which a test cannot join (the fits the calculator
// makes on its own goroutines), never for ordering events a test makes
// itself: those take the store's clock. When the deadline passes, the
// test fails saying what did not happen.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), pollTimeout)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not within %v", what, pollTimeout)
		case <-tick.C:
		}
	}
}

// patient is New with a calculator that waits for its fits however long
// they take (SetFitWait and SetPlanFitBudget at -1), so that a test's
// answers do not hang on how fast the machine fits; the tests of answers
// given before their fits are made use New and set the waits they test.
func patient(st *store.Store, maxBytes int64, onFit func(time.Duration)) *Service {
	c := New(st, maxBytes, onFit)
	c.SetFitWait(-1)
	c.SetPlanFitBudget(-1)
	return c
}
