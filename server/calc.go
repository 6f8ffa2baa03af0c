package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/store"
)

// Calc answers calculator questions from stored runs. Each run is fitted
// once and kept: run ids are derived from content, so a changed run is a new
// id and a cached fit never goes stale.
type Calc struct {
	store *store.Store
	max   int

	mu    sync.Mutex
	fits  map[string]*fitCall
	order []string // insertion order, for eviction
	onFit func(time.Duration)
}

// fitCall is one run's fit; done closes when model and err are set, so
// concurrent first requests wait for one fit instead of each fitting.
type fitCall struct {
	done  chan struct{}
	model *calculator.Model
	err   error
}

// maxFitTime bounds one fit; the largest grid a run may have fits in
// about a second.
const maxFitTime = 20 * time.Second

// Warm fits run id in the background, so that its first reader does not
// wait for the fit.
func (c *Calc) Warm(id string) {
	go func() { _, _ = c.model(context.Background(), id) }() // a failed fit is retried by the first reader
}

// Forget drops run id's fit: the run was deleted.
func (c *Calc) Forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.fits, id)
	c.order = slices.DeleteFunc(c.order, func(s string) bool { return s == id })
}

// NewCalc returns a calculator over st that keeps up to maxFits fitted runs.
func NewCalc(st *store.Store, maxFits int) *Calc {
	return &Calc{store: st, max: max(maxFits, 1), fits: map[string]*fitCall{}}
}

// Selection names the run to model: RunID, or Model and GPU (optionally
// narrowed by EngineVersion and KVCacheDtype).
type Selection struct {
	RunID         string
	Model         string
	GPU           string
	EngineVersion string
	KVCacheDtype  string
}

// maxCandidates bounds how many runs a model+gpu selection considers.
const maxCandidates = 50

// ambiguous is a model+gpu selection that matched runs that cannot share a
// speed surface; it becomes a 422 listing them.
type ambiguous struct {
	sel        Selection
	differ     []string
	candidates []api.CandidateRun
}

func (e *ambiguous) Error() string {
	return fmt.Sprintf("%d runs match model %q on GPU %q but differ in %s, which changes the answer; pick one with run_id, or narrow with engine_version or kv_cache_dtype",
		len(e.candidates), e.sel.Model, e.sel.GPU, strings.Join(e.differ, ", "))
}

// configFields are the settings runs must share to share a surface.
func configFields(c store.RunConfig) [][2]string {
	f := func(p *float64) string {
		if p == nil {
			return ""
		}
		return fmt.Sprint(*p)
	}
	i := func(p *int) string {
		if p == nil {
			return ""
		}
		return fmt.Sprint(*p)
	}
	return [][2]string{
		{"model", c.ModelName}, {"vram_gb", f(c.VRAMGB)}, {"engine", strings.ToLower(c.EngineName)},
		{"engine_version", c.EngineVersion}, {"quantization", strings.ToLower(c.Quantization)},
		{"kv_cache_dtype", strings.ToLower(c.KVCacheDtype)}, {"attention_backend", strings.ToLower(c.AttentionBackend)},
		{"max_model_len", i(c.MaxModelLen)}, {"gpu_memory_utilization", f(c.GPUMemoryUtilization)},
	}
}

