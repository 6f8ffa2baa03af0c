// Package assess is the use case of writing runs: every run written is
// checked (package trust, against the hardware catalog and the model facts
// table) and stored with its checks in the same transaction. The HTTP
// layer and the CLI both write through it.
package assess

import (
	"context"
	"fmt"

	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/msg"
	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/trust"
)

// Writer writes runs with their checks.
type Writer struct {
	store  *store.Store
	models *trust.Models
	// corroborate says whether runs written are judged against the
	// stored runs (Corroborate).
	corroborate bool
}

// New returns a Writer over st.
func New(st *store.Store) (*Writer, error) {
	models, err := trust.ModelFacts()
	if err != nil {
		return nil, err
	}
	return &Writer{store: st, models: models, corroborate: true}, nil
}

// WithoutCorroboration is w writing runs without judging them against the
// stored runs: for synthetic runs (matrixd generate, the load benchmark),
// whose numbers corroborate nothing.
func (w *Writer) WithoutCorroboration() *Writer {
	c := *w
	c.corroborate = false
	return &c
}

// judged is run r as stored after its corroboration (r unchanged when it
// was not created, or is gone).
func (w *Writer) judged(ctx context.Context, r store.Run, created bool) (store.Run, error) {
	if !created || !w.corroborate {
		return r, nil
	}
	if _, err := w.Corroborate(ctx, r.ID); err != nil {
		return store.Run{}, err
	}
	out, err := w.store.Run(ctx, r.ID)
	if store.IsGone(err) {
		return r, nil
	}
	if err != nil {
		return store.Run{}, err
	}
	r.Corroboration = out.Corroboration
	return r, nil
}

// Check runs the plausibility checks of r.
func (w *Writer) Check(r store.Run) store.Trust {
	in, gpu, model := w.Inputs(r)
	rep := trust.Assess(in, gpu, model)
	out := store.Trust{Flagged: rep.Flagged, RulesVersion: trust.RulesVersion, Flags: []store.TrustFlag{}, Checks: []store.TrustCheck{}}
	for _, f := range rep.Flags {
		out.Flags = append(out.Flags, store.TrustFlag{Code: f.Code, Message: f.Message, ContextTokens: f.ContextTokens, Concurrency: f.Concurrency,
			Measured: f.Measured, Limit: f.Limit, Unit: f.Unit, MessageCode: f.Notice.Code, MessageParams: f.Notice.Map(), MessageParts: parts(f.Notice)})
	}
	for _, c := range rep.Checks {
		out.Checks = append(out.Checks, store.TrustCheck{Code: c.Code, Status: c.Status, Detail: c.Detail, DetailCode: c.Notice.Code, DetailParams: c.Notice.Map(), DetailParts: parts(c.Notice)})
	}
	return out
}

// parts are the clauses of m that have codes, as the store keeps them.
func parts(m msg.Message) map[string]store.Part {
	var out map[string]store.Part
	for name, p := range m.Parts {
		if p.Code == "" {
			continue
		}
		if out == nil {
			out = map[string]store.Part{}
		}
		out[name] = store.Part{Code: p.Code, Params: p.Map(), Parts: parts(p)}
	}
	return out
}

// Inputs is what the checks read of r: the run, its GPU's catalog entry
// and its model's facts (the table's entry, else the size its name
// states); gpu and model are nil when unknown.
func (w *Writer) Inputs(r store.Run) (trust.Run, *trust.GPU, *trust.Model) {
	m := r.MethodOf()
	in := trust.Run{
		Model: r.Model.Name, Quantization: r.Model.Quantization, KVCacheDtype: r.Launch.KVCacheDtype, Engine: r.Engine.Name, GPU: r.Hardware.GPU,
		TensorParallel:   trust.TensorParallel(r.Launch.Command, r.Launch.Flags),
		PipelineParallel: trust.PipelineParallel(r.Launch.Command, r.Launch.Flags),
		SpecDecode:       trust.SpecDecode(r.Launch.Command, r.Launch.Flags, r.Launch.Notes) || trust.SpecDecodeName(r.Model.Name),
		Class:            m.Class, MeasurementS: m.MeasurementS, OutputTokensPerRequest: m.OutputTokensPerRequest,
	}
	for _, q := range []string{r.Engine.Quantization, trust.LaunchQuantization(r.Launch.Command, r.Launch.Flags)} {
		if in.Quantization == "" {
			in.Quantization = q
		}
	}
	if r.Hardware.GPUCount != nil {
		in.GPUCount = *r.Hardware.GPUCount
	}
	for _, c := range r.Decode {
		if c.Status == store.StatusValid {
			in.Cells = append(in.Cells, trust.Cell{ContextTokens: c.ContextTokens, Concurrency: c.Concurrency,
				TotalTokS: c.TotalTokS, PerRequestTokS: c.PerRequestTokS, TBTMs: c.TBTMs, AvgActiveRequests: c.AvgActiveRequests,
				OutputTokens: c.OutputTokens, CompletedRequests: c.CompletedRequests, DurationS: c.DurationS})
		}
	}
	var gpu *trust.GPU
	if g, ok := calculator.LookupGPU(r.Hardware.GPU); ok && g.BandwidthGBs > 0 {
		gpu = &trust.GPU{Name: g.Name, BandwidthGBs: g.BandwidthGBs}
	}
	var model *trust.Model
	if m, ok := w.models.Lookup(r.Model.Name); ok {
		model = &m
	} else if m, ok := trust.ModelFromName(r.Model.Name); ok {
		model = &m
	}
	return in, gpu, model
}

