package site

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/store"
)

// The catalog pages: the models, the hardware and the submitters the
// site's navigation names, each drawn from its API operation.

// models is GET /v1/models as a page.
func (p *pages) models(c echo.Context) error {
	if _, err := p.asAPI(c, "/v1/models"); err != nil {
		return p.problemPage(c, err, "/models")
	}
	resp, err := p.s.ListModels(c.Request().Context(), api.ListModelsRequestObject{})
	if err != nil {
		return p.problemPage(c, err, "/models")
	}
	list, ok := resp.(api.ListModels200JSONResponse)
	if !ok {
		return fmt.Errorf("list models answered %T", resp)
	}
	return p.render(c, http.StatusOK, "models.html", pageCSP, map[string]any{
		"Title": p.locale(c).t("nav.models"), "Models": list.Items,
	})
}

// modelRunsMax bounds the runs a model's page reads, page by page.
const modelRunsMax = 1000

// modelRun is a run on a model's page: best marks the fastest peak of
// its method class.
type modelRun struct {
	api.RunSummary
	Best         bool
	HardwareHref string // the GPU's catalog page, when the catalog knows it
}

// modelHref is a model's page: each segment of its name escaped, the
// slashes between them kept (an encoded one is refused as any is).
func modelHref(name string) string {
	segs := strings.Split(name, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return "/models/" + strings.Join(segs, "/")
}

// hardwareHref is a GPU's catalog page, or "" when the catalog does not
// know the name.
func hardwareHref(gpu string) string {
	if g, ok := calculator.LookupGPU(gpu); ok {
		return "/hardware/" + url.PathEscape(g.Name)
	}
	return ""
}

// model is a model's page: its catalog entry (GET /v1/models) and its
// runs (GET /v1/runs?model=, the model's own runs, not those whose names
// hold it), fastest peak first, the best of each method class marked.
// The name is the rest of the path, slashes and all (org/model).
func (p *pages) model(c echo.Context) error {
	name := strings.TrimPrefix(c.Request().URL.Path, "/models/")
	if _, err := p.asAPI(c, "/v1/models"); err != nil {
		return p.problemPage(c, err, "/models")
	}
	ctx := c.Request().Context()
	resp, err := p.s.ListModels(ctx, api.ListModelsRequestObject{})
	if err != nil {
		return err
	}
	list, ok := resp.(api.ListModels200JSONResponse)
	if !ok {
		return fmt.Errorf("list models answered %T", resp)
	}
	var entry *api.ModelCatalogItem
	for i := range list.Items {
		if list.Items[i].Model == name {
			entry = &list.Items[i]
		}
	}
	if entry == nil {
		return p.problemPage(c, &store.Error{Kind: store.ErrNotFound, Msg: fmt.Sprintf("no runs of a model named %q; GET /v1/models lists them", p.s.req.Clip(name))}, "/models")
	}
	var runs []modelRun
	best := map[api.MethodClass]bool{}
	sort, limit := api.ListRunsParamsSort(store.SortPeakDesc), 200
	params := api.ListRunsParams{Model: &entry.Model, Sort: &sort, Limit: &limit}
	for read := 0; read < modelRunsMax; read += limit {
		resp, err := p.s.ListRuns(ctx, api.ListRunsRequestObject{Params: params})
		if err != nil {
			return err
		}
		page, ok := resp.(api.ListRuns200JSONResponse)
		if !ok {
			return fmt.Errorf("list runs answered %T", resp)
		}
		for _, r := range page.Items {
			if r.Model != entry.Model {
				continue // a substring match: another model whose name holds this one
			}
			mr := modelRun{RunSummary: r, HardwareHref: hardwareHref(r.GPU)}
			if r.Peak != nil && !best[r.MethodClass] {
				mr.Best, best[r.MethodClass] = true, true
			}
			runs = append(runs, mr)
		}
		if page.NextCursor == nil {
			break
		}
		params.Cursor = page.NextCursor
	}
	return p.render(c, http.StatusOK, "model.html", pageCSP, map[string]any{
		"Title": entry.Model, "Model": entry, "Runs": runs,
		"RunsHref": "/?" + url.Values{"model": {entry.Model}}.Encode(),
		"JSON":     "/v1/runs?" + url.Values{"model": {entry.Model}, "sort": {store.SortPeakDesc}}.Encode(),
	})
}

// hardwareShown are the parameters the hardware page's form shows.
var hardwareShown = []string{"vendor", "generation"}

// hardware is GET /v1/hardware as a page.
func (p *pages) hardware(c echo.Context) error {
	ac, err := p.asAPI(c, "/v1/hardware")
	if err != nil {
		return p.problemPage(c, err, "/hardware")
	}
	var params api.ListHardwareParams
	if err := (&api.ServerInterfaceWrapper{Handler: bound{hardware: &params}}).ListHardware(ac); err != nil {
		return p.problemPage(c, err, "/hardware")
	}
	resp, err := p.s.ListHardware(c.Request().Context(), api.ListHardwareRequestObject{Params: params})
	if err != nil {
		return p.problemPage(c, err, "/hardware")
	}
	list, ok := resp.(api.ListHardware200JSONResponse)
	if !ok {
		return fmt.Errorf("list hardware answered %T", resp)
	}
	q, err := p.values(c)
	if err != nil {
		return err
	}
	twin := "/v1/hardware"
	if len(q) > 0 {
		twin += "?" + q.Encode()
	}
	return p.render(c, http.StatusOK, "hardware.html", pageCSP, map[string]any{
		"Title": p.locale(c).t("nav.hardware"), "GPUs": list.Items, "Q": q, "JSON": twin,
		"Hidden": hidden(q, hardwareShown...), "Filters": hidden(q),
	})
}

// gpuRunsMax bounds the runs a GPU's page lists; the run list has them all.
const gpuRunsMax = 200

// gpu is GET /v1/hardware/{gpu} as a page, with the GPU's runs (GET
// /v1/runs?gpu=, every name the catalog knows it by) fastest peak first.
func (p *pages) gpu(c echo.Context) error {
	name := strings.TrimPrefix(c.Request().URL.Path, "/hardware/")
	if _, err := p.asAPI(c, "/v1/hardware/"+url.PathEscape(name)); err != nil {
		return p.problemPage(c, err, "/hardware")
	}
	ctx := c.Request().Context()
	resp, err := p.s.GetHardware(ctx, api.GetHardwareRequestObject{GPU: name})
	if err != nil {
		return p.problemPage(c, err, "/hardware")
	}
	g, ok := resp.(api.GetHardware200JSONResponse)
	if !ok {
		return fmt.Errorf("get hardware answered %T", resp)
	}
	sort, limit := api.ListRunsParamsSort(store.SortPeakDesc), gpuRunsMax
	runs, err := p.s.ListRuns(ctx, api.ListRunsRequestObject{Params: api.ListRunsParams{GPU: &g.Name, Sort: &sort, Limit: &limit}})
	if err != nil {
		return err
	}
	list, ok := runs.(api.ListRuns200JSONResponse)
	if !ok {
		return fmt.Errorf("list runs answered %T", runs)
	}
	return p.render(c, http.StatusOK, "gpu.html", pageCSP, map[string]any{
		"Title": g.Name, "GPU": api.HardwareGPU(g), "Runs": list.Items, "More": list.NextCursor != nil,
		"JSON":     "/v1/hardware/" + url.PathEscape(g.Name),
		"RunsJSON": "/v1/runs?" + url.Values{"gpu": {g.Name}, "sort": {store.SortPeakDesc}}.Encode(),
		"RunsHref": "/?" + url.Values{"gpu": {g.Name}}.Encode(),
	})
}

// submitter is GET /v1/submitters/{name} as a page: the profile and the
// newest runs, linking the run list of them all.
func (p *pages) submitter(c echo.Context) error {
	name := strings.TrimPrefix(c.Request().URL.Path, "/submitters/")
	if _, err := p.asAPI(c, "/v1/submitters/"+url.PathEscape(name)); err != nil {
		return p.problemPage(c, err, "/")
	}
	resp, err := p.s.GetSubmitter(c.Request().Context(), api.GetSubmitterRequestObject{Name: name})
	if err != nil {
		return p.problemPage(c, err, "/")
	}
	sp, ok := resp.(api.GetSubmitter200JSONResponse)
	if !ok {
		return fmt.Errorf("get submitter answered %T", resp)
	}
	return p.render(c, http.StatusOK, "submitter.html", pageCSP, map[string]any{
		"Title": sp.Name, "Profile": api.SubmitterProfile(sp), "JSON": "/v1/submitters/" + url.PathEscape(sp.Name),
		"RunsHref": "/?" + url.Values{"submitter": {sp.Name}}.Encode(), "More": sp.RunCount > len(sp.Runs),
	})
}
