package trust

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/matrixd/matrixd/msg"
)

// Corroboration statuses: a run judged against the independent runs of
// the database.
const (
	StatusCorroborated   = "corroborated"
	StatusUncorroborated = "uncorroborated"
	StatusDisputed       = "disputed"
)

// Reference kinds: what a run is compared with.
const (
	// RefSameConfig is another run of the same model, GPU, GPU count,
	// engine family and weight width, compared cell for cell.
	RefSameConfig = "same_config"
	// RefCrossGPU is the calculator's estimate from a run of the same
	// model, engine family and weight width on another GPU: its cells
	// scaled by the ratio of the GPUs' memory bandwidths.
	RefCrossGPU = "cross_gpu"
	// RefCrossModel is the calculator's estimate from a run of another
	// model on the same GPU, with the same engine family and weight width:
	// its cells scaled by the ratio of the models' active parameters (the
	// weights one token reads).
	RefCrossModel = "cross_model"
	// RefCopy is an earlier run whose cells this run's are, under another
	// model or GPU name: not a reference but the original.
	RefCopy = "copy"
)

// Bound is how far (as a factor, ≥ 1) a run may sit from one kind of
// reference: within Agree it agrees, beyond Dispute it disagrees, between
// it says neither.
type Bound struct {
	Kind           string
	Agree, Dispute float64
}

// Bounds are the measured spreads of each reference kind, over every
// pair of comparable real runs that are not near-copies among the real
// runs of the repository (the bundled pages, ingest/testdata's corpus,
// series and sparse grids, and the open dataset data/): the factor (the
// metric departing most of total and per-request speed) between a run and
// the range a run on another GPU allows at concurrency 1 (its speed to its
// speed scaled by memory bandwidth: 68 comparisons, p90 1.18, max 1.24),
// and the range a run of another model on the same GPU allows (scaled by
// active parameters: 194 comparisons, p90 1.16, max 1.68). Agree is the
// 90th percentile rounded up to 0.05. Dispute is never below the 99th
// percentile nor the largest factor measured; both range kinds dispute
// beyond 2.35, the largest (1.68) with a margin of 1.4 for sources not
// yet seen: a held-out source often falls beyond a bound learnt on the
// others (10 of 68, 28 of 194), and an unseen published sweep of one
// model on four GPUs reaches 1.61.
//
// Runs of one configuration (same model, GPUs, engine family, weight
// width and parallel layout) measure 52 comparisons from only 2 sources
// (p90 1.09, max 1.10): too few sources to fit a bound to. Its bound
// stays what runs differing only in their tensor × data parallel split
// on the same GPUs measured (p90 1.13, p99 1.33; a wider spread than one
// layout's, so it holds them with a margin); a layout of pipeline stages
// against tensor parallel departs 1.7× and is not compared at all (Peer
// Split).
// `matrixd eval --trust --corpus ingest/testdata/corpus,ingest/testdata/series,ingest/testdata/sparse,data`
// measures them again, with a leave-one-source-out check, and a test
// holds these to no narrower than it measures.
func Bounds() []Bound {
	return []Bound{
		{Kind: RefSameConfig, Agree: 1.15, Dispute: 1.35},
		{Kind: RefCrossGPU, Agree: 1.2, Dispute: 2.35},
		{Kind: RefCrossModel, Agree: 1.2, Dispute: 2.35},
	}
}

// BoundOf is the bound of kind in bounds (zero when absent).
func BoundOf(bounds []Bound, kind string) Bound {
	for _, b := range bounds {
		if b.Kind == kind {
			return b
		}
	}
	return Bound{Kind: kind}
}

