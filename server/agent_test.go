package server_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/matrixd/matrixd/predict"
	"github.com/matrixd/matrixd/server"
	"github.com/matrixd/matrixd/store/storetest"
)

// agentTools are the tools an agent is offered: the API's read operations.
var agentTools = []string{"compareRuns", "estimateCapacity", "estimateDecode", "getLeaderboard", "getRun", "listHardware", "listModels", "listRuns", "planCapacity"}

// mcpOverHTTP connects the SDK's client to POST /mcp of a real HTTP
// server over e's handler; every answer is checked against openapi.yaml.
func mcpOverHTTP(t *testing.T, e *env) *mcp.ClientSession {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, r)
		if err := e.checkResponse(r, rec); err != nil {
			t.Error(err)
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	}))
	t.Cleanup(srv.Close)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// checkResponse is validate for a handler that may not stop the test.
func (e *env) checkResponse(req *http.Request, rec *httptest.ResponseRecorder) error {
	body := rec.Body.Bytes()
	if rec.Header().Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return err
		}
		if body, err = io.ReadAll(zr); err != nil {
			return err
		}
	}
	route, params, err := e.router.FindRoute(req)
	if err != nil {
		return err
	}
	err = openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 rec.Code,
		Header:                 rec.Header(),
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	})
	if err != nil {
		return &responseError{req.Method + " " + req.URL.String() + ": " + err.Error() + "\nbody: " + string(body)}
	}
	return nil
}

type responseError struct{ msg string }

func (r *responseError) Error() string { return r.msg }

// callTool calls a tool and returns its result and its JSON answer.
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (*mcp.CallToolResult, map[string]any) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(res.Content) != 2 {
		t.Fatalf("%s: %d content blocks, want a summary and the JSON", name, len(res.Content))
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(res.Content[1].(*mcp.TextContent).Text), &body); err != nil {
		t.Fatalf("%s: the second block is not JSON: %v", name, err)
	}
	if !reflect.DeepEqual(res.StructuredContent, body) {
		t.Errorf("%s: structured content differs from the JSON block", name)
	}
	return res, body
}

// restJSON is the API's answer to a GET, as JSON.
func restJSON(t *testing.T, e *env, target string, wantStatus int) map[string]any {
	t.Helper()
	rec := e.do(t, http.MethodGet, target, nil)
	if rec.Code != wantStatus {
		t.Fatalf("GET %s: %d, want %d: %s", target, rec.Code, wantStatus, rec.Body)
	}
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	return body
}

// at reads a value from decoded JSON by a path of keys and indexes.
func at(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("%v: not an object at %q", path, k)
			}
			v = m[k]
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				t.Fatalf("%v: no item %d", path, k)
			}
			v = a[k]
		}
	}
	return v
}

