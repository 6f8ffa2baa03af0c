package site

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
	"github.com/labstack/echo/v4"

	"github.com/matrixd/matrixd/api"
)

// A page that shows what an API operation answers takes that operation's
// query, checked by the same code (Requests.Check) against the same
// operation in openapi.yaml: what the API refuses, the page refuses with
// a 400 naming the parameter, never drawing something wider instead.

// asAPI checks a page's query as a GET of the API at apiPath (escaped,
// e.g. /v1/runs) and returns that request, defaults filled in, in a
// context the generated binders read. A parameter given empty counts as
// not given, as an HTML form sends a field left blank.
func (p *pages) asAPI(c echo.Context, apiPath string) (echo.Context, error) {
	return p.checkAs(c, apiPath, nil)
}

// checkAs is asAPI against route, or the API's route of apiPath when nil.
func (p *pages) checkAs(c echo.Context, apiPath string, route *routers.Route) (echo.Context, error) {
	values, err := p.values(c)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(c.Request().Context(), http.MethodGet, apiPath+"?"+values.Encode(), nil)
	if err != nil {
		return nil, fmt.Errorf("page as %s: %w", apiPath, err)
	}
	var params map[string]string
	if route == nil {
		if route, params, err = p.router.FindRoute(req); err != nil {
			return nil, fmt.Errorf("page as %s: %w", apiPath, err)
		}
	}
	if err := p.s.req.Check(req, route, params); err != nil {
		return nil, err
	}
	return c.Echo().NewContext(req, nil), nil
}

// values is a page's query, parsed as strictly as the API's, without the
// parameters given empty and without lang, which is the page's own: one
// of the site's languages, or a 400 naming it.
func (p *pages) values(c echo.Context) (url.Values, error) {
	values, err := p.s.req.ParseQuery(c.Request().URL.RawQuery)
	if err != nil {
		return nil, err
	}
	if v, ok := values["lang"]; ok {
		if p.langs.named(v[0]) == nil {
			return nil, p.s.req.Invalid(fieldError("lang", p.locale(c).t("error.lang", p.s.req.Clip(v[0]), strings.Join(p.langs.codes(), ", "))))
		}
		delete(values, "lang")
	}
	for k, vs := range values {
		if vs[0] == "" {
			delete(values, k)
		}
	}
	return values, nil
}

// bound catches the parameters the generated binder reads from a request,
// so that a page binds them exactly as the API does.
type bound struct {
	api.ServerInterface // only the methods below are called
	list                *api.ListRunsParams
	leaderboard         *api.GetLeaderboardParams
	compare             *api.CompareRunsParams
	hardware            *api.ListHardwareParams
	decode              *api.EstimateDecodeParams
	plan                *api.PlanCapacityParams
}

func (b bound) ListRuns(_ echo.Context, p api.ListRunsParams) error       { *b.list = p; return nil }
func (b bound) CompareRuns(_ echo.Context, p api.CompareRunsParams) error { *b.compare = p; return nil }
func (b bound) EstimateDecode(_ echo.Context, p api.EstimateDecodeParams) error {
	*b.decode = p
	return nil
}
func (b bound) PlanCapacity(_ echo.Context, p api.PlanCapacityParams) error { *b.plan = p; return nil }
func (b bound) ListHardware(_ echo.Context, p api.ListHardwareParams) error {
	*b.hardware = p
	return nil
}
func (b bound) GetLeaderboard(_ echo.Context, p api.GetLeaderboardParams) error {
	*b.leaderboard = p
	return nil
}

// widgetRoute is the calculator widget's query as an operation: the run,
// model and GPU it starts from take the calculator's own parameters'
// schemas, under the names its embedding attributes use.
func widgetRoute(spec *openapi3.T) (*routers.Route, error) {
	op := &openapi3.Operation{}
	for name, from := range map[string]string{"run": "CalcRunID", "model": "CalcModel", "gpu": "CalcGPU", "max_output": "CalcMaxOutputTokens"} {
		ref := spec.Components.Parameters[from]
		if ref == nil || ref.Value == nil {
			return nil, fmt.Errorf("widget: openapi.yaml has no parameter %s", from)
		}
		op.AddParameter(&openapi3.Parameter{Name: name, In: openapi3.ParameterInQuery, Description: ref.Value.Description, Schema: ref.Value.Schema})
	}
	// The question it starts with: the calculator's cell, optional here.
	decode := spec.Paths.Value("/v1/calculator/decode")
	if decode == nil || decode.Get == nil {
		return nil, fmt.Errorf("widget: openapi.yaml has no GET /v1/calculator/decode")
	}
	for name, from := range map[string]string{"context": "context_tokens", "concurrency": "concurrency"} {
		p := decode.Get.Parameters.GetByInAndName(openapi3.ParameterInQuery, from)
		if p == nil {
			return nil, fmt.Errorf("widget: GET /v1/calculator/decode has no parameter %s", from)
		}
		op.AddParameter(&openapi3.Parameter{Name: name, In: openapi3.ParameterInQuery, Description: p.Description, Schema: p.Schema})
	}
	op.AddParameter(&openapi3.Parameter{Name: "theme", In: openapi3.ParameterInQuery,
		Schema: openapi3.NewStringSchema().WithEnum("light", "dark").WithDefault("light").NewRef()})
	slices.SortFunc(op.Parameters, func(a, b *openapi3.ParameterRef) int { return strings.Compare(a.Value.Name, b.Value.Name) })
	return &routers.Route{Spec: spec, Path: "/widget/calculator", Method: http.MethodGet, PathItem: &openapi3.PathItem{}, Operation: op}, nil
}

// problemPage answers a page the API would refuse with the problem the
// API would send, as a page: each bad parameter named, with links that
// work (the page without them, its start). Server errors go to the error
// handler, which logs them.
func (p *pages) problemPage(c echo.Context, err error, start string) error {
	pr := p.s.req.Problem(err, c)
	if pr.Status >= 500 {
		return err
	}
	bad := map[string]bool{}
	var list []api.FieldError
	if pr.Errors != nil {
		list = *pr.Errors
		for _, e := range list {
			if e.Field != nil {
				bad[*e.Field] = true
			}
		}
	}
	r := c.Request()
	without := ""
	if kept := withoutParams(r.URL.RawQuery, bad, p.s.req.Clip); kept != r.URL.RawQuery {
		without = r.URL.Path
		if kept != "" {
			without += "?" + kept
		}
	}
	return p.render(c, pr.Status, "error.html", pageCSP, map[string]any{
		"Title": p.locale(c).or("error.status."+strconv.Itoa(pr.Status), pr.Title), "Status": pr.Status, "Message": p.locale(c).problem(pr, err), "Errors": list, "Without": without, "Start": start,
	})
}

// withoutParams is a raw query without the pairs named bad and without
// those that do not parse; the others are kept as they were written.
func withoutParams(raw string, bad map[string]bool, clip func(string) string) string {
	var kept []string
	for pair := range strings.SplitSeq(raw, "&") {
		rawName, rawValue, _ := strings.Cut(pair, "=")
		name, err := url.QueryUnescape(rawName)
		if pair == "" || err != nil || strings.Contains(pair, ";") || bad[name] || bad[clip(name)] {
			continue
		}
		if _, err := url.QueryUnescape(rawValue); err != nil {
			continue
		}
		kept = append(kept, pair)
	}
	return strings.Join(kept, "&")
}
