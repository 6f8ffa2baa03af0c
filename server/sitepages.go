package server

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/matrixd/matrixd/api"
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
	Best bool
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
		return p.problemPage(c, &store.Error{Kind: store.ErrNotFound, Msg: fmt.Sprintf("no runs of a model named %q; GET /v1/models lists them", clip(name))}, "/models")
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
			mr := modelRun{RunSummary: r}
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
