package server

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/predict"
	"github.com/matrixd/matrixd/store"
)

// PlanCapacity implements GET /v1/planner.
func (s *Server) PlanCapacity(ctx context.Context, req api.PlanCapacityRequestObject) (api.PlanCapacityResponseObject, error) {
	p := req.Params
	pq := predict.PlanQuery{
		Model: str(p.Model), GPU: str(p.GPU), Engine: str(p.Engine), KVCacheDtype: str(p.KVCacheDtype),
		Target: calculator.Target{
			ContextTokens: p.ContextTokens, MinPerRequestTokS: p.MinPerRequestTokS,
			Base: query(p.ContextTokens, 1, p.VRAMGB, nil, p.MaxOutputTokens, nil, nil),
		},
		IncludeScaled:      p.IncludeScaled != nil && *p.IncludeScaled,
		IncludeScaledModel: p.IncludeScaledModel != nil && *p.IncludeScaledModel,
		MethodClass:        store.MethodSustainedDecode,
		IncludeFlagged:     p.IncludeFlagged != nil && *p.IncludeFlagged,
	}
	if p.MethodClass != nil {
		pq.MethodClass = string(*p.MethodClass)
	}
	if p.MaxTTFTMs != nil {
		pq.Target.MaxTTFTMs = *p.MaxTTFTMs
	}
	if p.Users != nil {
		pq.Target.Users = *p.Users
	}
	if p.Limit != nil {
		pq.Limit = *p.Limit
	}
	pq.Price = calculator.Price{GPUHourUSD: p.GPUHourUSD, HardwareUSD: p.HardwareUSD, AmortizationYears: p.AmortizationYears, ElectricityUSDPerKWh: p.ElectricityUSDPerKwh}
	pq.SortByCost = p.Sort != nil && *p.Sort == api.PlanCapacityParamsSortCost
	plan, err := s.calc.Plan(ctx, pq)
	if err != nil {
		return nil, err
	}
	if plan.Pending > 0 {
		doNotStore(ctx) // partial: asking again must not replay it
	}
	return api.PlanCapacity200JSONResponse(ToAPIPlan(pq.Target, plan)), nil
}

// ToAPIPlan is a plan as GET /v1/planner gives it.
func ToAPIPlan(t calculator.Target, plan predict.Plan) api.CapacityPlan {
	out := api.CapacityPlan{
		Target: api.PlanTarget{
			ContextTokens: t.ContextTokens, MinPerRequestTokS: t.MinPerRequestTokS,
			MaxTTFTMs: nonZeroF(t.MaxTTFTMs), Users: nonZero(t.Users),
		},
		Options:     make([]api.PlanOption, len(plan.Options)),
		MatchedRuns: plan.Matched, Omitted: plan.Omitted, Warnings: warnings(plan.Warnings, nil),
	}
	for i, o := range plan.Options {
		out.Options[i] = toAPIPlanOption(t, o)
	}
	return out
}

func toAPIPlanOption(t calculator.Target, o predict.PlanOption) api.PlanOption {
	pl := o.Plan
	status := corroborationStatus(o.Run.Corroboration)
	out := api.PlanOption{
		Corroboration: &status,
		RunID:         o.Run.ID, Title: o.Run.Title, Model: o.Run.ModelName, GPU: o.GPU, GPUCount: o.GPUCount,
		Engine: o.Run.EngineName, EngineVersion: opt(o.Run.EngineVersion), MethodClass: api.MethodClass(o.Run.MethodClass),
		Meets: pl.Meets, Surely: pl.Surely, Concurrency: pl.Concurrency, TTFTChecked: pl.TTFTChecked,
		Warnings: []string{},
	}
	if o.Scaled {
		out.ScaledFrom = &o.Run.GPU
		out.Title = fmt.Sprintf("%s on %s, scaled from run %s (%s)", o.Run.ModelName, o.GPU, o.Run.ID, o.Run.Title)
	}
	if o.OtherModel != "" {
		out.Model, out.ScaledFromModel = o.OtherModel, &o.Run.ModelName
		out.Title = fmt.Sprintf("%s on %s, from run %s (%s)", o.OtherModel, o.GPU, o.Run.ID, o.Run.Title)
	}
	if o.Err != "" {
		out.Shortfall = &api.PlanShortfall{Metric: api.PlanShortfallMetricModel, Reason: o.Err}
		return out
	}
	if p := pl.At; p != nil {
		out.TotalTokS, out.PerRequestTokS, out.TTFTMs = estimate(p.TotalTokS), estimate(p.PerRequestTokS), estimate(p.TTFTMs)
		status, b := api.PlanOptionStatus(p.Status), api.PlanOptionBasis(p.Basis)
		out.Status, out.Basis = &status, &b
		out.Warnings = warnings(p.Warnings, nil)
	}
	if o.OtherModelWhy != "" {
		out.Warnings = append([]string{o.OtherModelWhy}, out.Warnings...)
	}
	if pl.Binding != "" {
		b := api.PlanOptionBinding(pl.Binding)
		out.Binding, out.BindingDetail = &b, &pl.BindingDetail
	}
	if !pl.TTFTChecked && t.MaxTTFTMs > 0 {
		why := "TTFT is not predicted on another GPU"
		switch {
		case o.OtherModel != "":
			why = "TTFT is not predicted for another model"
		case !o.Scaled:
			why = "this run's TTFT is not predicted here"
		}
		out.Warnings = append(out.Warnings, fmt.Sprintf("the TTFT bound of %s ms was not applied: %s", strconv.FormatFloat(t.MaxTTFTMs, 'f', -1, 64), why))
	}
	if sh := pl.Shortfall; sh != nil {
		out.Shortfall = &api.PlanShortfall{Metric: api.PlanShortfallMetric(sh.Metric), Reason: sh.Reason, Value: nonZeroF(sh.Value), Target: nonZeroF(sh.Target)}
	}
	if pl.Instances > 0 {
		gpus := pl.Instances * o.GPUCount
		out.Instances, out.GpusNeeded = &pl.Instances, &gpus
	}
	out.Cost = toAPICost(o.Cost)
	if o.Cost != nil && o.Cost.USDPerHour != nil && pl.Instances > 0 {
		fleet := sig6(float64(pl.Instances) * *o.Cost.USDPerHour)
		out.FleetUSDPerHour = &fleet
	}
	out.Warnings = append(out.Warnings, o.Warnings...)
	return out
}

