package server_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/server"
	"github.com/matrixd/matrixd/server/servertest"
	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

func TestMain(m *testing.M) {
	// The response validator decodes bodies by media type; teach it ours.
	servertest.RegisterDecoders()
	// The site's answers, which some of these tests read too.
	openapi3filter.RegisterBodyDecoder("application/atom+xml", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("text/javascript", openapi3filter.PlainBodyDecoder)
	os.Exit(m.Run())
}

// env is a real server over a real database (servertest.Env), its parts
// under the short names the tests use.
type env struct {
	*servertest.Env
	path   string // the database file
	h      http.Handler
	st     *store.Store
	spec   *openapi3.T
	router routers.Router
	seeds  map[string]store.Run // by seed file name
}

func newEnv(t testing.TB, generated int) *env {
	t.Helper()
	return newEnvWith(t, generated, server.Config{})
}

// newEnvWith is newEnv with a server configuration.
func newEnvWith(t testing.TB, generated int, cfg server.Config) *env {
	t.Helper()
	return buildEnv(t, true, generated, cfg, store.Options{})
}

// newEnvOn is newEnv with the server's store opened with opts (a clock of
// the test's for its versions).
func newEnvOn(t testing.TB, opts store.Options) *env {
	t.Helper()
	return buildEnv(t, true, 0, server.Config{}, opts)
}

// newEmptyEnv is a real server over an empty database: no run stored yet.
func newEmptyEnv(t testing.TB) *env {
	t.Helper()
	return buildEnv(t, false, 0, server.Config{}, store.Options{})
}

func buildEnv(t testing.TB, seeded bool, generated int, cfg server.Config, opts store.Options) *env {
	t.Helper()
	x := servertest.New(t, servertest.Options{Seeded: seeded, Generated: generated, Server: cfg, Store: opts})
	return &env{Env: x, path: x.Path, h: x.H, st: x.St, spec: x.Spec, router: x.Router, seeds: x.Seeds}
}

// setHandler makes h the handler the test's requests go to.
func (e *env) setHandler(h http.Handler) { e.h, e.Env.H = h, h }

func (e *env) seed(t testing.TB, name string) store.Run { t.Helper(); return e.Seed(t, name) }

// do sends a request through the real handler and validates the response
// against openapi.yaml.
func (e *env) do(t testing.TB, method, target string, header http.Header) *httptest.ResponseRecorder {
	t.Helper()
	return e.Send(t, method, target, header, nil)
}

// send is do with a request body.
func (e *env) send(t testing.TB, method, target string, header http.Header, body []byte) *httptest.ResponseRecorder {
	t.Helper()
	return e.Send(t, method, target, header, body)
}

func (e *env) validate(t testing.TB, req *http.Request, rec *httptest.ResponseRecorder) {
	t.Helper()
	servertest.Validate(t, e.spec, e.router, req, rec)
}

func (e *env) keys(t testing.TB, names ...string) map[string]http.Header {
	t.Helper()
	return e.Keys(t, names...)
}

func (e *env) series(t *testing.T, base store.Run, versions []string, fs []func(l, b int) float64) []store.Run {
	t.Helper()
	return e.Series(t, base, versions, fs)
}

func (e *env) runSeries(t *testing.T, id string) api.RunSeries { t.Helper(); return e.RunSeries(t, id) }

func (e *env) get(t *testing.T, target string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	return e.Get(t, target, header...)
}

func (e *env) page(t *testing.T, target, apiTarget string) *httptest.ResponseRecorder {
	t.Helper()
	return e.Page(t, target, apiTarget)
}

func (e *env) feed(t *testing.T, target string) atomFeed { t.Helper(); return e.Feed(t, target) }

type (
	atomFeed = servertest.AtomFeed
	atomLink = servertest.AtomLink
)

func linkOf(links []atomLink, rel, typ string) string { return servertest.LinkOf(links, rel, typ) }

func postRun(t *testing.T, e *env, key http.Header, r store.Run, want int) api.Run {
	t.Helper()
	return servertest.PostRun(t, e.Env, key, r, want)
}

func runJSON(t testing.TB, r store.Run) []byte { t.Helper(); return servertest.RunJSON(t, r) }

func toolFixture(t testing.TB, name string) []byte {
	t.Helper()
	return servertest.ToolFixture(t, name)
}

func multipartBody(t testing.TB, meta []byte, files ...string) (contentType string, body []byte) {
	t.Helper()
	return servertest.MultipartBody(t, meta, files...)
}

func with(h http.Header, kv ...string) http.Header { return servertest.With(h, kv...) }

func TestAPI(t *testing.T) {
	e := newEnv(t, 30)
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060").ID
	nemo := e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090").ID
	csvAccept := http.Header{"Accept": {"text/csv"}}
	tests := []struct {
		name         string
		method       string
		target       string
		header       http.Header
		wantStatus   int
		wantContains []string
		wantHeader   map[string]string
	}{
		{"health", "GET", "/healthz", nil, 200, []string{`"status":"ok"`}, nil},
		{"ready", "GET", "/readyz", nil, 200, []string{`"status":"ok"`}, nil},
		{"openapi yaml", "GET", "/openapi.yaml", nil, 200, []string{"openapi: 3.0.3", "listRuns"}, map[string]string{"Content-Type": "application/yaml"}},
		{"openapi json", "GET", "/openapi.json", nil, 200, []string{`"openapi":"3.0.3"`, `"operationId":"getLeaderboard"`}, nil},

		{"list runs", "GET", "/v1/runs", nil, 200, []string{`"items":[`, `"next_cursor":null`, fara, nemo}, nil},
		{"list runs by gpu", "GET", "/v1/runs?gpu=rtx%203090&limit=200", nil, 200, []string{nemo, `"gpu":"RTX 3090"`}, nil},
		{"list runs by model substring", "GET", "/v1/runs?model=FARA1.5", nil, 200, []string{fara, `"peak":{"concurrency":64,"context_tokens":0,"total_tok_s":1273.2}`}, nil},
		{"list runs headline figures", "GET", "/v1/runs?model=nemotron-nano&submitter=sandberg", nil, 200,
			[]string{`"single_stream_tok_s":94.2`, `"single_stream_context_tokens":0`, `"max_context_tokens_with_output":122880`, `"submitter":"Sandberg"`}, nil},
		{"list runs limit too big", "GET", "/v1/runs?limit=500", nil, 400, []string{`"field":"limit"`, "at most 200"}, nil},
		{"bound written as in the spec", "GET", "/v1/planner?context_tokens=99999999&min_per_request_tok_s=2000000", nil, 400, []string{`"field":"context_tokens"`, "at most 16777216\"", "at most 1000000\""}, nil},
		{"list runs limit not a number", "GET", "/v1/runs?limit=ten", nil, 400, []string{`"field":"limit"`}, nil},
		{"list runs bad sort", "GET", "/v1/runs?sort=fastest", nil, 400, []string{`"field":"sort"`}, nil},
		{"list runs several bad params", "GET", "/v1/runs?limit=0&vram_gb_min=-1", nil, 400, []string{`"field":"limit"`, `"field":"vram_gb_min"`}, nil},
		{"list runs vram range inverted", "GET", "/v1/runs?vram_gb_min=30&vram_gb_max=10", nil, 400, []string{`"field":"vram_gb_min"`}, nil},
		{"list runs misspelt filter", "GET", "/v1/runs?gpus=RTX%203090", nil, 400, []string{`"field":"gpus"`, "not a parameter of this endpoint", "it takes cursor, engine"}, nil},
		{"decode misspelt format", "GET", "/v1/runs/" + fara + "/decode?formt=csv", nil, 400, []string{`"field":"formt"`}, nil},
		{"health takes no parameters", "GET", "/healthz?verbose=1", nil, 400, []string{"it takes none"}, nil},
		{"query value not encoded", "GET", "/v1/runs?gpu=%zz", nil, 400, []string{`"field":"gpu"`, "not URL-encoded correctly"}, nil},
		{"query semicolon", "GET", "/v1/runs?limit=1;2", nil, 400, []string{`"field":"limit"`, "';'"}, nil},
		{"query repeated", "GET", "/v1/runs?limit=1&gpu=a&limit=2", nil, 400, []string{`"field":"limit"`, "given 2 times"}, nil},
		{"query name not encoded", "GET", "/v1/runs?%zz=1", nil, 400, []string{"parameter name is not URL-encoded"}, nil},
		{"list runs forged cursor", "GET", "/v1/runs?cursor=abc", nil, 400, []string{`"field":"cursor"`, "not one this API issued"}, nil},

		{"get run", "GET", "/v1/runs/" + fara, nil, 200, []string{`"name":"LeaderboardModel1/Fara1.5-4B-AutoRound-W4A16-RTN"`, `"max_model_len":262144`, `"kv_cache_dtype":"int4_per_token_head"`, `"submitter":null`}, nil},
		{"get run unknown", "GET", "/v1/runs/rdoesnotexist", nil, 404, []string{"rdoesnotexist does not exist", `"status":404`}, nil},
		{"get run bad id", "GET", "/v1/runs/bad%20id!", nil, 400, []string{`"field":"run_id"`}, nil},

		{"decode filtered", "GET", "/v1/runs/" + nemo + "/decode?context_tokens=0&concurrency=128", nil, 200, []string{`"status":"requests_queued"`, `"avg_active_requests":67`, `"output_tokens":36381`}, nil},
		{"decode by status", "GET", "/v1/runs/" + fara + "/decode?status=requests_queued", nil, 200, []string{`"context_tokens":131072`, `"total_tok_s":30.7`}, nil},
		{"decode csv by format", "GET", "/v1/runs/" + fara + "/decode?format=csv&context_tokens=131072&concurrency=1", nil, 200,
			[]string{"context_tokens,concurrency,status,total_tok_s", "131072,1,requests_queued,30.7,34,3439,29.4,0.9,0,921,30\n"}, map[string]string{"Content-Type": "text/csv"}},
		{"decode csv by accept", "GET", "/v1/runs/" + fara + "/decode?context_tokens=253952&concurrency=4", csvAccept, 200,
			[]string{"253952,4,over_capacity,,,,,,,,\n"}, map[string]string{"Content-Type": "text/csv"}},
		{"decode accept by q-value", "GET", "/v1/runs/" + fara + "/decode?context_tokens=0&concurrency=1", http.Header{"Accept": {"text/csv;q=0.9, application/json;q=0.1"}}, 200,
			[]string{"0,1,valid,83.1"}, map[string]string{"Content-Type": "text/csv", "Vary": "Accept"}},
		{"decode csv refused by q=0.0", "GET", "/v1/runs/" + fara + "/decode?context_tokens=0&concurrency=1", http.Header{"Accept": {"text/csv;q=0.0, application/json"}}, 200,
			[]string{`"total_tok_s":83.1`}, map[string]string{"Content-Type": "application/json", "Vary": "Accept"}},
		{"decode format wins over accept", "GET", "/v1/runs/" + fara + "/decode?format=json&concurrency=1&context_tokens=0", csvAccept, 200, []string{`"total_tok_s":83.1`}, nil},
		{"decode bad status", "GET", "/v1/runs/" + fara + "/decode?status=fine", nil, 400, []string{`"field":"status"`}, nil},
		{"decode unknown run", "GET", "/v1/runs/rnope/decode", nil, 404, []string{"rnope does not exist"}, nil},
		{"prefill", "GET", "/v1/runs/" + nemo + "/prefill?context_tokens=122880", nil, 200, []string{`"prompt_tok_s":1228`, `"ttft_ms":100611`}, nil},
		{"prefill csv", "GET", "/v1/runs/" + fara + "/prefill", csvAccept, 200, []string{"context_tokens,status,prompt_tok_s,ttft_ms\n8192,valid,2347,3472\n"}, nil},
		{"prefill unknown run", "GET", "/v1/runs/rnope/prefill", nil, 404, []string{"does not exist"}, nil},

		{"matrix", "GET", "/v1/runs/" + fara + "/matrix", nil, 200, []string{`"contexts":[0,16384,32768,65536,131072,253952]`, `"concurrencies":[1,2,4,8,16,32,64,128]`}, nil},
		{"matrix unknown run", "GET", "/v1/runs/rnope/matrix", nil, 404, nil, nil},

		{"gpus", "GET", "/v1/gpus", nil, 200, []string{`"gpu":"RTX 3060"`, `"vram_gb":[12]`}, nil},
		{"models", "GET", "/v1/models", nil, 200, []string{`{"model":"LeaderboardModel1/Fara1.5-4B-AutoRound-W4A16-RTN","quantizations":["AutoRound W4A16"],"run_count":1}`, `"model":"cyankiwi/NVIDIA-Nemotron-Nano-12B-v2-AWQ-4bit"`}, nil},
		{"engines", "GET", "/v1/engines", nil, 200, []string{`"engine":"vllm"`, `"version":"0.32.0"`}, nil},

		{"leaderboard", "GET", "/v1/leaderboard?context_tokens=0&concurrency=1&model=nano", nil, 200, []string{`"rank":1`, `"value":94.2`, nemo}, nil},
		{"leaderboard needs cell", "GET", "/v1/leaderboard?context_tokens=0", nil, 400, []string{`"field":"concurrency"`}, nil},
		{"leaderboard bad metric", "GET", "/v1/leaderboard?context_tokens=0&concurrency=1&metric=speed", nil, 400, []string{`"field":"metric"`}, nil},
		{"leaderboard bad method class names the classes", "GET", "/v1/leaderboard?context_tokens=0&concurrency=1&method_class=foo", nil, 400, []string{`"field":"method_class"`, "value is not one of the allowed values", "sustained_decode", "batched_burst"}, nil},
		{"leaderboard skips queued cells", "GET", "/v1/leaderboard?context_tokens=131072&concurrency=1&gpu=RTX%203060&model=fara", nil, 200, []string{`"items":[]`}, nil},

		{"compare", "GET", "/v1/compare?run_ids=" + fara + "," + nemo, nil, 200, []string{`"run_ids":["` + fara + `","` + nemo + `"]`, `"status":"not_measured"`}, nil},
		{"compare narrowed", "GET", "/v1/compare?run_ids=" + fara + "," + nemo + "&contexts=0,16384&concurrencies=1,8", nil, 200,
			[]string{`"contexts":[0,16384]`, `"concurrencies":[1,8]`, `"per_request_tok_s":49.8`}, nil},
		{"compare narrowed to nothing", "GET", "/v1/compare?run_ids=" + fara + "," + nemo + "&contexts=5", nil, 200, []string{`"cells":[]`, `"contexts":[]`}, nil},
		{"compare bad contexts", "GET", "/v1/compare?run_ids=" + fara + "," + nemo + "&contexts=-1", nil, 400, []string{`"field":"contexts"`}, nil},
		{"compare needs two", "GET", "/v1/compare?run_ids=" + fara, nil, 400, []string{`"field":"run_ids"`}, nil},
		{"compare repeated", "GET", "/v1/compare?run_ids=" + fara + "," + fara, nil, 400, []string{"listed twice"}, nil},
		{"compare unknown", "GET", "/v1/compare?run_ids=" + fara + ",rnope", nil, 404, []string{"rnope does not exist"}, nil},

		{"unknown route", "GET", "/v2/nothing", nil, 404, []string{`"status":404`, "/v2/nothing"}, nil},
		{"wrong method", "PUT", "/v1/runs", nil, 405, []string{`"status":405`}, map[string]string{"Allow": "GET, HEAD, POST"}},
		{"wrong method on run", "POST", "/v1/runs/" + fara, nil, 405, nil, map[string]string{"Allow": "DELETE, GET, HEAD, PATCH"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := e.do(t, tt.method, tt.target, tt.header)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d; body %.400s", rec.Code, tt.wantStatus, rec.Body.String())
			}
			if tt.wantStatus >= 400 && rec.Header().Get("Content-Type") != "application/problem+json" {
				t.Errorf("error Content-Type %q, want application/problem+json", rec.Header().Get("Content-Type"))
			}
			for _, want := range tt.wantContains {
				if !strings.Contains(rec.Body.String(), want) {
					t.Errorf("body lacks %s\nbody: %.1500s", want, rec.Body.String())
				}
			}
			for k, v := range tt.wantHeader {
				if got := rec.Header().Get(k); !strings.Contains(got, v) {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

// TestSeedValuesReadBack compares every published number of both seed pages
// with what the API returns. The expected tables in testdata were cut from
// the pages independently of the ingest parser.
func TestSeedValuesReadBack(t *testing.T) {
	e := newEnv(t, 0)
	for name, run := range e.seeds {
		t.Run(name, func(t *testing.T) {
			rec := e.do(t, "GET", "/v1/runs/"+run.ID, nil)
			if rec.Code != 200 {
				t.Fatalf("status %d", rec.Code)
			}
			var got api.Run
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			wantDecode := readCSV(t, filepath.Join("testdata", name+".decode.csv"))
			if len(got.Decode) != len(wantDecode) {
				t.Fatalf("%d decode cells, want %d", len(got.Decode), len(wantDecode))
			}
			for i, w := range wantDecode {
				c := got.Decode[i]
				gotRow := []string{strconv.Itoa(c.ContextTokens), strconv.Itoa(c.Concurrency), string(c.Status),
					f(c.TotalTokS), f(c.PerRequestTokS), f(c.TTFTMs), f(c.TBTMs), f(c.AvgActiveRequests),
					n(c.CompletedRequests), n(c.OutputTokens), f(c.DurationS)}
				compareRow(t, "decode", w, gotRow)
			}
			wantPrefill := readCSV(t, filepath.Join("testdata", name+".prefill.csv"))
			if len(got.Prefill) != len(wantPrefill) {
				t.Fatalf("%d prefill cells, want %d", len(got.Prefill), len(wantPrefill))
			}
			for i, w := range wantPrefill {
				c := got.Prefill[i]
				compareRow(t, "prefill", w, []string{strconv.Itoa(c.ContextTokens), string(c.Status), f(c.PromptTokS), f(c.TTFTMs)})
			}
		})
	}
}

func f(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}

func n(v *int) string {
	if v == nil {
		return ""
	}
	return strconv.Itoa(*v)
}

func readCSV(t testing.TB, path string) [][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows[1:]
}

// compareRow compares as numbers where both sides are numbers ("30.0" is
// 30), as text otherwise; an empty field is null.
func compareRow(t *testing.T, what string, want, got []string) {
	t.Helper()
	for j := range want {
		wf, werr := strconv.ParseFloat(want[j], 64)
		gf, gerr := strconv.ParseFloat(got[j], 64)
		same := want[j] == got[j] || (werr == nil && gerr == nil && wf == gf)
		if !same {
			t.Errorf("%s cell %v: column %d = %q, published %q", what, want[:2], j, got[j], want[j])
		}
	}
}

func TestListRunsPaginationOverHTTP(t *testing.T) {
	e := newEnv(t, 25)
	seen := map[string]bool{}
	target := "/v1/runs?limit=4&sort=gpu"
	for pages := 0; ; pages++ {
		rec := e.do(t, "GET", target, nil)
		if rec.Code != 200 {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		var page api.RunList
		if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Items {
			if seen[r.ID] {
				t.Fatalf("run %s on two pages", r.ID)
			}
			seen[r.ID] = true
		}
		if page.NextCursor == nil {
			break
		}
		if pages > 10 {
			t.Fatal("pagination does not end")
		}
		target = "/v1/runs?limit=4&sort=gpu&cursor=" + url.QueryEscape(*page.NextCursor)
	}
	if len(seen) != 27 {
		t.Errorf("paged through %d runs, want 27", len(seen))
	}
}

// TestCursorsStayWithTheirQuery reuses a next_cursor with other parameters:
// the answer must be a 400 naming cursor, not a silently wrong page.
func TestCursorsStayWithTheirQuery(t *testing.T) {
	e := newEnv(t, 40)
	next := func(target string) string {
		t.Helper()
		rec := e.do(t, "GET", target, nil)
		var page struct {
			NextCursor *string `json:"next_cursor"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil || page.NextCursor == nil {
			t.Fatalf("%s: no next_cursor (%d %s)", target, rec.Code, rec.Body)
		}
		return url.QueryEscape(*page.NextCursor)
	}
	lb := next("/v1/leaderboard?context_tokens=16384&concurrency=8&limit=3")
	runs := next("/v1/runs?limit=3&sort=gpu")
	for _, target := range []string{
		"/v1/leaderboard?context_tokens=0&concurrency=1&limit=3&cursor=" + lb,                   // another cell
		"/v1/leaderboard?context_tokens=16384&concurrency=8&limit=3&gpu=H100&cursor=" + lb,      // another filter
		"/v1/leaderboard?context_tokens=16384&concurrency=8&metric=tbt_ms&limit=3&cursor=" + lb, // another metric
		"/v1/runs?limit=3&sort=model&cursor=" + runs,                                            // another sort
		"/v1/runs?limit=3&sort=gpu&engine=vllm&cursor=" + runs,                                  // another filter
	} {
		rec := e.do(t, "GET", target, nil)
		if rec.Code != 400 || !strings.Contains(rec.Body.String(), `"field":"cursor"`) {
			t.Errorf("%s: %d %s, want 400 naming cursor", target, rec.Code, rec.Body)
		}
	}
	// The same parameters page on: the leaderboard's second page ranks from 4.
	if rec := e.do(t, "GET", "/v1/leaderboard?context_tokens=16384&concurrency=8&limit=3&cursor="+lb, nil); rec.Code != 200 || !strings.Contains(rec.Body.String(), `"rank":4`) {
		t.Errorf("leaderboard page 2: %d %.300s, want ranks from 4", rec.Code, rec.Body)
	}
	if rec := e.do(t, "GET", "/v1/runs?limit=3&sort=gpu&cursor="+runs, nil); rec.Code != 200 {
		t.Errorf("runs page 2: %d %.300s", rec.Code, rec.Body)
	}
}

func TestCompareRatios(t *testing.T) {
	e := newEnv(t, 0)
	fara, nemo := e.seed(t, "fara1.5-4b-autoround-rtx3060"), e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090")
	rec := e.do(t, "GET", "/v1/compare?run_ids="+fara.ID+","+nemo.ID, nil)
	var cmp api.Comparison
	if err := json.Unmarshal(rec.Body.Bytes(), &cmp); err != nil {
		t.Fatal(err)
	}
	// Union: fara's contexts plus nemotron's 120K.
	if got := len(cmp.Contexts); got != 7 {
		t.Errorf("%d contexts in the union, want 7: %v", got, cmp.Contexts)
	}
	checked := 0
	for _, row := range cmp.Cells {
		if row.ContextTokens != 0 || row.Concurrency != 1 {
			continue
		}
		base, other := row.Runs[0], row.Runs[1]
		if *base.TotalTokSRatio != 1 {
			t.Errorf("baseline ratio %v, want 1", *base.TotalTokSRatio)
		}
		if want := 94.2 / 83.1; math.Abs(*other.TotalTokSRatio-want) > 1e-12 {
			t.Errorf("ratio %v, want %v", *other.TotalTokSRatio, want)
		}
		checked++
	}
	if checked != 1 {
		t.Fatalf("cell 0×1 found %d times", checked)
	}
}

// TestCompareIsBounded: ten runs of 64 × 64 cells compared in full would
// answer megabytes; they are refused, naming run_ids and how to narrow the
// comparison, while two of them in full, and all ten narrowed, answer.
func TestCompareIsBounded(t *testing.T) {
	e := newEnv(t, 0)
	stored, _, err := e.st.CreateRuns(context.Background(), storetest.Grids(21, 10, 64, 64))
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(stored))
	for i, r := range stored {
		ids[i] = r.ID
	}
	all := "/v1/compare?run_ids=" + strings.Join(ids, ",")
	rec := e.do(t, "GET", all, nil)
	if rec.Code != 400 {
		t.Fatalf("ten 64 × 64 runs compared: %d, %d bytes; want 400", rec.Code, rec.Body.Len())
	}
	for _, want := range []string{`"field":"run_ids"`, "10 runs over 4096 cells are 40960 compared cells, more than the 8192", "narrow it with contexts or concurrencies, or compare fewer runs"} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("refusal lacks %s: %s", want, rec.Body)
		}
	}
	for _, target := range []string{
		"/v1/compare?run_ids=" + ids[0] + "," + ids[1],
		all + "&contexts=0,1024,2048,4096,8192,16384,32768,64512",
		all + "&concurrencies=1,2,4,8,16,32,64",
	} {
		rec := e.do(t, "GET", target, nil)
		var cmp api.Comparison
		if err := json.Unmarshal(rec.Body.Bytes(), &cmp); rec.Code != 200 || err != nil {
			t.Fatalf("%s: %d %v: %.300s", target, rec.Code, err, rec.Body)
		}
		if n := len(cmp.Cells) * len(cmp.RunIDs); n > 8192 || n < 4096 {
			t.Errorf("%s: %d compared cells", target, n)
		}
		t.Logf("%d runs, %d contexts × %d concurrencies: %d bytes", len(cmp.RunIDs), len(cmp.Contexts), len(cmp.Concurrencies), rec.Body.Len())
	}
}

func TestReadyFailsWhenDatabaseIsClosed(t *testing.T) {
	e := newEnv(t, 0)
	e.st.Close()
	rec := e.do(t, "GET", "/readyz", nil)
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503", rec.Code)
	}
}

// TestErrorsDoNotEchoUnboundedInput: a huge bad value gives a small error.
func TestErrorsDoNotEchoUnboundedInput(t *testing.T) {
	e := newEnv(t, 0)
	huge := strings.Repeat("9", 60000)
	for _, target := range []string{
		"/v1/runs?limit=" + huge,
		"/" + strings.Repeat("a", 60000),
		"/v1/runs/" + strings.Repeat("r", 60000),
		"/v1/runs?" + huge + "=1",
		"/v1/runs?gpu=%zz" + huge,
		"/v1/runs?" + strings.Repeat("a=1&", 5000),
		"/v1/runs?" + func() string {
			var b strings.Builder
			for i := range 500 {
				fmt.Fprintf(&b, "p%d=1&", i)
			}
			return b.String()
		}(),
	} {
		rec := e.do(t, "GET", target, nil)
		if rec.Code/100 != 4 || rec.Body.Len() > 4096 {
			t.Errorf("%.40s…: %d with a %d-byte body; want a 4xx under 4 KiB", target, rec.Code, rec.Body.Len())
		}
	}
}

// problemKeys is the order of a problem body's members.
func problemKeys(t *testing.T, body []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", body)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// TestProblemMembersInOrder: problems are sent in the order RFC 9457,
// openapi.yaml and docs/api.md write them (type, title, status, detail,
// instance, then the extensions), from the error handler and from typed
// responses alike.
func TestProblemMembersInOrder(t *testing.T) {
	e := newEnv(t, 0)
	order := []string{"type", "title", "status", "detail", "instance", "code", "params", "errors", "supported", "supported_notice", "candidates"}
	check := func(target string, rec *httptest.ResponseRecorder) {
		t.Helper()
		keys := problemKeys(t, rec.Body.Bytes())
		if len(keys) < 4 {
			t.Fatalf("%s: members %v", target, keys)
		}
		last := -1
		for _, k := range keys {
			i := slices.Index(order, k)
			if i < last {
				t.Errorf("%s: members in the order %v, want %v", target, keys, order)
				return
			}
			last = i
		}
	}
	for _, target := range []string{"/v1/runs?limit=500", "/v1/runs/rnope", "/v2/nothing", "/v1/calculator/decode?model=fara&gpu=RTX%203060&context_tokens=99999999&concurrency=8"} {
		check(target, e.do(t, "GET", target, nil))
	}
	e.st.Close()
	check("/readyz", e.do(t, "GET", "/readyz", nil))
	// Each entry of errors as openapi.yaml lists its members.
	s, n := "x", 1
	b, err := json.Marshal(api.FieldError{Field: &s, Pointer: &s, File: &s, Line: &n, Message: s})
	if err != nil {
		t.Fatal(err)
	}
	if keys := problemKeys(t, b); !slices.Equal(keys, []string{"field", "pointer", "file", "line", "message"}) {
		t.Errorf("a field error's members in the order %v", keys)
	}
}
