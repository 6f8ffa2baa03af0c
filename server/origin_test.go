package server_test

import (
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/ingest"
	"github.com/matrixd/matrixd/store/storetest"
)

// TestOriginRoundTrips: a run's source, publisher, licence and retrieval
// date, sent with it, come back from GET, the list, its CSV, the export,
// the run's page and the runs feed; a run sent without a licence is
// CC0-1.0, and a seed states where it came from.
func TestOriginRoundTrips(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "alice")
	runs := storetest.Runs(81, 2)
	r := runs[0]
	r.SourceURL, r.Publisher, r.License, r.RetrievedAt = "https://example.org/bench/81", "Example Lab", "CC-BY-4.0", "2026-11-02"
	rec := e.send(t, "POST", "/v1/runs", k["alice"], runJSON(t, r))
	if rec.Code != 201 {
		t.Fatalf("POST: %d %s", rec.Code, rec.Body)
	}
	id := decodeRun(t, rec.Body.Bytes()).ID
	rec = e.send(t, "POST", "/v1/runs", k["alice"], runJSON(t, runs[1]))
	if rec.Code != 201 {
		t.Fatalf("POST without a licence: %d %s", rec.Code, rec.Body)
	}
	if got := decodeRun(t, rec.Body.Bytes()); got.License == nil || *got.License != "CC0-1.0" || got.Publisher != nil || got.RetrievedAt != nil {
		t.Errorf("a run sent without a licence: licence %v, publisher %v, retrieved %v; want CC0-1.0, null, null", got.License, got.Publisher, got.RetrievedAt)
	}

	got := decodeRun(t, e.do(t, "GET", "/v1/runs/"+id, nil).Body.Bytes())
	if deref(got.SourceURL) != r.SourceURL || deref(got.Publisher) != "Example Lab" || deref(got.License) != "CC-BY-4.0" || got.RetrievedAt == nil || got.RetrievedAt.String() != "2026-11-02" {
		t.Errorf("GET: %v %v %v %v", got.SourceURL, got.Publisher, got.License, got.RetrievedAt)
	}

	var list api.RunList
	if err := json.Unmarshal(e.do(t, "GET", "/v1/runs?submitted_by=alice", nil).Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(list.Items, func(s api.RunSummary) bool { return s.ID == id })
	if i < 0 || deref(list.Items[i].Publisher) != "Example Lab" || deref(list.Items[i].License) != "CC-BY-4.0" {
		t.Errorf("the list: %+v", list.Items)
	}

	for _, h := range []http.Header{nil, {"Accept": {"text/csv"}}} {
		target := "/v1/runs?submitted_by=alice&format=csv"
		if h != nil {
			target = "/v1/runs?submitted_by=alice"
		}
		rec := e.do(t, "GET", target, h)
		if ct := rec.Header().Get("Content-Type"); ct != "text/csv; charset=utf-8" {
			t.Fatalf("%s: Content-Type %q", target, ct)
		}
		rows, err := csv.NewReader(rec.Body).ReadAll()
		if err != nil || len(rows) != 3 {
			t.Fatalf("%s: %d rows, %v", target, len(rows), err)
		}
		col := func(name string) int { return slices.Index(rows[0], name) }
		for _, row := range rows[1:] {
			if row[col("id")] != id {
				if row[col("license")] != "CC0-1.0" || row[col("publisher")] != "" {
					t.Errorf("%s: the other run's row %v", target, row)
				}
				continue
			}
			if row[col("source_url")] != r.SourceURL || row[col("publisher")] != "Example Lab" || row[col("license")] != "CC-BY-4.0" || row[col("retrieved_at")] != "2026-11-02" {
				t.Errorf("%s: row %v", target, row)
			}
		}
	}

	page := e.page(t, "/runs/"+id, "/v1/runs/"+id).Body.String()
	for _, want := range []string{`<a href="https://example.org/bench/81" rel="nofollow">`, "Example Lab", "<code>CC-BY-4.0</code>", `<time datetime="2026-11-02">`} {
		if !strings.Contains(page, want) {
			t.Errorf("the run's page lacks %s", want)
		}
	}

	f := e.feed(t, "/feeds/runs.atom?submitted_by=alice")
	found := false
	for _, en := range f.Entries {
		if linkOf(en.Links, "alternate", "application/json") != "/v1/runs/"+id {
			continue
		}
		found = true
		if en.Rights != "Licence: CC-BY-4.0 (SPDX)" || !strings.Contains(en.Summary, "published by Example Lab, retrieved on 2026-11-02") ||
			!slices.ContainsFunc(en.Links, func(l atomLink) bool { return l.Rel == "via" && l.Href == r.SourceURL }) {
			t.Errorf("feed entry: rights %q, summary %q, links %v", en.Rights, en.Summary, en.Links)
		}
	}
	if !found {
		t.Errorf("the run is not in the feed")
	}

	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	seed := decodeRun(t, e.do(t, "GET", "/v1/runs/"+fara.ID, nil).Body.Bytes())
	if deref(seed.Publisher) != "Actual Computer" || deref(seed.License) != "NOASSERTION" || seed.RetrievedAt == nil {
		t.Errorf("seed: publisher %v, licence %v, retrieved %v", seed.Publisher, seed.License, seed.RetrievedAt)
	}
}

