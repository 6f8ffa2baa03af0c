package predict

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/msg"
	"github.com/matrixd/matrixd/store"
)

// PlanQuery asks which stored runs meet a target, optionally adding
// catalog GPUs that have no run, scaled from the nearest measured one.
type PlanQuery struct {
	Model, GPU, Engine, KVCacheDtype string
	Target                           calculator.Target
	IncludeScaled                    bool
	// IncludeScaledModel, with Model, adds each GPU with runs of other
	// models but none of Model's, answered from the nearest of them
	// (basis scaled_model, as the calculator answers such a question).
	IncludeScaledModel bool
	// MethodClass is the one class planned from (runs of others measured
	// something else); IncludeFlagged brings back runs a plausibility
	// check flagged.
	MethodClass    string
	IncludeFlagged bool
	// Limit bounds the options returned (best first); 0 means 20.
	Limit int
	// Price, when given, prices every option; SortByCost (which needs it)
	// puts the cheapest meeting the target first.
	Price      calculator.Price
	SortByCost bool
}

// PlanOption is one way to serve the target: a measured run, or a catalog
// GPU scaled from one.
type PlanOption struct {
	// Run is the measured run; for a scaled option, the run it is scaled
	// from.
	Run store.RunConfig
	// GPU is the GPU the option is for, GPUCount how many one instance uses.
	GPU      string
	GPUCount int
	Scaled   bool
	// OtherModel, for an option answered from another model's run (Run),
	// is the model planned for (its model facts name); OtherModelWhy says
	// which run answers and why.
	OtherModel    string
	OtherModelWhy msg.Message
	// Err is why the run could not be modelled at all; Plan is then empty.
	Err  msg.Message
	Plan calculator.Plan
	// Cost is the option's at Plan.At, with a price; Warnings say what of
	// it could not be had.
	Cost     *calculator.Cost
	Warnings []msg.Message
}

// Plan is the planner's answer, best option first.
type Plan struct {
	Options []PlanOption
	// Matched is how many runs matched the filters; Omitted how many
	// options were cut by the limit.
	Matched, Omitted int
	// Pending counts the runs left out or listed as being fitted because
	// their fits were not ready in time: the answer is partial, and asking
	// again gives the whole one.
	Pending int
	// Modelled is how many runs were modelled in full; the others were
	// ranked out by their summaries' bounds.
	Modelled int
	Warnings []msg.Message
}

// Bounds on one planner question: runs read, model groups scaled to other
// GPUs, options returned.
const (
	maxPlanRuns        = 50
	maxScaledGroups    = 8
	DefaultPlanOptions = 20
	MaxPlanOptions     = 100
	// planFitBudget is how long a plan waits for fits of runs not yet
	// fitted (each at most about a second) before it lists the rest as
	// being fitted.
	planFitBudget = 3 * time.Second
)

// Plan answers a capacity-planning question over the stored runs.
func (c *Service) Plan(ctx context.Context, pq PlanQuery) (Plan, error) {
	if err := CheckPrice(pq.Price); err != nil {
		return Plan{}, err
	}
	if pq.IncludeScaledModel && pq.Model == "" {
		return Plan{}, invalidParamSays("include_scaled_model", msg.New("predict.scaled_model_needs_model"))
	}
	if pq.SortByCost && !pq.Price.Given() {
		return Plan{}, invalidParamSays("sort", msg.New("predict.cost_sort_needs_price"))
	}
	var (
		out Plan
		err error
	)
	if base := pq.Target.Base; base.TargetGPU == "" && base.VRAMGB == 0 && base.GPUMemoryUtilization == 0 && base.MaxOutputTokens == 0 {
		out, err = c.planAll(ctx, pq)
	} else {
		out, err = c.planNewest(ctx, pq)
	}
	if err != nil || out.Matched > 0 || pq.MethodClass == "" {
		return out, err
	}
	other, err := c.otherClasses(ctx, pq)
	if err != nil {
		return Plan{}, err
	}
	out.Warnings = append(out.Warnings, other...)
	return out, nil
}

