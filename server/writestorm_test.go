package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matrixd/matrixd/server"
	"github.com/matrixd/matrixd/store/storetest"
)

// clock is a test's hand-moved clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// misses counts the answers the response cache has computed.
func (e *env) misses(t *testing.T) int {
	t.Helper()
	body := e.do(t, "GET", "/metrics", nil).Body.String()
	if !strings.Contains(body, `result="miss"`) {
		return 0
	}
	return int(metricValue(t, body, `matrixd_response_cache_requests_total{result="miss"}`))
}

// from sends a request from a client address, validated against openapi.yaml.
func (e *env) from(t *testing.T, addr, method, target string, header http.Header, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	req.RemoteAddr = addr + ":40000"
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	e.validate(t, req, rec)
	return rec
}

// TestTitleEditsDoNotRecomputeExpensiveAnswers: a key editing its run's
// title over and over makes the plan, the predicted leaderboard and the
// regressions feed computed again at most once per staleness window, in
// the background while the previous answer is served, while the run
// itself shows each edit at once; hiding a run recomputes them at once.
func TestTitleEditsDoNotRecomputeExpensiveAnswers(t *testing.T) {
	clk := newClock()
	refreshed := make(chan struct{}, 16)
	e := newEnvWith(t, 0, server.Config{Now: clk.Now, AfterRefresh: func() { refreshed <- struct{}{} }})
	k := e.keys(t, "alice", "admin-ops")
	created := e.send(t, "POST", "/v1/runs", k["alice"], runJSON(t, storetest.Runs(70, 1)[0]))
	if created.Code != 201 {
		t.Fatalf("create: %d %s", created.Code, created.Body)
	}
	var run struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(created.Body.Bytes(), &run); err != nil {
		t.Fatal(err)
	}
	expensive := []string{
		"/v1/planner?context_tokens=4096&min_per_request_tok_s=5&users=1",
		"/v1/leaderboard?predicted=true&context_tokens=4096&concurrency=1",
		"/feeds/regressions.atom",
	}
	read := func(what string) {
		t.Helper()
		for _, target := range expensive {
			if rec := e.do(t, "GET", target, nil); rec.Code != 200 {
				t.Fatalf("%s %s: %d %s", what, target, rec.Code, rec.Body)
			}
		}
	}
	read("cold")
	read("warm")
	patch := with(k["alice"], "Content-Type", "application/merge-patch+json")
	before := e.misses(t)
	for i := range 5 {
		title := fmt.Sprintf("edit %d", i)
		if rec := e.send(t, "PATCH", "/v1/runs/"+run.ID, patch, []byte(`{"title":"`+title+`"}`)); rec.Code != 200 {
			t.Fatalf("patch %d: %d %s", i, rec.Code, rec.Body)
		}
		if got := e.do(t, "GET", "/v1/runs/"+run.ID, nil); !strings.Contains(got.Body.String(), `"title":"`+title+`"`) {
			t.Fatalf("GET /v1/runs/%s right after the edit to %q: %.300s", run.ID, title, got.Body)
		}
		read("after an edit")
		clk.advance(time.Second)
	}
	// Each edit recomputed the run (read-your-writes), none the others.
	if n := e.misses(t) - before; n != 5 {
		t.Errorf("%d answers computed over 5 title edits and their reads; want 5 (the run after each edit)", n)
	}

	// Past the window, each expensive answer is served as it was while it
	// is computed again in the background, once.
	before = e.misses(t)
	for _, target := range expensive {
		stale := e.do(t, "GET", target, nil)
		if stale.Code != 200 || strings.Contains(stale.Body.String(), "edit 4") {
			t.Errorf("%s past the window: %d, and it shows the last edit; want the previous answer", target, stale.Code)
		}
		<-refreshed
	}
	read("refreshed")
	if n := e.misses(t) - before; n != len(expensive) {
		t.Errorf("%d answers computed past the window; want %d, one each", n, len(expensive))
	}
	if feed := e.do(t, "GET", expensive[2], nil).Body.String(); strings.Contains(feed, "edit 0") {
		t.Errorf("the refreshed feed still shows an old title")
	}

	// A hide moves measurements: every answer is computed at once.
	lb := e.do(t, "GET", expensive[1], nil).Body.String()
	if !strings.Contains(lb, run.ID) {
		t.Fatalf("the run is not ranked before the hide: %.300s", lb)
	}
	if rec := e.send(t, "PUT", "/v1/runs/"+run.ID+"/hidden", k["admin-ops"], []byte(`{"reason":"a test"}`)); rec.Code != 200 {
		t.Fatalf("hide: %d %s", rec.Code, rec.Body)
	}
	before = e.misses(t)
	if lb := e.do(t, "GET", expensive[1], nil).Body.String(); strings.Contains(lb, run.ID) {
		t.Errorf("the hidden run is still ranked right after the hide")
	}
	read("after the hide")
	if n := e.misses(t) - before; n != len(expensive) {
		t.Errorf("%d answers computed after a hide; want %d, one each", n, len(expensive))
	}
}