// Peer is a stored run as corroboration sees it.
type Peer struct {
	ID string
	// Source names who it came from ("key:…", "publisher:…", or the run
	// itself): runs of one source are not independent of each other.
	Source string
	// Order places runs in the order they were stored: of a copy and its
	// original, the original is the earlier.
	Order int64
	// Model and GPU are the canonical names (the model facts' and the
	// hardware catalog's, else as stated); Named the names as stated.
	Model, GPU   string
	NamedModel   string
	NamedGPU     string
	BandwidthGBs float64 // the GPU's memory bandwidth; 0: unknown
	// ActiveParamsB is the model's parameters one token reads, in
	// billions; 0: unknown.
	ActiveParamsB float64
	EngineFamily  string
	Bits          string // the weight width's class; "" unknown
	GPUCount      int
	// Split is how many GPUs' bandwidth one request reads its weights
	// with (Split): tensor parallel 2 and pipeline parallel 2 on two GPUs
	// are different configurations.
	Split int
	// Class is the method class; OutputTokens the stated output tokens
	// per request (0: not stated).
	Class        string
	OutputTokens int
	Cells        []Cell
	// cells indexes Cells by (context, concurrency), once (Indexed).
	cells map[[2]int]Cell
}

// Indexed is p with its cells indexed, so that comparing it with many
// runs indexes them once.
func Indexed(p Peer) Peer {
	p.cells = index(p.Cells)
	return p
}

func (p Peer) indexed() map[[2]int]Cell {
	if p.cells != nil {
		return p.cells
	}
	return index(p.Cells)
}

// Reference is one reference a run was compared with.
type Reference struct {
	RunID string
	Kind  string
	// Ratio is the run's median ratio to the reference over their common
	// cells, on the metric that departs most (total or per-request
	// speed); Metric names it.
	Ratio    float64
	Metric   string
	Cells    int
	Source   string
	Agrees   bool
	Disputes bool
	// GPU and Model name the reference's, as stated.
	GPU, Model string
}

// Corroboration is a run's status against the independent runs of the
// database.
type Corroboration struct {
	Status string
	// Sources is how many independent sources agree with the run.
	Sources int
	// Disputing is how many independent sources disagree beyond the
	// measured 99th percentile of their kind.
	Disputing int
	Detail    string
	// Notice is Detail with its code and parameters.
	Notice     msg.Message
	References []Reference
	// CopyOf is the earlier run whose cells the run repeats under another
	// model or GPU name.
	CopyOf string
}

// Independent reports whether a and b are independent measurements: from
// different sources and not a near-copy of each other.
func Independent(a, b Peer) bool {
	return a.Source != b.Source && !samePeers(a, b)
}

func samePeers(a, b Peer) bool { return sameCells(a.Cells, b.indexed()) }

// copyTolerance and copyShare say when two runs' cells are one
// measurement: most (copyShare) of at least 3 common cells within the 1 %
// noise of published values, as the calculator groups near-copies
// (predict).
const (
	copyTolerance = 0.01
	copyShare     = 0.8
)

// SameCells reports whether most of a and b's common cells (at least 3)
// agree within noise on total tok/s, TBT and per-request tok/s: one
// measurement.
func SameCells(a, b []Cell) bool { return sameCells(a, index(b)) }

func sameCells(a []Cell, ib map[[2]int]Cell) bool {
	common, same := 0, 0
	for _, c := range a {
		o, ok := ib[[2]int{c.ContextTokens, c.Concurrency}]
		if !ok {
			continue
		}
		common++
		if near(c.TotalTokS, o.TotalTokS) && near(c.TBTMs, o.TBTMs) && near(c.PerRequestTokS, o.PerRequestTokS) {
			same++
		}
	}
	return common >= 3 && float64(same) >= copyShare*float64(common)
}

func near(a, b *float64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return math.Abs(*a-*b) <= copyTolerance*math.Max(math.Abs(*a), math.Abs(*b))
}

func index(cells []Cell) map[[2]int]Cell {
	out := make(map[[2]int]Cell, len(cells))
	for _, c := range cells {
		out[[2]int{c.ContextTokens, c.Concurrency}] = c
	}
	return out
}

