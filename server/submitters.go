package server

import (
	"context"
	"net/url"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/store"
)

// submitterRuns is how many runs a profile lists.
const submitterRuns = 20

// GetSubmitter implements GET /v1/submitters/{name}.
func (s *Server) GetSubmitter(ctx context.Context, req api.GetSubmitterRequestObject) (api.GetSubmitterResponseObject, error) {
	p, err := s.store.Submitter(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	runs, _, err := s.store.ListRuns(ctx, store.RunFilter{Submitter: req.Name}, store.SortCreatedDesc, submitterRuns, "")
	if err != nil {
		return nil, err
	}
	out := api.GetSubmitter200JSONResponse{Name: p.Name, RunCount: p.RunCount, FirstRunAt: p.FirstRunAt, LatestRunAt: p.LatestRunAt,
		Runs: make([]api.RunSummary, len(runs)), RunsURL: "/v1/runs?submitter=" + url.QueryEscape(p.Name)}
	for i, r := range runs {
		out.Runs[i] = toAPISummary(r)
	}
	return out, nil
}

// ListSubmitters implements GET /v1/submitters.
func (s *Server) ListSubmitters(ctx context.Context, _ api.ListSubmittersRequestObject) (api.ListSubmittersResponseObject, error) {
	subs, err := s.store.Submitters(ctx)
	if err != nil {
		return nil, err
	}
	out := api.ListSubmitters200JSONResponse{Items: make([]api.SubmitterCatalogItem, len(subs))}
	for i, c := range subs {
		out.Items[i] = api.SubmitterCatalogItem{Name: c.Name, RunCount: c.RunCount, UnflaggedCount: c.UnflaggedCount,
			CorroboratedCount: c.CorroboratedCount, DisputedCount: c.DisputedCount, LatestRunAt: c.LatestRunAt}
	}
	return out, nil
}
