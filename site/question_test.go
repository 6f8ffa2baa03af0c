package site_test

import (
	"context"
	"encoding/json"
	"html"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/ingest"
	"github.com/matrixd/matrixd/store"
)

// corpusRuns reads every grid of ingest/testdata/corpus as matrixd import
// --format reads it.
func corpusRuns(t *testing.T) []store.Run {
	t.Helper()
	dir := filepath.Join("..", "ingest", "testdata", "corpus")
	manifests, err := filepath.Glob(filepath.Join(dir, "*", "manifest.json"))
	if err != nil || len(manifests) == 0 {
		t.Fatalf("no corpus manifests under %s: %v", dir, err)
	}
	var out []store.Run
	for _, mf := range manifests {
		b, err := os.ReadFile(mf)
		if err != nil {
			t.Fatal(err)
		}
		var entries []struct {
			Name, Format, Meta string
			Files              []string
			TG                 int
		}
		if err := json.Unmarshal(b, &entries); err != nil {
			t.Fatalf("%s: %v", mf, err)
		}
		for _, e := range entries {
			meta, err := os.ReadFile(filepath.Join(filepath.Dir(mf), e.Meta))
			if err != nil {
				t.Fatal(err)
			}
			var files []ingest.ToolFile
			for _, f := range e.Files {
				data, err := os.ReadFile(filepath.Join(filepath.Dir(mf), f))
				if err != nil {
					t.Fatal(err)
				}
				files = append(files, ingest.ToolFile{Name: f, Data: data})
			}
			r, err := ingest.ParseToolRun(e.Format, e.Meta, meta, files, ingest.ToolOptions{TG: e.TG})
			if err != nil {
				t.Fatalf("%s: %s: %v", mf, e.Name, err)
			}
			out = append(out, r)
		}
	}
	return out
}

// dataRuns reads the open dataset in data/ as matrixd import reads it: a
// file of a format read file by file with its META (the file's own
// .META.json, else the nearest META.json above it), InferenceX's results
// together.
func dataRuns(t *testing.T) []store.Run {
	t.Helper()
	root := filepath.Join("..", "data")
	read := func(path string) []byte {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	metaOf := func(path string) string {
		if m := strings.TrimSuffix(path, filepath.Ext(path)) + ".META.json"; fileExists(m) {
			return m
		}
		for dir := filepath.Dir(path); strings.HasPrefix(dir, root); dir = filepath.Dir(dir) {
			if m := filepath.Join(dir, "META.json"); fileExists(m) {
				return m
			}
		}
		t.Fatalf("%s: no META", path)
		return ""
	}
	var out []store.Run
	agg, err := filepath.Glob(filepath.Join(root, "semianalysis-inferencex", "agg_*.json"))
	if err != nil || len(agg) == 0 {
		t.Fatalf("no InferenceX results: %v", err)
	}
	var files []ingest.ToolFile
	for _, f := range agg {
		files = append(files, ingest.ToolFile{Name: filepath.Base(f), Data: read(f)})
	}
	meta := metaOf(agg[0])
	runs, err := ingest.ParseToolRuns(ingest.FormatInferenceX, meta, read(meta), files, ingest.ToolOptions{})
	if err != nil {
		t.Fatalf("InferenceX: %v", err)
	}
	out = append(out, runs...)
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, "META.json") || strings.Contains(path, "semianalysis-inferencex") {
			return err
		}
		data := read(path)
		format, err := ingest.Detect(data)
		if err != nil || format == "" {
			return nil // not a tool's output (README, SOURCES, LICENSE)
		}
		meta := metaOf(path)
		runs, err := ingest.ParseToolRuns(format, meta, read(meta), []ingest.ToolFile{{Name: filepath.Base(path), Data: data}}, ingest.ToolOptions{})
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, runs...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestPredictOtherCellsAnswers: every real run's page (the seeds, the
// corpus of published grids and the open dataset) opens "predict other cells" on a question
// inside what the run measured, and the calculator answers it.
func TestPredictOtherCellsAnswers(t *testing.T) {
	e := newEnv(t, 0)
	ids := map[string]string{}
	for name, r := range e.seeds {
		ids[r.ID] = name
	}
	for _, r := range append(corpusRuns(t), dataRuns(t)...) {
		stored, _, err := e.st.CreateRun(context.Background(), r)
		if err != nil {
			t.Fatalf("%s: %v", r.Title, err)
		}
		ids[stored.ID] = stored.Title
	}
	link := regexp.MustCompile(`<a href="(/widget/calculator\?[^"]*)">predict other cells</a>`)
	for id, name := range ids {
		page := e.page(t, "/runs/"+id, "/v1/runs/"+id)
		m := link.FindStringSubmatch(page.Body.String())
		if m == nil {
			t.Errorf("%s: no link to predict other cells", name)
			continue
		}
		u, err := url.Parse(html.UnescapeString(m[1]))
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		if q.Get("run") != id || q.Get("context") == "" || q.Get("concurrency") == "" {
			t.Errorf("%s: the link asks %s, want the run, a context and a concurrency", name, u)
			continue
		}
		if w := e.page(t, u.String(), ""); w.Code != 200 || !regexp.MustCompile(`data-context="`+q.Get("context")+`" data-concurrency="`+q.Get("concurrency")+`"`).MatchString(w.Body.String()) {
			t.Errorf("%s: the widget page %s: %d, not opened on the question", name, u, w.Code)
		}
		a := url.Values{"run_id": {id}, "context_tokens": {q.Get("context")}, "concurrency": {q.Get("concurrency")}}
		if v := q.Get("max_output"); v != "" {
			a.Set("max_output_tokens", v)
		}
		ask := "/v1/calculator/decode?" + a.Encode()
		if rec := e.do(t, "GET", ask, nil); rec.Code != 200 {
			t.Errorf("%s: %s answers %d: %.400s", name, ask, rec.Code, rec.Body)
		}
	}
	t.Logf("%d runs", len(ids))
}
