// Package predict is the calculator's use case: it chooses the stored run
// a question is about, keeps each run's fit, and answers in the
// calculator's terms. The HTTP layer and the CLI both call it; neither
// fits nor reads runs themselves.
package predict

import (
	"cmp"
	"container/list"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/msg"
	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/trust"
)

// Service answers calculator questions from stored runs. Each run is
// fitted once and kept while the fits kept hold no more than a bound in
// bytes, the least recently used dropped first: run ids are derived from
// content, so a changed run is a new id and a cached fit never goes stale,
// and a dropped one is fitted again when next asked for.
type Service struct {
	store    *store.Store
	maxBytes int64

	mu   sync.Mutex
	fits map[string]*fitCall
	lru  *list.List // of *fitCall, the most recently used first
	// bytes is what the fits done and kept hold; one being made counts
	// nothing until it is done, and at most one per CPU is (slots).
	bytes int64
	onFit func(time.Duration)
	// slots bounds the fits made at once (one per CPU): more would only
	// share the CPUs, each taking longer, all past their deadline.
	slots chan struct{}
	// planBudget bounds how long a plan waits for fits (planFitBudget);
	// fitWait how long any other answer waits for its run's fit
	// (defaultFitWait). Negative: until it is made.
	planBudget, fitWait time.Duration
	// now is the clock a search's budget is counted on (time.Now).
	now func() time.Time
	// onError, when set, is told of what went wrong in the background
	// (a fit that could not be stored).
	onError func(error)
	// facts is the model facts table cross-model answers read; factsErr
	// why it could not be read (then they are not made).
	facts    *trust.Models
	factsErr error

	// base is the context every fit is made under; Close cancels it and
	// waits for the fits being made (inflight) to end, so that none
	// writes to a store closed under it.
	base     context.Context
	stop     context.CancelFunc
	closed   bool
	inflight sync.WaitGroup
}

// ErrClosed answers a question asked of a Service after Close.
var ErrClosed = errors.New("the calculator is shutting down")

// Fitting is an answer that waited for its run's fit as long as it may:
// the fit goes on in the background, and asking again after RetryAfter
// gets the answer.
type Fitting struct {
	RunID string
	// Queued is how many fits were not yet done when the answer gave up.
	Queued     int
	RetryAfter time.Duration
}

func (e *Fitting) Error() string {
	return fmt.Sprintf("run %s is being fitted (%d %s in progress or queued, each up to about a second per CPU): ask again in %d s",
		e.RunID, e.Queued, plural(e.Queued, "fit", "fits"), int(e.RetryAfter.Round(time.Second)/time.Second))
}

// fitCall is one run's fit; done closes when model and err are set, so
// concurrent first requests wait for one fit instead of each fitting.
type fitCall struct {
	key   string
	done  chan struct{}
	model *calculator.Model
	err   error
	// elem is the call's place in the Service's lru; bytes what it holds
	// once done and kept (0 while it is being made).
	elem  *list.Element
	bytes int64
}

// entryBytes is what keeping a fit costs beside the model: the call, its
// key, its map slot and list element (a refusal holds only these).
const entryBytes = 256

// DefaultCacheBytes is the bytes of fits a Service keeps unless told
// otherwise: about 120 fits of the largest grid a run may have (64 × 64,
// about 2.1 MB each) or thousands of published runs' (a few tens of KB).
const DefaultCacheBytes = 256 << 20

// maxFitTime bounds one fit, from when it gets a CPU; the largest grid a
// run may have fits in about a second.
const maxFitTime = 20 * time.Second

// defaultFitWait is how long an answer waits for its run's fit before it
// says the run is being fitted: well within a client's patience and the
// server's write timeout.
const defaultFitWait = 10 * time.Second

// Warm fits run id in the background, so that its first reader does not
// wait for the fit.
func (c *Service) Warm(id string) { c.start(id, nil) }

// SetFitWait sets how long an answer waits for its run's fit
// (defaultFitWait by default); negative waits until it is made, as a
// one-shot command does. Set it before the first answer.
func (c *Service) SetFitWait(d time.Duration) { c.fitWait = d }

// Forget drops every fit run id is part of: the run was deleted.
func (c *Service) Forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, call := range c.fits {
		if slices.Contains(strings.Split(key, "+"), id) {
			c.drop(call)
		}
	}
}