func (w *Writer) checked(r store.Run) store.Run {
	t := w.Check(r)
	r.Trust = &t
	return r
}

// DefaultLicense is the licence of a run submitted (through the API)
// without one: its submitter dedicates the measurements to the public
// domain, so that the database and its bulk export can be reused without
// attributing each of many submitters (docs/submitting.md).
const DefaultLicense = "CC0-1.0"

// SubmitRun is store.SubmitRun with the run's checks and corroboration, for a run its
// submitter sends: one naming a look-alike of a catalog's GPU or model is
// refused, and one that states no licence is offered under DefaultLicense.
func (w *Writer) SubmitRun(ctx context.Context, r store.Run, idem *store.Idempotency) (store.Run, store.SubmitResult, error) {
	if err := w.refuseLookAlikes(r); err != nil {
		return store.Run{}, store.SubmitResult{}, err
	}
	if r.License == "" {
		r.License = DefaultLicense
	}
	out, res, err := w.store.SubmitRun(ctx, w.checked(r), idem)
	if err != nil {
		return out, res, err
	}
	out, err = w.judged(ctx, out, res.Created && !res.Replayed)
	return out, res, err
}

// CreateRun is store.CreateRun with the run's checks and corroboration
// (and the related runs' judged again); a run naming a
// look-alike is refused.
func (w *Writer) CreateRun(ctx context.Context, r store.Run) (store.Run, bool, error) {
	if err := w.refuseLookAlikes(r); err != nil {
		return store.Run{}, false, err
	}
	out, created, err := w.store.CreateRun(ctx, w.checked(r))
	if err != nil {
		return out, created, err
	}
	out, err = w.judged(ctx, out, created)
	return out, created, err
}

// CreateRuns is store.CreateRuns with each run's checks and the runs
// created judged against each other and the stored runs; one run naming a
// look-alike stores none.
func (w *Writer) CreateRuns(ctx context.Context, runs []store.Run) ([]store.Run, []bool, error) {
	checked := make([]store.Run, len(runs))
	for i, r := range runs {
		if err := w.refuseLookAlikes(r); err != nil {
			if len(runs) > 1 {
				err = fmt.Errorf("run %d of %d: %w", i+1, len(runs), err)
			}
			return nil, nil, err
		}
		checked[i] = w.checked(r)
	}
	out, created, err := w.store.CreateRuns(ctx, checked)
	if err != nil || !w.corroborate {
		return out, created, err
	}
	var ids []string
	for i, r := range out {
		if created[i] {
			ids = append(ids, r.ID)
		}
	}
	if _, err := w.Corroborate(ctx, ids...); err != nil {
		return nil, nil, err
	}
	return out, created, nil
}

// Recheck checks again the runs stored before their checks existed, by
// older rules, or past the checks, and returns their ids: their
// corroboration is to be judged again too (Recorroborate), since a check
// that now flags or clears a run changes what it is a reference of.
func (w *Writer) Recheck(ctx context.Context) ([]string, error) {
	var done []string
	for {
		ids, err := w.store.RunsToCheck(ctx, trust.RulesVersion, 200)
		if err != nil || len(ids) == 0 {
			return done, err
		}
		for _, id := range ids {
			r, err := w.store.Run(ctx, id)
			if err != nil {
				return done, fmt.Errorf("recheck: %w", err)
			}
			if err := w.store.SetTrust(ctx, id, w.Check(r)); err != nil {
				return done, err
			}
			done = append(done, id)
		}
	}
}

// Recorroborate judges runs ids again against the database, one at a
// few at a time (each batch its own transaction, so writes interleave), until done or
// ctx ends; it returns how many it judged and how many changed status.
// A run deleted meanwhile is skipped.
func (w *Writer) Recorroborate(ctx context.Context, ids []string) (judged, changed int, err error) {
	for len(ids) > 0 {
		if err := ctx.Err(); err != nil {
			return judged, changed, err
		}
		// A few at a time: their peers are read once for the batch, and
		// each batch's statuses are one short transaction.
		n := min(len(ids), recorroborateBatch)
		ch, err := w.Corroborate(ctx, ids[:n]...)
		if err != nil {
			return judged, changed, err
		}
		judged, changed, ids = judged+n, changed+len(ch), ids[n:]
	}
	return judged, changed, nil
}

// recorroborateBatch is how many runs Recorroborate judges in one
// transaction.
const recorroborateBatch = 20
