package store_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

// TestOriginRoundTrips: where a run came from is stored and read back,
// in the run, its summary and the export; it is metadata, so the same
// measurements with another licence are the same run.
func TestOriginRoundTrips(t *testing.T) {
	forEachStore(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		runs := storetest.Runs(71, 2)
		r := runs[0]
		r.SourceURL, r.Publisher, r.License, r.RetrievedAt = "https://example.org/runs/1", "Example Lab", "CC-BY-4.0", "2026-11-02"
		stored, created, err := st.CreateRun(ctx, r)
		if err != nil || !created {
			t.Fatalf("CreateRun: created %v, %v", created, err)
		}
		got, err := st.Run(ctx, stored.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.SourceURL != r.SourceURL || got.Publisher != "Example Lab" || got.License != "CC-BY-4.0" || got.RetrievedAt != "2026-11-02" {
			t.Errorf("read back %q %q %q %q", got.SourceURL, got.Publisher, got.License, got.RetrievedAt)
		}
		other := r
		other.License, other.Publisher = "MIT", "Someone Else"
		again, created, err := st.CreateRun(ctx, other)
		if err != nil || created || again.ID != stored.ID || again.License != "CC-BY-4.0" {
			t.Errorf("the same run under another licence: %s created %v licence %q err %v; want the stored %s, CC-BY-4.0", again.ID, created, again.License, err, stored.ID)
		}
		plain, _, err := st.CreateRun(ctx, runs[1])
		if err != nil {
			t.Fatal(err)
		}
		list, _, err := st.ListRuns(ctx, store.RunFilter{}, store.SortCreated, 10, "")
		if err != nil || len(list) != 2 {
			t.Fatalf("ListRuns: %d, %v", len(list), err)
		}
		for _, s := range list {
			want := [4]string{}
			if s.ID == stored.ID {
				want = [4]string{r.SourceURL, "Example Lab", "CC-BY-4.0", "2026-11-02"}
			}
			if have := [4]string{s.SourceURL, s.Publisher, s.License, s.RetrievedAt}; have != want {
				t.Errorf("summary of %s: %q, want %q", s.ID, have, want)
			}
		}
		exported, err := st.ExportRuns(ctx, store.RunFilter{}, "", 10)
		if err != nil || len(exported) != 2 {
			t.Fatalf("ExportRuns: %d, %v", len(exported), err)
		}
		for _, e := range exported {
			if e.ID == plain.ID && (e.Publisher != "" || e.License != "" || e.RetrievedAt != "") {
				t.Errorf("a run stated nowhere has an origin: %q %q %q", e.Publisher, e.License, e.RetrievedAt)
			}
			if e.ID == stored.ID && (e.License != "CC-BY-4.0" || len(e.Decode) != len(r.Decode)) {
				t.Errorf("exported run: licence %q, %d decode cells; want CC-BY-4.0 and %d", e.License, len(e.Decode), len(r.Decode))
			}
		}
	})
}

// TestOriginIsValidated: a licence is a short SPDX-like token, a publisher
// bounded text, and a retrieval date a day not after the store's today.
func TestOriginIsValidated(t *testing.T) {
	now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	st, _ := openTestDBWith(t, store.Options{Now: func() time.Time { return now }})
	ctx := context.Background()
	base := storetest.Runs(72, 1)[0]
	for _, c := range []struct {
		name                          string
		license, publisher, retrieved string
		pointer                       string // "" for stored
	}{
		{"SPDX identifier", "CC-BY-4.0", "Lab", "2026-12-07", ""},
		{"LicenseRef", "LicenseRef-my-terms.v2", "", "", ""},
		{"GPL or later", "GPL-2.0+", "", "", ""},
		{"licence with a space", "CC BY 4.0", "", "", "/license"},
		{"licence as a URL", "https://creativecommons.org/licenses/by/4.0/", "", "", "/license"},
		{"licence starting with a dash", "-MIT", "", "", "/license"},
		{"licence too long", "LicenseRef-" + strings.Repeat("x", 60), "", "", "/license"},
		{"publisher too long", "", strings.Repeat("p", store.MaxTextLen+1), "", "/publisher"},
		{"publisher with a control character", "", "Lab\x07", "", "/publisher"},
		{"retrieved not a day", "", "", "07/12/2026", "/retrieved_at"},
		{"retrieved with a time", "", "", "2026-12-07T10:00:00Z", "/retrieved_at"},
		{"retrieved tomorrow", "", "", "2026-12-08", "/retrieved_at"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := base
			r.Notes = c.name // content of its own is not needed: origin is not content
			r.License, r.Publisher, r.RetrievedAt = c.license, c.publisher, c.retrieved
			_, _, err := st.CreateRun(ctx, r)
			if c.pointer == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ve *store.ValidationError
			if !errors.As(err, &ve) || !slices.ContainsFunc(ve.Problems, func(p store.Problem) bool { return p.Pointer == c.pointer }) {
				t.Fatalf("err %v; want a problem at %s", err, c.pointer)
			}
			if _, _, err := st.SubmitRun(ctx, r, nil); !errors.As(err, &ve) {
				t.Errorf("SubmitRun: %v; want the same refusal", err)
			}
		})
	}
}

// TestExportRunsResumes: pages in id order, each after the last id of
// the one before, give every matching run once; filters and hidden runs
// are respected.
func TestExportRunsResumes(t *testing.T) {
	forEachStore(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		stored, _, err := st.CreateRuns(ctx, storetest.Runs(73, 40))
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		gpu := stored[0].Hardware.GPU
		for _, r := range stored {
			if strings.EqualFold(r.Hardware.GPU, gpu) {
				want = append(want, r.ID)
			}
		}
		slices.Sort(want)
		if len(want) < 4 {
			t.Fatalf("only %d runs on %s: the filter tests little", len(want), gpu)
		}
		if _, err := st.HideRun(ctx, want[1], store.Key{Name: "admin", Admin: true}, "a test"); err != nil {
			t.Fatal(err)
		}
		want = slices.Delete(want, 1, 2)
		var got []string
		after := ""
		for {
			page, err := st.ExportRuns(ctx, store.RunFilter{GPU: gpu}, after, 2)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range page {
				got = append(got, r.ID)
			}
			if len(page) < 2 {
				break
			}
			after = page[len(page)-1].ID
		}
		if !slices.Equal(got, want) {
			t.Errorf("export of gpu %s: %v, want %v", gpu, got, want)
		}
		if _, err := st.ExportRuns(ctx, store.RunFilter{}, "", store.MaxExportPage+1); err == nil {
			t.Error("a page larger than MaxExportPage was read")
		}
	})
}