// TestRebuildsAreChargedToTheWriter: an answer a write made stale is
// computed again at the cost of the key that wrote, not of the client that
// asked next; the client's own new questions are charged to it.
func TestRebuildsAreChargedToTheWriter(t *testing.T) {
	clk := newClock()
	e := newEnvWith(t, 0, server.Config{Now: clk.Now, RateLimit: server.RateLimit{CostPerSecond: 0.0001, CostBurst: 800 * time.Millisecond}})
	k := e.keys(t, "alice")
	const writer, reader = "192.0.2.20", "192.0.2.10"
	created := e.from(t, writer, "POST", "/v1/runs", k["alice"], string(runJSON(t, storetest.Runs(71, 1)[0])))
	if created.Code != 201 {
		t.Fatalf("create: %d %s", created.Code, created.Body)
	}
	var run struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(created.Body.Bytes(), &run); err != nil {
		t.Fatal(err)
	}
	plan := func(users int) string {
		return fmt.Sprintf("/v1/planner?context_tokens=4096&min_per_request_tok_s=5&users=%d", users)
	}
	// A plan costs 0.5 s: the reader may ask two of its own.
	if rec := e.from(t, reader, "GET", plan(1), nil, ""); rec.Code != 200 {
		t.Fatalf("first plan: %d %s", rec.Code, rec.Body)
	}
	patch := with(k["alice"], "Content-Type", "application/merge-patch+json")
	for i := range 2 {
		if rec := e.from(t, writer, "PATCH", "/v1/runs/"+run.ID, patch, fmt.Sprintf(`{"title":"edit %d"}`, i)); rec.Code != 200 {
			t.Fatalf("patch %d: %d %s", i, rec.Code, rec.Body)
		}
		clk.advance(20 * time.Second)
		// Too stale to serve now: computed again, at alice's cost.
		if rec := e.from(t, reader, "GET", plan(1), nil, ""); rec.Code != 200 {
			t.Fatalf("plan after edit %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	if rec := e.from(t, reader, "GET", plan(2), nil, ""); rec.Code != 200 {
		t.Errorf("the reader's second question of its own: %d %s; want it answered (the rebuilds were not its cost)", rec.Code, rec.Body)
	}
	if rec := e.from(t, reader, "GET", plan(3), nil, ""); rec.Code != http.StatusTooManyRequests {
		t.Errorf("the reader's third question of its own: %d; want 429 (two plans spend its burst)", rec.Code)
	}
	rec := e.from(t, "192.0.2.21", "PATCH", "/v1/runs/"+run.ID, patch, `{"title":"one more"}`)
	if rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), "server time") {
		t.Errorf("the writer after two rebuilds at its cost: %d %s; want 429", rec.Code, rec.Body)
	}
}