// New returns a calculator over st that keeps fitted runs holding up to
// maxBytes (see calculator.Model.Bytes; none when it is 0 or less, so that
// every answer fits its run); onFit, when not nil, is told how long each
// fit took.
func New(st *store.Store, maxBytes int64, onFit func(time.Duration)) *Service {
	facts, err := trust.ModelFacts()
	base, stop := context.WithCancel(context.Background())
	return &Service{store: st, maxBytes: maxBytes, fits: map[string]*fitCall{}, lru: list.New(), onFit: onFit,
		slots: make(chan struct{}, runtime.GOMAXPROCS(0)), planBudget: planFitBudget, fitWait: defaultFitWait, now: time.Now,
		facts: facts, factsErr: err, base: base, stop: stop}
}

// SetClock sets the clock a plan's or predicted ranking's fit budget is
// counted on (time.Now by default). Set it before the first answer.
func (c *Service) SetClock(now func() time.Time) { c.now = now }

// SetFitObserver sets what is told how long each fit took. Set it before
// the first answer.
func (c *Service) SetFitObserver(f func(time.Duration)) { c.onFit = f }

// Close stops the fits being made (a fit done by then is still stored)
// and waits for them to end; later questions get ErrClosed. Call it
// before closing the store.
func (c *Service) Close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.stop()
	c.inflight.Wait()
}

// ModelFacts is the model facts table the Service's cross-model answers
// read.
func (c *Service) ModelFacts() (*trust.Models, error) { return c.facts, c.factsErr }

// CacheStats are the fits kept (done, not being made) and the bytes they
// hold.
func (c *Service) CacheStats() (fits int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, call := range c.fits {
		if call.bytes > 0 {
			fits++
		}
	}
	return fits, c.bytes
}

// Selection names the run to model: RunID, or Model and GPU (optionally
// narrowed by EngineVersion and KVCacheDtype).
type Selection struct {
	RunID         string
	Model         string
	GPU           string
	EngineVersion string
	KVCacheDtype  string
	// IncludeFlagged lets runs a plausibility check flagged be chosen and
	// pooled by model and gpu; they are left out by default.
	IncludeFlagged bool
}

// maxCandidates bounds how many runs a model+gpu selection considers.
const maxCandidates = 50

// Ambiguous is a model+gpu selection that matched runs that cannot share
// a speed surface: Differ names the settings they differ in.
type Ambiguous struct {
	Selection  Selection
	Differ     []string
	Candidates []store.RunConfig
}

func (e *Ambiguous) Error() string {
	// Only a filter the runs differ in, and that is not given yet, can
	// tell them apart.
	var narrow []string
	for _, f := range []struct {
		name  string
		given bool
	}{{"engine_version", e.Selection.EngineVersion != ""}, {"kv_cache_dtype", e.Selection.KVCacheDtype != ""}} {
		if slices.Contains(e.Differ, f.name) && !f.given {
			narrow = append(narrow, f.name)
		}
	}
	how := "pick one with run_id"
	if len(narrow) > 0 {
		how += ", or narrow with " + strings.Join(narrow, " or ")
	}
	return fmt.Sprintf("%d runs match model %q on GPU %q but differ in %s, which changes the answer; %s",
		len(e.Candidates), clip(e.Selection.Model), clip(e.Selection.GPU), strings.Join(e.Differ, ", "), how)
}

// orNone names a setting a run may not state.
func orNone(v string) string {
	if v == "" {
		return "(not stated)"
	}
	return v
}

// clip shortens what a message repeats of the caller's input.
func clip(s string) string {
	if r := []rune(s); len(r) > 64 {
		return string(r[:64]) + "…"
	}
	return s
}

func invalidParam(field, message string) error {
	return &store.FieldError{Field: field, Message: message}
}

// invalidParamSays is invalidParam with a message that has a code.
func invalidParamSays(field string, m msg.Message) error {
	return &store.FieldError{Field: field, Message: m.Text, Code: m.Code, Params: m.Map()}
}

// capacityOnly are the settings that change how much fits, not how fast
// it runs: runs differing only in them share one speed surface.
func capacityOnly(field string) bool {
	return field == "max_model_len" || field == "gpu_memory_utilization"
}

// maxShared bounds the runs whose cells inform one speed surface.
const maxShared = 8

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

