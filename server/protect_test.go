package server_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/server"
)

func TestCORS(t *testing.T) {
	e := newEnvWith(t, 0, server.Config{WriteOrigins: []string{"https://bench.example"}})
	k := e.keys(t, "alice")
	origin := func(o string, kv ...string) http.Header {
		h := http.Header{"Origin": {o}}
		for i := 0; i+1 < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	tests := []struct {
		name, method, target string
		header               http.Header
		wantStatus           int
		want                 map[string]string // header → value; "" means absent
	}{
		{"read from any origin", "GET", "/v1/runs", origin("https://elsewhere.example"), 200,
			map[string]string{"Access-Control-Allow-Origin": "*", "Access-Control-Expose-Headers": "ETag"}},
		{"read without an origin is the same", "GET", "/v1/gpus", nil, 200, map[string]string{"Access-Control-Allow-Origin": "*"}},
		{"preflight of a read", "OPTIONS", "/v1/runs", origin("https://elsewhere.example", "Access-Control-Request-Method", "GET", "Access-Control-Request-Headers", "if-none-match"), 204,
			map[string]string{"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Methods": "GET, HEAD", "Access-Control-Allow-Headers": "If-None-Match", "Access-Control-Max-Age": "600"}},
		{"preflight of a write from an unlisted origin", "OPTIONS", "/v1/runs", origin("https://elsewhere.example", "Access-Control-Request-Method", "POST"), 204,
			map[string]string{"Access-Control-Allow-Origin": "", "Access-Control-Allow-Methods": ""}},
		{"preflight of a write from a listed origin", "OPTIONS", "/v1/runs", origin("https://bench.example", "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization,content-type"), 204,
			map[string]string{"Access-Control-Allow-Origin": "https://bench.example", "Access-Control-Allow-Methods": "POST", "Access-Control-Allow-Headers": "Authorization", "Vary": "Origin"}},
		{"write from an unlisted origin gets no grant", "DELETE", "/v1/runs/rnothere", with(k["alice"], "Origin", "https://elsewhere.example"), 404,
			map[string]string{"Access-Control-Allow-Origin": ""}},
		{"write from a listed origin", "DELETE", "/v1/runs/rnothere", with(k["alice"], "Origin", "https://bench.example"), 404,
			map[string]string{"Access-Control-Allow-Origin": "https://bench.example"}},
		// A refusal of a request without credentials is public like a read:
		// a widget elsewhere can read why.
		{"405 of a read path", "POST", "/v1/calculator/decode", origin("https://elsewhere.example"), 405,
			map[string]string{"Access-Control-Allow-Origin": "*", "Access-Control-Expose-Headers": "ETag", "Allow": "GET"}},
		{"404 of an unknown path, by POST", "POST", "/v1/nope", origin("https://elsewhere.example"), 404,
			map[string]string{"Access-Control-Allow-Origin": "*"}},
		{"404 of an unknown path", "GET", "/v1/nope", origin("https://elsewhere.example"), 404,
			map[string]string{"Access-Control-Allow-Origin": "*"}},
		{"401 of a write without a key", "POST", "/v1/runs", origin("https://elsewhere.example"), 401,
			map[string]string{"Access-Control-Allow-Origin": "*"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.target, nil)
			for k, v := range tt.header {
				req.Header[k] = v
			}
			rec := httptest.NewRecorder()
			e.h.ServeHTTP(rec, req)
			if tt.method != "OPTIONS" {
				e.validate(t, req, rec)
			}
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.wantStatus, rec.Body)
			}
			for h, want := range tt.want {
				got := strings.Join(rec.Header().Values(h), ", ")
				if want == "" && got != "" || !strings.Contains(got, want) {
					t.Errorf("%s = %q, want %q", h, got, want)
				}
			}
		})
	}
}

