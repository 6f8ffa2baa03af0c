// Package site is what people and agents read: the HTML pages, the feeds,
// the calculator widget and the API reference page, in the site's
// languages. It is built on the API's strict handlers
// (api.StrictServerInterface) and, where the API has no endpoint, on the
// reads it declares in Reader; it never imports server, which mounts it.
package site

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"net/url"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
	"github.com/labstack/echo/v4"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/predict"
	"github.com/matrixd/matrixd/store"
)

// Reader is what the site reads beside the API: stored runs as the store
// keeps them, the axes of the cells, and series steps.
type Reader interface {
	Run(ctx context.Context, id string) (store.Run, error)
	CellAxes(ctx context.Context, near int) (contexts []int, nearest int, concurrencies []int, err error)
	Predecessor(ctx context.Context, id string) (predict.Into, bool, error)
	WithGPU(ctx context.Context, f store.RunFilter, gpu string) (store.RunFilter, error)
	LatestSteps(ctx context.Context, f store.RunFilter, examine int) ([]predict.Into, int, error)
}

// Requests is what the site shares with the API's HTTP layer, so that a
// page reads and refuses a query exactly as the API would, and every
// error becomes a problem in one place.
type Requests interface {
	// ParseQuery reads a query string as strictly as the API does.
	ParseQuery(raw string) (url.Values, error)
	// Check holds r to its operation in openapi.yaml, filling in defaults.
	Check(r *http.Request, route *routers.Route, params map[string]string) error
	// Problem is the problem err answers with.
	Problem(err error, c echo.Context) api.Problem
	// Invalid is the error that answers 400 naming each field of errs.
	Invalid(errs ...api.FieldError) error
	// Clip shortens a value an error message repeats.
	Clip(s string) string
	// DoNotStore keeps the answer of ctx's request out of the cache (it
	// is partial: asking again must not replay it).
	DoNotStore(ctx context.Context)
}

// Config holds what New needs.
type Config struct {
	// API answers what the pages and feeds show.
	API      api.StrictServerInterface
	Reader   Reader
	Requests Requests
	// Spec is openapi.yaml; Router routes it (the pages check their
	// queries as the API operations they mirror).
	Spec   *openapi3.T
	Router routers.Router
	// PublicURL is where clients reach the server, without a trailing
	// slash; feeds' links are relative when it is empty.
	PublicURL string
}

// Site serves the pages, feeds, widget and API reference.
type Site struct {
	api.StrictServerInterface // the API the pages show
	read                      Reader
	req                       Requests
	publicURL                 string
	pages                     *pages
	widgetJS                  []byte
}

// New loads the site's languages and templates.
func New(cfg Config) (*Site, error) {
	langs, err := loadLanguages(pageFiles, "pages/locales")
	if err != nil {
		return nil, err
	}
	s := &Site{StrictServerInterface: cfg.API, read: cfg.Reader, req: cfg.Requests, publicURL: cfg.PublicURL}
	p := &pages{s: s, langs: langs, tmpl: map[string]*template.Template{}, router: cfg.Router}
	for _, l := range langs.list {
		tmpl, err := pageTemplates(l)
		if err != nil {
			return nil, fmt.Errorf("page templates: %w", err)
		}
		p.tmpl[l.Code] = tmpl
	}
	if p.widget, err = widgetRoute(cfg.Spec); err != nil {
		return nil, err
	}
	if s.widgetJS, err = widgetScript(langs); err != nil {
		return nil, err
	}
	s.pages = p
	return s, nil
}

// Register adds the pages' routes to e, the API reference's headers, and
// the site's error pages in front of e's error handler (set it first).
func (s *Site) Register(e *echo.Echo) {
	registerDocs(e)
	s.pages.register(e, s.widgetJS)
}

// Language is the code of the language r's page is answered in.
func (s *Site) Language(r *http.Request) string {
	l, _ := s.pages.langs.pick(r)
	return l.Code
}

func fieldError(field, message string) api.FieldError {
	return api.FieldError{Field: &field, Message: message}
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// runFilter gathers the list filters a feed takes, as the API's listings
// gather them.
func runFilter(gpu, model, quant, engine, engineVersion, kvDtype, submitter, submittedBy *string, vramMin, vramMax *float64) store.RunFilter {
	v := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	return store.RunFilter{
		GPU: v(gpu), Model: v(model), Quantization: v(quant), Engine: v(engine), EngineVersion: v(engineVersion),
		KVCacheDtype: v(kvDtype), Submitter: v(submitter), SubmittedBy: v(submittedBy), VRAMGBMin: vramMin, VRAMGBMax: vramMax,
	}
}