// selectRun returns the sources an answer pools (the one whose status and
// capacity it keeps first): the run asked by run_id alone, or the
// independent sources of the model and GPU asked.
func (c *Service) selectRun(ctx context.Context, sel Selection) ([]source, []msg.Message, error) {
	byName := sel.Model != "" || sel.GPU != ""
	switch {
	case sel.RunID != "" && byName:
		return nil, nil, invalidParamSays("run_id", msg.New("predict.run_or_model_gpu"))
	case sel.RunID != "":
		// The fit of a run is kept by its id; the run may have been deleted
		// since, through this instance or another.
		cfg, err := c.store.RunConfigOf(ctx, sel.RunID)
		if err != nil {
			return nil, nil, err
		}
		// A filter beside run_id that the run does not match would be
		// answered from a run it excludes: say so rather than ignore it.
		if sel.EngineVersion != "" && !strings.EqualFold(sel.EngineVersion, cfg.EngineVersion) {
			return nil, nil, invalidParam("engine_version", fmt.Sprintf("run %s is of engine version %s, not %q: leave engine_version out with run_id, or choose the run by model and gpu",
				sel.RunID, orNone(cfg.EngineVersion), clip(sel.EngineVersion)))
		}
		if sel.KVCacheDtype != "" && !strings.EqualFold(sel.KVCacheDtype, cfg.KVCacheDtype) {
			return nil, nil, invalidParam("kv_cache_dtype", fmt.Sprintf("run %s has KV cache dtype %s, not %q: leave kv_cache_dtype out with run_id, or choose the run by model and gpu",
				sel.RunID, orNone(cfg.KVCacheDtype), clip(sel.KVCacheDtype)))
		}
		var warn []msg.Message
		if cfg.Flagged {
			warn = append(warn, flaggedWarning(sel.RunID))
		}
		return []source{{id: sel.RunID}}, warn, nil
	case sel.Model == "" || sel.GPU == "":
		field := "model"
		if sel.Model != "" {
			field = "gpu"
		}
		return nil, nil, invalidParamSays(field, msg.New("predict.select_run"))
	}
	// Flagged runs failed a plausibility check: they inform no answer
	// unless asked for.
	f, err := c.WithGPU(ctx, store.RunFilter{Model: sel.Model, EngineVersion: sel.EngineVersion, KVCacheDtype: sel.KVCacheDtype, ExcludeFlagged: !sel.IncludeFlagged}, sel.GPU)
	if err != nil {
		return nil, nil, err
	}
	configs, more, err := c.store.RunConfigs(ctx, f, maxCandidates)
	if err != nil {
		return nil, nil, err
	}
	if len(configs) == 0 {
		// selectOrOther says why (noRun) when no other model answers.
		return nil, nil, &store.Error{Kind: store.ErrNotFound, Msg: fmt.Sprintf("no run of a model matching %q on GPU %q", clip(sel.Model), clip(sel.GPU))}
	}
	var warn []msg.Message
	if sel.IncludeFlagged {
		n := 0
		for _, cfg := range configs {
			if cfg.Flagged {
				n++
			}
		}
		if n > 0 {
			warn = append(warn, msg.New(plural(n, "predict.flagged_included_one", "predict.flagged_included"), n))
		}
	}
	// Runs of another method class than the newest measured something
	// else: they share no surface with it.
	class, kept := configs[0].MethodClass, configs[:0:0]
	for _, cfg := range configs {
		if cfg.MethodClass == class {
			kept = append(kept, cfg)
		}
	}
	if n := len(configs) - len(kept); n > 0 {
		warn = append(warn, msg.New(plural(n, "predict.other_class_left_out_one", "predict.other_class_left_out"), n, class))
	}
	configs = kept
	first := configFields(configs[0])
	var differ, capacity []string
	for _, cfg := range configs[1:] {
		for i, kv := range configFields(cfg) {
			switch {
			case kv[1] == first[i][1]:
			case capacityOnly(kv[0]):
				if !slices.Contains(capacity, kv[0]) {
					capacity = append(capacity, kv[0])
				}
			case !slices.Contains(differ, kv[0]):
				differ = append(differ, kv[0])
			}
		}
	}
	if len(differ) > 0 {
		return nil, nil, &Ambiguous{Selection: sel, Differ: differ, Candidates: configs}
	}
	ids := make([]string, len(configs))
	for i, cfg := range configs {
		ids[i] = cfg.ID
	}
	srcs, copyWarn, err := c.sources(ctx, ids)
	if err != nil {
		return nil, nil, err
	}
	warn = append(warn, copyWarn...)
	if len(srcs) > maxSources {
		warn = append(warn, msg.New("predict.more_sources", maxSources, maxSources))
		srcs = srcs[:maxSources]
	}
	if len(capacity) > 0 && len(ids) > 1 {
		warn = append(warn, msg.New("predict.capacity_fields_differ", strings.Join(capacity, " and "), srcs[0].id))
	}
	if more {
		warn = append(warn, msg.New("predict.more_candidates", maxCandidates))
	}
	return srcs, warn, nil
}

