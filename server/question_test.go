package server_test

import (
	"context"
	"encoding/json"
	"html"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
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

// TestPredictOtherCellsAnswers: every real run's page (the seeds and the
// corpus of published grids) opens "predict other cells" on a question
// inside what the run measured, and the calculator answers it.
func TestPredictOtherCellsAnswers(t *testing.T) {
	e := newEnv(t, 0)
	ids := map[string]string{}
	for name, r := range e.seeds {
		ids[r.ID] = name
	}
	for _, r := range corpusRuns(t) {
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
		ask := "/v1/calculator/decode?" + url.Values{"run_id": {id}, "context_tokens": {q.Get("context")}, "concurrency": {q.Get("concurrency")}}.Encode()
		if rec := e.do(t, "GET", ask, nil); rec.Code != 200 {
			t.Errorf("%s: %s answers %d: %.400s", name, ask, rec.Code, rec.Body)
		}
	}
	t.Logf("%d runs", len(ids))
}