// compare is run's reference in ref of kind (scale multiplies ref's speeds
// into an estimate for run), over their common cells (of concurrency at
// most maxConc, when not 0); ok is false when they share no cell with a
// speed.
func compare(run, ref Peer, kind string, lo, hi float64, maxConc int) (Reference, bool) {
	// within is a cell's ratio to the range [lo, hi] of the reference's
	// speed: 1 inside it, else how far beyond its nearer end.
	within := func(raw float64) float64 { return raw / min(max(raw, lo), hi) }
	ir := ref.indexed()
	var totals, perReq []float64
	for _, c := range run.Cells {
		o, ok := ir[[2]int{c.ContextTokens, c.Concurrency}]
		if !ok || (maxConc > 0 && c.Concurrency > maxConc) {
			continue
		}
		if c.TotalTokS != nil && o.TotalTokS != nil && *c.TotalTokS > 0 && *o.TotalTokS > 0 {
			totals = append(totals, within(*c.TotalTokS / *o.TotalTokS))
		}
		a, aok := perRequest(c)
		b, bok := perRequest(o)
		if aok && bok && a > 0 && b > 0 {
			perReq = append(perReq, within(a/b))
		}
	}
	if len(totals) == 0 && len(perReq) == 0 {
		return Reference{}, false
	}
	out := Reference{RunID: ref.ID, Kind: kind, Source: ref.Source, GPU: ref.NamedGPU, Model: ref.NamedModel, Cells: max(len(totals), len(perReq)), Ratio: 1}
	for _, m := range []struct {
		name string
		v    []float64
	}{{"total tok/s", totals}, {"per-request tok/s", perReq}} {
		if len(m.v) == 0 {
			continue
		}
		r := median(m.v)
		if math.Abs(math.Log(r)) > math.Abs(math.Log(out.Ratio)) || out.Metric == "" {
			out.Ratio, out.Metric = r, m.name
		}
	}
	return out, true
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return math.Sqrt(s[n/2-1] * s[n/2])
}

// Factor is how far ratio departs from 1, as a factor ≥ 1.
func Factor(ratio float64) float64 {
	if ratio <= 0 {
		return math.Inf(1)
	}
	return math.Exp(math.Abs(math.Log(ratio)))
}

// References are run's comparisons with each independent peer it can be
// compared with: same-configuration runs cell for cell, runs of the same
// model on another GPU through the bandwidth-scaled estimate, and runs of
// another model on the GPU through the size-scaled one. Peers of run's own
// source and near-copies are left out (not independent).
func References(run Peer, peers []Peer) []Reference {
	return comparisons(run, peers, true)
}

// Comparisons are run's comparisons with every peer it can be compared
// with that is not a near-copy, independent or not: what the spread of
// each reference kind is measured on (the estimate's error does not
// depend on who published the runs).
func Comparisons(run Peer, peers []Peer) []Reference {
	return comparisons(run, peers, false)
}

// crossGPUConcurrency is the highest concurrency whose cells an estimate
// (cross-GPU or cross-model) compares: there one request's decoding reads
// the weights alone and speed follows memory bandwidth over weight bytes;
// at higher concurrency it turns to compute, which neither scales.
const crossGPUConcurrency = 1

func comparisons(run Peer, peers []Peer, independent bool) []Reference {
	var out []Reference
	for _, p := range peers {
		if p.ID == run.ID || (independent && p.Source == run.Source) {
			continue
		}
		kind := kindOf(run, p)
		if kind == "" || samePeers(run, p) {
			continue
		}
		scale, maxConc := 1.0, 0
		switch kind {
		case RefCrossGPU:
			scale, maxConc = run.BandwidthGBs/p.BandwidthGBs, crossGPUConcurrency
		case RefCrossModel:
			scale, maxConc = p.ActiveParamsB/run.ActiveParamsB, crossGPUConcurrency
		}
		if ref, ok := compare(run, p, kind, min(1, scale), max(1, scale), maxConc); ok {
			out = append(out, ref)
		}
	}
	return out
}

// kindOf is the kind of reference p is for run ("" none): both measured
// with the same engine family, weight width, GPU count and split (Split),
// and method (output
// length within 2× where both state it) on GPUs of the catalog; the same
// model on the same GPU (same_config) or another (cross_gpu), or another
// model of known size on the same GPU (cross_model).
func kindOf(run, p Peer) string {
	if p.EngineFamily != run.EngineFamily || p.Bits != run.Bits || p.Bits == "" || p.GPUCount != run.GPUCount || p.Split != run.Split ||
		run.BandwidthGBs <= 0 || p.BandwidthGBs <= 0 || run.Class != p.Class {
		return ""
	}
	if run.OutputTokens > 0 && p.OutputTokens > 0 {
		if r := float64(run.OutputTokens) / float64(p.OutputTokens); r > 2 || r < 0.5 {
			return ""
		}
	}
	switch {
	case run.Model == p.Model && run.GPU == p.GPU:
		return RefSameConfig
	case run.Model == p.Model:
		return RefCrossGPU
	case run.GPU == p.GPU && run.ActiveParamsB > 0 && p.ActiveParamsB > 0:
		return RefCrossModel
	}
	return ""
}