// flaggedWarning is what an answer from flagged run id says of it.
func flaggedWarning(id string) msg.Message {
	return msg.New("predict.flagged_run", id)
}

// model returns the fit of run id (with the valid cells of shared informing
// its speed), waiting for it at most c.fitWait: then *Fitting.
func (c *Service) model(ctx context.Context, id string, shared ...string) (*calculator.Model, error) {
	return c.modelWithin(ctx, c.fitWait, id, shared...)
}

// modelWithin is model waiting at most wait (negative: until it is made).
// One fit per run is made, in the background, shared by every caller: a
// caller going away or giving up does not stop it.
func (c *Service) modelWithin(ctx context.Context, wait time.Duration, id string, shared ...string) (*calculator.Model, error) {
	call := c.start(id, shared)
	select {
	case <-call.done: // made already: answered whatever the wait
		return call.model, call.err
	default:
	}
	var timeout <-chan time.Time
	if wait >= 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-call.done:
		return call.model, call.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-timeout:
		return nil, &Fitting{RunID: id, Queued: c.pending(), RetryAfter: max(time.Second, wait/2)}
	}
}

// start returns the fit of id with shared, beginning it when there is none.
func (c *Service) start(id string, shared []string) *fitCall {
	key := strings.Join(append([]string{id}, shared...), "+")
	c.mu.Lock()
	defer c.mu.Unlock()
	if call, ok := c.fits[key]; ok {
		c.lru.MoveToFront(call.elem)
		return call
	}
	call := &fitCall{key: key, done: make(chan struct{})}
	if c.closed {
		call.err = ErrClosed
		close(call.done)
		return call
	}
	call.elem = c.lru.PushFront(call)
	c.fits[key] = call
	c.inflight.Add(1)
	go c.fit(call, id, shared)
	return call
}

// keep counts call, done, in the fits kept and drops the least recently
// used done ones until they fit in c.maxBytes. A fit larger than the bound
// by itself is not kept: its callers have it, the next one fits it again.
// A call no longer in c.fits (forgotten while it was made) stays out.
func (c *Service) keep(call *fitCall) {
	if c.fits[call.key] != call {
		return
	}
	size := int64(entryBytes + len(call.key))
	if call.model != nil {
		size += call.model.Bytes()
	}
	if size > c.maxBytes {
		c.drop(call)
		return
	}
	call.bytes = size
	c.bytes += size
	for e := c.lru.Back(); e != nil && c.bytes > c.maxBytes; {
		old := e.Value.(*fitCall)
		e = e.Prev()
		if old.bytes > 0 { // one being made holds nothing yet and is waited for
			c.drop(old)
		}
	}
}

// drop removes call from the fits kept or being made.
func (c *Service) drop(call *fitCall) {
	delete(c.fits, call.key)
	c.lru.Remove(call.elem)
	c.bytes -= call.bytes
	call.bytes = 0
}

// pending counts the fits not yet done.
func (c *Service) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, call := range c.fits {
		select {
		case <-call.done:
		default:
			n++
		}
	}
	return n
}

// fit makes call's fit once a CPU slot is free, within maxFitTime of
// getting it. A failed one (not a refusal to fit) is not kept: the next
// caller tries again.
func (c *Service) fit(call *fitCall, id string, shared []string) {
	defer c.inflight.Done()
	select {
	case c.slots <- struct{}{}:
		defer func() { <-c.slots }()
	case <-c.base.Done(): // closing: the fit ends at once, unmade
	}
	ctx, cancel := context.WithTimeout(c.base, maxFitTime)
	defer cancel()
	r, err := c.load(ctx, id, shared)
	if err == nil {
		start := time.Now()
		call.model, call.err = c.fitOrRebuild(ctx, id, shared, r)
		err = call.err
		if c.onFit != nil {
			c.onFit(time.Since(start))
		}
	} else {
		call.err = err
	}
	c.mu.Lock()
	switch {
	case err == nil || errors.Is(err, calculator.ErrRefused):
		c.keep(call)
	case c.fits[call.key] == call:
		c.drop(call)
	}
	c.mu.Unlock()
	close(call.done)
}

