package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

// TestSourcesAndHiding: a run stored without its bytes gets them once
// (seeds of an older database), identical bytes are kept once and go with
// the last run that came from them, and a hidden run leaves every selection.
func TestSourcesAndHiding(t *testing.T) {
	forEachStore(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		runs := storetest.Runs(91, 2)
		if _, _, err := st.CreateRuns(ctx, runs[:1]); err != nil {
			t.Fatal(err)
		}
		src := &store.Source{MediaType: "text/plain; charset=utf-8", Format: store.FormatPage, Data: []byte("the page")}
		withSrc := runs[0]
		withSrc.Source = src
		for i, want := range []bool{true, false} {
			if done, err := st.AttachSource(ctx, withSrc); err != nil || done != want {
				t.Fatalf("AttachSource %d = %v, %v; want %v", i, done, err, want)
			}
		}
		second := runs[1]
		second.Source = src
		stored, _, err := st.CreateRuns(ctx, []store.Run{second})
		if err != nil {
			t.Fatal(err)
		}
		first, err := st.Run(ctx, store.IDFromHash(withSrc.ContentHash()))
		if err != nil {
			t.Fatal(err)
		}
		if first.Provenance.SourceSHA256 == "" || first.Provenance.SourceSHA256 != stored[0].Provenance.SourceSHA256 {
			t.Fatalf("hashes %q and %q, want one", first.Provenance.SourceSHA256, stored[0].Provenance.SourceSHA256)
		}
		admin := store.Key{Name: "ops", Admin: true}
		if err := st.DeleteRun(ctx, first.ID, admin); err != nil {
			t.Fatal(err)
		}
		if got, _, err := st.RunSource(ctx, stored[0].ID); err != nil || string(got.Data) != "the page" {
			t.Fatalf("the other run's source after a delete: %q, %v", got.Data, err)
		}

		if _, err := st.HideRun(ctx, stored[0].ID, store.Key{Name: "alice"}, "spam"); !errors.Is(err, store.ErrForbidden) {
			t.Errorf("hide by a non-admin: %v, want forbidden", err)
		}
		if _, err := st.HideRun(ctx, stored[0].ID, admin, "spam"); err != nil {
			t.Fatal(err)
		}
		for name, err := range map[string]error{
			"Run":         func() error { _, err := st.Run(ctx, stored[0].ID); return err }(),
			"RunConfigOf": func() error { _, err := st.RunConfigOf(ctx, stored[0].ID); return err }(),
			"DecodeCells": func() error { _, err := st.DecodeCells(ctx, stored[0].ID, store.DecodeFilter{}); return err }(),
			"RunSource":   func() error { _, _, err := st.RunSource(ctx, stored[0].ID); return err }(),
		} {
			if !errors.Is(err, store.ErrGone) {
				t.Errorf("%s of a hidden run: %v, want gone", name, err)
			}
		}
		configs, _, err := st.RunConfigs(ctx, store.RunFilter{}, 10)
		gpus, gerr := st.GPUs(ctx)
		if err != nil || gerr != nil || len(configs) != 0 || len(gpus) != 0 {
			t.Errorf("with the only run hidden: %d configs, %d GPUs (%v, %v); want none", len(configs), len(gpus), err, gerr)
		}
		h, _, err := st.History(ctx, first.ID, 50, "")
		if err != nil || len(h) != 3 || h[0].Action != store.ActionCreate || h[1].Action != store.ActionSource || h[2].Action != store.ActionDelete {
			t.Errorf("history of the deleted run: %+v, %v; want create, source, delete", h, err)
		}
	})
}

