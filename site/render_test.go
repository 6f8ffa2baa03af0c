package site

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/labstack/echo/v4"

	"github.com/matrixd/matrixd/api"
)

// The tests of rendering alone: the site over a stub of the API (no
// database, no server), for what a page does with an answer whatever its
// data: the reader's language, grouped numbers, escaped names. The tests
// of what the pages show of real data drive the real handler over a real
// store (env_test.go).

// stubAPI answers the operations a test gives it; any other call panics
// (the embedded interface is nil), so a page that asks for more than the
// test knows of fails loudly.
type stubAPI struct {
	api.StrictServerInterface
	submitters api.SubmitterCatalog
}

func (s stubAPI) ListSubmitters(context.Context, api.ListSubmittersRequestObject) (api.ListSubmittersResponseObject, error) {
	return api.ListSubmitters200JSONResponse(s.submitters), nil
}

// stubRequests reads queries plainly and checks nothing: rendering is
// what is tested here; the real checks are the API's own tests.
type stubRequests struct{}

func (stubRequests) ParseQuery(raw string) (url.Values, error) { return url.ParseQuery(raw) }
func (stubRequests) Check(*http.Request, *routers.Route, map[string]string) error {
	return nil
}
func (stubRequests) Problem(err error, _ echo.Context) api.Problem {
	detail := err.Error()
	return api.Problem{Status: http.StatusInternalServerError, Title: "Internal Server Error", Detail: &detail}
}
func (stubRequests) Invalid(...api.FieldError) error { return errors.New("invalid") }
func (stubRequests) Clip(s string) string            { return s }
func (stubRequests) DoNotStore(context.Context)      {}

// stubSite is the site over a, mounted on a bare echo.
func stubSite(t *testing.T, a api.StrictServerInterface) http.Handler {
	t.Helper()
	spec, err := api.GetSpec()
	if err != nil {
		t.Fatal(err)
	}
	spec.Servers = nil
	router, err := gorillamux.NewRouter(spec)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{API: a, Requests: stubRequests{}, Spec: spec, Router: router})
	if err != nil {
		t.Fatal(err)
	}
	e := echo.New()
	s.Register(e)
	return e
}

// TestOrganizationsRendering: the organizations page says each
// organization's counts grouped as the reader's language writes them,
// its chrome in that language, and a name as text, never as markup.
func TestOrganizationsRendering(t *testing.T) {
	at := time.Date(2026, 11, 30, 22, 52, 53, 0, time.UTC)
	h := stubSite(t, stubAPI{submitters: api.SubmitterCatalog{Items: []api.SubmitterCatalogItem{
		{Name: `Lab <script>alert(1)</script>`, RunCount: 12345, UnflaggedCount: 12000, CorroboratedCount: 2345, DisputedCount: 7, LatestRunAt: at},
	}}})
	for _, tt := range []struct {
		lang string
		want []string
	}{
		{"en", []string{"12,345", "12,000", "2,345", `lang="en"`}},
		{"th", []string{"12,345", "2,345", `lang="th"`, "องค์กร"}},
		{"zh-Hant", []string{"12,345", "2,345", `lang="zh-Hant"`, "組織"}},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/organizations?lang="+tt.lang, nil))
		body := rec.Body.String()
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %.300s", tt.lang, rec.Code, body)
		}
		for _, w := range tt.want {
			if !strings.Contains(body, w) {
				t.Errorf("%s: the page lacks %q", tt.lang, w)
			}
		}
		if strings.Contains(body, "<script>alert(1)</script>") || !strings.Contains(body, "Lab &lt;script&gt;") {
			t.Errorf("%s: the organization's name is not escaped", tt.lang)
		}
	}
}
