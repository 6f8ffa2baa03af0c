package server

import (
	"context"
	"fmt"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/trust"
)

// ListModelFacts implements GET /v1/model-facts.
func (s *Server) ListModelFacts(ctx context.Context, _ api.ListModelFactsRequestObject) (api.ListModelFactsResponseObject, error) {
	facts, err := s.calc.ModelFacts()
	if err != nil {
		return nil, err
	}
	counts, err := s.runsByModelFacts(ctx, facts)
	if err != nil {
		return nil, err
	}
	out := api.ListModelFacts200JSONResponse{Items: []api.ModelFacts{}}
	for _, m := range facts.All() {
		out.Items = append(out.Items, toAPIModelFacts(m, counts[m.Name]))
	}
	return out, nil
}

// GetModelFacts implements GET /v1/model-facts/{model}.
func (s *Server) GetModelFacts(ctx context.Context, req api.GetModelFactsRequestObject) (api.GetModelFactsResponseObject, error) {
	facts, err := s.calc.ModelFacts()
	if err != nil {
		return nil, err
	}
	m, ok := facts.Lookup(req.Model)
	if !ok {
		return nil, &store.Error{Kind: store.ErrNotFound, Msg: fmt.Sprintf("no entry of the model facts table matches %q; GET /v1/model-facts lists them with their match patterns, and trust/SOURCES.md says how an entry is added", clip(req.Model))}
	}
	counts, err := s.runsByModelFacts(ctx, facts)
	if err != nil {
		return nil, err
	}
	return api.GetModelFacts200JSONResponse(toAPIModelFacts(m, counts[m.Name])), nil
}

// runsByModelFacts counts stored runs per entry of the table: the store's
// model names resolved through its match patterns.
func (s *Server) runsByModelFacts(ctx context.Context, facts *trust.Models) (map[string]int, error) {
	models, err := s.store.Models(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, m := range models {
		if e, ok := facts.Lookup(m.Model); ok {
			out[e.Name] += m.RunCount
		}
	}
	return out, nil
}

func toAPIModelFacts(m trust.Model, runs int) api.ModelFacts {
	out := api.ModelFacts{Name: m.Name, Match: m.Match, Kind: api.Dense, ParamsB: m.ParamsB, ActiveParamsB: m.ActiveParams(),
		Layers: nonZero(m.Layers), KVLayers: nonZero(m.KVLayers), AttentionHeads: nonZero(m.AttentionHeads), KVHeads: nonZero(m.KVHeads), HeadDim: nonZero(m.HeadDim),
		Source: m.Source, MeasuredRuns: runs}
	if m.MixtureOfExperts() {
		out.Kind = api.Moe
	}
	if kv := m.KVBytesPerToken(2); kv > 0 {
		out.KVBytesPerToken16Bit = &kv
	}
	return out
}