// TestAgentAnswersAsTheAPI asks the same questions through the SDK's
// client at POST /mcp and through the REST API: each tool's answer is the
// API's, number for number.
func TestAgentAnswersAsTheAPI(t *testing.T) {
	e := newEnv(t, 0)
	cs := mcpOverHTTP(t, e)
	run := e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090").ID

	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
			t.Errorf("%s: not marked read-only", tool.Name)
		}
		if tool.Name == "getLeaderboard" {
			schema, _ := json.Marshal(tool.InputSchema)
			for _, want := range []string{`"required":["context_tokens","concurrency"]`, "Concurrent requests of the cell.", `"maximum":65536`, `"additionalProperties":false`} {
				if !strings.Contains(string(schema), want) {
					t.Errorf("getLeaderboard input schema lacks %s: %s", want, schema)
				}
			}
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, agentTools) {
		t.Fatalf("tools %v, want %v", names, agentTools)
	}

	cases := []struct {
		tool   string
		args   map[string]any
		target string
		number []any // where the number compared is, in both answers
	}{
		{"getLeaderboard", map[string]any{"context_tokens": 16384, "concurrency": 8},
			"/v1/leaderboard?context_tokens=16384&concurrency=8", []any{"items", 0, "cell", "total_tok_s"}},
		{"getLeaderboard", map[string]any{"context_tokens": 12000, "concurrency": 6, "predicted": true},
			"/v1/leaderboard?context_tokens=12000&concurrency=6&predicted=true", []any{"items", 0, "prediction", "total_tok_s", "value"}},
		{"estimateDecode", map[string]any{"run_id": run, "context_tokens": 12000, "concurrency": 6},
			"/v1/calculator/decode?run_id=" + run + "&context_tokens=12000&concurrency=6", []any{"total_tok_s", "value"}},
		{"estimateCapacity", map[string]any{"run_id": run, "context_tokens": 32768},
			"/v1/calculator/capacity?run_id=" + run + "&context_tokens=32768", []any{"max_concurrency"}},
		{"planCapacity", map[string]any{"context_tokens": 8192, "min_per_request_tok_s": 20, "users": 200},
			"/v1/planner?context_tokens=8192&min_per_request_tok_s=20&users=200", []any{"options", 0, "instances"}},
		{"listRuns", map[string]any{"gpu": "RTX 3090"}, "/v1/runs?gpu=RTX%203090", []any{"items", 0, "peak", "total_tok_s"}},
		{"getRun", map[string]any{"run_id": run}, "/v1/runs/" + run, []any{"decode", 0, "total_tok_s"}},
		{"compareRuns", map[string]any{"run_ids": []string{run, e.seed(t, "fara1.5-4b-autoround-rtx3060").ID}},
			"/v1/compare?run_ids=" + run + "," + e.seed(t, "fara1.5-4b-autoround-rtx3060").ID, []any{"cells", 0, "runs", 1, "total_tok_s_ratio"}},
	}
	for _, c := range cases {
		t.Run(c.tool, func(t *testing.T) {
			res, got := callTool(t, cs, c.tool, c.args)
			if res.IsError {
				t.Fatalf("tool error: %s", res.Content[0].(*mcp.TextContent).Text)
			}
			want := restJSON(t, e, c.target, http.StatusOK)
			g, w := at(t, got, c.number...), at(t, want, c.number...)
			if g == nil || !reflect.DeepEqual(g, w) {
				t.Errorf("%v: tool says %v, API says %v", c.number, g, w)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("the tool's answer is not the API's:\ntool %v\napi  %v", got, want)
			}
			if summary := res.Content[0].(*mcp.TextContent).Text; summary == "" || strings.HasPrefix(summary, "{") {
				t.Errorf("summary %q, want a line of text", summary)
			}
		})
	}
}

// TestAgentErrorsAreTheAPIProblems: an argument the API refuses is a tool
// error carrying the API's problem, detail and all; one outside the
// parameter's schema, or not a parameter at all, is refused as well.
func TestAgentErrorsAreTheAPIProblems(t *testing.T) {
	e := newEnv(t, 0)
	cs := mcpOverHTTP(t, e)

	problems := []struct {
		tool   string
		args   map[string]any
		target string
		status int
	}{
		{"getRun", map[string]any{"run_id": "nosuchrun0000000"}, "/v1/runs/nosuchrun0000000", http.StatusNotFound},
		{"estimateDecode", map[string]any{"model": "no-such-model", "gpu": "RTX 3090", "context_tokens": 0, "concurrency": 1},
			"/v1/calculator/decode?model=no-such-model&gpu=RTX%203090&context_tokens=0&concurrency=1", 0},
		{"planCapacity", map[string]any{"context_tokens": 1024, "min_per_request_tok_s": 10, "include_scaled_model": true},
			"/v1/planner?context_tokens=1024&min_per_request_tok_s=10&include_scaled_model=true", http.StatusBadRequest},
	}
	for _, p := range problems {
		t.Run(p.tool, func(t *testing.T) {
			rec := e.do(t, http.MethodGet, p.target, nil)
			if rec.Code < 400 || (p.status != 0 && rec.Code != p.status) {
				t.Fatalf("GET %s: %d, want a problem", p.target, rec.Code)
			}
			var want map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &want); err != nil {
				t.Fatal(err)
			}
			detail, _ := want["detail"].(string)
			if detail == "" {
				t.Fatalf("the API's problem has no detail: %s", rec.Body)
			}
			res, got := callTool(t, cs, p.tool, p.args)
			if !res.IsError {
				t.Fatalf("not a tool error: %v", got)
			}
			if line := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(line, detail) {
				t.Errorf("tool error %q does not carry the problem's detail %q", line, detail)
			}
			delete(want, "instance") // the API's names its path
			delete(got, "instance")
			if !reflect.DeepEqual(got, want) {
				t.Errorf("tool's problem %v, want the API's %v", got, want)
			}
		})
	}

	for name, args := range map[string]map[string]any{
		"below the minimum": {"context_tokens": 0, "concurrency": 0},
		"not a parameter":   {"context_tokens": 0, "concurrency": 1, "gpus": "RTX 3090"},
		"missing":           {"concurrency": 1},
	} {
		t.Run(name, func(t *testing.T) {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "getLeaderboard", Arguments: args})
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError {
				t.Fatalf("%v: not a tool error", args)
			}
		})
	}
}