// TestOriginUnknown: a run that states nothing of where it came from
// (stored before it was kept) shows null in JSON and unknown on its page.
func TestOriginUnknown(t *testing.T) {
	e := newEnv(t, 0)
	stored, _, err := e.st.CreateRun(t.Context(), storetest.Runs(82, 1)[0])
	if err != nil {
		t.Fatal(err)
	}
	got := decodeRun(t, e.do(t, "GET", "/v1/runs/"+stored.ID, nil).Body.Bytes())
	if got.SourceURL != nil || got.Publisher != nil || got.License != nil || got.RetrievedAt != nil {
		t.Errorf("GET: %v %v %v %v; want nulls", got.SourceURL, got.Publisher, got.License, got.RetrievedAt)
	}
	if page := e.page(t, "/runs/"+stored.ID, "/v1/runs/"+stored.ID).Body.String(); strings.Count(page, "<dd>unknown</dd>") != 4 {
		t.Errorf("the page shows unknown %d times, want 4 (source, publisher, licence, retrieved)", strings.Count(page, "<dd>unknown</dd>"))
	}
}

// TestOriginRefused: a licence that is not an SPDX-like token, a publisher
// too long and a retrieval date in the future are 422s naming the field.
func TestOriginRefused(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "alice")
	base := storetest.Runs(83, 1)[0]
	for _, c := range []struct {
		name    string
		set     func(m map[string]any)
		pointer string
	}{
		{"licence with spaces", func(m map[string]any) { m["license"] = "CC BY 4.0" }, "/license"},
		{"licence too long", func(m map[string]any) { m["license"] = "LicenseRef-" + strings.Repeat("x", 60) }, "/license"},
		{"licence not a string", func(m map[string]any) { m["license"] = 4 }, "/license"},
		{"publisher too long", func(m map[string]any) { m["publisher"] = strings.Repeat("p", 201) }, "/publisher"},
		{"retrieved not a day", func(m map[string]any) { m["retrieved_at"] = "yesterday" }, "/retrieved_at"},
		{"retrieved in the future", func(m map[string]any) { m["retrieved_at"] = "2999-01-01" }, "/retrieved_at"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var m map[string]any
			if err := json.Unmarshal(runJSON(t, base), &m); err != nil {
				t.Fatal(err)
			}
			c.set(m)
			body, _ := json.Marshal(m)
			before := e.rows(t)
			rec := e.send(t, "POST", "/v1/runs", k["alice"], body)
			if rec.Code != 422 || !strings.Contains(rec.Body.String(), `"pointer":"`+c.pointer+`"`) {
				t.Fatalf("%d %.600s; want 422 naming %s", rec.Code, rec.Body, c.pointer)
			}
			e.sameRows(t, before)
		})
	}
}