// otherClasses says, for a plan no run of its method class matched, which
// other classes have runs that match: one count each, asked only then.
func (c *Service) otherClasses(ctx context.Context, pq PlanQuery) ([]msg.Message, error) {
	f, err := c.WithGPU(ctx, pq.runFilter(), pq.GPU)
	if err != nil {
		return nil, err
	}
	counts, err := c.otherClassCounts(ctx, f)
	if err != nil {
		return nil, err
	}
	var out []msg.Message
	for _, cc := range counts {
		out = append(out, msg.New(plural(cc.n, "predict.plan_other_class_one", "predict.plan_other_class"), pq.MethodClass, cc.n, cc.class))
	}
	return out, nil
}

// runFilter selects the runs pq plans from, before its GPU is resolved.
func (pq PlanQuery) runFilter() store.RunFilter {
	return store.RunFilter{Model: pq.Model, Engine: pq.Engine, KVCacheDtype: pq.KVCacheDtype, MethodClass: pq.MethodClass, ExcludeFlagged: !pq.IncludeFlagged}
}

// classCount is how many runs of a method class a filter matches.
type classCount struct {
	class string
	n     int
}

// otherClassCounts counts the runs f would match with each method class
// other than its own that has any, from one pass over the runs.
func (c *Service) otherClassCounts(ctx context.Context, f store.RunFilter) ([]classCount, error) {
	counts, err := c.store.CountRunsByClass(ctx, f)
	if err != nil {
		return nil, err
	}
	var out []classCount
	for _, class := range store.MethodClasses() {
		if n := counts[class]; n > 0 && class != f.MethodClass {
			out = append(out, classCount{class, n})
		}
	}
	return out, nil
}

// planNewest plans a question with overrides (other VRAM, utilization or
// output length), which the stored summaries do not bound: over the
// newest maxPlanRuns matching runs, each modelled.
func (c *Service) planNewest(ctx context.Context, pq PlanQuery) (Plan, error) {
	f := pq.runFilter()
	if !pq.IncludeScaled {
		var err error
		if f, err = c.WithGPU(ctx, f, pq.GPU); err != nil {
			return Plan{}, err
		}
	}
	configs, more, err := c.store.RunConfigs(ctx, f, maxPlanRuns)
	if err != nil {
		return Plan{}, err
	}
	var out Plan
	if more {
		n, err := c.store.CountMatchingRuns(ctx, f)
		if err != nil {
			return Plan{}, err
		}
		out.Warnings = append(out.Warnings, msg.New("predict.plan_newest_only", maxPlanRuns, n))
	}
	s := c.newSearch()
	for _, cfg := range configs {
		if pq.GPU != "" && !runOnGPU(pq.GPU, cfg.GPU, vramOf(cfg)) {
			continue
		}
		out.Matched++
		opt := PlanOption{Run: cfg, GPU: cfg.GPU, GPUCount: gpuCount(cfg)}
		// Once the budget is spent, runs not yet fitted are fitted in the
		// background rather than making this answer wait for them all.
		m, why, err := s.model(ctx, cfg.ID)
		if err != nil {
			return Plan{}, err
		}
		if opt.Err = why; m != nil {
			if opt.Plan, err = m.Plan(pq.Target); err != nil {
				return Plan{}, err
			}
		}
		out.Options = append(out.Options, opt)
	}
	lc := c.listedCopies()
	for id, m := range s.models {
		lc.know(id, m)
	}
	if out.Options, err = lc.dropCopies(ctx, out.Options); err != nil {
		return Plan{}, err
	}
	s.warn(lc.warning()...)
	if pq.IncludeScaled {
		scaled, err := s.planScaled(ctx, pq, lc.sources(configs))
		if err != nil {
			return Plan{}, err
		}
		out.Options = append(out.Options, scaled...)
	}
	if err := s.addOtherModels(ctx, pq, &out); err != nil {
		return Plan{}, err
	}
	return s.finish(pq, out), nil
}

// maxOtherModelGPUs bounds the GPUs one plan answers from another model's
// runs.
const maxOtherModelGPUs = 16

