package server

import (
	"context"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/predict"
)

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func query(l, b int, vram, util *float64, maxOut *int, targetGPU *string, rough *bool) calculator.Query {
	q := calculator.Query{ContextTokens: l, Concurrency: b, TargetGPU: str(targetGPU), Rough: rough != nil && *rough}
	if vram != nil {
		q.VRAMGB = *vram
	}
	if util != nil {
		q.GPUMemoryUtilization = *util
	}
	if maxOut != nil {
		q.MaxOutputTokens = *maxOut
	}
	return q
}

// selection is the run a calculator question names.
func selection(runID, model, gpu, engineVersion, kvCacheDtype *string, includeFlagged *bool) predict.Selection {
	return predict.Selection{RunID: str(runID), Model: str(model), GPU: str(gpu), EngineVersion: str(engineVersion),
		KVCacheDtype: str(kvCacheDtype), IncludeFlagged: includeFlagged != nil && *includeFlagged}
}

// EstimateDecode implements GET /v1/calculator/decode.
func (s *Server) EstimateDecode(ctx context.Context, req api.EstimateDecodeRequestObject) (api.EstimateDecodeResponseObject, error) {
	p := req.Params
	sel := selection(p.RunID, p.Model, p.GPU, p.EngineVersion, p.KVCacheDtype, p.IncludeFlagged)
	q := query(p.ContextTokens, p.Concurrency, p.VRAMGB, p.GPUMemoryUtilization, p.MaxOutputTokens, p.TargetGPU, p.Rough)
	price := calculator.Price{GPUHourUSD: p.GPUHourUSD, HardwareUSD: p.HardwareUSD, AmortizationYears: p.AmortizationYears, ElectricityUSDPerKWh: p.ElectricityUSDPerKwh}
	if err := predict.CheckPrice(price); err != nil {
		return nil, err
	}
	a, err := s.calc.Decode(ctx, sel, q)
	if err != nil {
		return nil, err
	}
	cost, warn, err := s.calc.DecodeCost(ctx, a, q, price)
	if err != nil {
		return nil, err
	}
	return api.EstimateDecode200JSONResponse(ToAPIPricedDecode(q, a, cost, warn)), nil
}

// EstimateCapacity implements GET /v1/calculator/capacity.
func (s *Server) EstimateCapacity(ctx context.Context, req api.EstimateCapacityRequestObject) (api.EstimateCapacityResponseObject, error) {
	p := req.Params
	sel := selection(p.RunID, p.Model, p.GPU, p.EngineVersion, p.KVCacheDtype, p.IncludeFlagged)
	b := 0
	if p.Concurrency != nil {
		b = *p.Concurrency
	}
	q := query(p.ContextTokens, b, p.VRAMGB, p.GPUMemoryUtilization, p.MaxOutputTokens, p.TargetGPU, nil)
	a, err := s.calc.Capacity(ctx, sel, q)
	if err != nil {
		return nil, err
	}
	return api.EstimateCapacity200JSONResponse(ToAPICapacity(q, a)), nil
}

// EstimateGrid implements GET /v1/calculator/grid.
func (s *Server) EstimateGrid(ctx context.Context, req api.EstimateGridRequestObject) (api.EstimateGridResponseObject, error) {
	p := req.Params
	sel := selection(p.RunID, p.Model, p.GPU, p.EngineVersion, p.KVCacheDtype, p.IncludeFlagged)
	var contexts, concurrencies []int
	if p.Contexts != nil {
		contexts = *p.Contexts
	}
	if p.Concurrencies != nil {
		concurrencies = *p.Concurrencies
	}
	price := calculator.Price{GPUHourUSD: p.GPUHourUSD, HardwareUSD: p.HardwareUSD, AmortizationYears: p.AmortizationYears, ElectricityUSDPerKWh: p.ElectricityUSDPerKwh}
	if err := predict.CheckPrice(price); err != nil {
		return nil, err
	}
	q := query(0, 1, p.VRAMGB, p.GPUMemoryUtilization, p.MaxOutputTokens, p.TargetGPU, p.Rough)
	a, err := s.calc.Grid(ctx, sel, contexts, concurrencies, q)
	if err != nil {
		return nil, err
	}
	costs, warn, err := s.calc.GridCosts(ctx, a, q, price)
	if err != nil {
		return nil, err
	}
	return api.EstimateGrid200JSONResponse(ToAPIPricedGrid(a, costs, warn)), nil
}

// EstimatePrefill implements GET /v1/calculator/prefill.
func (s *Server) EstimatePrefill(ctx context.Context, req api.EstimatePrefillRequestObject) (api.EstimatePrefillResponseObject, error) {
	p := req.Params
	sel := selection(p.RunID, p.Model, p.GPU, p.EngineVersion, p.KVCacheDtype, p.IncludeFlagged)
	a, err := s.calc.Prefill(ctx, sel, p.ContextTokens)
	if err != nil {
		return nil, err
	}
	return api.EstimatePrefill200JSONResponse(ToAPIPrefill(p.ContextTokens, a)), nil
}