// selectRun returns the id of the run to model and the ids of every run
// the answer stands on (the modelled one first).
func (c *Calc) selectRun(ctx context.Context, sel Selection) (string, []string, []string, error) {
	byName := sel.Model != "" || sel.GPU != ""
	switch {
	case sel.RunID != "" && byName:
		return "", nil, nil, invalidParam("run_id", "give run_id, or model and gpu, not both")
	case sel.RunID != "":
		return sel.RunID, []string{sel.RunID}, nil, nil
	case sel.Model == "" || sel.GPU == "":
		field := "model"
		if sel.Model != "" {
			field = "gpu"
		}
		return "", nil, nil, invalidParam(field, "select a run with run_id, or with both model and gpu")
	}
	f := store.RunFilter{Model: sel.Model, GPU: sel.GPU, EngineVersion: sel.EngineVersion, KVCacheDtype: sel.KVCacheDtype}
	configs, more, err := c.store.RunConfigs(ctx, f, maxCandidates)
	if err != nil {
		return "", nil, nil, err
	}
	if len(configs) == 0 {
		return "", nil, nil, &store.Error{Kind: store.ErrNotFound, Msg: fmt.Sprintf("no run of a model matching %q on GPU %q", clip(sel.Model), clip(sel.GPU))}
	}
	first := configFields(configs[0])
	var differ []string
	for _, cfg := range configs[1:] {
		for i, kv := range configFields(cfg) {
			if kv[1] != first[i][1] && !slices.Contains(differ, kv[0]) {
				differ = append(differ, kv[0])
			}
		}
	}
	if len(differ) > 0 {
		amb := &ambiguous{sel: sel, differ: differ}
		for _, r := range configs {
			amb.candidates = append(amb.candidates, api.CandidateRun{ID: r.ID, Title: r.Title, Model: r.ModelName, VRAMGB: r.VRAMGB,
				Quantization: opt(r.Quantization), EngineVersion: opt(r.EngineVersion), KVCacheDtype: opt(r.KVCacheDtype),
				AttentionBackend: opt(r.AttentionBackend)})
		}
		return "", nil, nil, amb
	}
	ids := make([]string, len(configs))
	for i, cfg := range configs {
		ids[i] = cfg.ID
	}
	var warn []string
	if len(ids) > 1 {
		warn = append(warn, fmt.Sprintf("%d runs of this model, GPU and engine configuration match; the newest (%s) was modelled", len(ids), ids[0]))
	}
	if more {
		warn = append(warn, fmt.Sprintf("more than %d runs match; only the newest %d were compared", maxCandidates, maxCandidates))
	}
	return ids[0], ids, warn, nil
}

// model returns the run's fitted model, loading and fitting it on first
// use; concurrent first requests share one fit.
func (c *Calc) model(ctx context.Context, id string) (*calculator.Model, error) {
	c.mu.Lock()
	call, ok := c.fits[id]
	if !ok {
		call = &fitCall{done: make(chan struct{})}
		c.fits[id] = call
		c.order = append(c.order, id)
		if len(c.order) > c.max {
			delete(c.fits, c.order[0])
			c.order = c.order[1:]
		}
	}
	c.mu.Unlock()
	if ok {
		select {
		case <-call.done:
			return call.model, call.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	// The fit is shared by every caller waiting for it: the first caller
	// going away does not stop it, a deadline does.
	fitCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), maxFitTime)
	defer cancel()
	r, err := c.store.Run(fitCtx, id)
	if err == nil {
		start := time.Now()
		call.model, call.err = calculator.FitContext(fitCtx, CalculatorRun(r))
		err = call.err
		if c.onFit != nil {
			c.onFit(time.Since(start))
		}
	} else {
		call.err = err
	}
	close(call.done)
	if err != nil && !errors.Is(err, calculator.ErrRefused) {
		// A missing run, a failed read or a fit cut short is not a fit:
		// do not keep it.
		c.mu.Lock()
		if c.fits[id] == call {
			delete(c.fits, id)
			c.order = slices.DeleteFunc(c.order, func(s string) bool { return s == id })
		}
		c.mu.Unlock()
	}
	return call.model, call.err
}

func (c *Calc) selectModel(ctx context.Context, sel Selection) (*calculator.Model, []string, []string, error) {
	id, ids, warn, err := c.selectRun(ctx, sel)
	if err != nil {
		return nil, nil, nil, err
	}
	m, err := c.model(ctx, id)
	if err != nil {
		return nil, nil, nil, err
	}
	return m, ids, warn, nil
}