func TestRateLimits(t *testing.T) {
	_, proxy, _ := net.ParseCIDR("10.0.0.0/8")
	e := newEnvWith(t, 0, server.Config{RateLimit: server.RateLimit{ReadsPerSecond: 2, WritesPerSecond: 1}, TrustedProxies: []*net.IPNet{proxy}})
	k := e.keys(t, "alice", "bob")
	get := func(remote, xff string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", "/v1/gpus", nil)
		req.RemoteAddr = remote + ":5000"
		if xff != "" {
			req.Header.Set("X-Forwarded-For", xff)
		}
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		e.validate(t, req, rec)
		return rec
	}
	// Reads: a burst of 4 (twice the rate), then 429 for that address only.
	for i := range 4 {
		if rec := get("192.0.2.1", ""); rec.Code != 200 || rec.Header().Get("RateLimit-Limit") != "4" || rec.Header().Get("RateLimit-Remaining") != strconv.Itoa(3-i) {
			t.Fatalf("read %d: %d, RateLimit-Limit %q Remaining %q", i+1, rec.Code, rec.Header().Get("RateLimit-Limit"), rec.Header().Get("RateLimit-Remaining"))
		}
	}
	rec := get("192.0.2.1", "")
	if rec.Code != 429 || rec.Header().Get("Retry-After") == "" || rec.Header().Get("Cache-Control") != "no-store" || !strings.Contains(rec.Body.String(), "too many requests from this address") {
		t.Fatalf("5th read: %d Retry-After %q %s; want 429", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	if rec := get("192.0.2.2", ""); rec.Code != 200 {
		t.Errorf("another address: %d, want 200", rec.Code)
	}
	// X-Forwarded-For counts only from a trusted proxy.
	if rec := get("192.0.2.1", "198.51.100.7"); rec.Code != 429 {
		t.Errorf("an untrusted peer's X-Forwarded-For was believed: %d", rec.Code)
	}
	for range 4 {
		get("10.1.2.3", "198.51.100.8")
	}
	if rec := get("10.1.2.3", "198.51.100.8"); rec.Code != 429 {
		t.Errorf("the 5th read for one forwarded client: %d, want 429", rec.Code)
	}
	if rec := get("10.1.2.3", "198.51.100.9"); rec.Code != 200 {
		t.Errorf("another client behind the same proxy: %d, want 200", rec.Code)
	}
	// Writes: per key, a burst of 2.
	del := func(key string, n int) *httptest.ResponseRecorder {
		req := httptest.NewRequest("DELETE", "/v1/runs/rnothere", nil)
		req.RemoteAddr = "203.0.113." + strconv.Itoa(n) + ":5000" // a fresh address each time: only the key's limit applies
		req.Header = k[key].Clone()
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		e.validate(t, req, rec)
		return rec
	}
	for i := range 2 {
		if rec := del("alice", i); rec.Code != 404 {
			t.Fatalf("write %d: %d", i+1, rec.Code)
		}
	}
	if rec := del("alice", 3); rec.Code != 429 || !strings.Contains(rec.Body.String(), "writes with this API key") {
		t.Errorf("3rd write: %d %s; want 429", rec.Code, rec.Body)
	}
	if rec := del("bob", 4); rec.Code != 404 {
		t.Errorf("another key: %d, want 404", rec.Code)
	}
}

func TestRequestIDAndSecurityHeaders(t *testing.T) {
	e := newEnv(t, 0)
	for _, c := range []struct {
		sent string
		keep bool
	}{
		{"abc-123.def", true},
		{strings.Repeat("a", 65), false},
		{"has space", false},
		{"bad\u202eid", false},
	} {
		rec := e.do(t, "GET", "/v1/gpus", http.Header{"X-Request-Id": {c.sent}})
		got := rec.Header().Get("X-Request-Id")
		if (got == c.sent) != c.keep || got == "" {
			t.Errorf("X-Request-ID %q answered as %q; keep %v", c.sent, got, c.keep)
		}
	}
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060").ID
	rec := e.do(t, "GET", "/v1/runs/"+fara+"/decode?format=csv", nil)
	for h, want := range map[string]string{
		"Content-Type":            "text/csv; charset=utf-8",
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "no-referrer",
		"Content-Security-Policy": "default-src 'none'",
	} {
		if got := rec.Header().Get(h); !strings.Contains(got, want) {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
}

// TestCORSOnRefusals: a body too large and a rate limit, refused before
// any handler, carry the read grant like every other answer of a request
// without credentials, read or not.
func TestCORSOnRefusals(t *testing.T) {
	e := newEnvWith(t, 0, server.Config{WriteOrigins: []string{"https://bench.example"}, MaxBodyBytes: 64,
		RateLimit: server.RateLimit{ReadsPerSecond: 0.01}})
	send := func(method, target, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, target, strings.NewReader(body))
		req.Header.Set("Origin", "https://elsewhere.example")
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		e.validate(t, req, rec)
		return rec
	}
	granted := func(what string, rec *httptest.ResponseRecorder, status int) {
		t.Helper()
		if rec.Code != status {
			t.Fatalf("%s: status %d, want %d: %s", what, rec.Code, status, rec.Body)
		}
		if got := rec.Header().Get("Access-Control-Allow-Origin"); got != "*" || !strings.Contains(rec.Header().Get("Access-Control-Expose-Headers"), "Retry-After") {
			t.Errorf("%s: Access-Control-Allow-Origin %q, Expose-Headers %q; want the read grant", what, got, rec.Header().Get("Access-Control-Expose-Headers"))
		}
	}
	granted("413", send("POST", "/v1/runs", `{"title":"`+strings.Repeat("x", 200)+`"}`), http.StatusRequestEntityTooLarge)
	for _, method := range []string{"GET", "POST"} {
		var rec *httptest.ResponseRecorder
		for range 20 {
			if rec = send(method, "/v1/calculator/decode?run_id=rnone&context_tokens=0&concurrency=1", ""); rec.Code == http.StatusTooManyRequests {
				break
			}
		}
		granted("429 of a "+method, rec, http.StatusTooManyRequests)
	}
}
