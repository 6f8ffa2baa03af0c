package servertest

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

// Do is Send without a body.
func (e *Env) Do(t testing.TB, method, target string, header http.Header) *httptest.ResponseRecorder {
	t.Helper()
	return e.Send(t, method, target, header, nil)
}

// Keys makes an API key per name; names starting with "admin" are admins.
func (e *Env) Keys(t testing.TB, names ...string) map[string]http.Header {
	t.Helper()
	out := map[string]http.Header{}
	for _, n := range names {
		_, token, err := e.St.CreateKey(context.Background(), n, strings.HasPrefix(n, "admin"))
		if err != nil {
			t.Fatal(err)
		}
		out[n] = http.Header{"Authorization": {"Bearer " + token}, "Content-Type": {"application/json"}}
	}
	return out
}

// Series stores base at each version with its cells scaled by each f, in
// order, and returns the stored runs.
func (e *Env) Series(t *testing.T, base store.Run, versions []string, fs []func(l, b int) float64) []store.Run {
	t.Helper()
	runs := make([]store.Run, len(versions))
	for i, v := range versions {
		r := storetest.Scaled(base, fs[i])
		r.Engine.Version = v
		r.Title = base.Title + " " + v
		runs[i] = r
	}
	stored, _, err := e.St.CreateRuns(t.Context(), runs)
	if err != nil {
		t.Fatal(err)
	}
	return stored
}
func (e *Env) RunSeries(t *testing.T, id string) api.RunSeries {
	t.Helper()
	rec := e.Do(t, "GET", "/v1/runs/"+id+"/series", nil)
	if rec.Code != 200 {
		t.Fatalf("series of %s: %d %s", id, rec.Code, rec.Body)
	}
	var out api.RunSeries
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// Get is a page as a browser with header would get it.
func (e *Env) Get(t *testing.T, target string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	e.H.ServeHTTP(rec, req)
	return rec
}

// Page sends a page request through the real handler. Pages are HTML and
// not in openapi.yaml; the status must be one the API operation the page
// mirrors (apiTarget) documents, and the page must be the site's HTML.
func (e *Env) Page(t *testing.T, target, apiTarget string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	e.H.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("%s: Content-Type %q, want HTML; body %.300s", target, ct, rec.Body)
	}
	if !strings.Contains(rec.Body.String(), `<a class="brand" href="/">matrixd</a>`) && !strings.Contains(rec.Body.String(), "data-matrixd-calculator") {
		t.Errorf("%s: the page lacks the site's layout", target)
	}
	if apiTarget != "" {
		route, _, err := e.Router.FindRoute(httptest.NewRequest(http.MethodGet, apiTarget, nil))
		if err != nil {
			t.Fatalf("%s: no API operation: %v", apiTarget, err)
		}
		if route.Operation.Responses.Status(rec.Code) == nil {
			t.Errorf("%s: status %d, which %s (%s) does not document", target, rec.Code, route.Operation.OperationID, apiTarget)
		}
	}
	return rec
}