func nonZeroF(v float64) *float64 {
	if v == 0 {
		return nil
	}
	return &v
}

// ListHardware implements GET /v1/hardware.
func (s *Server) ListHardware(ctx context.Context, req api.ListHardwareRequestObject) (api.ListHardwareResponseObject, error) {
	counts, err := s.measuredByGPU(ctx)
	if err != nil {
		return nil, err
	}
	vendor, gen := strings.ToLower(str(req.Params.Vendor)), strings.ToLower(str(req.Params.Generation))
	var vendors, gens []string
	for _, g := range calculator.Hardware().GPUs() {
		vendors, gens = append(vendors, strings.ToLower(g.Vendor)), append(gens, strings.ToLower(g.Generation))
	}
	for _, f := range []struct {
		field, value string
		known        []string
	}{{"vendor", vendor, vendors}, {"generation", gen, gens}} {
		if known := sortedSet(f.known); f.value != "" && !slices.Contains(known, f.value) {
			return nil, invalidParam(f.field, fmt.Sprintf("the catalog has no %s %q; it has %s", f.field, clip(f.value), strings.Join(known, ", ")))
		}
	}
	out := api.ListHardware200JSONResponse{Items: []api.HardwareGPU{}}
	for _, g := range calculator.Hardware().GPUs() {
		if (vendor == "" || strings.ToLower(g.Vendor) == vendor) && (gen == "" || strings.ToLower(g.Generation) == gen) {
			out.Items = append(out.Items, toAPIHardware(g, counts[g.Name]))
		}
	}
	return out, nil
}

// GetHardware implements GET /v1/hardware/{gpu}.
func (s *Server) GetHardware(ctx context.Context, req api.GetHardwareRequestObject) (api.GetHardwareResponseObject, error) {
	cat := calculator.Hardware()
	g, ok := cat.Lookup(req.GPU)
	if !ok {
		msg := fmt.Sprintf("no GPU named %q in the hardware catalog", clip(req.GPU))
		if sug := cat.Suggest(req.GPU, 6); len(sug) > 0 {
			msg += "; did you mean " + strings.Join(sug, ", ") + "?"
		} else {
			msg += "; GET /v1/hardware lists them"
		}
		return nil, &store.Error{Kind: store.ErrNotFound, Msg: msg}
	}
	counts, err := s.measuredByGPU(ctx)
	if err != nil {
		return nil, err
	}
	return api.GetHardware200JSONResponse(toAPIHardware(g, counts[g.Name])), nil
}

// measuredByGPU counts stored runs per catalog GPU: the store's GPU names
// resolved through the catalog's aliases, of the VRAM size each run states
// (a run on "RTX 4060 Ti" with 16 GB is the 16 GB card's).
func (s *Server) measuredByGPU(ctx context.Context) (map[string]int, error) {
	gpus, err := s.store.GPUs(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, g := range gpus {
		rest := g.RunCount
		for i, vram := range g.VRAMGB {
			if spec, ok := calculator.LookupRunGPU(g.GPU, vram); ok {
				out[spec.Name] += g.VRAMRuns[i]
			}
			rest -= g.VRAMRuns[i]
		}
		if spec, ok := calculator.LookupGPU(g.GPU); ok && rest > 0 {
			out[spec.Name] += rest
		}
	}
	return out, nil
}

func toAPIHardware(g calculator.GPUSpec, runs int) api.HardwareGPU {
	aliases := g.Aliases
	if aliases == nil {
		aliases = []string{}
	}
	return api.HardwareGPU{
		Name: g.Name, Aliases: aliases, Vendor: g.Vendor, Architecture: g.Architecture, Generation: g.Generation,
		Segment: api.HardwareGPUSegment(g.Segment), VRAMGB: g.VRAMGB, MemoryBandwidthGbs: g.BandwidthGBs,
		Fp16Tflops: g.FP16TFLOPS, TdpW: g.TDPW, SystemMaxPowerW: g.SystemMaxPowerW,
		SystemMaxPowerSource: opt(g.SystemMaxPowerSource), SystemMaxPowerRead: opt(g.SystemMaxPowerRead),
		Source: g.Source, Note: opt(g.Note), MeasuredRuns: runs,
	}
}

// sortedSet is xs sorted, each once.
func sortedSet(xs []string) []string {
	out := slices.Clone(xs)
	slices.Sort(out)
	return slices.Compact(out)
}
