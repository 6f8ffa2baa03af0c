package main

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/store"
)

// openDataFiles are the measurement files of the open dataset: every file
// under data/ but the licences, the docs, the METAs and the Go file that
// embeds them.
func openDataFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(filepath.Join("..", "..", "data"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		name := d.Name()
		switch {
		case name == "META.json", strings.HasSuffix(name, ".META.json"), strings.HasPrefix(name, "LICENSE"),
			name == "README.md", name == "SOURCES.md", strings.HasSuffix(name, ".go"):
			return nil
		}
		files = append(files, path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestImportOpenData imports every file of data/, each with the META
// beside it and its format recognised, into a fresh database: a file that
// no longer imports, or imports as other runs, fails here.
func TestImportOpenData(t *testing.T) {
	var files, together []string
	for _, f := range openDataFiles(t) {
		// InferenceX's results are a file per cell, read together with
		// --format (their format is not recognised alone).
		if filepath.Base(filepath.Dir(f)) == "semianalysis-inferencex" {
			together = append(together, f)
		} else {
			files = append(files, f)
		}
	}
	if len(files) != 80 || len(together) != 3 {
		t.Errorf("%d + %d data files, want 80 (9 ds4-bench, 1 llama-bench, 70 llmfit) + 3 (InferenceX): update this test with the dataset", len(files), len(together))
	}
	db := filepath.Join(t.TempDir(), "open.db")
	ctx := context.Background()
	var out, stderr bytes.Buffer
	if err := run(ctx, append([]string{"import", "--db", db}, files...), env(nil), nil, &out, &stderr); err != nil {
		t.Fatalf("import: %v\n%s", err, stderr.String())
	}
	meta := filepath.Join(filepath.Dir(together[0]), "META.json")
	if err := run(ctx, append([]string{"import", "--db", db, "--format", "inferencex", "--meta", meta}, together...), env(nil), nil, &out, &stderr); err != nil {
		t.Fatalf("import --format inferencex: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 515 {
		t.Errorf("%d runs read, want 515 (9 + 5 + 500 llmfit results + 1)", len(lines))
	}
	st, err := store.Open(ctx, db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// One llmfit submission repeats a result of another exactly: the
	// same run, stored once.
	if n, err := st.CountRuns(ctx); err != nil || n != 514 {
		t.Errorf("%d runs stored (%v), want 514", n, err)
	}
	// Real published runs: the plausibility checks flag none of them.
	checked, cursor := 0, ""
	for {
		page, next, err := st.ListRuns(ctx, store.RunFilter{}, store.SortCreated, 200, cursor)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page {
			checked++
			if r.Flagged {
				t.Errorf("real run %s (%s on %s) is flagged", r.ID, r.ModelName, r.GPU)
			}
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if checked != 514 {
		t.Errorf("%d runs checked for flags, want 514", checked)
	}
}

func TestImportToolFormats(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	data := filepath.Join("..", "..", "data")
	csv := filepath.Join(data, "antirez-ds4", "m4_max.csv")
	meta := filepath.Join(data, "antirez-ds4", "m4_max.META.json")

	// Named format and META, as the docs show it.
	var out bytes.Buffer
	db := filepath.Join(dir, "a.db")
	if err := run(ctx, []string{"import", "--db", db, "--format", "ds4-bench", "--meta", meta, csv}, env(nil), nil, &out, io.Discard); err != nil {
		t.Fatalf("import --format ds4-bench: %v", err)
	}
	if !strings.Contains(out.String(), "\tstored\t") || !strings.Contains(out.String(), "(32 decode, 32 prefill cells)") {
		t.Errorf("import output %q, want one run of 32 cells each", out.String())
	}

	// A tool's output without a META beside it says what to give.
	lone := filepath.Join(dir, "lone.csv")
	b, err := os.ReadFile(csv)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lone, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	if err := run(ctx, []string{"import", "--db", db, lone}, env(nil), nil, io.Discard, &stderr); err == nil {
		t.Fatal("import of a ds4-bench CSV without a META succeeded")
	}
	if !strings.Contains(stderr.String(), "give --meta, or put "+filepath.Join(dir, "lone.META.json")+" beside it") {
		t.Errorf("stderr %q does not say where the META goes", stderr.String())
	}
	stderr.Reset()
	if err := run(ctx, []string{"import", "--db", db, "-"}, env(nil), bytes.NewReader(b), io.Discard, &stderr); err == nil || !strings.Contains(stderr.String(), "needs --meta") {
		t.Errorf("stdin without --meta: %v, %q", err, stderr.String())
	}

	// The help lists every format.
	out.Reset()
	if err := run(ctx, []string{"import", "--help"}, env(nil), nil, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"ds4-bench *", "llama-bench *", "llmfit *", "localmaxxing *", "llama-batched-bench", "vllm-bench", "grid-csv", "inferencex"} {
		if !strings.Contains(out.String(), f) {
			t.Errorf("import --help does not list %q:\n%s", f, out.String())
		}
	}
}

// TestImportDir: import --dir reads the whole dataset as seeding does,
// each file with the META beside it, the same runs TestImportOpenData
// imports file by file; a second import stores nothing new.
func TestImportDir(t *testing.T) {
	db := filepath.Join(t.TempDir(), "dir.db")
	ctx := context.Background()
	data := filepath.Join("..", "..", "data")
	for i, want := range []map[string]int{{"stored": 514, "already stored": 1}, {"already stored": 515}} {
		var out, stderr bytes.Buffer
		if err := run(ctx, []string{"import", "--db", db, "--dir", data}, env(nil), nil, &out, &stderr); err != nil {
			t.Fatalf("import --dir: %v\n%s", err, stderr.String())
		}
		got := map[string]int{}
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			if f := strings.Split(line, "\t"); len(f) == 3 {
				got[f[1]]++
			}
		}
		if len(got) != len(want) || got["stored"] != want["stored"] || got["already stored"] != want["already stored"] {
			t.Errorf("import %d: %v, want %v", i+1, got, want)
		}
	}
	var stderr bytes.Buffer
	err := run(ctx, []string{"import", "--db", db, "--dir", data, filepath.Join(data, "antirez-ds4", "m4_max.csv")}, env(nil), nil, io.Discard, &stderr)
	if err == nil || !strings.Contains(stderr.String()+err.Error(), "give no FILE") {
		t.Errorf("--dir with a FILE: %v, %q; want a usage error", err, stderr.String())
	}
}

// TestEvalDataset: eval --corpus on a folder without manifests (the open
// dataset's layout) holds out each cell of its grids, families named by
// folder and method class, pairs the same model across machines, and
// leaves out one_shot runs, saying so.
func TestEvalDataset(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join("..", "..", "data")
	for _, f := range []string{"antirez-ds4/m2_ultra.csv", "antirez-ds4/m2_ultra.META.json", "antirez-ds4/m4_max.csv", "antirez-ds4/m4_max.META.json",
		"llmfit-community/META.json", "llmfit-community/apple-m1-max/1786995154-7cbcebe0.json"} {
		b, err := os.ReadFile(filepath.Join(data, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"eval", "--corpus", dir}, env(nil), nil, &out, io.Discard); err != nil {
		t.Fatalf("eval --corpus: %v\n%s", err, out.String())
	}
	for _, want := range []string{"antirez-ds4 decode_at_depth  holdout  2", "M2 Ultra → M4 Max", "M4 Max → M2 Ultra", "one_shot runs left out"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("eval output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "llmfit-community") {
		t.Errorf("a one_shot run was scored as a grid:\n%s", out.String())
	}
}

// TestSeedDatasetTwice: seeding the open dataset again (a start that
// stopped half way, then import --dir) stores nothing new: the same
// content is the same run.
func TestSeedDatasetTwice(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "twice.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	first, err := seedDataset(ctx, st)
	if err != nil || first < 150 {
		t.Fatalf("first seeding stored %d runs (%v), want at least 150", first, err)
	}
	if again, err := seedDataset(ctx, st); err != nil || again != 0 {
		t.Errorf("seeding again stored %d runs (%v), want 0", again, err)
	}
	if n, err := st.CountRuns(ctx); err != nil || n != first {
		t.Errorf("%d runs stored (%v), want %d", n, err, first)
	}
}