// load reads run id, with the valid cells of shared as its shared speed
// cells.
func (c *Service) load(ctx context.Context, id string, shared []string) (calculator.Run, error) {
	r, err := c.store.Run(ctx, id)
	if err != nil {
		return calculator.Run{}, err
	}
	out := Run(r)
	for _, sid := range shared {
		s, err := c.store.Run(ctx, sid)
		if err != nil {
			return calculator.Run{}, err
		}
		for _, cell := range Run(s).Decode {
			if cell.Status == calculator.CellValid {
				out.SharedSpeed = append(out.SharedSpeed, cell)
			}
		}
	}
	return out, nil
}

// pool is what an answer stands on: the fit of each source that could be
// modelled (the first's status and capacity are kept), the sources' runs
// in the same order, then the runs whose cells they share, and what the
// caller should know of the selection.
type pool struct {
	models []*calculator.Model
	ids    []string
	shared []string
	warn   []msg.Message
	other  *otherModel
}

// runIDs are the sources' runs, those of the sources at used (indexes
// into p.models, the first kept) first, then the runs they share cells
// with.
func (p pool) runIDs(used []int) []string {
	out := make([]string, 0, len(p.ids)+len(p.shared))
	for _, i := range used {
		out = append(out, p.ids[i])
	}
	return append(out, p.shared...)
}

// selectOrOther selects the sources to model for the calculator's
// questions (decode, grid, capacity, prefill): a model and GPU with no run
// of the model there are answered from the nearest run of another model on
// the GPU (see otherModelRun), which pool.other describes (nil for the
// model's own runs). A source whose run refuses to be modelled is left out
// while another can be.
func (c *Service) selectOrOther(ctx context.Context, sel Selection) (pool, error) {
	srcs, warn, err := c.selectRun(ctx, sel)
	if err == nil {
		p := pool{warn: warn}
		var refusal error
		for _, s := range srcs {
			m, err := c.model(ctx, s.id, s.shared...)
			if errors.Is(err, calculator.ErrRefused) {
				refusal = cmp.Or(refusal, err)
				continue
			}
			if err != nil {
				return pool{}, err
			}
			p.models, p.ids, p.shared = append(p.models, m), append(p.ids, s.id), append(p.shared, s.shared...)
		}
		if len(p.models) == 0 {
			return pool{}, refusal
		}
		if n := len(srcs) - len(p.models); n > 0 {
			p.warn = append(p.warn, msg.New(plural(n, "predict.sources_not_modelled_one", "predict.sources_not_modelled"), n))
		}
		return p, nil
	}
	var se *store.Error
	if sel.RunID != "" || !errors.As(err, &se) || se.Kind != store.ErrNotFound {
		return pool{}, err
	}
	src, other, why, oerr := c.otherModelRun(ctx, sel)
	if errors.Is(oerr, errNoOtherModel) {
		return pool{}, c.noRun(ctx, sel)
	}
	if oerr != nil {
		return pool{}, oerr
	}
	m, err := c.model(ctx, src)
	if err != nil {
		return pool{}, err
	}
	return pool{models: []*calculator.Model{m}, ids: []string{src}, warn: []msg.Message{why}, other: &other}, nil
}

// refused is err, a refusal of the run answering for o's model, saying
// whose run it is and why it answers (the refusal's own "this run" is
// another model's); any other error, or an answer from the model's own
// runs (o nil), as it is.
func (o *otherModel) refused(err error, sel Selection, ids []string) error {
	var ref *calculator.Refusal
	if o == nil || !errors.As(err, &ref) {
		return err
	}
	return calculator.NewRefusal(msg.New("predict.other_model_run_refuses", o.to.Name, clip(sel.GPU), ids[0], o.from.Name, ref.Reason), ref.SupportedMessage)
}

// queryRatios are the ratios a query for o sets as its OtherModel (none
// for the model's own runs).
func (o *otherModel) queryRatios() calculator.ModelRatios {
	if o == nil {
		return calculator.ModelRatios{}
	}
	return o.ratios
}

// Answer is a calculator answer with the runs it stands on (the modelled
// one first), how many independent sources it pools, and what the caller
// should know about the selection.
type Answer[T any] struct {
	Result   T
	RunIDs   []string
	Sources  int
	Warnings []msg.Message
}

// pooledWarning names the sources an answer pooled (ids, the first's
// status and capacity kept) and, where they differ by more than their own
// bands (spread beyond ownBand), says the interval holds each.
func pooledWarning(ids []string, spread, ownBand float64) []msg.Message {
	if len(ids) < 2 {
		return nil
	}
	out := []msg.Message{msg.New("predict.pooled", len(ids), strings.Join(ids, ", "), ids[0])}
	if spread > ownBand {
		out = append(out, msg.New("predict.sources_disagree", 100*spread))
	}
	return out
}

