package predict

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/store"
)

// Bounds on a plan over every run.
const (
	// maxPlanFits is how many runs with no stored fit one plan fits (within
	// its budget); the rest are fitted in the background and counted as
	// pending.
	maxPlanFits = 64
	// maxRefine bounds the runs one answer models in full: each is rebuilt
	// from its stored fit (about a millisecond), the rest are ranked by
	// their bounds.
	maxRefine = 400
)

// candidate is a run a plan over every run may choose: its best possible
// option from the summary, and once refined its option from the model.
type candidate struct {
	bound PlanOption // its Run is the candidate's
	model *calculator.Model
	seq   int // the order it was read in, which breaks ties
}

// planAll plans over every matching run: each run's stored summary bounds
// what its plan can be, the runs are refined (modelled in full) in the
// order of their bounds, and refining stops when the limit-th best option
// found is at least as good as the next bound, so no run left unrefined
// could have made the answer.
func (c *Service) planAll(ctx context.Context, pq PlanQuery) (Plan, error) {
	f := pq.runFilter()
	f, err := c.WithGPU(ctx, f, pq.GPU)
	if err != nil {
		return Plan{}, err
	}
	var (
		out   Plan
		cands []*candidate
		done  []PlanOption // options known without refining: runs that cannot be modelled, or are being fitted
	)
	unfitted, more, err := c.store.EachFitSummary(ctx, f, calculator.MethodVersion, maxPlanFits, func(fs store.FitSummary) error {
		out.Matched++
		opt := PlanOption{Run: fs.Run, GPU: fs.Run.GPU, GPUCount: gpuCount(fs.Run)}
		if fs.Refusal != "" {
			ref, err := refusalOf(fs.Refusal)
			if err != nil {
				return err
			}
			opt.Err = "this run cannot be modelled: " + ref.Error()
			done = append(done, opt)
			return nil
		}
		s, err := calculator.DecodeSummary(fs.Summary)
		if err != nil {
			return err
		}
		cands = append(cands, &candidate{bound: pq.optimistic(opt, s.BoundPlan(pq.Target)), seq: len(cands)})
		return nil
	})
	if err != nil {
		return Plan{}, err
	}
	// Runs beyond maxPlanFits with no fit are fitted in the background and
	// counted as pending, not listed.
	out.Matched += len(unfitted) + more
	pending := map[string]bool{}
	start := time.Now()
	if more > 0 && c.planBudget < 0 {
		// A one-shot command waits for every fit: all of them now.
		if unfitted, more, err = c.store.EachFitSummary(ctx, f, calculator.MethodVersion, math.MaxInt, func(store.FitSummary) error { return nil }); err != nil {
			return Plan{}, err
		}
	}
	for _, cfg := range unfitted {
		opt := PlanOption{Run: cfg, GPU: cfg.GPU, GPUCount: gpuCount(cfg)}
		m, err := c.planModel(ctx, start, &opt, pending)
		switch {
		case err != nil:
			return Plan{}, err
		case m == nil:
			done = append(done, opt)
		default:
			cands = append(cands, &candidate{model: m, bound: pq.optimistic(opt, calculator.Summarize(m).BoundPlan(pq.Target)), seq: len(cands)})
		}
	}
	better := pq.compare()
	// In the order read where bounds tie, without a stable sort's
	// merging (at 100,000 runs, run alternately: first plans 4.02–4.07 s
	// with it, 3.80–4.01 s without).
	slices.SortFunc(cands, func(a, b *candidate) int { return cmp.Or(better(a.bound, b.bound), cmp.Compare(a.seq, b.seq)) })
	limit := cmp.Or(pq.Limit, DefaultPlanOptions)
	models := map[string]*calculator.Model{}
	var kept []PlanOption // refined, best first
	refined := 0
	lc := c.listedCopies()
	for _, cd := range cands {
		if len(kept) >= limit && better(kept[limit-1], cd.bound) <= 0 {
			break // no run left can beat what is kept
		}
		if lc.spent(refined) {
			out.Warnings = append(out.Warnings, fmt.Sprintf("%d runs could make the answer: the first %d by their bounds were modelled, the rest are not listed", len(cands)-refined+len(kept), maxRefine))
			break
		}
		refined++
		opt := PlanOption{Run: cd.bound.Run, GPU: cd.bound.Run.GPU, GPUCount: gpuCount(cd.bound.Run)}
		m, err := cd.model, error(nil)
		if m == nil {
			m, err = c.planModel(ctx, start, &opt, pending)
		}
		switch {
		case err != nil:
			return Plan{}, err
		case m != nil:
			models[cd.bound.Run.ID] = m
			if opt.Plan, err = m.Plan(pq.Target); err != nil {
				return Plan{}, err
			}
		}
		if pq.Price.Given() {
			price(pq, &opt)
		}
		if listable(opt) {
			lc.know(opt.Run.ID, m)
			var list bool
			if kept, list, err = listOnce(ctx, lc, kept, opt.Run, total(opt), planOptionAt(kept)); err != nil {
				return Plan{}, err
			} else if !list {
				continue
			}
		}
		i, _ := slices.BinarySearchFunc(kept, opt, func(a, b PlanOption) int { return cmp.Or(better(a, b), -1) })
		kept = slices.Insert(kept, i, opt)
	}
	out.Warnings = append(out.Warnings, lc.warning()...)
	out.Options, out.Modelled = append(kept, done...), refined
	// Every candidate not refined ranks after the kept ones.
	out.Omitted = len(cands) - refined
	if pq.IncludeScaled {
		nf := f
		nf.GPU, nf.GPUNames = "", nil
		nf.VRAMGBMin, nf.VRAMGBMax = nil, nil // a sized GPU filter's, not the source runs'
		configs, _, err := c.store.RunConfigs(ctx, nf, maxPlanRuns)
		if err != nil {
			return Plan{}, err
		}
		scaled, warn, err := c.planScaled(ctx, pq, lc.sources(configs), models, pending, start)
		if err != nil {
			return Plan{}, err
		}
		out.Options = append(out.Options, scaled...)
		out.Warnings = append(out.Warnings, warn...)
	}
	if err := c.addOtherModels(ctx, pq, &out, pending, start); err != nil {
		return Plan{}, err
	}
	out = c.finish(pq, out, pending)
	if more > 0 {
		out.Pending += more
		out.Warnings = append(out.Warnings, fmt.Sprintf("partial answer: %d more matching %s no fit yet and %s not planned: they are being fitted in the background (after an upgrade, matrixd fit makes them all before the server starts); ask again later for the whole answer", more, plural(more, "run has", "runs have"), plural(more, "is", "are")))
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
