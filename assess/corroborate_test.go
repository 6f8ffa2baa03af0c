package assess_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/assess"
	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

// forEachStore runs test on a SQLite file, and on PostgreSQL when
// MATRIXD_TEST_POSTGRES names a server.
func forEachStore(t *testing.T, test func(t *testing.T, st *store.Store)) {
	t.Run("sqlite", func(t *testing.T) {
		st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "matrixd.db"), store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		test(t, st)
	})
	if dsn := os.Getenv("MATRIXD_TEST_POSTGRES"); dsn != "" {
		t.Run("postgres", func(t *testing.T) { test(t, storetest.Postgres(t, dsn, store.Options{})) })
	}
}

// scaled is base with every speed times f, sent with key (its source).
func scaled(base store.Run, f float64, key string) store.Run {
	r := storetest.Scaled(base, func(int, int) float64 { return f })
	r.SubmittedBy = key
	return r
}

func status(t *testing.T, st *store.Store, id string) store.Corroboration {
	t.Helper()
	r, err := st.Run(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if r.Corroboration == nil {
		t.Fatalf("run %s was not judged", id)
	}
	return *r.Corroboration
}

// TestCorroborationLifecycle stores a run, an independent run agreeing
// with it, a 2× copy from a second key, and a third source agreeing with
// the copy, and reads each status, the leaderboard filter and the
// history as they change.
func TestCorroborationLifecycle(t *testing.T) {
	forEachStore(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		w, err := assess.New(st)
		if err != nil {
			t.Fatal(err)
		}
		// Slow enough that 2× stays under the physics bound: corroboration,
		// not the bandwidth check, must tell the copy.
		base := storetest.Runs(5, 1)[0]
		base = scaled(base, 0.2, "")
		orig, _, err := w.SubmitRun(ctx, scaled(base, 1, "alice"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if c := status(t, st, orig.ID); c.Status != store.CorroborationUncorroborated {
			t.Fatalf("a lone run: %+v", c)
		}
		agree, _, err := w.SubmitRun(ctx, scaled(base, 1.05, "bob"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if agree.Corroboration == nil || agree.Corroboration.Status != store.CorroborationCorroborated || agree.Corroboration.Sources != 1 {
			t.Fatalf("a run agreeing with an independent one: %+v", agree.Corroboration)
		}
		if c := status(t, st, orig.ID); c.Status != store.CorroborationCorroborated || c.Sources != 1 {
			t.Fatalf("the first run, once an agreeing run arrived: %+v", c)
		}

		double, _, err := w.SubmitRun(ctx, scaled(base, 2, "mallory"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if double.Trust != nil && double.Trust.Flagged {
			t.Fatal("the 2× copy is flagged by the checks: the test must reach corroboration")
		}
		c := status(t, st, double.ID)
		if c.Status != store.CorroborationDisputed || !strings.Contains(c.Detail, orig.ID) || !strings.Contains(c.Detail, "2×") {
			t.Fatalf("a 2× copy from a second key: %+v", c)
		}
		if len(c.References) == 0 || c.References[0].Ratio < 1.9 {
			t.Errorf("references %+v, want the ratio near 2", c.References)
		}
		ranked, _, err := st.RunConfigs(ctx, store.RunFilter{ExcludeFlagged: true}, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range ranked {
			if r.ID == double.ID {
				t.Error("the disputed run is ranked by default")
			}
		}
		all, _, err := st.RunConfigs(ctx, store.RunFilter{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 3 || len(ranked) != 2 {
			t.Errorf("%d runs ranked by default, %d with flagged and disputed ones: want 2 and 3", len(ranked), len(all))
		}

		// Two more independent sources at 2×: the copy's dispute is lifted.
		for _, key := range []string{"carol", "dave"} {
			f := map[string]float64{"carol": 1.9, "dave": 2.1}[key]
			if _, _, err := w.SubmitRun(ctx, scaled(base, f, key), nil); err != nil {
				t.Fatal(err)
			}
		}
		if c := status(t, st, double.ID); c.Status != store.CorroborationCorroborated {
			t.Fatalf("the 2× run with two independent sources agreeing: %+v", c)
		}
		events, _, err := st.History(ctx, double.ID, 50, "")
		if err != nil {
			t.Fatal(err)
		}
		var changes []string
		for _, e := range events {
			if e.Action == store.ActionCorroboration {
				var d struct{ From, To string }
				if err := json.Unmarshal(e.Detail, &d); err != nil {
					t.Fatal(err)
				}
				changes = append(changes, d.From+"→"+d.To)
			}
		}
		if strings.Join(changes, ",") != "uncorroborated→disputed,disputed→corroborated" {
			t.Errorf("history of the copy's status: %v", changes)
		}
	})
}

// TestCorroborationRenamedCopy stores a run and the same cells under
// another model's name: the later is disputed as a copy of the first.
func TestCorroborationRenamedCopy(t *testing.T) {
	forEachStore(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		w, err := assess.New(st)
		if err != nil {
			t.Fatal(err)
		}
		base := storetest.Runs(6, 1)[0]
		orig, _, err := w.SubmitRun(ctx, scaled(base, 0.2, "alice"), nil)
		if err != nil {
			t.Fatal(err)
		}
		renamed := scaled(base, 0.2, "mallory")
		renamed.Model.Name = "Qwen/Qwen3-8B"
		copied, _, err := w.SubmitRun(ctx, renamed, nil)
		if err != nil {
			t.Fatal(err)
		}
		c := status(t, st, copied.ID)
		if c.Status != store.CorroborationDisputed || c.CopyOf != orig.ID || !strings.Contains(c.Detail, "A copy of run "+orig.ID) {
			t.Fatalf("a renamed copy: %+v", c)
		}
		if c := status(t, st, orig.ID); c.Status == store.CorroborationDisputed {
			t.Fatalf("the original of a renamed copy: %+v", c)
		}
		// Hiding the original leaves the copy without it: judged again.
		if _, err := st.HideRun(ctx, orig.ID, store.Key{Name: "ops", Admin: true}, "test"); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Uncorroborate(ctx, orig); err != nil {
			t.Fatal(err)
		}
		if c := status(t, st, copied.ID); c.Status != store.CorroborationUncorroborated {
			t.Fatalf("the copy once its original is hidden: %+v", c)
		}
	})
}