// Decode predicts one decode cell, pooling the independent sources asked
// by model and GPU; a model with no run on the GPU, from another model's
// run there (basis scaled_model).
func (c *Service) Decode(ctx context.Context, sel Selection, q calculator.Query) (Answer[calculator.Prediction], error) {
	p, err := c.selectOrOther(ctx, sel)
	if err != nil {
		return Answer[calculator.Prediction]{}, err
	}
	q.OtherModel = p.other.queryRatios()
	var preds []calculator.Prediction
	var used []int
	var first error
	for i, m := range p.models {
		pr, err := m.Decode(q)
		if err != nil {
			first = cmp.Or(first, err)
			continue
		}
		preds, used = append(preds, pr), append(used, i)
	}
	if len(preds) == 0 {
		return Answer[calculator.Prediction]{RunIDs: p.runIDs([]int{0}), Sources: 1, Warnings: p.warn}, p.other.refused(first, sel, p.ids)
	}
	res, spread := calculator.PoolSources(preds)
	ids := p.runIDs(used)
	warn := append(p.warn, pooledWarning(ids[:len(used)], spread, meanTotalBand(preds))...)
	return Answer[calculator.Prediction]{Result: res, RunIDs: ids, Sources: len(used), Warnings: warn}, nil
}

// meanTotalBand is the mean of the predictions' own total tok/s bands.
func meanTotalBand(ps []calculator.Prediction) float64 {
	var sum float64
	for _, p := range ps {
		sum += p.BandTotal
	}
	return sum / float64(len(ps))
}

// Capacity answers the KV-capacity question at q's context, from the first
// source (capacity is a launch's, not pooled); a model with no run on the
// GPU, from another model's run there (basis scaled_model).
func (c *Service) Capacity(ctx context.Context, sel Selection, q calculator.Query) (Answer[calculator.CapacityAnswer], error) {
	p, err := c.selectOrOther(ctx, sel)
	if err != nil {
		return Answer[calculator.CapacityAnswer]{}, err
	}
	q.OtherModel = p.other.queryRatios()
	a, err := p.models[0].Capacity(q)
	warn := p.warn
	if len(p.ids) > 1 {
		warn = append(warn, msg.New("predict.capacity_first_source", len(p.ids), p.ids[0]))
	}
	return Answer[calculator.CapacityAnswer]{Result: a, RunIDs: p.runIDs([]int{0}), Sources: 1, Warnings: warn}, p.other.refused(err, sel, p.ids)
}

// MaxGridSide bounds each axis of a predicted grid.
const MaxGridSide = 16

// Grid is a predicted grid: its axes, sorted, and a cell per pair.
type Grid struct {
	Contexts, Concurrencies []int
	Cells                   []calculator.GridCell
}

// Grid predicts a grid, each cell pooled over the sources that answer it;
// nil axes take the first source's measured ones.
func (c *Service) Grid(ctx context.Context, sel Selection, contexts, concurrencies []int, base calculator.Query) (Answer[Grid], error) {
	p, err := c.selectOrOther(ctx, sel)
	if err != nil {
		return Answer[Grid]{}, err
	}
	base.OtherModel = p.other.queryRatios()
	measuredL, measuredB := p.models[0].MeasuredAxes()
	askedL, askedB := contexts != nil, concurrencies != nil
	if !askedL {
		contexts = measuredL
	}
	if !askedB {
		concurrencies = measuredB
	}
	contexts, concurrencies = sortedUnique(contexts), sortedUnique(concurrencies)
	// The API bounds axes given in a query, but not every caller goes
	// through it; a run's own axes can be longer.
	for _, axis := range []struct {
		name  string
		asked bool
		n     int
	}{{"contexts", askedL, len(contexts)}, {"concurrencies", askedB, len(concurrencies)}} {
		switch {
		case axis.n <= MaxGridSide:
		case axis.asked:
			return Answer[Grid]{}, invalidParam(axis.name, fmt.Sprintf("a grid has at most %d %s, and %d were asked", MaxGridSide, axis.name, axis.n))
		default:
			return Answer[Grid]{}, invalidParam(axis.name, fmt.Sprintf("a grid has at most %d %s and this run measured %d; name the ones you want", MaxGridSide, axis.name, axis.n))
		}
	}
	cells, scaling, err := p.models[0].Grid(contexts, concurrencies, base)
	if err != nil {
		return Answer[Grid]{Result: Grid{Contexts: contexts, Concurrencies: concurrencies, Cells: cells}, RunIDs: p.runIDs([]int{0}), Sources: 1, Warnings: append(p.warn, scaling...)}, err
	}
	used := []int{0}
	grids := [][]calculator.GridCell{cells}
	for i, m := range p.models[1:] {
		more, _, err := m.Grid(contexts, concurrencies, base)
		if err != nil {
			continue // a source that cannot answer this grid informs none of its cells
		}
		grids, used = append(grids, more), append(used, i+1)
	}
	var spread float64
	for k := range cells {
		var preds []calculator.Prediction
		for _, g := range grids {
			if g[k].Refusal == nil {
				preds = append(preds, g[k].Prediction)
			}
		}
		if len(preds) == 0 {
			continue
		}
		var s float64
		cells[k].Prediction, s = calculator.PoolSources(preds)
		cells[k].Refusal = nil
		spread = max(spread, s)
	}
	ids := p.runIDs(used)
	var warn []msg.Message
	if len(used) > 1 {
		warn = []msg.Message{msg.New("predict.grid_pooled", len(used), strings.Join(ids[:len(used)], ", "))}
	}
	return Answer[Grid]{Result: Grid{Contexts: contexts, Concurrencies: concurrencies, Cells: cells}, RunIDs: ids, Sources: len(used),
		Warnings: append(append(p.warn, warn...), scaling...)}, nil
}

