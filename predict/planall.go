package predict

import (
	"cmp"
	"context"
	"math"

	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/msg"
	"github.com/matrixd/matrixd/store"
)

// planAll plans over every matching run with the ranking search (rank):
// each run's stored summary bounds what its plan can be, and the runs are
// modelled in full in the order of their bounds until the limit-th best
// option found is at least as good as the next bound.
func (c *Service) planAll(ctx context.Context, pq PlanQuery) (Plan, error) {
	f := pq.runFilter()
	f, err := c.WithGPU(ctx, f, pq.GPU)
	if err != nil {
		return Plan{}, err
	}
	var done []PlanOption // options known without refining: runs that cannot be modelled, or are being fitted
	option := func(cfg store.RunConfig) PlanOption {
		return PlanOption{Run: cfg, GPU: cfg.GPU, GPUCount: gpuCount(cfg)}
	}
	s := c.newSearch()
	r, err := rank(ctx, s, f, ranking[PlanOption]{
		want:   cmp.Or(pq.Limit, DefaultPlanOptions),
		better: pq.compare(),
		bound: func(cfg store.RunConfig, sum calculator.Summary) (PlanOption, bool) {
			return pq.optimistic(option(cfg), sum.BoundPlan(pq.Target)), true
		},
		entry: func(cfg store.RunConfig, m *calculator.Model, why msg.Message) (PlanOption, bool, error) {
			opt := option(cfg)
			opt.Err = why
			if m != nil {
				p, err := m.Plan(pq.Target)
				if err != nil {
					return PlanOption{}, false, err
				}
				opt.Plan = p
			}
			if pq.Price.Given() {
				price(pq, &opt)
			}
			return opt, true, nil
		},
		listed: func(o PlanOption) (store.RunConfig, float64, bool) { return o.Run, total(o), listable(o) },
		unranked: func(cfg store.RunConfig, why msg.Message) {
			opt := option(cfg)
			opt.Err = why
			done = append(done, opt)
		},
		spent: func(left, kept int) msg.Message {
			return msg.New("predict.plan_more_than_modelled", left+kept, maxRefine)
		},
	})
	if err != nil {
		return Plan{}, err
	}
	out := Plan{Matched: r.matched, Modelled: r.modelled, Options: append(r.kept, done...)}
	// Every candidate not refined ranks after the kept ones.
	out.Omitted = r.omitted
	if pq.IncludeScaled {
		nf := f
		nf.GPU, nf.GPUNames = "", nil
		nf.VRAMGBMin, nf.VRAMGBMax = nil, nil // a sized GPU filter's, not the source runs'
		configs, _, err := c.store.RunConfigs(ctx, nf, maxPlanRuns)
		if err != nil {
			return Plan{}, err
		}
		scaled, err := s.planScaled(ctx, pq, r.lc.sources(configs))
		if err != nil {
			return Plan{}, err
		}
		out.Options = append(out.Options, scaled...)
	}
	if err := s.addOtherModels(ctx, pq, &out); err != nil {
		return Plan{}, err
	}
	out = s.finish(pq, out)
	if more := r.more; more > 0 {
		out.Pending += more
		out.Warnings = append(out.Warnings, msg.New(plural(more, "predict.plan_partial_one", "predict.plan_partial"), more))
	}
	return out, nil
}

// optimistic is opt as good as bound b allows: what a candidate is ranked
// by until it is modelled.
func (pq PlanQuery) optimistic(opt PlanOption, b calculator.PlanBound) PlanOption {
	if !b.Meets {
		sh := &calculator.Shortfall{Metric: "capacity"}
		if !math.IsInf(b.ShortfallRatio, 1) {
			sh.Metric, sh.Target, sh.Value = "per_request_tok_s", 1, 1/b.ShortfallRatio
		}
		opt.Plan = calculator.Plan{Shortfall: sh}
		return opt
	}
	total := min(b.TotalTokS, math.MaxFloat64/1e6)
	opt.Plan = calculator.Plan{Meets: true, Concurrency: b.Concurrency,
		At: &calculator.Prediction{TotalTokS: &calculator.Estimate{Value: total, Low: total, High: total}}}
	if u := pq.Target.Users; u > 0 {
		opt.Plan.Instances = (u + b.Concurrency - 1) / b.Concurrency
	}
	if pq.Price.Given() {
		price(pq, &opt)
	}
	return opt
}
