package server

import (
	"context"
	"strconv"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/msg"
	"github.com/matrixd/matrixd/predict"
	"github.com/matrixd/matrixd/server/httpcache"
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
		httpcache.DoNotStore(ctx) // partial: asking again must not replay it
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
		MatchedRuns: plan.Matched, Omitted: plan.Omitted,
	}
	out.Warnings, out.Notices = warnings(plan.Warnings)
	for i, o := range plan.Options {
		out.Options[i] = toAPIPlanOption(t, o)
	}
	return out
}

func toAPIPlanOption(t calculator.Target, o predict.PlanOption) (out api.PlanOption) {
	pl := o.Plan
	status := corroborationStatus(o.Run.Corroboration)
	out = api.PlanOption{
		Corroboration: &status,
		RunID:         o.Run.ID, Title: o.Run.Title, Model: o.Run.ModelName, GPU: o.GPU, GPUCount: o.GPUCount,
		Engine: o.Run.EngineName, EngineVersion: opt(o.Run.EngineVersion), MethodClass: api.MethodClass(o.Run.MethodClass),
		Meets: pl.Meets, Surely: pl.Surely, Concurrency: pl.Concurrency, TTFTChecked: pl.TTFTChecked,
		Sources: 1,
	}
	var warn []msg.Message
	if o.OtherModelWhy.Code != "" {
		warn = append(warn, o.OtherModelWhy)
	}
	// Every return says the warnings gathered by then.
	defer func() { out.Warnings, out.Notices = warnings(warn) }()
	if o.Scaled {
		out.ScaledFrom = &o.Run.GPU
		title := msg.New("api.plan_title_scaled_gpu", o.Run.ModelName, o.GPU, o.Run.ID, o.Run.Title)
		out.Title, out.TitleNotice = title.Text, notice(title)
	}
	if o.OtherModel != "" {
		out.Model, out.ScaledFromModel = o.OtherModel, &o.Run.ModelName
		title := msg.New("api.plan_title_other_model", o.OtherModel, o.GPU, o.Run.ID, o.Run.Title)
		out.Title, out.TitleNotice = title.Text, notice(title)
	}
	if o.Err.Code != "" {
		out.Shortfall = &api.PlanShortfall{Metric: api.PlanShortfallMetricModel, Reason: o.Err.Text, ReasonNotice: toAPINotice(o.Err)}
		return out
	}
	if p := pl.At; p != nil {
		out.TotalTokS, out.PerRequestTokS, out.TTFTMs = estimate(p.TotalTokS), estimate(p.PerRequestTokS), estimate(p.TTFTMs)
		status, b := api.PlanOptionStatus(p.Status), api.PlanOptionBasis(p.Basis)
		out.Status, out.Basis = &status, &b
		warn = append(warn, p.Warnings...)
	}
	if pl.Binding != "" {
		b := api.PlanOptionBinding(pl.Binding)
		out.Binding, out.BindingDetail, out.BindingNotice = &b, &pl.BindingDetail, notice(pl.BindingNotice)
	}
	if !pl.TTFTChecked && t.MaxTTFTMs > 0 {
		code := "api.ttft_bound_not_applied_gpu"
		switch {
		case o.OtherModel != "":
			code = "api.ttft_bound_not_applied_model"
		case !o.Scaled:
			code = "api.ttft_bound_not_applied_run"
		}
		warn = append(warn, msg.New(code, strconv.FormatFloat(t.MaxTTFTMs, 'f', -1, 64)))
	}
	if sh := pl.Shortfall; sh != nil {
		out.Shortfall = &api.PlanShortfall{Metric: api.PlanShortfallMetric(sh.Metric), Reason: sh.Reason, ReasonNotice: toAPINotice(sh.Notice),
			Value: nonZeroF(sh.Value), Target: nonZeroF(sh.Target)}
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
	warn = append(warn, o.Warnings...)
	return out
}

func nonZeroF(v float64) *float64 {
	if v == 0 {
		return nil
	}
	return &v
}