// Prefill predicts cold prefill at contextTokens, pooled over the sources
// that answer it; a model with no run on the GPU, from another model's run
// there, scaled by FLOPs (basis scaled_model).
func (c *Service) Prefill(ctx context.Context, sel Selection, contextTokens int) (Answer[calculator.PrefillPrediction], error) {
	p, err := c.selectOrOther(ctx, sel)
	if err != nil {
		return Answer[calculator.PrefillPrediction]{}, err
	}
	if p.other != nil {
		var pr calculator.PrefillPrediction
		if err = p.other.prefillFacts(); err == nil {
			pr, err = p.models[0].PrefillOtherModel(contextTokens, p.other.ratios)
		}
		return Answer[calculator.PrefillPrediction]{Result: pr, RunIDs: p.ids, Sources: 1, Warnings: p.warn}, p.other.refused(err, sel, p.ids)
	}
	var preds []calculator.PrefillPrediction
	var used []int
	var first error
	for i, m := range p.models {
		pr, err := m.Prefill(contextTokens)
		if err != nil {
			first = cmp.Or(first, err)
			continue
		}
		preds, used = append(preds, pr), append(used, i)
	}
	if len(preds) == 0 {
		return Answer[calculator.PrefillPrediction]{RunIDs: p.runIDs([]int{0}), Sources: 1, Warnings: p.warn}, first
	}
	ids := p.runIDs(used)
	warn := p.warn
	if len(used) > 1 {
		warn = append(warn, msg.New("predict.prefill_pooled", len(used), strings.Join(ids[:len(used)], ", ")))
	}
	return Answer[calculator.PrefillPrediction]{Result: calculator.PoolPrefill(preds), RunIDs: ids, Sources: len(used), Warnings: warn}, nil
}

func sortedUnique(xs []int) []int {
	out := slices.Clone(xs)
	slices.Sort(out)
	return slices.Compact(out)
}

// noRunSample bounds the runs a no-run message reads to name the values
// they have.
const noRunSample = 8

