package server

import (
	"context"
	"fmt"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/matrixd/matrixd/api"
)

// The page /getting-started as data: GET /v1/getting-started. Each
// operation it names is looked up in the contract, whose summary it
// gives, so the guide cannot name an operation that is not there.

// guideRead, guideSubmit and guideReference are the operations the page
// names, as method and path.
var (
	guideRead = [][2]string{
		{"GET", "/v1/runs"}, {"GET", "/v1/runs/{run_id}"}, {"GET", "/v1/leaderboard"}, {"GET", "/v1/compare"},
		{"GET", "/v1/calculator/decode"}, {"GET", "/v1/planner"},
	}
	guideSubmit    = [][2]string{{"POST", "/v1/runs"}, {"POST", "/v1/runs/import"}}
	guideReference = [][2]string{{"GET", "/docs"}, {"GET", "/openapi.yaml"}, {"GET", "/openapi.json"}}
)

// guideFormats are what POST /v1/runs/import reads, as the page lists them.
var guideFormats = []api.ImportFormat{
	{Format: api.ImportFormatFormatLlamaBatchedBench, ContentType: api.MultipartFormData, Summary: "the table llama.cpp's llama-batched-bench prints, or its jsonl lines, with a meta part"},
	{Format: api.ImportFormatFormatVllmBench, ContentType: api.MultipartFormData, Summary: "the JSON files vllm bench serve --save-result (or sglang.bench_serving --output-file) writes, or text holding the Serving Benchmark Result blocks either prints, with a meta part"},
	{Format: api.ImportFormatFormatGridCsv, ContentType: api.MultipartFormData, Summary: "a CSV of decode cells, for any other engine, with a meta part"},
	{Format: api.ImportFormatFormatPage, ContentType: api.TextPlain, Summary: "a published matrix-run page, as plain text"},
}

// guideAttributes are the widget's attributes, as calculator.js reads them.
var guideAttributes = []api.WidgetAttribute{
	{Name: "data-run", Summary: "the run it opens on"},
	{Name: "data-model", Summary: "with data-gpu, instead of data-run: the model, answered from its runs on that GPU"},
	{Name: "data-gpu", Summary: "with data-model: the GPU"},
	{Name: "data-context", Summary: "the context it asks first, in tokens (16384)"},
	{Name: "data-concurrency", Summary: "the concurrent requests it asks first (8)"},
	{Name: "data-max-output", Summary: "the output tokens each request reserves, for a run that does not say (its own when absent)"},
	{Name: "data-theme", Summary: "light or dark"},
	{Name: "data-lang", Summary: "a language tag; the page's own when absent"},
	{Name: "data-api", Summary: "another matrixd to ask; the one the script came from when absent"},
	{Name: "data-heading", Summary: "1 makes its title a level-one heading; 2 when absent"},
}

// newGuide builds the guide from the contract.
func newGuide(spec *openapi3.T) (api.GettingStarted, error) {
	ops := func(list [][2]string) ([]api.GuideOperation, error) {
		var out []api.GuideOperation
		for _, mp := range list {
			item := spec.Paths.Find(mp[1])
			if item == nil || item.GetOperation(mp[0]) == nil {
				return nil, fmt.Errorf("getting started names %s %s, which openapi.yaml does not have", mp[0], mp[1])
			}
			out = append(out, api.GuideOperation{Method: api.GuideOperationMethod(mp[0]), Path: mp[1], Summary: item.GetOperation(mp[0]).Summary})
		}
		return out, nil
	}
	read, err := ops(guideRead)
	if err != nil {
		return api.GettingStarted{}, err
	}
	submit, err := ops(guideSubmit)
	if err != nil {
		return api.GettingStarted{}, err
	}
	reference, err := ops(guideReference)
	if err != nil {
		return api.GettingStarted{}, err
	}
	return api.GettingStarted{
		Page: "/getting-started",
		Read: read,
		Submit: api.GuideSubmit{
			Auth:       "Authorization: Bearer KEY, a key the operator makes with matrixd keys create",
			Operations: submit,
			Formats:    guideFormats,
		},
		Embed: api.GuideEmbed{
			Script:     "/widget/calculator.js",
			Page:       "/widget/calculator",
			Snippet:    "<div data-matrixd-calculator data-run=\"RUN_ID\"></div>\n<script src=\"$MATRIXD/widget/calculator.js\" async></script>\n",
			Attributes: guideAttributes,
		},
		Reference: reference,
	}, nil
}

// GetGettingStarted implements GET /v1/getting-started.
func (s *Server) GetGettingStarted(ctx context.Context, _ api.GetGettingStartedRequestObject) (api.GetGettingStartedResponseObject, error) {
	return api.GetGettingStarted200JSONResponse(s.guide), nil
}
