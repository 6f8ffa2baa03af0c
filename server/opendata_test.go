package server_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/ingest"
	"github.com/matrixd/matrixd/store"
)

// storeDataFile stores the runs of a file of the open dataset as import
// does: read with its META, the file and META kept as the source.
func storeDataFile(t *testing.T, e *env, format, file, meta string) []store.Run {
	t.Helper()
	read := func(p string) []byte {
		b, err := os.ReadFile(filepath.Join("..", "data", filepath.FromSlash(p)))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	m := read(meta)
	files := []ingest.ToolFile{{Name: file, Data: read(file)}}
	runs, err := ingest.ParseToolRuns(format, meta, m, files, ingest.ToolOptions{})
	if err != nil {
		t.Fatal(err)
	}
	src, err := ingest.ToolSource(format, m, files)
	if err != nil {
		t.Fatal(err)
	}
	var out []store.Run
	for _, r := range runs {
		r.Source = src
		stored, _, err := e.st.CreateRun(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, stored)
	}
	return out
}

// TestOpenDataClasses: runs of the open dataset keep their method classes
// apart from sustained decode, in the leaderboard and in what a run says of
// itself (its class and its source's format, both in openapi.yaml's enums).
func TestOpenDataClasses(t *testing.T) {
	e := newEnv(t, 0)
	ds4 := storeDataFile(t, e, ingest.FormatDS4Bench, "antirez-ds4/gb10.csv", "antirez-ds4/gb10.META.json")[0]
	fit := storeDataFile(t, e, ingest.FormatLlmfit, "llmfit-community/apple-m1-max/1786995154-7cbcebe0.json", "llmfit-community/META.json")[0]
	runCases(t, e, []getCase{
		{"a ds4 run says its class and source", "/v1/runs/" + ds4.ID, 200, []string{`"class":"decode_at_depth"`, `"output_tokens_per_request":128`, `"source_format":"ds4-bench"`}},
		{"an llmfit run says its class and source", "/v1/runs/" + fit.ID, 200, []string{`"class":"one_shot"`, `"source_format":"llmfit"`}},
		{"decode at depth ranked apart", "/v1/leaderboard?context_tokens=32768&concurrency=1&method_class=decode_at_depth", 200, []string{`"method_class":"decode_at_depth"`, ds4.ID}},
		{"one-shot numbers ranked apart", "/v1/leaderboard?context_tokens=0&concurrency=1&method_class=one_shot", 200, []string{`"method_class":"one_shot"`, fit.ID}},
	})
	for _, target := range []string{"/v1/leaderboard?context_tokens=32768&concurrency=1", "/v1/leaderboard?context_tokens=0&concurrency=1"} {
		rec := e.do(t, http.MethodGet, target, nil)
		if rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), ds4.ID) || strings.Contains(rec.Body.String(), fit.ID) {
			t.Errorf("%s: %d, ranks an open-data run beside sustained decode: %.1000s", target, rec.Code, rec.Body)
		}
	}
	// A ranking of one class says what else was measured and how to rank
	// it; a class with nothing else beside it says nothing.
	runCases(t, e, []getCase{
		{"the default class names the others", "/v1/leaderboard?context_tokens=0&concurrency=1", 200, []string{
			"ranked: runs of method class sustained_decode",
			"1 of method class decode_at_depth (method_class=decode_at_depth)",
			"1 of method class one_shot (method_class=one_shot)"}},
	})
	if rec := e.do(t, http.MethodGet, "/v1/leaderboard?context_tokens=32768&concurrency=1&method_class=decode_at_depth", nil); !strings.Contains(rec.Body.String(), "2 of method class sustained_decode") || !strings.Contains(rec.Body.String(), "1 of method class one_shot") {
		t.Errorf("decode_at_depth ranked: %.600s, want a note of the other classes", rec.Body)
	}
}
