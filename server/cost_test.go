package server_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/matrixd/matrixd/server"
	"github.com/matrixd/matrixd/store/storetest"
)

// TestCostLimitSlowsTheClientThatTakesTheServer: a client whose uncached
// questions take more server time than its share gets 429 problems with
// Retry-After, while another client is answered, the first client's
// cached answers are still served, and health is never refused.
func TestCostLimitSlowsTheClientThatTakesTheServer(t *testing.T) {
	e := newEnvWith(t, 40, server.Config{RateLimit: server.RateLimit{CostPerSecond: 0.001, CostBurst: 50 * time.Millisecond}})
	from := func(addr, target string) *httptest.ResponseRecorder {
		t.Helper()
		req := httptest.NewRequest("GET", target, nil)
		req.RemoteAddr = addr + ":40000"
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		e.validate(t, req, rec)
		return rec
	}
	plan := func(i int) string {
		return fmt.Sprintf("/v1/planner?context_tokens=%d&min_per_request_tok_s=%d&users=%d&include_scaled=true", 1000+i*37, 5+i%20, 1+i%7)
	}
	first := plan(0)
	// A plan is cached only when whole: until every run is fitted (fits
	// run in the background, slower under the race detector), the first
	// question is asked from other addresses, which pay for it.
	asks := 0
	storetest.WaitFor(t, "the first plan whole", func() bool {
		asks++
		rec := from(fmt.Sprintf("203.0.113.%d", asks%250+1), first)
		return rec.Code == 200 && !strings.Contains(rec.Body.String(), "partial answer")
	})
	if rec := from("192.0.2.10", first); rec.Code != 200 {
		t.Fatalf("first question: %d %s", rec.Code, rec.Body)
	}
	var refused *httptest.ResponseRecorder
	answered := 1
	for i := 1; i < 200 && refused == nil; i++ {
		rec := from("192.0.2.10", plan(i))
		switch rec.Code {
		case 200, 503:
			answered++
		case 429:
			refused = rec
		default:
			t.Fatalf("question %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	if refused == nil {
		t.Fatalf("200 distinct uncached plans from one address were all answered; want 429 once its server time is spent")
	}
	if ra := refused.Header().Get("Retry-After"); ra == "" || ra == "0" || !strings.Contains(refused.Body.String(), "server time") {
		t.Errorf("the 429: Retry-After %q, body %s; want a wait and a reason", ra, refused.Body)
	}
	t.Logf("refused after %d answered questions: %s", answered, refused.Body)
	if rec := from("192.0.2.10", first); rec.Code != 200 {
		t.Errorf("a cached answer for the client in debt: %d; want 200 (the cache costs nothing)", rec.Code)
	}
	if rec := from("192.0.2.10", "/healthz"); rec.Code != 200 {
		t.Errorf("/healthz for the client in debt: %d; want 200", rec.Code)
	}
	if rec := from("192.0.2.11", plan(500)); rec.Code != 200 && rec.Code != 503 {
		t.Errorf("another client's uncached question: %d %s; want it answered", rec.Code, rec.Body)
	}

	// An API key is charged wherever it comes from.
	k := e.keys(t, "heavy")
	var keyRefused bool
	bad := storetest.Runs(63, 1)[0]
	bad.Title = "" // invalid: costs a parse and validation, stores nothing
	body := runJSON(t, bad)
	for i := range 200 {
		req := httptest.NewRequest("POST", "/v1/runs", bytes.NewReader(body))
		req.Header = k["heavy"].Clone()
		req.RemoteAddr = fmt.Sprintf("198.51.100.%d:4000", i%250+1)
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		e.validate(t, req, rec)
		if rec.Code == http.StatusTooManyRequests {
			keyRefused = true
			t.Logf("the key was refused at its submission %d", i+1)
			break
		}
		if rec.Code != http.StatusUnprocessableEntity {
			t.Fatalf("invalid submission %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	if !keyRefused {
		t.Errorf("one API key from 200 addresses was never refused; want its server time charged to the key")
	}
}

// TestCostLimitCountsAnIPv6NetworkAsOneClient: addresses of one /64 share
// a bill, as one machine may use any of them.
func TestCostLimitCountsAnIPv6NetworkAsOneClient(t *testing.T) {
	e := newEnvWith(t, 40, server.Config{RateLimit: server.RateLimit{CostPerSecond: 0.001, CostBurst: 50 * time.Millisecond}})
	var codes []int
	for i := range 40 {
		req := httptest.NewRequest("GET", fmt.Sprintf("/v1/planner?context_tokens=%d&min_per_request_tok_s=10&include_scaled=true", 2000+i), nil)
		req.RemoteAddr = fmt.Sprintf("[2001:db8:1:2::%x]:4000", i+1)
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		e.validate(t, req, rec)
		codes = append(codes, rec.Code)
		if rec.Code == 429 {
			break
		}
	}
	if codes[len(codes)-1] != 429 {
		t.Errorf("40 addresses of one /64 were answered %v; want 429 once the network's share is spent", codes)
	}
	req := httptest.NewRequest("GET", "/v1/planner?context_tokens=2500&min_per_request_tok_s=10", nil)
	req.RemoteAddr = "[2001:db8:1:3::1]:4000"
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	if rec.Code == 429 {
		t.Errorf("another /64 was refused: %s", rec.Body)
	}
}
