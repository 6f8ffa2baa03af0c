package server_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestPagesKeepTheirPolicyWhenCached: a page answered from the response
// cache carries the page's own Content-Security-Policy, as the first
// answer did; with the API's policy instead, its stylesheet is blocked and
// the widget cannot be framed.
func TestPagesKeepTheirPolicyWhenCached(t *testing.T) {
	e := newEnv(t, 0)
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	for _, c := range []struct{ path, want string }{
		{"/", "style-src 'self'"},
		{"/runs/" + fara.ID, "style-src 'self'"},
		{"/leaderboard?context_tokens=16384&concurrency=8", "style-src 'self'"},
		{"/widget/calculator?run=" + fara.ID, "frame-ancestors *"},
	} {
		for i := range 3 {
			rec := httptest.NewRecorder()
			e.h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, c.path, nil))
			if rec.Code != http.StatusOK {
				t.Fatalf("%s: %d", c.path, rec.Code)
			}
			if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, c.want) {
				t.Errorf("%s, answer %d: Content-Security-Policy %q lacks %q", c.path, i+1, csp, c.want)
			}
		}
	}
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/runs", nil))
	if csp := rec.Header().Get("Content-Security-Policy"); csp != "default-src 'none'; frame-ancestors 'none'" {
		t.Errorf("the API's policy is %q", csp)
	}
}