// Related reports whether a and b may be references of each other.
func Related(a, b Peer) bool { return kindOf(a, b) != "" }

// CopyOf is the earliest peer stored before run whose cells run repeats
// under another model or GPU name (ok false when none): run is a renamed
// copy of it.
func CopyOf(run Peer, peers []Peer) (Peer, bool) {
	var best Peer
	found := false
	for _, p := range peers {
		if p.ID == run.ID || p.Order > run.Order || (p.Order == run.Order && p.ID > run.ID) {
			continue
		}
		if p.Model == run.Model && p.GPU == run.GPU {
			continue
		}
		if !samePeers(run, p) {
			continue
		}
		if !found || p.Order < best.Order || (p.Order == best.Order && p.ID < best.ID) {
			best, found = p, true
		}
	}
	return best, found
}

// precision orders the kinds of reference, most precise last.
var precision = map[string]int{RefCrossModel: 1, RefCrossGPU: 2, RefSameConfig: 3}

// Corroborate judges run against peers (the stored runs that could be
// its references: of its model, or on its GPU) with the measured bounds.
//
// A run repeating an earlier run's cells under another model or GPU name
// is disputed as a copy of it. Otherwise each independent source counts
// once, through its most precise kind of reference, by its median factor:
// within its kind's Agree bound it agrees, beyond its Dispute bound (the
// largest factor measured between real runs) it disagrees; only the
// sources of the most precise kind with a verdict count. The run is
// disputed when more of them disagree than agree (two independent sources
// outweigh one, and one agreeing source lifts a single source's dispute),
// corroborated when at least one agrees, and uncorroborated otherwise.
func Corroborate(run Peer, peers []Peer, bounds []Bound) Corroboration {
	if p, ok := CopyOf(run, peers); ok {
		return Corroboration{Status: StatusDisputed, Disputing: 1, CopyOf: p.ID, References: []Reference{{RunID: p.ID, Kind: RefCopy, Ratio: 1, Source: p.Source, Disputes: true, GPU: p.NamedGPU}}}.says(msg.New("trust.corroboration_copy", p.ID, p.NamedModel, p.NamedGPU))
	}
	refs := References(run, peers)
	bySource := map[string][]int{}
	var sources []string
	for i, r := range refs {
		if _, ok := bySource[r.Source]; !ok {
			sources = append(sources, r.Source)
		}
		bySource[r.Source] = append(bySource[r.Source], i)
	}
	out := Corroboration{References: refs}
	for i := range refs {
		b := BoundOf(bounds, refs[i].Kind)
		f := Factor(refs[i].Ratio)
		refs[i].Agrees = b.Agree > 0 && f <= b.Agree
		refs[i].Disputes = b.Dispute > 0 && f > b.Dispute
	}
	// Each source speaks through its most precise kind of reference (its
	// runs of the same configuration, else its estimates from other GPUs,
	// else from other models), by their median ratio judged by that kind's
	// bound. Only the sources of the most precise kind that has a verdict
	// count: a measurement outweighs an estimate.
	type verdict struct {
		kind            string
		idx             []int
		agrees, dispute bool
	}
	var verdicts []verdict
	top := 0
	for _, s := range sources {
		idx := bySource[s]
		kind := RefCrossModel
		for _, i := range idx {
			if precision[refs[i].Kind] > precision[kind] {
				kind = refs[i].Kind
			}
		}
		idx = slices.DeleteFunc(slices.Clone(idx), func(i int) bool { return refs[i].Kind != kind })
		var ratios []float64
		for _, i := range idx {
			ratios = append(ratios, refs[i].Ratio)
		}
		b, f := BoundOf(bounds, kind), Factor(median(ratios))
		v := verdict{kind: kind, idx: idx, dispute: b.Dispute > 0 && f > b.Dispute, agrees: b.Agree > 0 && f <= b.Agree}
		if v.agrees || v.dispute {
			verdicts, top = append(verdicts, v), max(top, precision[kind])
		}
	}
	var agreeing, disputing []int
	for _, v := range verdicts {
		switch {
		case precision[v.kind] < top:
		case v.dispute:
			disputing = append(disputing, v.idx...)
			out.Disputing++
		case v.agrees:
			agreeing = append(agreeing, v.idx...)
			out.Sources++
		}
	}
	switch {
	case out.Disputing > out.Sources:
		out.Status = StatusDisputed
		out = out.says(disputeDetail(refs, disputing, out.Disputing))
	case out.Sources > 0:
		out.Status = StatusCorroborated
		if out.Disputing > 0 {
			out = out.says(msg.New(plural(out.Disputing, "trust.corroboration_outweighs_one", "trust.corroboration_outweighs"), out.Sources, describe(refs, agreeing), out.Disputing))
		} else {
			out = out.says(msg.New(plural(out.Sources, "trust.corroboration_agrees_one", "trust.corroboration_agrees"), out.Sources, describe(refs, agreeing)))
		}
	default:
		out.Status = StatusUncorroborated
		out = out.says(msg.New("trust.corroboration_none"))
		if len(refs) > 0 {
			out = out.says(msg.New(plural(len(refs), "trust.corroboration_undecided_one", "trust.corroboration_undecided"), len(refs)))
		}
	}
	return out
}

