package site

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/store"
)

// The form pages: the calculator and the planner inside the site, each a
// GET form over its API operation, so that a result's URL is the question
// and can be shared. A question the data does not answer (404, 422) shows
// the form again with the API's reason.

// calculatorShown are the parameters the calculator's form shows.
var calculatorShown = []string{"run_id", "context_tokens", "concurrency", "vram_gb", "target_gpu", "rough", "gpu_hour_usd"}

// calculatorPage is GET /v1/calculator/decode as a page; with no query it
// is the form alone.
func (p *pages) calculatorPage(c echo.Context) error {
	q, err := p.values(c)
	if err != nil {
		return p.problemPage(c, err, "/calculator")
	}
	ctx := c.Request().Context()
	data := map[string]any{"Title": p.locale(c).t("calc.title"), "Q": q, "Hidden": hidden(q, calculatorShown...)}
	if err := p.formChoices(ctx, data); err != nil {
		return err
	}
	if data["RoughBand"], err = p.roughBand(ctx, q.Get("run_id")); err != nil {
		return err
	}
	if len(q) == 0 {
		return p.render(c, http.StatusOK, "calculator.html", pageCSP, data)
	}
	ac, err := p.asAPI(c, "/v1/calculator/decode")
	if err != nil {
		return p.problemPage(c, err, "/calculator")
	}
	var params api.EstimateDecodeParams
	if err := (&api.ServerInterfaceWrapper{Handler: bound{decode: &params}}).EstimateDecode(ac); err != nil {
		return p.problemPage(c, err, "/calculator")
	}
	data["JSON"] = "/v1/calculator/decode?" + q.Encode()
	data["Widget"] = "/widget/calculator?" + url.Values{"run": {q.Get("run_id")}}.Encode()
	resp, err := p.s.EstimateDecode(ctx, api.EstimateDecodeRequestObject{Params: params})
	if err != nil {
		return p.refusedForm(c, err, "calculator.html", data)
	}
	out, ok := resp.(api.EstimateDecode200JSONResponse)
	if !ok {
		return fmt.Errorf("estimate decode answered %T", resp)
	}
	data["Answer"] = api.DecodePrediction(out)
	if data["Limit"], err = p.limitText(ctx, p.locale(c), api.DecodePrediction(out), params); err != nil {
		return err
	}
	return p.render(c, http.StatusOK, "calculator.html", pageCSP, data)
}

// roughBand is the error band, in per cent, of an answer moved across GPU
// generations (rough=true) from run id's engine family, or the pooled one.
func (p *pages) roughBand(ctx context.Context, id string) (float64, error) {
	family := ""
	if id != "" {
		r, err := p.s.read.Run(ctx, id)
		switch {
		case err == nil:
			family = calculator.EngineFamily(r.Engine.Name)
		case !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrGone):
			return 0, err
		} // an unknown run: the answer says so; the form shows the pooled band
	}
	return 100 * calculator.Calibration().GPUMoveFor(family).RoughBand, nil
}

// limitText says in words why an answer has no speed (beyond the run's
// max_model_len, over its KV capacity, a prefill longer than its window),
// with the numbers that bound it; "" when it has one.
func (p *pages) limitText(ctx context.Context, l *locale, a api.DecodePrediction, q api.EstimateDecodeParams) (string, error) {
	switch a.Status {
	case api.CalcStatus(calculator.ExceedsMaxModelLen):
		if len(a.Basis.RunIDs) > 0 {
			r, err := p.s.read.Run(ctx, a.Basis.RunIDs[0])
			if err != nil {
				return "", err
			}
			out := r.Benchmark.MaxOutputTokens
			if q.MaxOutputTokens != nil {
				out = q.MaxOutputTokens
			}
			if r.Launch.MaxModelLen != nil && out != nil {
				return l.t("calc.limit.max_model_len.n", a.ContextTokens, *out, *r.Launch.MaxModelLen, max(0, *r.Launch.MaxModelLen-*out)), nil
			}
		}
		return l.t("calc.limit.max_model_len"), nil
	case api.CalcStatus(calculator.OverCapacity):
		most := 0
		if a.Capacity.MaxConcurrencyAtContext != nil {
			most = *a.Capacity.MaxConcurrencyAtContext
		}
		return l.t("calc.limit.over_capacity", a.Concurrency, most), nil
	case api.CalcStatus(calculator.TTFTExceedsWindow):
		return l.t("calc.limit.ttft_exceeds_window"), nil
	}
	return "", nil
}