// TestAgentInProcess serves the tools as `matrixd mcp` does (NewAgent, no
// HTTP), over the SDK's in-memory transport.
func TestAgentInProcess(t *testing.T) {
	e := newEnv(t, 0)
	srv, err := server.NewAgent(e.st, server.Config{Calc: predict.New(e.st, predict.DefaultCacheBytes, nil)})
	if err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != len(agentTools) {
		t.Errorf("%d tools, want %d", len(tools.Tools), len(agentTools))
	}
	run := e.seed(t, "fara1.5-4b-autoround-rtx3060").ID
	_, got := callTool(t, cs, "estimateDecode", map[string]any{"run_id": run, "context_tokens": 20000, "concurrency": 3})
	want := restJSON(t, e, "/v1/calculator/decode?run_id="+run+"&context_tokens=20000&concurrency=3", http.StatusOK)
	if g, w := at(t, got, "total_tok_s", "value"), at(t, want, "total_tok_s", "value"); !reflect.DeepEqual(g, w) {
		t.Errorf("total_tok_s: tool %v, API %v", g, w)
	}
}

// TestMCPEndpointOverHTTP: POST /mcp passes the API's middleware (the
// request limit, the validator's media types) and every refusal is a
// problem; GET /mcp is 405, as the transport allows.
func TestMCPEndpointOverHTTP(t *testing.T) {
	e := newEnvWith(t, 0, server.Config{RateLimit: server.RateLimit{ReadsPerSecond: 1}})
	list := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	mcpHeader := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}

	rec := e.send(t, http.MethodPost, "/mcp", mcpHeader, list)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"getLeaderboard"`) {
		t.Fatalf("tools/list: %d %s", rec.Code, rec.Body)
	}
	if rec.Header().Get("ETag") != "" {
		t.Error("an MCP answer has an ETag: it went through the cache")
	}
	rec = e.send(t, http.MethodPost, "/mcp", http.Header{"Content-Type": {"application/json"}}, list)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "Accept must contain") {
		t.Errorf("without Accept: %d %s, want a 400 problem naming Accept", rec.Code, rec.Body)
	}
	// The limit allows bursts of two requests a second: the third is refused.
	rec = e.send(t, http.MethodPost, "/mcp", mcpHeader, list)
	if rec.Code != http.StatusTooManyRequests {
		t.Errorf("third request in a burst of two: %d, want 429", rec.Code)
	}

	e = newEnv(t, 0)
	rec = e.send(t, http.MethodPost, "/mcp", http.Header{"Content-Type": {"text/plain"}, "Accept": {"application/json, text/event-stream"}}, list)
	if rec.Code != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain body: %d, want 415", rec.Code)
	}
	rec = e.do(t, http.MethodGet, "/mcp", nil)
	if rec.Code != http.StatusMethodNotAllowed || !strings.Contains(rec.Header().Get("Allow"), "POST") {
		t.Errorf("GET /mcp: %d Allow %q, want 405 naming POST", rec.Code, rec.Header().Get("Allow"))
	}
}

// TestMCPCostLimit: tool calls are charged the server time they take, as
// the API's requests are: a client whose calls take more than its share
// gets 429 problems, while another client's calls are answered.
func TestMCPCostLimit(t *testing.T) {
	e := newEnvWith(t, 40, server.Config{RateLimit: server.RateLimit{CostPerSecond: 0.001, CostBurst: 50 * time.Millisecond}})
	call := func(addr string, i int) *httptest.ResponseRecorder {
		t.Helper()
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"planCapacity","arguments":{"context_tokens":%d,"min_per_request_tok_s":%d,"users":%d}}}`,
			i, 1000+i*37, 5+i%20, 1+i%7)
		req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.RemoteAddr = addr + ":40000"
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		e.validate(t, req, rec)
		return rec
	}
	var refused *httptest.ResponseRecorder
	for i := range 200 {
		rec := call("192.0.2.10", i)
		if rec.Code == http.StatusTooManyRequests {
			refused = rec
			break
		}
		if rec.Code != http.StatusOK {
			t.Fatalf("call %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	if refused == nil {
		t.Fatal("200 distinct plans from one address were all answered; want 429 once its server time is spent")
	}
	if ra := refused.Header().Get("Retry-After"); ra == "" || !strings.Contains(refused.Body.String(), "server time") {
		t.Errorf("the 429: Retry-After %q, body %s; want a wait and a reason", ra, refused.Body)
	}
	if rec := call("192.0.2.11", 500); rec.Code != http.StatusOK {
		t.Errorf("another client's call: %d %s; want it answered", rec.Code, rec.Body)
	}
}

// TestMCPToolCostsItsRequest: a tool call is charged what the API request
// it makes is charged, so a plan or a predicted ranking asked through
// POST /mcp runs out of a client's server time after as many answers as
// through the API, not ten times as many.
func TestMCPToolCostsItsRequest(t *testing.T) {
	e := newEnvWith(t, 0, server.Config{RateLimit: server.RateLimit{CostPerSecond: 0.001, CostBurst: 2 * time.Second}})
	answered := func(addr string, req func(i int) *http.Request) int {
		t.Helper()
		for i := range 100 {
			r := req(i)
			r.RemoteAddr = addr + ":40000"
			rec := httptest.NewRecorder()
			e.h.ServeHTTP(rec, r)
			e.validate(t, r, rec)
			if rec.Code == http.StatusTooManyRequests {
				return i
			}
			if rec.Code != http.StatusOK {
				t.Fatalf("%s %s, request %d: %d %.300s", r.Method, r.URL, i, rec.Code, rec.Body)
			}
		}
		return 100
	}
	tool := func(name, args string) func(i int) *http.Request {
		return func(i int) *http.Request {
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{%s}}}`, i, name, fmt.Sprintf(args, 1000+i*37))
			r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Accept", "application/json, text/event-stream")
			return r
		}
	}
	get := func(format string) func(i int) *http.Request {
		return func(i int) *http.Request {
			return httptest.NewRequest(http.MethodGet, fmt.Sprintf(format, 1000+i*37), nil)
		}
	}
	for _, c := range []struct {
		name     string
		api, mcp func(i int) *http.Request
	}{
		{"a plan", get("/v1/planner?context_tokens=%d&min_per_request_tok_s=30&users=200"),
			tool("planCapacity", `"context_tokens":%d,"min_per_request_tok_s":30,"users":200`)},
		{"a predicted ranking", get("/v1/leaderboard?context_tokens=%d&concurrency=6&predicted=true"),
			tool("getLeaderboard", `"context_tokens":%d,"concurrency":6,"predicted":true`)},
	} {
		api := answered("192.0.2.20", c.api)
		mcp := answered("192.0.2.21", c.mcp)
		if api == 0 || mcp != api {
			t.Errorf("%s: %d answered through the API before a 429, %d through POST /mcp; want as many", c.name, api, mcp)
		}
		e = newEnvWith(t, 0, server.Config{RateLimit: server.RateLimit{CostPerSecond: 0.001, CostBurst: 2 * time.Second}})
	}

	// A batch of calls in one POST is charged each of them: ten plans
	// spend more than the burst, so the client's next plan waits.
	var batch []string
	for i := range 10 {
		batch = append(batch, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"planCapacity","arguments":{"context_tokens":%d,"min_per_request_tok_s":30}}}`, i, 3000+i))
	}
	req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader("["+strings.Join(batch, ",")+"]"))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.RemoteAddr = "192.0.2.22:40000"
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("a batch of ten plans: %d %.300s", rec.Code, rec.Body)
	}
	if next := answered("192.0.2.22", get("/v1/planner?context_tokens=%d&min_per_request_tok_s=30")); next != 0 {
		t.Errorf("after a batch of ten plans through POST /mcp, %d more plans answered; want a 429 at once", next)
	}
}

