package site_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/assess"
	"github.com/matrixd/matrixd/ingest"
	"github.com/matrixd/matrixd/predict"
	"github.com/matrixd/matrixd/server"
	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

func TestMain(m *testing.M) {
	// The response validator decodes bodies by media type; teach it ours.
	openapi3filter.RegisterBodyDecoder("application/problem+json", openapi3filter.JSONBodyDecoder)
	openapi3filter.RegisterBodyDecoder("text/csv", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("application/yaml", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("application/x-ndjson", openapi3filter.PlainBodyDecoder)
	os.Exit(m.Run())
}

// env is a real server over a real SQLite file holding the two published
// seed runs and some generated ones.
type env struct {
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
	return buildEnv(t, true, generated, cfg)
}

// newEmptyEnv is a real server over an empty database: no run stored yet.
func newEmptyEnv(t testing.TB) *env {
	t.Helper()
	return buildEnv(t, false, 0, server.Config{})
}

func buildEnv(t testing.TB, seeded bool, generated int, cfg server.Config) *env {
	t.Helper()
	ctx := context.Background()
	// MATRIXD_TEST_API_STORE=postgres runs the API tests on PostgreSQL
	// (the server MATRIXD_TEST_POSTGRES names), each in a schema of its own.
	path := filepath.Join(t.TempDir(), "matrixd.db")
	if os.Getenv("MATRIXD_TEST_API_STORE") == "postgres" {
		path = storetest.PostgresSchema(t, os.Getenv("MATRIXD_TEST_POSTGRES"))
	}
	st, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := &env{path: path, st: st, seeds: map[string]store.Run{}}
	seedRuns, err := ingest.SeedRuns()
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range ingest.Seeds() {
		if !seeded {
			break
		}
		stored, _, err := st.CreateRun(ctx, seedRuns[i])
		if err != nil {
			t.Fatal(err)
		}
		e.seeds[strings.TrimSuffix(s.Name, ".txt")] = stored
	}
	if generated > 0 {
		if _, _, err := st.CreateRuns(ctx, storetest.Runs(5, generated)); err != nil {
			t.Fatal(err)
		}
	}
	if cfg.Calc == nil {
		// Answers wait for their fits however long they take, so that what a
		// test reads does not hang on how fast the machine fits; the tests
		// of answers given before their fits are made set their own Calc.
		cfg.Calc = predict.New(st, predict.DefaultCacheBytes, nil)
		cfg.Calc.SetFitWait(-1)
		cfg.Calc.SetPlanFitBudget(-1)
	}
	// The runs stored past the checks are checked, as matrixd does at
	// start-up.
	runs, err := assess.New(st)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runs.Recheck(ctx); err != nil {
		t.Fatal(err)
	}
	if e.h, err = server.New(st, cfg); err != nil {
		t.Fatal(err)
	}
	if e.spec, err = api.GetSpec(); err != nil {
		t.Fatal(err)
	}
	e.spec.Servers = nil
	if e.router, err = gorillamux.NewRouter(e.spec); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) seed(t testing.TB, name string) store.Run {
	t.Helper()
	r, ok := e.seeds[name]
	if !ok {
		t.Fatalf("no seed %s", name)
	}
	return r
}

// do sends a request through the real handler and validates the response
// against openapi.yaml.
func (e *env) do(t testing.TB, method, target string, header http.Header) *httptest.ResponseRecorder {
	t.Helper()
	return e.send(t, method, target, header, nil)
}

// send is do with a request body.
func (e *env) send(t testing.TB, method, target string, header http.Header, body []byte) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, bytes.NewReader(body))
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	e.validate(t, req, rec)
	return rec
}

func (e *env) validate(t testing.TB, req *http.Request, rec *httptest.ResponseRecorder) {
	t.Helper()
	route, params, err := e.router.FindRoute(req)
	if err != nil {
		// Unrouted (404, 405): the body must still be a Problem, or for a
		// browser the site's error page.
		if strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") && strings.Contains(req.Header.Get("Accept"), "text/html") {
			if !strings.Contains(rec.Body.String(), `<a class="brand" href="/">matrixd</a>`) {
				t.Fatalf("%s %s: an HTML error without the site's layout", req.Method, req.URL)
			}
			return
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
			t.Fatalf("%s %s: Content-Type %q, want application/problem+json", req.Method, req.URL, ct)
		}
		var body any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("%s %s: problem body is not JSON: %v", req.Method, req.URL, err)
		}
		if err := e.spec.Components.Schemas["Problem"].Value.VisitJSON(body); err != nil {
			t.Fatalf("%s %s: body is not a Problem: %v", req.Method, req.URL, err)
		}
		return
	}
	err = openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 rec.Code,
		Header:                 rec.Header(),
		Body:                   io.NopCloser(bytes.NewReader(rec.Body.Bytes())),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	})
	if err != nil {
		t.Fatalf("%s %s: response %d does not match openapi.yaml: %v\nbody: %.500s", req.Method, req.URL, rec.Code, err, rec.Body.String())
	}
}
