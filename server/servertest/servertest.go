// Package servertest builds what the API and page tests stand on: a real
// server over a real database (a SQLite file, or a PostgreSQL schema of its
// own with MATRIXD_TEST_API_STORE=postgres), holding the two published
// seed runs and any number of generated ones, and a client that validates
// every response against openapi.yaml. It is imported by tests only.
package servertest

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

// RegisterDecoders teaches the response validator the media types the API
// and the site answer in; a test package's TestMain calls it once.
func RegisterDecoders() {
	openapi3filter.RegisterBodyDecoder("application/problem+json", openapi3filter.JSONBodyDecoder)
	for _, mt := range []string{"text/csv", "application/yaml", "application/x-ndjson", "application/atom+xml", "text/html", "text/javascript"} {
		openapi3filter.RegisterBodyDecoder(mt, openapi3filter.PlainBodyDecoder)
	}
}

// Env is a real server over a real database.
type Env struct {
	Path   string // the database file (or PostgreSQL DSN)
	H      http.Handler
	St     *store.Store
	Spec   *openapi3.T
	Router routers.Router
	Seeds  map[string]store.Run // by seed file name, without .txt
}

// Options are what a test may set of its Env.
type Options struct {
	Seeded    bool // store the two published seed runs
	Generated int  // and this many generated runs
	Server    server.Config
	Store     store.Options
}

// New opens the database, stores the runs, rechecks them as matrixd does
// at start-up and builds the server. Unless o.Server.Calc is set, answers
// wait for their fits however long they take, so that what a test reads
// does not hang on how fast the machine fits.
func New(t testing.TB, o Options) *Env {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "matrixd.db")
	if os.Getenv("MATRIXD_TEST_API_STORE") == "postgres" {
		path = storetest.PostgresSchema(t, os.Getenv("MATRIXD_TEST_POSTGRES"))
	}
	st, err := store.Open(ctx, path, o.Store)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := &Env{Path: path, St: st, Seeds: map[string]store.Run{}}
	if o.Seeded {
		seedRuns, err := ingest.SeedRuns()
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range ingest.Seeds() {
			stored, _, err := st.CreateRun(ctx, seedRuns[i])
			if err != nil {
				t.Fatal(err)
			}
			e.Seeds[strings.TrimSuffix(s.Name, ".txt")] = stored
		}
	}
	if o.Generated > 0 {
		if _, _, err := st.CreateRuns(ctx, storetest.Runs(5, o.Generated)); err != nil {
			t.Fatal(err)
		}
	}
	cfg := o.Server
	if cfg.Calc == nil {
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
	if e.H, err = server.New(st, cfg); err != nil {
		t.Fatal(err)
	}
	if e.Spec, e.Router, err = Spec(); err != nil {
		t.Fatal(err)
	}
	return e
}

// Spec is openapi.yaml without its servers (so that any host routes) and
// its router.
func Spec() (*openapi3.T, routers.Router, error) {
	spec, err := api.GetSpec()
	if err != nil {
		return nil, nil, err
	}
	spec.Servers = nil
	router, err := gorillamux.NewRouter(spec)
	return spec, router, err
}

// Seed is the stored seed run of that file name.
func (e *Env) Seed(t testing.TB, name string) store.Run {
	t.Helper()
	r, ok := e.Seeds[name]
	if !ok {
		t.Fatalf("no seed %s", name)
	}
	return r
}

// Send sends a request through the real handler and validates the
// response against openapi.yaml.
func (e *Env) Send(t testing.TB, method, target string, header http.Header, body []byte) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, bytes.NewReader(body))
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	e.H.ServeHTTP(rec, req)
	Validate(t, e.Spec, e.Router, req, rec)
	return rec
}

// Validate fails t when rec is not an answer openapi.yaml allows to req:
// an unrouted request (404, 405) must still answer a Problem, or for a
// browser the site's error page.
func Validate(t testing.TB, spec *openapi3.T, router routers.Router, req *http.Request, rec *httptest.ResponseRecorder) {
	t.Helper()
	route, params, err := router.FindRoute(req)
	if err != nil {
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
		if err := spec.Components.Schemas["Problem"].Value.VisitJSON(body); err != nil {
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
