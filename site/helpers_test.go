package site_test

import (
	"bytes"
	"context"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

// Helpers the site's tests share with the API's (they drive the same
// real handler over a real database).

// keys makes an API key per name; names starting with "admin" are admins.
func (e *env) keys(t testing.TB, names ...string) map[string]http.Header {
	t.Helper()
	out := map[string]http.Header{}
	for _, n := range names {
		_, token, err := e.st.CreateKey(context.Background(), n, strings.HasPrefix(n, "admin"))
		if err != nil {
			t.Fatal(err)
		}
		out[n] = http.Header{"Authorization": {"Bearer " + token}, "Content-Type": {"application/json"}}
	}
	return out
}

// multipartBody frames meta and files as an import request body.
func multipartBody(t testing.TB, meta []byte, files ...string) (contentType string, body []byte) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	mw, err := w.CreateFormField("meta")
	if err != nil {
		t.Fatal(err)
	}
	mw.Write(meta)
	for _, name := range files {
		fw, err := w.CreateFormFile("file", name)
		if err != nil {
			t.Fatal(err)
		}
		fw.Write(toolFixture(t, name))
	}
	w.Close()
	return w.FormDataContentType(), buf.Bytes()
}

func postRun(t *testing.T, e *env, key http.Header, r store.Run, want int) api.Run {
	t.Helper()
	rec := e.send(t, http.MethodPost, "/v1/runs", key, runJSON(t, r))
	if rec.Code != want {
		t.Fatalf("POST: %d, want %d: %s", rec.Code, want, rec.Body)
	}
	var out api.Run
	json.Unmarshal(rec.Body.Bytes(), &out)
	return out
}

func runJSON(t testing.TB, r store.Run) []byte {
	t.Helper()
	r.ID, r.SubmittedBy, r.CreatedAt, r.Trust = "", "", time.Time{}, nil
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (e *env) runSeries(t *testing.T, id string) api.RunSeries {
	t.Helper()
	rec := e.do(t, "GET", "/v1/runs/"+id+"/series", nil)
	if rec.Code != 200 {
		t.Fatalf("series of %s: %d %s", id, rec.Code, rec.Body)
	}
	var out api.RunSeries
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// series stores base at each version with its cells scaled by each f, in
// order, and returns the stored runs.
func (e *env) series(t *testing.T, base store.Run, versions []string, fs []func(l, b int) float64) []store.Run {
	t.Helper()
	runs := make([]store.Run, len(versions))
	for i, v := range versions {
		r := storetest.Scaled(base, fs[i])
		r.Engine.Version = v
		r.Title = base.Title + " " + v
		runs[i] = r
	}
	stored, _, err := e.st.CreateRuns(t.Context(), runs)
	if err != nil {
		t.Fatal(err)
	}
	return stored
}

func toolFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "ingest", "testdata", "tools", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func with(h http.Header, kv ...string) http.Header {
	out := h.Clone()
	if out == nil {
		out = http.Header{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out.Set(kv[i], kv[i+1])
	}
	return out
}