// addOtherModels adds to out, when pq asks for them, the options of
// pq.Model on each GPU with stored runs (pq.GPU's alone when given) where
// no run of it matches: each answered from the run of another model there
// that the calculator would answer from (otherModelRun), as the
// calculator answers (basis scaled_model). A GPU where the model facts do
// not let another model's run stand in says why in a warning. A source
// run not fitted within the search's budget is pending.
func (s *search) addOtherModels(ctx context.Context, pq PlanQuery, out *Plan) error {
	c := s.c
	if !pq.IncludeScaledModel {
		return nil
	}
	names, err := c.store.GPUNames(ctx)
	if err != nil {
		return err
	}
	var gpus []string // one name per catalog GPU
	for _, name := range names {
		if (pq.GPU != "" && !sameCardName(pq.GPU, name)) || slices.ContainsFunc(gpus, func(g string) bool { return gpuMatches(g, name) }) {
			continue
		}
		gpus = append(gpus, name)
	}
	if pq.GPU != "" && len(gpus) > 1 {
		gpus = gpus[:1] // the filter names one GPU (of one size, if it names one)
	}
	if len(gpus) > maxOtherModelGPUs {
		s.warn(msg.New("predict.plan_other_model_gpus", len(gpus), maxOtherModelGPUs))
		gpus = gpus[:maxOtherModelGPUs]
	}
	narrow := store.RunFilter{Engine: pq.Engine, KVCacheDtype: pq.KVCacheDtype, MethodClass: pq.MethodClass}
	for _, gpu := range gpus {
		if pq.GPU != "" {
			gpu = pq.GPU // as asked: "RTX 4060 Ti 16GB" is the 16 GB card's runs
		}
		own := narrow
		own.Model = pq.Model
		f, err := c.WithGPU(ctx, own, gpu)
		if err != nil {
			return err
		}
		if runs, _, err := c.store.RunConfigs(ctx, f, 1); err != nil || len(runs) > 0 {
			if err != nil {
				return err
			}
			continue // the model's own runs there answer (or are flagged)
		}
		src, other, why, err := c.otherModelRunAmong(ctx, Selection{Model: pq.Model, GPU: gpu, KVCacheDtype: pq.KVCacheDtype, IncludeFlagged: pq.IncludeFlagged}, narrow)
		var ref *calculator.Refusal
		switch {
		case errors.Is(err, errNoOtherModel):
			continue
		case errors.As(err, &ref):
			s.warn(msg.New("predict.plan_other_model_refused", gpu, ref.Message))
			continue
		case err != nil:
			return err
		}
		cfg, err := c.store.RunConfigOf(ctx, src)
		if err != nil {
			return err
		}
		opt := PlanOption{Run: cfg, GPU: cfg.GPU, GPUCount: gpuCount(cfg), OtherModel: other.to.Name, OtherModelWhy: why}
		m, _, err := s.model(ctx, cfg.ID)
		if err != nil {
			return err
		}
		if m == nil {
			continue // being fitted, or cannot be modelled: not an option for another model
		}
		t := pq.Target
		t.Base.OtherModel = other.ratios
		if opt.Plan, err = m.Plan(t); err != nil {
			return err
		}
		s.dropScaledOn(out, cfg, opt.OtherModel)
		out.Options = append(out.Options, opt)
	}
	return nil
}

// dropScaledOn removes from out the options scaled to cfg's GPU, where
// cfg, a run of another model, answers for model: a GPU is listed once, as
// /v1/calculator/decode answers for model on it, and a warning says what
// was left out.
func (s *search) dropScaledOn(out *Plan, cfg store.RunConfig, model string) {
	n := 0
	out.Options = slices.DeleteFunc(out.Options, func(o PlanOption) bool {
		if o.Scaled && o.OtherModel == "" && runOnGPU(o.GPU, cfg.GPU, vramOf(cfg)) {
			n++
			return true
		}
		return false
	})
	if n > 0 {
		s.warn(msg.New(plural(n, "predict.plan_scaled_gpu_left_out_one", "predict.plan_scaled_gpu_left_out"),
			cfg.GPU, model, cfg.ModelName, n))
	}
}

