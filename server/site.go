package server

import (
	"context"
	"net/http"
	"net/url"

	"github.com/getkin/kin-openapi/routers"
	"github.com/labstack/echo/v4"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/predict"
	"github.com/matrixd/matrixd/server/httpcache"
	"github.com/matrixd/matrixd/store"
)

// The site (pages, feeds, widget, API reference) is mounted on the API's
// echo instance, behind the same middleware; its feeds and reference are
// operations of openapi.yaml, answered here by the site.

// siteReader is what the site reads beside the API: the store's runs and
// the calculator's series.
type siteReader struct {
	*store.Store
	calc *predict.Service
}

func (r siteReader) Predecessor(ctx context.Context, id string) (predict.Into, bool, error) {
	return r.calc.Predecessor(ctx, id)
}

func (r siteReader) WithGPU(ctx context.Context, f store.RunFilter, gpu string) (store.RunFilter, error) {
	return r.calc.WithGPU(ctx, f, gpu)
}

func (r siteReader) LatestSteps(ctx context.Context, f store.RunFilter, examine int) ([]predict.Into, int, error) {
	return r.calc.LatestSteps(ctx, f, examine)
}

// siteRequests hands the site this layer's reading of queries, its check
// against openapi.yaml and its one map of errors to problems.
type siteRequests struct{}

func (siteRequests) ParseQuery(raw string) (url.Values, error) { return parseQuery(raw) }
func (siteRequests) Check(r *http.Request, route *routers.Route, params map[string]string) error {
	return checkRequest(r, route, params)
}
func (siteRequests) Problem(err error, c echo.Context) api.Problem { return toProblem(err, c) }
func (siteRequests) Invalid(errs ...api.FieldError) error          { return fieldErrors(errs).capped() }
func (siteRequests) Clip(s string) string                          { return clip(s) }
func (siteRequests) DoNotStore(ctx context.Context)                { httpcache.DoNotStore(ctx) }

// GetDocs implements GET /docs.
func (s *Server) GetDocs(ctx context.Context, req api.GetDocsRequestObject) (api.GetDocsResponseObject, error) {
	return s.site.GetDocs(ctx, req)
}

// GetDocsAsset implements GET /docs/assets/{file}.
func (s *Server) GetDocsAsset(ctx context.Context, req api.GetDocsAssetRequestObject) (api.GetDocsAssetResponseObject, error) {
	return s.site.GetDocsAsset(ctx, req)
}

// GetRunsFeed implements GET /feeds/runs.atom.
func (s *Server) GetRunsFeed(ctx context.Context, req api.GetRunsFeedRequestObject) (api.GetRunsFeedResponseObject, error) {
	return s.site.GetRunsFeed(ctx, req)
}

// GetRegressionsFeed implements GET /feeds/regressions.atom.
func (s *Server) GetRegressionsFeed(ctx context.Context, req api.GetRegressionsFeedRequestObject) (api.GetRegressionsFeedResponseObject, error) {
	return s.site.GetRegressionsFeed(ctx, req)
}

// GetReportsFeed implements GET /feeds/reports.atom.
func (s *Server) GetReportsFeed(ctx context.Context, req api.GetReportsFeedRequestObject) (api.GetReportsFeedResponseObject, error) {
	return s.site.GetReportsFeed(ctx, req)
}
