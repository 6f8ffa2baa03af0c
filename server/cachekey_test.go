package server_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestPagesCachedPerLanguage: a page asked in Thai and then in English is
// answered in each, whoever came first, and says that it varies with
// Accept-Language.
func TestPagesCachedPerLanguage(t *testing.T) {
	e := newEnv(t, 0)
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	for _, target := range []string{
		"/planner", "/calculator", "/models", "/models/" + fara.Model.Name, "/hardware", "/hardware/3090",
		"/submitters/Sandberg", "/getting-started", "/", "/leaderboard", "/runs/" + fara.ID,
	} {
		for _, lang := range []string{"th", "en", "th"} {
			rec := e.get(t, target, "Accept-Language", lang)
			if rec.Code != 200 {
				t.Fatalf("%s in %s: %d", target, lang, rec.Code)
			}
			if want := `<html lang="` + lang + `"`; !strings.Contains(rec.Body.String(), want) {
				t.Errorf("%s with Accept-Language %s: no %s", target, lang, want)
			}
			if !strings.Contains(strings.Join(rec.Header().Values("Vary"), ","), "Accept-Language") {
				t.Errorf("%s: Vary %q, want Accept-Language", target, rec.Header().Values("Vary"))
			}
		}
	}
}

// TestCacheKeysReadNumbersByValue: four spellings of one number, the
// parameters in another order, a default given or not and two Accept
// headers that negotiate JSON are one answer, computed once.
func TestCacheKeysReadNumbersByValue(t *testing.T) {
	e := newEnv(t, 0)
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060").ID
	misses := func() float64 {
		body := e.do(t, "GET", "/metrics", nil).Body.String()
		if !strings.Contains(body, `result="miss"`) {
			return 0
		}
		return metricValue(t, body, `matrixd_response_cache_requests_total{result="miss"}`)
	}
	for _, tc := range []struct {
		name    string
		targets []string
		accept  []string
	}{
		{"calculator", []string{
			"/v1/calculator/decode?run_id=" + fara + "&context_tokens=4096&concurrency=7",
			"/v1/calculator/decode?run_id=" + fara + "&context_tokens=4096&concurrency=7.0",
			"/v1/calculator/decode?concurrency=07&run_id=" + fara + "&context_tokens=4096",
			"/v1/calculator/decode?run_id=" + fara + "&context_tokens=4.096e3&concurrency=7e0",
		}, nil},
		{"leaderboard", []string{
			"/v1/leaderboard?context_tokens=0&concurrency=1",
			"/v1/leaderboard?concurrency=1.0&context_tokens=0",
			"/v1/leaderboard?context_tokens=00&concurrency=01",
			"/v1/leaderboard?context_tokens=0e0&concurrency=1e0",
		}, nil},
		{"cells", []string{"/v1/runs/" + fara + "/decode", "/v1/runs/" + fara + "/decode?format=json"},
			[]string{"application/json", "*/*", "application/json, text/plain;q=0.5", ""}},
		{"planner page", []string{
			"/planner?context_tokens=4096&min_per_request_tok_s=20&users=7", "/planner?users=7.0&min_per_request_tok_s=20.0&context_tokens=4096",
			"/planner?context_tokens=4096&min_per_request_tok_s=020&users=07", "/planner?context_tokens=4096&min_per_request_tok_s=2e1&users=7e0",
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := misses()
			etag := ""
			accepts := tc.accept
			if accepts == nil {
				accepts = []string{""}
			}
			for _, target := range tc.targets {
				for _, a := range accepts {
					h := http.Header{}
					if a != "" {
						h.Set("Accept", a)
					}
					var rec *httptest.ResponseRecorder
					if strings.HasPrefix(target, "/v1/") {
						rec = e.do(t, "GET", target, h)
					} else {
						rec = e.get(t, target)
					}
					if rec.Code != 200 {
						t.Fatalf("%s: %d %s", target, rec.Code, rec.Body)
					}
					if etag == "" {
						etag = rec.Header().Get("ETag")
					} else if got := rec.Header().Get("ETag"); got != etag {
						t.Errorf("%s (Accept %q): ETag %s, want %s as the first spelling's", target, a, got, etag)
					}
				}
			}
			if n := misses() - before; n != 1 {
				t.Errorf("%d computations for one answer spelt %d ways, want 1", int(n), len(tc.targets)*len(accepts))
			}
		})
	}
	if rec := e.do(t, "GET", "/v1/leaderboard?context_tokens=0&concurrency=1.5", nil); rec.Code != 400 {
		t.Errorf("concurrency=1.5: %d, want 400 (not an integer)", rec.Code)
	}
	csv := e.do(t, "GET", "/v1/runs/"+fara+"/decode", http.Header{"Accept": {"text/csv"}})
	if !strings.HasPrefix(csv.Header().Get("Content-Type"), "text/csv") {
		t.Errorf("Accept text/csv after JSON was cached: Content-Type %q", csv.Header().Get("Content-Type"))
	}
}