// Decode answers GET /v1/calculator/decode.
func (c *Calc) Decode(ctx context.Context, sel Selection, q calculator.Query) (api.DecodePrediction, error) {
	m, ids, warn, err := c.selectModel(ctx, sel)
	if err != nil {
		return api.DecodePrediction{}, err
	}
	p, err := m.Decode(q)
	if err != nil {
		return api.DecodePrediction{}, err
	}
	out := api.DecodePrediction{
		ContextTokens: q.ContextTokens, Concurrency: q.Concurrency, Status: api.CalcStatus(p.Status),
		TotalTokS: estimate(p.TotalTokS), PerRequestTokS: estimate(p.PerRequestTokS), TBTMs: estimate(p.TBTMs), TTFTMs: estimate(p.TTFTMs),
		Capacity: api.KVCapacity{
			ReservedTokens: p.Capacity.ReservedTokens, KVTokensLow: p.Capacity.KVTokensLow, KVTokensHigh: nonZero(p.Capacity.KVTokensHigh),
			MaxConcurrencyAtContext: p.Capacity.MaxConcurrencyAtContext, SequenceLimit: nonZero(p.Capacity.SequenceLimit),
		},
		Basis:    basis(p.Basis, p.SpeedBasis, ids, p.Cells),
		Warnings: append(warn, p.Warnings...),
	}
	if out.Warnings == nil {
		out.Warnings = []string{}
	}
	if p.TotalTokS != nil && (p.SpeedBasis != calculator.Measured || p.Basis == calculator.ScaledGPU) {
		out.Basis.ErrorBandPct = &api.ErrorBand{TotalTokS: 100 * p.BandTotal, TBTMs: 100 * p.BandTBT}
	}
	return out, nil
}

// Capacity answers GET /v1/calculator/capacity.
func (c *Calc) Capacity(ctx context.Context, sel Selection, q calculator.Query) (api.CapacityEstimate, error) {
	m, ids, warn, err := c.selectModel(ctx, sel)
	if err != nil {
		return api.CapacityEstimate{}, err
	}
	a, err := m.Capacity(q)
	if err != nil {
		return api.CapacityEstimate{}, err
	}
	out := api.CapacityEstimate{
		ContextTokens: a.ContextTokens, MaxConcurrency: a.MaxConcurrency, MaxConcurrencyPossible: a.MaxConcurrencyPossible,
		KVTokensLow: a.KVTokensLow, KVTokensHigh: nonZero(a.KVTokensHigh), SequenceLimit: nonZero(a.SequenceLimit),
		MaxOutputTokens: a.MaxOutputTokens, Basis: basis(a.Basis, calculator.NoSpeed, ids, nil),
		Warnings: append(warn, a.Warnings...),
	}
	if q.Concurrency > 0 {
		out.Concurrency, out.MaxContextTokens = &a.Concurrency, a.MaxContextTokens
	}
	if out.Warnings == nil {
		out.Warnings = []string{}
	}
	return out, nil
}

// maxGridSide bounds each axis of a predicted grid.
const maxGridSide = 16

