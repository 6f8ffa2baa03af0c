package site_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/server"
	"github.com/matrixd/matrixd/server/servertest"
	"github.com/matrixd/matrixd/store"
)

func TestMain(m *testing.M) {
	// The response validator decodes bodies by media type; teach it ours.
	servertest.RegisterDecoders()
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