// refusedForm answers a form whose question the API refused as unanswerable
// (404, 410, 422, 503) with the form again and the API's reason; other
// refusals are the problem page.
func (p *pages) refusedForm(c echo.Context, err error, name string, data map[string]any) error {
	pr := p.s.req.Problem(err, c)
	switch pr.Status {
	case http.StatusNotFound, http.StatusGone, http.StatusUnprocessableEntity, http.StatusServiceUnavailable:
		data["Refused"] = p.locale(c).problem(pr, err)
		return p.render(c, pr.Status, name, pageCSP, data)
	}
	return p.problemPage(c, err, c.Request().URL.Path)
}

// formChoices are the runs and catalog GPUs a form offers.
func (p *pages) formChoices(ctx context.Context, data map[string]any) error {
	limit, sort := 200, api.ListRunsParamsSort(store.SortModel)
	resp, err := p.s.ListRuns(ctx, api.ListRunsRequestObject{Params: api.ListRunsParams{Sort: &sort, Limit: &limit}})
	if err != nil {
		return err
	}
	list, ok := resp.(api.ListRuns200JSONResponse)
	if !ok {
		return fmt.Errorf("list runs answered %T", resp)
	}
	choices := list.Items
	var gpus []string
	for _, g := range calculator.Hardware().GPUs() {
		gpus = append(gpus, g.Name)
	}
	data["Runs"], data["GPUs"] = choices, gpus
	return nil
}

// plannerShown are the parameters the planner's form shows.
var plannerShown = []string{"context_tokens", "min_per_request_tok_s", "max_ttft_ms", "users", "model", "gpu", "include_scaled", "include_scaled_model", "gpu_hour_usd"}

// planner is GET /v1/planner as a page; with no query it is the form alone.
func (p *pages) planner(c echo.Context) error {
	q, err := p.values(c)
	if err != nil {
		return p.problemPage(c, err, "/planner")
	}
	data := map[string]any{"Title": p.locale(c).t("plan.title"), "Q": q, "Hidden": hidden(q, plannerShown...)}
	if len(q) == 0 {
		return p.render(c, http.StatusOK, "planner.html", pageCSP, data)
	}
	ac, err := p.asAPI(c, "/v1/planner")
	if err != nil {
		return p.plannerRefused(c, err, q, data)
	}
	var params api.PlanCapacityParams
	if err := (&api.ServerInterfaceWrapper{Handler: bound{plan: &params}}).PlanCapacity(ac); err != nil {
		return p.plannerRefused(c, err, q, data)
	}
	data["JSON"] = "/v1/planner?" + q.Encode()
	resp, err := p.s.PlanCapacity(c.Request().Context(), api.PlanCapacityRequestObject{Params: params})
	if err != nil {
		return p.plannerRefused(c, err, q, data)
	}
	plan, ok := resp.(api.PlanCapacity200JSONResponse)
	if !ok {
		return fmt.Errorf("plan capacity answered %T", resp)
	}
	data["Plan"] = api.CapacityPlan(plan)
	return p.render(c, http.StatusOK, "planner.html", pageCSP, data)
}

// plannerRefused answers a question the planner refuses with the form,
// filled with the question, and what to change: a 400 names each bad
// parameter (those the form does not show are dropped from it, so that
// asking again does not repeat them); other refusals as refusedForm.
func (p *pages) plannerRefused(c echo.Context, err error, q url.Values, data map[string]any) error {
	pr := p.s.req.Problem(err, c)
	if pr.Status != http.StatusBadRequest {
		return p.refusedForm(c, err, "planner.html", data)
	}
	data["Refused"] = p.locale(c).problem(pr, err)
	if pr.Errors != nil {
		data["RefusedErrors"] = *pr.Errors
		kept := maps.Clone(q)
		for _, e := range *pr.Errors {
			if e.Field != nil {
				kept.Del(*e.Field)
			}
		}
		data["Hidden"] = hidden(kept, plannerShown...)
	}
	delete(data, "JSON")
	return p.render(c, http.StatusBadRequest, "planner.html", pageCSP, data)
}

// gettingStarted says how to read a matrix, submit runs and embed the
// calculator; it takes no query, as its twin GET /v1/getting-started.
func (p *pages) gettingStarted(c echo.Context) error {
	if _, err := p.asAPI(c, "/v1/getting-started"); err != nil {
		return p.problemPage(c, err, "/getting-started")
	}
	return p.render(c, http.StatusOK, "getting-started.html", pageCSP, map[string]any{"Title": p.locale(c).t("gs.title"), "JSON": "/v1/getting-started"})
}