// estimated reports whether o is not a measured run's own: scaled to
// another GPU or answered for another model.
func (o PlanOption) estimated() bool { return o.Scaled || o.OtherModel != "" }

// finish prices, sorts and cuts a plan's options and says what it lacks,
// after what the search warned of.
func (s *search) finish(pq PlanQuery, out Plan) Plan {
	out.Warnings = append(out.Warnings, s.warnings...)
	if pq.GPU != "" && len(out.Options) == 0 {
		out.Warnings = append(out.Warnings, noRunOn(pq.GPU, ""))
	}
	if out.Pending = len(s.pending); out.Pending > 0 {
		out.Warnings = append(out.Warnings, partial(out.Pending))
	}
	if pq.Price.Given() {
		for i := range out.Options {
			price(pq, &out.Options[i])
		}
	}
	slices.SortStableFunc(out.Options, pq.compare())
	limit := cmp.Or(pq.Limit, DefaultPlanOptions)
	if len(out.Options) > limit {
		out.Omitted += len(out.Options) - limit
		out.Options = out.Options[:limit]
	}
	return out
}

// price sets o's cost at its plan, with pq's price: a miss by speed or
// TTFT at one request, which runs (what its nearest try costs); none where
// not even one request surely runs.
func price(pq PlanQuery, o *PlanOption) {
	if o.Err.Code != "" || o.Plan.At == nil || o.Plan.At.TotalTokS == nil || !o.Plan.Meets && o.Plan.At.Status != calculator.Fits {
		return
	}
	pw := power(o.Run.AvgPowerW, o.Run.PowerLimitW, o.GPU, o.Scaled, o.OtherModel != "")
	o.Cost, o.Warnings = priced(pq.Price, o.GPU, o.GPUCount, pw, o.Plan.At.TotalTokS)
}

// compare is the order pq asks options in, best first.
func (pq PlanQuery) compare() func(a, b PlanOption) int {
	if pq.SortByCost {
		users := pq.Target.Users
		return func(a, b PlanOption) int { return compareCost(a, b, users) }
	}
	return compareOptions
}

// SetPlanFitBudget sets how long a plan waits for fits not yet made before
// it lists the rest as being fitted (planFitBudget by default); a negative
// budget waits for every fit, as a one-shot command does. Set it before the
// first plan.
func (c *Service) SetPlanFitBudget(d time.Duration) { c.planBudget = d }

// compareOptions ranks options: measured runs meeting the target, then
// GPUs scaled from one and other models' runs that meet it (each by total
// tok/s at the target),
// then those missing it by how far off they are, then those that could not
// be modelled.
func compareOptions(a, b PlanOption) int {
	rank := func(o PlanOption) int {
		switch {
		case o.Err.Code != "":
			return 3
		case o.Plan.Meets && !o.estimated():
			return 0
		case o.Plan.Meets:
			return 1
		}
		return 2
	}
	if r := cmp.Compare(rank(a), rank(b)); r != 0 {
		return r
	}
	switch rank(a) {
	case 0, 1:
		return cmp.Compare(total(b), total(a))
	case 2:
		return cmp.Or(cmp.Compare(a.Plan.Shortfall.Ratio(), b.Plan.Shortfall.Ratio()), cmp.Compare(boolInt(a.estimated()), boolInt(b.estimated())))
	}
	return 0
}

// compareCost ranks options by cost: those meeting the target (measured
// or scaled) cheapest first, those without a cost after them, by
// throughput; then the rest as compareOptions ranks them.
func compareCost(a, b PlanOption, users int) int {
	meets := func(o PlanOption) bool { return o.Err.Code == "" && o.Plan.Meets }
	if !meets(a) || !meets(b) {
		if meets(a) != meets(b) {
			return -cmp.Compare(boolInt(meets(a)), boolInt(meets(b)))
		}
		return compareOptions(a, b)
	}
	ka, oka := costKey(a, users)
	kb, okb := costKey(b, users)
	if oka != okb {
		return -cmp.Compare(boolInt(oka), boolInt(okb))
	}
	if oka && ka != kb {
		return cmp.Compare(ka, kb)
	}
	if users > 0 {
		pa, _ := costKey(a, 0)
		pb, _ := costKey(b, 0)
		if r := cmp.Compare(pa, pb); r != 0 {
			return r
		}
	}
	return compareOptions(a, b)
}