// exportLines reads an NDJSON export: the runs' ids in order.
func exportLines(t *testing.T, body []byte) []string {
	t.Helper()
	var ids []string
	for line := range bytes.Lines(body) {
		var r api.Run
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("line %d is not a run: %v\n%.200s", len(ids)+1, err, line)
		}
		if r.ID == "" || len(r.Decode) == 0 {
			t.Fatalf("line %d is not a whole run: %.200s", len(ids)+1, line)
		}
		ids = append(ids, r.ID)
	}
	return ids
}

// TestExport: the NDJSON export is every matching run in full, in id
// order; after= resumes with the rest and no duplicate; gzip when asked;
// its ETag answers 304 until a run is written; the cache never holds it.
func TestExport(t *testing.T) {
	e := newEnv(t, 250)
	all := e.do(t, "GET", "/v1/runs.ndjson", nil)
	if all.Code != 200 || all.Header().Get("Content-Type") != "application/x-ndjson" || all.Header().Get("Cache-Control") != "no-cache" {
		t.Fatalf("%d %q %q", all.Code, all.Header().Get("Content-Type"), all.Header().Get("Cache-Control"))
	}
	ids := exportLines(t, all.Body.Bytes())
	n, err := e.st.CountRuns(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != n || !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != n {
		t.Fatalf("%d lines (sorted %v) for %d runs, each once", len(ids), slices.IsSorted(ids), n)
	}

	// The response cache neither answers nor keeps it: it is streamed.
	cacheCounts := func() string {
		var out []string
		for line := range strings.Lines(e.do(t, "GET", "/metrics", nil).Body.String()) {
			if strings.HasPrefix(line, "matrixd_response_cache_requests_total") {
				out = append(out, line)
			}
		}
		return strings.Join(out, "")
	}
	before := cacheCounts()
	e.do(t, "GET", "/v1/runs.ndjson", nil)
	if after := cacheCounts(); after != before {
		t.Errorf("the export went through the response cache: %q, then %q", before, after)
	}

	// Filters: those of the list, on whole runs.
	filtered := exportLines(t, e.do(t, "GET", "/v1/runs.ndjson?gpu=RTX%203090&vram_gb_min=20", nil).Body.Bytes())
	var list api.RunList
	if err := json.Unmarshal(e.do(t, "GET", "/v1/runs?gpu=RTX%203090&vram_gb_min=20&limit=200&sort=created_at", nil).Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, s := range list.Items {
		want = append(want, s.ID)
	}
	slices.Sort(want)
	if len(want) == 0 || len(want) == n || !slices.Equal(filtered, want) {
		t.Errorf("filtered export %d runs, the list %d (of %d)", len(filtered), len(want), n)
	}

	// Resumption: a download cut after line 137 goes on after its id.
	cut := 137
	rest := exportLines(t, e.do(t, "GET", "/v1/runs.ndjson?after="+ids[cut-1], nil).Body.Bytes())
	if !slices.Equal(append(slices.Clone(ids[:cut]), rest...), ids) {
		t.Errorf("resumed after line %d: %d more lines, want %d, the same runs", cut, len(rest), n-cut)
	}

	// gzip, when the client takes it.
	gz := e.do(t, "GET", "/v1/runs.ndjson", http.Header{"Accept-Encoding": {"gzip"}})
	if gz.Header().Get("Content-Encoding") != "gzip" {
		t.Fatalf("Content-Encoding %q, want gzip", gz.Header().Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(gz.Body)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(plain, all.Body.Bytes()) || gz.Body.Len() >= all.Body.Len()/4 {
		t.Errorf("gzipped: %d bytes of %d, equal when unzipped %v", gz.Body.Len(), all.Body.Len(), bytes.Equal(plain, all.Body.Bytes()))
	}

	// ETag: 304 while nothing is written; another for other filters; a
	// new one after a write.
	etag := all.Header().Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	if rec := e.do(t, "GET", "/v1/runs.ndjson", http.Header{"If-None-Match": {etag}}); rec.Code != 304 || rec.Body.Len() != 0 {
		t.Errorf("If-None-Match: %d with %d bytes, want 304 and none", rec.Code, rec.Body.Len())
	}
	if rec := e.do(t, "GET", "/v1/runs.ndjson?gpu=RTX%203090", http.Header{"If-None-Match": {etag}}); rec.Code != 200 {
		t.Errorf("another filter with the same ETag: %d, want 200", rec.Code)
	}
	k := e.keys(t, "alice")
	if rec := e.send(t, "POST", "/v1/runs", k["alice"], runJSON(t, storetest.Runs(84, 1)[0])); rec.Code != 201 {
		t.Fatalf("POST: %d", rec.Code)
	}
	after := e.do(t, "GET", "/v1/runs.ndjson", http.Header{"If-None-Match": {etag}})
	if after.Code != 200 || after.Header().Get("ETag") == etag || len(exportLines(t, after.Body.Bytes())) != n+1 {
		t.Errorf("after a write: %d, ETag %s (was %s)", after.Code, after.Header().Get("ETag"), etag)
	}
	if rec := e.do(t, "GET", "/v1/runs.ndjson?after=not%20an%20id", nil); rec.Code != 400 || !strings.Contains(rec.Body.String(), "after") {
		t.Errorf("a bad after: %d %.300s", rec.Code, rec.Body)
	}
}

// TestImportStatesLicence: a published page imported over HTTP takes its
// licence from license=; a tool's output from its meta part, and the two
// must agree; a licence that is no identifier is a 400 naming it.
func TestImportStatesLicence(t *testing.T) {
	e := newEmptyEnv(t)
	k := e.keys(t, "alice")
	page := ingest.Seeds()[1].Data
	text := with(k["alice"], "Content-Type", "text/plain")
	rec := e.send(t, "POST", "/v1/runs/import?license=CC-BY-4.0", text, page)
	if rec.Code != 201 {
		t.Fatalf("page import: %d %.500s", rec.Code, rec.Body)
	}
	if got := decodeRun(t, rec.Body.Bytes()); deref(got.License) != "CC-BY-4.0" {
		t.Errorf("the page's run is under %v, want CC-BY-4.0", got.License)
	}
	if rec := e.send(t, "POST", "/v1/runs/import?license=CC%20BY", text, page); rec.Code != 400 || !strings.Contains(rec.Body.String(), `"field":"license"`) {
		t.Errorf("license=CC BY: %d %.500s; want 400 naming license", rec.Code, rec.Body)
	}

	var meta map[string]any
	if err := json.Unmarshal(toolFixture(t, "llama-pr16894.META.json"), &meta); err != nil {
		t.Fatal(err)
	}
	meta["license"] = "MIT"
	b, _ := json.Marshal(meta)
	ct, body := multipartBody(t, b, "llama-pr16894-qwen2-7b.md")
	tool := with(k["alice"], "Content-Type", ct)
	if rec := e.send(t, "POST", "/v1/runs/import?format=llama-batched-bench&license=CC0-1.0", tool, body); rec.Code != 400 || !strings.Contains(rec.Body.String(), "meta's license is MIT") {
		t.Errorf("two licences: %d %.500s; want 400 naming both", rec.Code, rec.Body)
	}
	rec = e.send(t, "POST", "/v1/runs/import?format=llama-batched-bench&license=MIT", tool, body)
	if rec.Code != 201 || deref(decodeRun(t, rec.Body.Bytes()).License) != "MIT" {
		t.Errorf("the same licence twice: %d %.300s; want 201 under MIT", rec.Code, rec.Body)
	}
}