// says sets c's detail to m.
func (c Corroboration) says(m msg.Message) Corroboration {
	c.Detail, c.Notice = m.Text, m
	return c
}

// disputeDetail says how far the run sits from the references that
// dispute it, e.g. "2.1× the estimate from 3 runs on A100 and H100".
func disputeDetail(refs []Reference, idx []int, sources int) msg.Message {
	var ratios []float64
	for _, i := range idx {
		ratios = append(ratios, refs[i].Ratio)
	}
	r := median(ratios)
	metric := msg.New("trust.metric_total")
	if refs[idx[0]].Metric == "per-request tok/s" {
		metric = msg.New("trust.metric_per_request")
	}
	return msg.New(plural(sources, "trust.corroboration_disputed_one", "trust.corroboration_disputed"), sources, metric, ratioText(r), describe(refs, idx))
}

func ratioText(r float64) string {
	if r >= 1 {
		return fmt.Sprintf("%.2g×", r)
	}
	return fmt.Sprintf("1/%.2g", 1/r)
}

// describe names the references idx: "run X on A100; the estimate from 2
// runs on H100 and L40S", each clause a message of its own.
func describe(refs []Reference, idx []int) msg.Message {
	var same []string
	var gpus, models []string
	cross, other := 0, 0
	for _, i := range idx {
		switch refs[i].Kind {
		case RefSameConfig:
			same = append(same, refs[i].RunID)
		case RefCrossGPU:
			cross++
			if !slices.Contains(gpus, refs[i].GPU) {
				gpus = append(gpus, refs[i].GPU)
			}
		case RefCrossModel:
			other++
			if !slices.Contains(models, refs[i].Model) {
				models = append(models, refs[i].Model)
			}
		}
	}
	var parts []any
	if len(same) > 0 {
		parts = append(parts, msg.New(plural(len(same), "trust.ref_same_config_one", "trust.ref_same_config"), strings.Join(same, ", ")))
	}
	if cross > 0 {
		parts = append(parts, msg.New(plural(cross, "trust.ref_cross_gpu_one", "trust.ref_cross_gpu"), cross, strings.Join(gpus, " and ")))
	}
	if other > 0 {
		parts = append(parts, msg.New(plural(other, "trust.ref_cross_model_one", "trust.ref_cross_model"), other, strings.Join(models, " and ")))
	}
	switch len(parts) {
	case 1:
		return parts[0].(msg.Message)
	case 2:
		return msg.New("trust.refs_two", parts...)
	default:
		return msg.New("trust.refs_three", parts...)
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