func total(o PlanOption) float64 {
	if o.Plan.At == nil || o.Plan.At.TotalTokS == nil {
		return 0
	}
	return o.Plan.At.TotalTokS.Value
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func gpuCount(cfg store.RunConfig) int {
	if cfg.GPUCount != nil && *cfg.GPUCount > 0 {
		return *cfg.GPUCount
	}
	return 1
}

// gpuMatches reports whether a run's GPU is the one a filter names: the
// same catalog GPU (so "3090" finds "NVIDIA GeForce RTX 3090"), or the
// same name, ignoring case.
func gpuMatches(filter, gpu string) bool {
	if a, ok := calculator.LookupGPU(filter); ok {
		if b, ok := calculator.LookupGPU(gpu); ok {
			return a.Name == b.Name
		}
	}
	return strings.EqualFold(filter, gpu)
}

// runOnGPU reports whether a run on gpu with vram GB (0: not stated) is on
// the GPU a filter names: a filter that names a size ("RTX 4060 Ti 16GB")
// is that size's entry, one that does not ("RTX 4060 Ti") any size of the
// card; names the catalog does not know match ignoring case.
func runOnGPU(filter, gpu string, vram float64) bool {
	a, okA := calculator.LookupGPU(filter)
	b, okB := calculator.LookupRunGPU(gpu, vram)
	switch {
	case !okA || !okB:
		return strings.EqualFold(filter, gpu)
	case calculator.NamesSize(filter):
		return a.Name == b.Name
	}
	return calculator.SameCard(a, b)
}

// sameCardName reports whether a stored GPU name is of the card a filter
// names, whatever its size (the runs' stated VRAM tells the size apart).
func sameCardName(filter, name string) bool {
	a, okA := calculator.LookupGPU(filter)
	b, okB := calculator.LookupGPU(name)
	if !okA || !okB {
		return strings.EqualFold(filter, name)
	}
	return calculator.SameCard(a, b)
}

// sizeSlack is how far a run's stated VRAM may be from a card's size to be
// that card (drivers report a little less than the label).
const sizeSlack = 0.1

// WithGPU narrows f to runs on gpu: every stored name of the same catalog
// card when the catalog knows it ("3090" finds runs on "NVIDIA GeForce RTX
// 3090"), of the size the filter names if it names one ("RTX 4060 Ti 16GB"
// finds runs on "RTX 4060 Ti" that state about 16 GB), else that name.
func (c *Service) WithGPU(ctx context.Context, f store.RunFilter, gpu string) (store.RunFilter, error) {
	f.GPU = gpu
	if gpu == "" {
		return f, nil
	}
	spec, ok := calculator.LookupGPU(gpu)
	if !ok {
		return f, nil
	}
	stored, err := c.store.GPUNames(ctx)
	if err != nil {
		return f, err
	}
	f.GPUNames = []string{gpu}
	for _, name := range stored {
		if sameCardName(gpu, name) {
			f.GPUNames = append(f.GPUNames, name)
		}
	}
	if calculator.NamesSize(gpu) && calculator.Hardware().Sized(spec) {
		lo, hi := spec.VRAMGB*(1-sizeSlack), spec.VRAMGB*(1+sizeSlack)
		if f.VRAMGBMin == nil || *f.VRAMGBMin < lo {
			f.VRAMGBMin = &lo
		}
		if f.VRAMGBMax == nil || *f.VRAMGBMax > hi {
			f.VRAMGBMax = &hi
		}
	}
	return f, nil
}

// planScaled adds, for each model configuration among the runs (newest
// first, at most maxScaledGroups), every catalog GPU that has no run of it,
// scaled from the run on the nearest GPU: the same generation if there is
// one (±20 %), else across generations (a rough ±40 %). A source run not
// fitted when the search's budget is spent is pending and fitted in the
// background.
func (s *search) planScaled(ctx context.Context, pq PlanQuery, configs []store.RunConfig) ([]PlanOption, error) {
	type group struct {
		runs     []store.RunConfig
		measured map[string]bool // catalog names with a run
	}
	var (
		out  []PlanOption
		keys []string
	)
	groups := map[string]*group{}
	for _, cfg := range configs {
		k := strings.ToLower(strings.Join([]string{cfg.ModelName, cfg.EngineName, cfg.Quantization, cfg.KVCacheDtype}, "\x00"))
		g, ok := groups[k]
		if !ok {
			g = &group{measured: map[string]bool{}}
			groups[k] = g
			keys = append(keys, k)
		}
		if spec, ok := calculator.LookupRunGPU(cfg.GPU, vramOf(cfg)); ok {
			g.runs = append(g.runs, cfg)
			g.measured[spec.Name] = true
		}
	}
	if len(keys) > maxScaledGroups {
		s.warn(msg.New("predict.plan_scaled_groups", len(keys), maxScaledGroups))
		keys = keys[:maxScaledGroups]
	}
	for _, k := range keys {
		g := groups[k]
		if len(g.runs) == 0 {
			continue
		}
		for _, to := range calculator.Hardware().GPUs() {
			if g.measured[to.Name] || (pq.GPU != "" && !gpuMatches(pq.GPU, to.Name)) {
				continue
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			src, rough := nearestRun(g.runs, to)
			if s.pending[src.ID] {
				continue // being fitted in the background: scaled next time
			}
			m, _, err := s.model(ctx, src.ID)
			if err != nil {
				return nil, err
			}
			if m == nil {
				continue // being fitted (now pending), or cannot be modelled
			}
			t := pq.Target
			t.Base.TargetGPU, t.Base.Rough = to.Name, rough
			pl, err := m.Plan(t)
			if err != nil {
				return nil, err
			}
			out = append(out, PlanOption{Run: src, GPU: to.Name, GPUCount: gpuCount(src), Scaled: true, Plan: pl})
		}
	}
	return out, nil
}

// noRunOn says why a plan on gpu found nothing: no run matched on it, and
// when the catalog does not know the name either, which names are near.
// More is what follows in the same sentence ("" for nothing).
func noRunOn(gpu, more string) msg.Message {
	if _, ok := calculator.LookupGPU(gpu); ok {
		return msg.New("predict.no_run_on_gpu", gpu, more)
	}
	if sug := calculator.Hardware().Suggest(gpu, 6); len(sug) > 0 {
		return msg.New("predict.no_run_on_unknown_gpu_suggest", gpu, strings.Join(sug, ", "), more)
	}
	return msg.New("predict.no_run_on_unknown_gpu", gpu, more)
}

// partial is the warning of an answer with n runs being fitted.
func partial(n int) msg.Message {
	return msg.New(plural(n, "predict.partial_one", "predict.partial"), n)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// nearestRun picks the run to scale to GPU to: one of its generation if
// any, and among those the closest in memory bandwidth.
func nearestRun(runs []store.RunConfig, to calculator.GPUSpec) (store.RunConfig, bool) {
	best, bestScore := runs[0], math.Inf(1)
	for _, r := range runs {
		from, _ := calculator.LookupRunGPU(r.GPU, vramOf(r))
		score := math.Abs(math.Log(from.BandwidthGBs / to.BandwidthGBs))
		if from.Generation != to.Generation {
			score += 100
		}
		if score < bestScore {
			best, bestScore = r, score
		}
	}
	from, _ := calculator.LookupRunGPU(best.GPU, vramOf(best))
	return best, from.Generation != to.Generation
}

// vramOf is the VRAM a run states, 0 when it states none.
func vramOf(cfg store.RunConfig) float64 {
	if cfg.VRAMGB != nil {
		return *cfg.VRAMGB
	}
	return 0
}
