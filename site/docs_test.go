package site_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"

	"github.com/matrixd/matrixd/api"
)

func init() {
	// The response validator decodes bodies by media type; teach it the
	// reference's.
	openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("text/javascript", openapi3filter.PlainBodyDecoder)
}

// attrURL finds the URLs a page loads or links to.
var attrURL = regexp.MustCompile(`(?i)\b(?:src|href|spec-url|action)\s*=\s*"([^"]*)"`)

func TestDocs(t *testing.T) {
	e := newEnv(t, 0)
	rec := e.do(t, "GET", "/docs", nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /docs: %d\n%s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("GET /docs: Content-Type %q, want text/html", ct)
	}
	page := rec.Body.String()
	var script string
	for _, m := range attrURL.FindAllStringSubmatch(page, -1) {
		u := m[1]
		if !strings.HasPrefix(u, "/") || strings.HasPrefix(u, "//") {
			t.Errorf("the page loads %q: not a path on this server", u)
		}
		if strings.HasPrefix(u, "/docs/assets/") {
			script = u
		}
	}
	if !strings.Contains(page, `spec-url="/openapi.json"`) {
		t.Error("the page does not render /openapi.json")
	}
	if script == "" {
		t.Fatalf("the page loads no script from /docs/assets/:\n%s", page)
	}

	// The policy allows this server and nothing else, whether the answer
	// is computed or comes from the response cache.
	for i := range 2 {
		csp := e.do(t, "GET", "/docs", nil).Header().Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("request %d: Content-Security-Policy %q lacks %q", i, csp, want)
			}
		}
		if strings.Contains(csp, "http") || strings.Contains(csp, "*") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("request %d: Content-Security-Policy %q allows another origin or eval", i, csp)
		}
	}

	rec = e.do(t, "GET", script, http.Header{"Accept-Encoding": {"gzip"}})
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d\n%.300s", script, rec.Code, rec.Body)
	}
	h := rec.Header()
	if ct := h.Get("Content-Type"); !strings.HasPrefix(ct, "text/javascript") {
		t.Errorf("GET %s: Content-Type %q, want text/javascript", script, ct)
	}
	if h.Get("Content-Encoding") != "gzip" {
		t.Errorf("GET %s: not gzipped for a client that takes gzip", script)
	}
	if plain := e.do(t, "GET", script, nil).Body.String(); strings.Contains(plain, "https://cdn.redoc.ly/") {
		t.Errorf("GET %s: the script loads an image from Redocly's CDN, which the policy blocks", script)
	}
	if n, _ := strconv.Atoi(h.Get("Content-Length")); n < 100_000 || n > 1_000_000 {
		t.Errorf("GET %s: %d bytes gzipped; is it Redoc's bundle?", script, n)
	}
	for name, want := range map[string]string{
		"Cache-Control":           "public, max-age=31536000, immutable",
		"Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
		"X-Content-Type-Options":  "nosniff",
	} {
		if got := h.Get(name); got != want {
			t.Errorf("GET %s: %s %q, want %q", script, name, got, want)
		}
	}
	etag := h.Get("ETag")
	if etag == "" {
		t.Fatalf("GET %s: no ETag", script)
	}
	rec = e.do(t, "GET", script, http.Header{"Accept-Encoding": {"gzip"}, "If-None-Match": {etag}})
	if rec.Code != http.StatusNotModified || rec.Header().Get("Cache-Control") != "public, max-age=31536000, immutable" {
		t.Errorf("GET %s with its ETag: %d, Cache-Control %q; want 304 and the same caching", script, rec.Code, rec.Header().Get("Cache-Control"))
	}
	rec = httptest.NewRecorder() // not e.do: the spec lists GET, which HEAD answers as
	e.h.ServeHTTP(rec, httptest.NewRequest("HEAD", script, nil))
	if rec.Code != http.StatusOK || rec.Body.Len() != 0 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/javascript") {
		t.Errorf("HEAD %s: %d, %d bytes, Content-Type %q", script, rec.Code, rec.Body.Len(), rec.Header().Get("Content-Type"))
	}

	for _, target := range []string{"/docs/assets/redoc.standalone.000000000000.js", "/docs/assets/..%2Fdocs.go"} {
		rec = e.do(t, "GET", target, nil)
		if rec.Code != http.StatusNotFound && rec.Code != http.StatusBadRequest {
			t.Errorf("GET %s: %d, want 404 or 400", target, rec.Code)
		}
		if rec.Header().Get("Cache-Control") != "no-store" {
			t.Errorf("GET %s: Cache-Control %q, want no-store", target, rec.Header().Get("Cache-Control"))
		}
	}
}

// TestSpecDocumentsEveryOperation holds openapi.yaml to what the reference
// at /docs needs: every operation summarised and described, every
// parameter described, an example of each success answer, and every
// example valid against its schema.
func TestSpecDocumentsEveryOperation(t *testing.T) {
	spec, err := api.GetSpec()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := spec.Validate(ctx, openapi3.EnableExamplesValidation()); err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	examples := 0
	for _, path := range spec.Paths.InMatchingOrder() {
		for method, op := range spec.Paths.Value(path).Operations() {
			name := method + " " + path
			if strings.TrimSpace(op.Summary) == "" {
				t.Errorf("%s: no summary", name)
			}
			if strings.TrimSpace(op.Description) == "" {
				t.Errorf("%s: no description", name)
			}
			for _, p := range slices.Concat(spec.Paths.Value(path).Parameters, op.Parameters) {
				if strings.TrimSpace(p.Value.Description) == "" {
					t.Errorf("%s: parameter %s has no description", name, p.Value.Name)
				}
				examples += checkExamples(t, name+" parameter "+p.Value.Name, p.Value.Schema, p.Value.Example, p.Value.Examples, openapi3.VisitAsRequest())
			}
			if rb := op.RequestBody; rb != nil {
				for mt, c := range rb.Value.Content {
					examples += checkExamples(t, name+" request "+mt, c.Schema, c.Example, c.Examples, openapi3.VisitAsRequest())
				}
			}
			for code, resp := range op.Responses.Map() {
				n := 0
				for mt, c := range resp.Value.Content {
					n += checkExamples(t, name+" "+code+" "+mt, c.Schema, c.Example, c.Examples, openapi3.VisitAsResponse())
				}
				examples += n
				if (code == "200" || code == "201") && len(resp.Value.Content) > 0 && n == 0 {
					t.Errorf("%s: answer %s has no example", name, code)
				}
			}
		}
	}
	if examples == 0 {
		t.Error("openapi.yaml has no examples")
	}
}

// checkExamples validates a place's example or examples against its
// schema and returns how many it holds.
func checkExamples(t *testing.T, where string, schema *openapi3.SchemaRef, example any, examples openapi3.Examples, opts ...openapi3.SchemaValidationOption) int {
	t.Helper()
	all := map[string]any{}
	if example != nil {
		all["example"] = example
	}
	for name, ex := range examples {
		if ex.Value != nil && ex.Value.Value != nil {
			all["examples/"+name] = ex.Value.Value
		}
	}
	if schema == nil || schema.Value == nil {
		if len(all) > 0 {
			t.Errorf("%s: examples but no schema", where)
		}
		return len(all)
	}
	for name, v := range all {
		if err := schema.Value.VisitJSON(v, append(opts, openapi3.MultiErrors())...); err != nil {
			t.Errorf("%s: %s does not match its schema: %v", where, name, err)
		}
	}
	return len(all)
}