// Grid answers GET /v1/calculator/grid; nil axes take the run's measured
// ones.
func (c *Calc) Grid(ctx context.Context, sel Selection, contexts, concurrencies []int, base calculator.Query) (api.GridPrediction, error) {
	m, ids, warn, err := c.selectModel(ctx, sel)
	if err != nil {
		return api.GridPrediction{}, err
	}
	measuredL, measuredB := m.MeasuredAxes()
	if contexts == nil {
		contexts = measuredL
	}
	if concurrencies == nil {
		concurrencies = measuredB
	}
	contexts, concurrencies = sortedUnique(contexts), sortedUnique(concurrencies)
	// The spec bounds axes given in the query; a run's own axes can be longer.
	for _, axis := range []struct {
		name string
		n    int
	}{{"contexts", len(contexts)}, {"concurrencies", len(concurrencies)}} {
		if axis.n > maxGridSide {
			return api.GridPrediction{}, invalidParam(axis.name, fmt.Sprintf("a grid has at most %d %s and this run measured %d; name the ones you want", maxGridSide, axis.name, axis.n))
		}
	}
	cells, err := m.Grid(contexts, concurrencies, base)
	if err != nil {
		return api.GridPrediction{}, err
	}
	if warn == nil {
		warn = []string{}
	}
	out := api.GridPrediction{RunIDs: ids, Contexts: contexts, Concurrencies: concurrencies, Warnings: warn,
		Rows: make([]api.GridRow, len(contexts))}
	for i, l := range contexts {
		out.Rows[i] = api.GridRow{ContextTokens: l, Cells: make([]api.GridCell, 0, len(concurrencies))}
	}
	for _, gc := range cells {
		i, _ := slices.BinarySearch(contexts, gc.ContextTokens)
		cell := api.GridCell{Concurrency: gc.Concurrency}
		if gc.Refusal != nil {
			cell.Status, cell.Method, cell.Refusal = "refused", api.GridCellMethod(calculator.NoSpeed), opt(gc.Refusal.Error())
		} else {
			p := gc.Prediction
			cell.Status, cell.Method = api.GridCellStatus(p.Status), api.GridCellMethod(p.Basis)
			cell.TotalTokS, cell.PerRequestTokS, cell.TBTMs, cell.TTFTMs = estimate(p.TotalTokS), estimate(p.PerRequestTokS), estimate(p.TBTMs), estimate(p.TTFTMs)
		}
		out.Rows[i].Cells = append(out.Rows[i].Cells, cell)
	}
	return out, nil
}

// Prefill answers GET /v1/calculator/prefill.
func (c *Calc) Prefill(ctx context.Context, sel Selection, contextTokens int) (api.PrefillPrediction, error) {
	m, ids, warn, err := c.selectModel(ctx, sel)
	if err != nil {
		return api.PrefillPrediction{}, err
	}
	p, err := m.Prefill(contextTokens)
	if err != nil {
		return api.PrefillPrediction{}, err
	}
	out := api.PrefillPrediction{
		ContextTokens: contextTokens, TTFTMs: *estimate(&p.TTFTMs), PromptTokS: *estimate(&p.PromptTokS),
		Basis: basis(p.Basis, calculator.NoSpeed, ids, nil), Warnings: append(warn, p.Warnings...),
	}
	for _, l := range p.Contexts {
		out.Basis.Cells = append(out.Basis.Cells, api.CellRef{ContextTokens: l, Concurrency: 1})
	}
	if out.Warnings == nil {
		out.Warnings = []string{}
	}
	return out, nil
}

// estimate rounds to a thousandth: more digits than any measurement has,
// without float noise (279.15000000000003) in the answer.
func estimate(e *calculator.Estimate) *api.Estimate {
	if e == nil {
		return nil
	}
	r := func(v float64) float64 { return math.Round(v*1000) / 1000 }
	return &api.Estimate{Value: r(e.Value), Low: r(e.Low), High: r(e.High)}
}

func nonZero(n int) *int {
	if n == 0 {
		return nil
	}
	return &n
}

func basis(method, speed calculator.Basis, ids []string, cells []calculator.CellRef) api.CalcBasis {
	b := api.CalcBasis{Method: api.CalcBasisMethod(method), SpeedMethod: api.CalcBasisSpeedMethod(speed), RunIDs: ids, Cells: []api.CellRef{}}
	if speed == calculator.ScaledVRAM || speed == calculator.ScaledGPU || speed == "" {
		b.SpeedMethod = api.CalcBasisSpeedMethod(calculator.NoSpeed)
	}
	for _, c := range cells {
		b.Cells = append(b.Cells, api.CellRef{ContextTokens: c.ContextTokens, Concurrency: c.Concurrency})
	}
	return b
}

func sortedUnique(xs []int) []int {
	out := slices.Clone(xs)
	slices.Sort(out)
	return slices.Compact(out)
}