// TestNewestRunPerModel: a choice among models sees every model matching
// the filter, one run each (its newest), however many runs the newest
// model has; RunConfigs sees only the newest runs.
func TestNewestRunPerModel(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		// Each write is a minute after the one before, on the store's clock.
		clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		st := openStore(t, backend, store.Options{Now: func() time.Time {
			clock = clock.Add(time.Minute)
			return clock
		}})
		ctx := context.Background()
		runs := storetest.Runs(17, 8)
		for i := range runs {
			runs[i].Hardware.GPU = "RTX 3090"
			runs[i].Model.Name = "Many-7B"
			runs[i].Title = fmt.Sprintf("many %d", i)
		}
		runs[0].Model.Name, runs[0].Title = "Old-13B", "the one run of another model"
		runs[1].Model.Name, runs[1].Title = "Old-13B", "its older run"
		// Stored one at a time, oldest first: the other model's runs are
		// older than all of Many-7B's.
		stored := make([]store.Run, len(runs))
		for _, i := range []int{1, 0, 2, 3, 4, 5, 6, 7} {
			got, _, err := st.CreateRuns(ctx, runs[i:i+1])
			if err != nil {
				t.Fatal(err)
			}
			stored[i] = got[0]
		}
		f := store.RunFilter{GPU: "RTX 3090"}
		newest, _, err := st.RunConfigs(ctx, f, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range newest {
			if c.ModelName != "Many-7B" {
				t.Fatalf("the newest three runs include %s: the test needs them to be one model's", c.ModelName)
			}
		}
		per, more, err := st.NewestRunPerModel(ctx, f, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(per) != 2 || more || per[0].ModelName != "Many-7B" || per[0].ID != stored[7].ID || per[1].ModelName != "Old-13B" || per[1].ID != stored[0].ID {
			t.Fatalf("newest run per model: %+v (more %v); want Many-7B's newest, then Old-13B's newest (%s)", per, more, stored[0].ID)
		}
		if one, more, err := st.NewestRunPerModel(ctx, f, 1); err != nil || len(one) != 1 || !more {
			t.Fatalf("limit 1: %d models, more %v, %v; want one and more", len(one), more, err)
		}
	})
}

// TestHistoryPages: a run's 30 events read 10 at a time are three pages
// that follow on in order, without repeats, whatever is added meanwhile;
// a cursor not issued for this run's history is refused.
func TestHistoryPages(t *testing.T) {
	forEachStore(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		stored, _, err := st.CreateRuns(ctx, storetest.Runs(93, 3))
		if err != nil {
			t.Fatal(err)
		}
		id, admin := stored[0].ID, store.Key{Name: "ops", Admin: true}
		for i := range 29 {
			notes := fmt.Sprintf("note %d", i)
			if _, err := st.UpdateRunMeta(ctx, id, store.MetaPatch{Notes: &notes}, admin); err != nil {
				t.Fatal(err)
			}
		}
		var (
			got    []store.Event
			cursor string
			pages  int
		)
		for {
			page, next, err := st.History(ctx, id, 10, cursor)
			if err != nil {
				t.Fatalf("page %d: %v", pages+1, err)
			}
			got, pages = append(got, page...), pages+1
			if pages == 1 {
				// An event of another run, added between pages, changes nothing.
				if _, err := st.HideRun(ctx, stored[1].ID, admin, "spam"); err != nil {
					t.Fatal(err)
				}
			}
			if next == "" || pages > 3 {
				break
			}
			cursor = next
		}
		if pages != 3 || len(got) != 30 {
			t.Fatalf("%d pages, %d events; want 3 pages of 10", pages, len(got))
		}
		for i, e := range got {
			if i > 0 && e.ID <= got[i-1].ID {
				t.Fatalf("event %d (id %d) after id %d: not in order, or repeated", i, e.ID, got[i-1].ID)
			}
		}
		if got[0].Action != store.ActionCreate || string(got[29].Detail) != `{"notes":"note 28"}` {
			t.Errorf("first %s, last %s; want the create first and the 29th edit last", got[0].Action, got[29].Detail)
		}

		_, first, err := st.History(ctx, id, 10, "")
		if err != nil {
			t.Fatal(err)
		}
		var fe *store.FieldError
		for name, c := range map[string]string{
			"forged":         first[:len(first)-2] + "xx",
			"another run's":  func() string { _, c, _ := st.History(ctx, stored[1].ID, 1, ""); return c }(),
			"not a cursor":   "%%%",
			"another list's": func() string { _, c, _ := st.ListRuns(ctx, store.RunFilter{}, store.SortCreated, 1, ""); return c }(),
		} {
			if c == "" {
				t.Fatalf("%s cursor: none issued", name)
			}
			if _, _, err := st.History(ctx, id, 10, c); !errors.As(err, &fe) || fe.Field != "cursor" {
				t.Errorf("%s cursor: %v, want a FieldError on cursor", name, err)
			}
		}
		if _, _, err := st.History(ctx, "rneverwashere", 10, ""); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("history of no run: %v, want not found", err)
		}
	})
}