// noRun is the not-found error of a model and GPU selection that matched
// no run, naming what excluded the runs of the model on the GPU: a filter
// none of them matches (and what they have), or the plausibility check,
// and for a GPU the catalog does not know, the names near it. Each lookup
// is one indexed query of a few rows.
func (c *Service) noRun(ctx context.Context, sel Selection) error {
	notFound := func(msg string) error { return &store.Error{Kind: store.ErrNotFound, Msg: msg} }
	base, err := c.WithGPU(ctx, store.RunFilter{Model: sel.Model}, sel.GPU)
	if err != nil {
		return err
	}
	sample, _, err := c.store.RunConfigs(ctx, base, noRunSample)
	if err != nil {
		return err
	}
	gpu := fmt.Sprintf("GPU %q", clip(sel.GPU))
	if spec, ok := calculator.LookupGPU(sel.GPU); ok {
		gpu = spec.Name
	}
	if len(sample) == 0 {
		msg := fmt.Sprintf("no run of a model matching %q on GPU %q", clip(sel.Model), clip(sel.GPU))
		if why, err := c.othersExcluded(ctx, sel); err != nil {
			return err
		} else if why != "" {
			msg += "; " + why
		}
		if _, ok := calculator.LookupGPU(sel.GPU); !ok {
			msg += ", and the hardware catalog has no GPU of that name"
			if sug := calculator.Hardware().Suggest(sel.GPU, 6); len(sug) > 0 {
				msg += ": did you mean " + strings.Join(sug, ", ") + "?"
			} else {
				msg += " (GET /v1/hardware lists them)"
			}
		}
		return notFound(msg)
	}
	type filter struct {
		name, value string
		set         func(*store.RunFilter)
		of          func(store.RunConfig) string
	}
	var given []filter
	if sel.EngineVersion != "" {
		given = append(given, filter{"engine_version", sel.EngineVersion,
			func(f *store.RunFilter) { f.EngineVersion = sel.EngineVersion }, func(r store.RunConfig) string { return r.EngineVersion }})
	}
	if sel.KVCacheDtype != "" {
		given = append(given, filter{"kv_cache_dtype", sel.KVCacheDtype,
			func(f *store.RunFilter) { f.KVCacheDtype = sel.KVCacheDtype }, func(r store.RunConfig) string { return r.KVCacheDtype }})
	}
	exist := fmt.Sprintf("runs of a model matching %q on %s exist, but", clip(sel.Model), gpu)
	var excluded []string
	for _, g := range given {
		f := base
		g.set(&f)
		some, _, err := c.store.RunConfigs(ctx, f, 1)
		if err != nil {
			return err
		}
		if len(some) > 0 {
			continue
		}
		var have []string
		for _, r := range sample {
			if v := orNone(g.of(r)); !slices.Contains(have, v) {
				have = append(have, v)
			}
		}
		excluded = append(excluded, fmt.Sprintf("none with %s %s; they have %s", g.name, clip(g.value), strings.Join(clipAll(have, 4), ", ")))
	}
	if len(excluded) > 0 {
		return notFound(exist + " " + strings.Join(excluded, ", and "))
	}
	if len(given) > 1 {
		f := base
		for _, g := range given {
			g.set(&f)
		}
		if some, _, err := c.store.RunConfigs(ctx, f, 1); err != nil || len(some) == 0 {
			return cmp.Or(err, notFound(fmt.Sprintf("%s none with both engine_version %s and kv_cache_dtype %s: each matches other runs", exist, clip(sel.EngineVersion), clip(sel.KVCacheDtype))))
		}
	}
	// Runs match every filter: a plausibility check flagged each of them,
	// or independent runs dispute it.
	return notFound(exist + " a plausibility check flagged each that matches, or independent runs dispute it (flagged and disputed runs are left out; include_flagged=true brings them back)")
}

// othersExcluded says, for a model with no run on sel's GPU, which of
// sel's filters left out the runs of other models there that could have
// answered it scaled ("" when none did).
func (c *Service) othersExcluded(ctx context.Context, sel Selection) (string, error) {
	if sel.EngineVersion == "" && sel.KVCacheDtype == "" {
		return "", nil
	}
	base, err := c.WithGPU(ctx, store.RunFilter{ExcludeFlagged: !sel.IncludeFlagged}, sel.GPU)
	if err != nil {
		return "", err
	}
	others, _, err := c.store.RunConfigs(ctx, base, noRunSample)
	if err != nil || len(others) == 0 {
		return "", err
	}
	f := base
	f.EngineVersion, f.KVCacheDtype = sel.EngineVersion, sel.KVCacheDtype
	if some, _, err := c.store.RunConfigs(ctx, f, 1); err != nil || len(some) > 0 {
		return "", err
	}
	var asked, have []string
	if sel.EngineVersion != "" {
		asked = append(asked, "engine_version "+clip(sel.EngineVersion))
	}
	if sel.KVCacheDtype != "" {
		asked = append(asked, "kv_cache_dtype "+clip(sel.KVCacheDtype))
	}
	for _, r := range others {
		var v []string
		if sel.EngineVersion != "" {
			v = append(v, orNone(r.EngineVersion))
		}
		if sel.KVCacheDtype != "" {
			v = append(v, orNone(r.KVCacheDtype))
		}
		if s := strings.Join(v, " / "); !slices.Contains(have, s) {
			have = append(have, s)
		}
	}
	return fmt.Sprintf("runs of other models there, which could answer it scaled, have none with %s (they have %s)",
		strings.Join(asked, " and "), strings.Join(clipAll(have, 4), ", ")), nil
}
