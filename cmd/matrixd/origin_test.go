package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

// TestImportMetaCarriesOrigin: a tool import's META.json states where the
// run came from, and the run keeps it; export gives it back as run JSON.
func TestImportMetaCarriesOrigin(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "m.db")
	ctx := context.Background()
	const corpus = "../../ingest/testdata/corpus/llama.cpp/"
	b, err := os.ReadFile(corpus + "dgx-spark-gpt-oss-20b.META.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["publisher"], m["license"], m["retrieved_at"] = "ggml-org", "MIT", "2026-11-20"
	meta := filepath.Join(dir, "META.json")
	b, _ = json.Marshal(m)
	if err := os.WriteFile(meta, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(ctx, []string{"import", "--db", db, "--format", "llama-batched-bench", "--meta", meta, corpus + "dgx-spark-gpt-oss-20b.md"}, env(nil), nil, &out, io.Discard); err != nil {
		t.Fatalf("import: %v", err)
	}
	id := strings.Fields(out.String())[0]
	out.Reset()
	if err := run(ctx, []string{"export", "--db", db, id}, env(nil), nil, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var r store.Run
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if r.Publisher != "ggml-org" || r.License != "MIT" || r.RetrievedAt != "2026-11-20" || !strings.HasPrefix(r.SourceURL, "https://github.com/ggml-org/") {
		t.Errorf("exported: publisher %q, licence %q, retrieved %q, source %q", r.Publisher, r.License, r.RetrievedAt, r.SourceURL)
	}

	// A META.json with a licence that is not an identifier is refused,
	// naming the field.
	m["license"] = "MIT License"
	b, _ = json.Marshal(m)
	if err := os.WriteFile(meta, b, 0o644); err != nil {
		t.Fatal(err)
	}
	err = run(ctx, []string{"import", "--db", db, "--format", "llama-batched-bench", "--meta", meta, corpus + "dgx-spark-gpt-oss-20b.md"}, env(nil), nil, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "/license") {
		t.Errorf("a META.json with licence %q: %v; want an error naming /license", m["license"], err)
	}
}

// TestExportAll: export --all writes every run in full, one a line, in id
// order, as GET /v1/runs.ndjson does; the seeds state where they came from.
func TestExportAll(t *testing.T) {
	db := filepath.Join(t.TempDir(), "e.db")
	ctx := context.Background()
	st, err := store.Open(ctx, db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := seedIfEmpty(ctx, st); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.CreateRuns(ctx, storetest.Runs(61, 250)); err != nil {
		t.Fatal(err)
	}
	st.Close()
	var out bytes.Buffer
	if err := run(ctx, []string{"export", "--all", "--db", db}, env(nil), nil, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 4<<20)
	n, last, seeds := 0, "", 0
	for sc.Scan() {
		var r api.Run
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %d: %v", n+1, err)
		}
		n++
		if r.ID <= last || len(r.Decode) == 0 {
			t.Fatalf("line %d: run %s after %s with %d cells: want whole runs in id order", n, r.ID, last, len(r.Decode))
		}
		last = r.ID
		if r.Publisher != nil && *r.Publisher == "Actual Computer" && r.License != nil && *r.License == "NOASSERTION" {
			seeds++
		}
	}
	if n != 252 || seeds != 2 {
		t.Errorf("%d lines, %d seeds stating their origin; want 252 and 2", n, seeds)
	}
}

// TestSeedsGetTheirOrigin: a database seeded before runs stated where
// they came from gets the seeds' at the next start, once.
func TestSeedsGetTheirOrigin(t *testing.T) {
	db := filepath.Join(t.TempDir(), "s.db")
	ctx := context.Background()
	st, err := store.Open(ctx, db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := seedIfEmpty(ctx, st); err != nil {
		t.Fatal(err)
	}
	st.Close()
	raw, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec("UPDATE runs SET publisher = NULL, license = NULL, retrieved_at = NULL"); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	st, err = store.Open(ctx, db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := seedIfEmpty(ctx, st); err != nil {
		t.Fatal(err)
	}
	runs, err := st.ExportRuns(ctx, store.RunFilter{}, "", 10)
	if err != nil || len(runs) != 2 {
		t.Fatalf("%d runs, %v", len(runs), err)
	}
	for _, r := range runs {
		if r.Publisher != "Actual Computer" || r.License != "NOASSERTION" || r.RetrievedAt != "2026-11-30" {
			t.Errorf("seed %s: %q %q %q", r.ID, r.Publisher, r.License, r.RetrievedAt)
		}
	}
}
