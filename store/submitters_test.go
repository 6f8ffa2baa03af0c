package store_test

import (
	"context"
	"testing"

	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

// TestSubmitters: the catalog of submitters counts each one's visible
// runs (names differing only in case are one, named as the newest run
// writes it) and of those the unflagged, most runs first; runs naming
// nobody are in no entry.
func TestSubmitters(t *testing.T) {
	forEachStore(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		runs := storetest.Runs(11, 5)
		for i, name := range []string{"alice", "bob", "Alice", "", "alice"} {
			runs[i].Submitter = name
		}
		runs[1].Trust = &store.Trust{Flagged: true}
		runs[4].Trust = &store.Trust{Flagged: true}
		for _, r := range runs {
			if _, _, err := st.CreateRun(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		got, err := st.Submitters(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 {
			t.Fatalf("got %d submitters, want 2: %+v", len(got), got)
		}
		a, b := got[0], got[1]
		if a.Name != "alice" || a.RunCount != 3 || a.UnflaggedCount != 2 {
			t.Errorf("first = %+v, want alice (the newest run's spelling) with 3 runs, 2 unflagged", a)
		}
		if b.Name != "bob" || b.RunCount != 1 || b.UnflaggedCount != 0 || b.LatestRunAt.IsZero() {
			t.Errorf("second = %+v, want bob with 1 run, 0 unflagged", b)
		}
	})
}
