package storetest

import (
	"context"
	"testing"
	"time"
)

// PollTimeout bounds WaitFor: far beyond what the background work takes on
// a loaded two-core machine under the race detector, so that it fails only
// a condition that will never hold.
const PollTimeout = 2 * time.Minute

// WaitFor asks cond again until it holds. It is for work a service does in
// the background, which a test cannot join (the fits the calculator makes
// on its own goroutines), never for ordering events a test makes itself:
// those take the store's clock. When the deadline passes, the test fails
// saying what did not happen.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), PollTimeout)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not within %v", what, PollTimeout)
		case <-tick.C:
		}
	}
}