// Feed fetches target, checks it is Atom as RFC 4287 requires (section
// 4.1.1: one id, title and updated; an author, here the feed's; a self
// link; section 4.1.2: each entry one id, title and updated, and an
// alternate link, as it has no content; ids absolute IRIs, dates RFC
// 3339; no two links of one rel and type) and returns it.
func (e *Env) Feed(t *testing.T, target string) AtomFeed {
	t.Helper()
	var rec *httptest.ResponseRecorder
	storetest.WaitFor(t, target+" answers, its runs fitted", func() bool {
		rec = e.Do(t, "GET", target, nil)
		return rec.Code != http.StatusServiceUnavailable // 503: fits being made in the background
	})
	if rec.Code != http.StatusOK {
		t.Fatalf("%s: %d %.500s", target, rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/atom+xml" {
		t.Errorf("%s: Content-Type %q", target, ct)
	}
	body := rec.Body.String()
	if !strings.HasPrefix(body, `<?xml version="1.0" encoding="UTF-8"?>`) {
		t.Errorf("%s: no XML declaration: %.100s", target, body)
	}
	var f AtomFeed
	dec := xml.NewDecoder(strings.NewReader(body))
	dec.Strict = true
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("%s: not XML in the Atom namespace: %v\n%.500s", target, err, body)
	}
	date := func(what, s string) {
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			t.Errorf("%s: %s %q is not an RFC 3339 date", target, what, s)
		}
	}
	oneOfEach := func(what string, links []AtomLink) {
		seen := map[string]bool{}
		for _, l := range links {
			k := l.Rel + " " + l.Type
			if seen[k] || l.Href == "" {
				t.Errorf("%s: %s has two links %q, or one without href", target, what, k)
			}
			seen[k] = true
		}
	}
	if len(f.IDs) != 1 || !URNUUID.MatchString(f.IDs[0]) || len(f.Titles) != 1 || f.Titles[0] == "" || len(f.Updated) != 1 || len(f.Authors) == 0 || f.Authors[0].Name == "" {
		t.Fatalf("%s: feed id %q, title %q, updated %q, authors %v: want one each (id a urn:uuid)", target, f.IDs, f.Titles, f.Updated, f.Authors)
	}
	date("feed updated", f.Updated[0])
	oneOfEach("the feed", f.Links)
	if !slices.ContainsFunc(f.Links, func(l AtomLink) bool { return l.Rel == "self" && l.Type == "application/atom+xml" }) {
		t.Errorf("%s: no self link in %v", target, f.Links)
	}
	ids := map[string]bool{}
	for i, en := range f.Entries {
		if len(en.IDs) != 1 || !URNUUID.MatchString(en.IDs[0]) || ids[en.IDs[0]] || len(en.Titles) != 1 || en.Titles[0] == "" || len(en.Updated) != 1 {
			t.Fatalf("%s: entry %d: id %q, title %q, updated %q: want one each, the id a urn:uuid not seen before", target, i, en.IDs, en.Titles, en.Updated)
		}
		ids[en.IDs[0]] = true
		date("entry updated", en.Updated[0])
		if en.Updated[0] > f.Updated[0] {
			t.Errorf("%s: entry %d updated %s after the feed's %s", target, i, en.Updated[0], f.Updated[0])
		}
		if i > 0 && en.Updated[0] > f.Entries[i-1].Updated[0] {
			t.Errorf("%s: entry %d is newer than the one before it", target, i)
		}
		oneOfEach("entry "+en.IDs[0], en.Links)
		if !slices.ContainsFunc(en.Links, func(l AtomLink) bool { return l.Rel == "alternate" && l.Type == "text/html" }) {
			t.Errorf("%s: entry %d has no alternate link: %v", target, i, en.Links)
		}
	}
	return f
}
func LinkOf(links []AtomLink, rel, typ string) string {
	for _, l := range links {
		if l.Rel == rel && l.Type == typ {
			return l.Href
		}
	}
	return ""
}

// The Atom elements a test reads, namespaced so that a feed in the wrong
// namespace (or none) decodes to nothing.
type AtomFeed struct {
	XMLName xml.Name    `xml:"http://www.w3.org/2005/Atom feed"`
	IDs     []string    `xml:"http://www.w3.org/2005/Atom id"`
	Titles  []string    `xml:"http://www.w3.org/2005/Atom title"`
	Updated []string    `xml:"http://www.w3.org/2005/Atom updated"`
	Authors []AtomName  `xml:"http://www.w3.org/2005/Atom author"`
	Links   []AtomLink  `xml:"http://www.w3.org/2005/Atom link"`
	Entries []AtomEntry `xml:"http://www.w3.org/2005/Atom entry"`
}

var URNUUID = regexp.MustCompile(`^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

type AtomEntry struct {
	IDs     []string   `xml:"http://www.w3.org/2005/Atom id"`
	Titles  []string   `xml:"http://www.w3.org/2005/Atom title"`
	Updated []string   `xml:"http://www.w3.org/2005/Atom updated"`
	Links   []AtomLink `xml:"http://www.w3.org/2005/Atom link"`
	Summary string     `xml:"http://www.w3.org/2005/Atom summary"`
	Rights  string     `xml:"http://www.w3.org/2005/Atom rights"`
}

type AtomName struct {
	Name string `xml:"http://www.w3.org/2005/Atom name"`
}
type AtomLink struct {
	Rel  string `xml:"rel,attr"`
	Type string `xml:"type,attr"`
	Href string `xml:"href,attr"`
}

// MultipartBody frames meta and files as an import request body.
func MultipartBody(t testing.TB, meta []byte, files ...string) (contentType string, body []byte) {
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
		fw.Write(ToolFixture(t, name))
	}
	w.Close()
	return w.FormDataContentType(), buf.Bytes()
}
func PostRun(t *testing.T, e *Env, key http.Header, r store.Run, want int) api.Run {
	t.Helper()
	rec := e.Send(t, http.MethodPost, "/v1/runs", key, RunJSON(t, r))
	if rec.Code != want {
		t.Fatalf("POST: %d, want %d: %s", rec.Code, want, rec.Body)
	}
	var out api.Run
	json.Unmarshal(rec.Body.Bytes(), &out)
	return out
}
func RunJSON(t testing.TB, r store.Run) []byte {
	t.Helper()
	r.ID, r.SubmittedBy, r.CreatedAt, r.Trust = "", "", time.Time{}, nil
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}
func ToolFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "ingest", "testdata", "tools", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
func With(h http.Header, kv ...string) http.Header {
	out := h.Clone()
	if out == nil {
		out = http.Header{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out.Set(kv[i], kv[i+1])
	}
	return out
}