// TestMCPArgumentsAreTextAsQueries: a tool call's text arguments are held
// to the rule of the API's query text: a NUL byte is a 400 tool error
// naming the argument before any store reads it (PostgreSQL refuses it:
// a 500 there), and a decomposed accent finds the composed name.
func TestMCPArgumentsAreTextAsQueries(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "alice")
	r := storetest.Runs(64, 1)[0]
	r.Model.Name = "Caf\u00e9-7B"
	if rec := e.send(t, http.MethodPost, "/v1/runs", k["alice"], runJSON(t, r)); rec.Code != http.StatusCreated {
		t.Fatalf("the run: %d %.300s", rec.Code, rec.Body)
	}
	call := func(name, args string) (bool, string) {
		t.Helper()
		rec := e.send(t, http.MethodPost, "/mcp", http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}},
			[]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+name+`","arguments":`+args+`}}`))
		if rec.Code != http.StatusOK {
			t.Fatalf("%s %s: %d %s", name, args, rec.Code, rec.Body)
		}
		var msg struct {
			Result struct {
				IsError bool `json:"isError"`
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"result"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &msg); err != nil || len(msg.Result.Content) == 0 {
			t.Fatalf("%s %s: %v %s", name, args, err, rec.Body)
		}
		return msg.Result.IsError, msg.Result.Content[len(msg.Result.Content)-1].Text
	}
	for _, c := range []struct{ tool, args, field string }{
		{"listRuns", `{"model":"a\u0000b"}`, "model"},
		{"listRuns", `{"submitter":"\u0000"}`, "submitter"},
		{"planCapacity", `{"context_tokens":16384,"min_per_request_tok_s":30,"model":"x\u0000"}`, "model"},
		{"getLeaderboard", `{"context_tokens":16384,"concurrency":8,"gpu":"RTX\u0000"}`, "gpu"},
	} {
		isError, text := call(c.tool, c.args)
		if !isError || !strings.Contains(text, `"status":400`) || !strings.Contains(text, `"field":"`+c.field+`"`) || !strings.Contains(text, "NUL byte") {
			t.Errorf("%s %s: %v %.400s; want a 400 tool error naming %s", c.tool, c.args, isError, text, c.field)
		}
	}
	if isError, text := call("listRuns", `{"model":"Cafe\u0301"}`); isError || !strings.Contains(text, "Caf\u00e9-7B") {
		t.Errorf("listRuns with a decomposed accent: %v %.300s; want the run of Caf\u00e9-7B", isError, text)
	}
}

// TestMCPFailureQuotesTheRequest: a tool whose operation fails inside the
// server is a tool error that says nothing internal and quotes the POST's
// request id, as the API's 500 does.
func TestMCPFailureQuotesTheRequest(t *testing.T) {
	e := newEnv(t, 0)
	e.st.Close()
	rec := e.send(t, http.MethodPost, "/mcp", http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}},
		[]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"listRuns","arguments":{}}}`))
	if rec.Code != http.StatusOK {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	var msg struct {
		Result struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &msg); err != nil {
		t.Fatal(err)
	}
	id := rec.Header().Get("X-Request-ID")
	if !msg.Result.IsError || len(msg.Result.Content) == 0 || id == "" {
		t.Fatalf("not a tool error with a request id: %s (X-Request-ID %q)", rec.Body, id)
	}
	text := msg.Result.Content[0].Text
	if !strings.HasPrefix(text, "500 Internal Server Error") || !strings.Contains(text, "quote request id "+id) || strings.Contains(text, "closed") {
		t.Errorf("tool error %q; want a 500 quoting request id %s and nothing internal", text, id)
	}
}
