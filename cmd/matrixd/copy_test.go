package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

// TestCopyBetweenStores copies a database with the seed runs, generated
// runs and an API key to another store and back: every run reads back
// the same (ids, times and cells), the key still authenticates, and a
// second copy adds nothing. On PostgreSQL too when MATRIXD_TEST_POSTGRES
// names a server.
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
			for _, want := range []string{"runs 152 (0 skipped)", "api_keys 1 (0 skipped)"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("first copy, want %q: %s", want, out.String())
				}
			}
			out.Reset()
			if err := run(ctx, []string{"copy", "--from", src, "--to", dst}, env(nil), nil, &out, io.Discard); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"runs 0 (152 skipped)", "api_keys 0 (1 skipped)"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("second copy, want %q: %s", want, out.String())
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
			}
		})
	}
	if err := run(ctx, []string{"copy", "--from", src, "--to", src}, env(nil), nil, io.Discard, io.Discard); err == nil {
		t.Error("copying a database onto itself was accepted")
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
