package main

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

// TestCopyBetweenStores copies a database with the seed runs, generated
// runs, an API key and a flag to another store and back: copy says what
// it did to every table, every run reads back the same (ids, times and
// cells), its flags too, the key still authenticates, and a second copy
// adds nothing. On PostgreSQL too when MATRIXD_TEST_POSTGRES names a
// server. (store's TestCopyKeepsEverything checks every table's contents.)
func TestCopyBetweenStores(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := filepath.Join(dir, "src.db")
	if err := run(ctx, append([]string{"import", "--db", src}, seedPages(t, dir)...), env(nil), nil, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, []string{"generate", "--db", src, "--runs", "150"}, env(nil), nil, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(ctx, []string{"keys", "create", "--db", src, "--name", "alice"}, env(nil), nil, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	token := lines[len(lines)-1]
	events := flagARun(t, src)

	dsts := map[string]string{"sqlite": filepath.Join(dir, "dst.db")}
	if pg := os.Getenv("MATRIXD_TEST_POSTGRES"); pg != "" {
		dsts["postgres"] = storetest.PostgresSchema(t, pg)
	}
	for name, dst := range dsts {
		t.Run(name, func(t *testing.T) {
			out.Reset()
			if err := run(ctx, []string{"copy", "--from", src, "--to", dst}, env(nil), nil, &out, io.Discard); err != nil {
				t.Fatal(err)
			}
			first := copiedCounts(t, out.String())
			for _, want := range []string{"runs", "decode_cells", "prefill_cells", "run_fits", "sources", "api_keys",
				"signing_keys", "run_flags", "run_events", "idempotency_keys", "secrets"} {
				if _, ok := first[want]; !ok {
					t.Errorf("the first copy does not say what it did to %s: %s", want, out.String())
				}
			}
			for table, want := range map[string][2]int{"runs": {152, 0}, "api_keys": {1, 0}, "run_flags": {1, 0}, "run_events": {events, 0}, "secrets": {0, 1}} {
				if first[table] != want {
					t.Errorf("first copy: %s %d (%d skipped), want %d (%d skipped)", table, first[table][0], first[table][1], want[0], want[1])
				}
			}
			out.Reset()
			if err := run(ctx, []string{"copy", "--from", src, "--to", dst}, env(nil), nil, &out, io.Discard); err != nil {
				t.Fatal(err)
			}
			for table, n := range copiedCounts(t, out.String()) {
				if n[0] != 0 || n[1] != first[table][0]+first[table][1] {
					t.Errorf("second copy: %s %d (%d skipped), want all %d skipped", table, n[0], n[1], first[table][0]+first[table][1])
				}
			}
			back := filepath.Join(t.TempDir(), "back.db")
			if err := run(ctx, []string{"copy", "--from", dst, "--to", back}, env(nil), nil, io.Discard, io.Discard); err != nil {
				t.Fatal(err)
			}
			a, err := store.Open(ctx, src, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			for _, other := range []string{dst, back} {
				b, err := store.Open(ctx, other, store.Options{})
				if err != nil {
					t.Fatal(err)
				}
				defer b.Close()
				sameRuns(t, ctx, a, b)
				if k, err := b.Authenticate(ctx, token); err != nil || k.Name != "alice" {
					t.Errorf("%s: the copied key does not authenticate: %v", store.Redact(other), err)
				}
				sameFlags(t, ctx, a, b)
			}
		})
	}
	if err := run(ctx, []string{"copy", "--from", src, "--to", src}, env(nil), nil, io.Discard, io.Discard); err == nil {
		t.Error("copying a database onto itself was accepted")
	}
}

// flagARun flags the first run of the database at path and returns how
// many events its history holds then.
func flagARun(t *testing.T, path string) int {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	page, next, err := st.ListRuns(ctx, store.RunFilter{}, store.SortCreated, 200, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.FlagRun(ctx, page[0].ID, store.Key{Name: "alice"}, "implausible", "too fast"); err != nil {
		t.Fatal(err)
	}
	events := 0
	for {
		for _, r := range page {
			h, _, err := st.History(ctx, r.ID, 200, "")
			if err != nil {
				t.Fatal(err)
			}
			events += len(h)
		}
		if next == "" {
			return events
		}
		if page, next, err = st.ListRuns(ctx, store.RunFilter{}, store.SortCreated, 200, next); err != nil {
			t.Fatal(err)
		}
	}
}

// copiedCounts reads copy's "table N (M skipped)" list.
func copiedCounts(t *testing.T, out string) map[string][2]int {
	t.Helper()
	m := regexp.MustCompile(`(\w+) (\d+) \((\d+) skipped\)`).FindAllStringSubmatch(out, -1)
	counts := map[string][2]int{}
	for _, g := range m {
		copied, _ := strconv.Atoi(g[2])
		skipped, _ := strconv.Atoi(g[3])
		counts[g[1]] = [2]int{copied, skipped}
	}
	if len(counts) == 0 {
		t.Fatalf("copy printed no counts: %s", out)
	}
	return counts
}

// sameFlags checks that b holds the flags of a's first 200 runs (all the
// runs these tests make).
func sameFlags(t *testing.T, ctx context.Context, a, b *store.Store) {
	t.Helper()
	page, _, err := a.ListRuns(ctx, store.RunFilter{}, store.SortCreated, 200, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range page {
		want, err := a.Flags(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := b.Flags(ctx, r.ID); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("flags of %s after the copy: %+v, %v; want %+v", r.ID, got, err, want)
		}
	}
}

// sameRuns checks that b holds every run of a, read back equal.
func sameRuns(t *testing.T, ctx context.Context, a, b *store.Store) {
	t.Helper()
	cursor := ""
	n := 0
	for {
		page, next, err := a.ListRuns(ctx, store.RunFilter{}, store.SortCreated, 200, cursor)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range page {
			want, err := a.Run(ctx, s.ID)
			if err != nil {
				t.Fatal(err)
			}
			got, err := b.Run(ctx, s.ID)
			if err != nil {
				t.Fatalf("run %s: %v", s.ID, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("run %s differs after the copy", s.ID)
			}
			n++
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if m, _ := b.CountRuns(ctx); m != n {
		t.Errorf("the copy holds %d runs, the source %d", m, n)
	}
}

// TestCopyFailsOnCountsThatDoNotAddUp: a source row the copy cannot place
// (here a flag of a run the source does not hold, written with foreign keys
// off) leaves the destination's count short; copy prints the table with
// its counts and fails naming it.
func TestCopyFailsOnCountsThatDoNotAddUp(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := filepath.Join(dir, "src.db")
	if err := run(ctx, []string{"generate", "--db", src, "--runs", "3"}, env(nil), nil, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", src)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.ExecContext(ctx, "INSERT INTO run_flags (run_id, key_name, reason, text, created_at) VALUES ('rnotstoredhere0', 'alice', 'spam', 'an orphan', '2026-01-02T03:04:05.000000Z')"); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	var out bytes.Buffer
	err = run(ctx, []string{"copy", "--from", src, "--to", filepath.Join(dir, "dst.db")}, env(nil), nil, &out, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "run_flags do not add up") || strings.Contains(err.Error(), "runs") {
		t.Errorf("copy with a flag it cannot place: %v, want an error naming run_flags alone", err)
	}
	if want := "run_flags 0 (1 skipped) does not add up: the source has 1 and the destination 0 (0 before)"; !strings.Contains(out.String(), want) {
		t.Errorf("copy printed %s, want %q", out.String(), want)
	}
}
