package calculator

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/matrixd/matrixd/msg"
)

// Model is a run's fitted calculator: speed surface, capacity, TTFT and the
// error bands measured on the run's own held-out cells. Build it once per run
// with Fit; predictions are then cheap and safe for concurrent use.
type Model struct {
	run    Run
	sf     *surface
	cells  map[CellRef]Cell
	maxOut int
	cap    capacity
	// kv is the limits the run's rows level off at (see kvLevel), and
	// unlevelled the surface of its cells as measured, for answers that
	// move the KV pool (nil when kv reads none).
	kv         kvLevel
	unlevelled *lazySurface
	// byB is the run's measured steps (own cells as measured and shared
	// ones, rows snapped as the surface's), by concurrency, then context.
	byB []sample
	// queued are the run's cells published as requests queued, by
	// concurrency, in context order (see queuedBelow).
	queued map[int][]Cell
	// longestValid is, for each concurrency with queued cells, the longest
	// context at which a cell ran valid.
	longestValid map[int]int
	ttft         decodeTTFT
	prefill      prefillModel
	bands        Bands
	// raw are the bands before the family calibration (see calibrated),
	// kept for evaluation only.
	raw Bands
}

// Bands are the relative error bands (p90 of held-out absolute error) a
// model puts around its predictions.
type Bands struct {
	InterpolatedTotal float64
	InterpolatedTBT   float64
	ExtrapolatedTotal float64
	ExtrapolatedTBT   float64
	TTFT              float64
	Prefill           float64
	// Calibrated is false when the run had too few cells to hold any out;
	// the bands are then the wide fallbacks.
	Calibrated bool
	// Family is the engine family whose calibration factors scaled the
	// bands ("" for the pooled ones; see BandFamily).
	Family string
	// OwnInterpolatedTotal is the run's own interpolated total band
	// before the family calibration: its own held-out scatter, a measure
	// of the run's noise rather than an interval.
	OwnInterpolatedTotal float64
}

// Band floors and fallbacks. The floor is the noise of published values
// (one-decimal rounding, single-shot cells), below which held-out error
// does not mean anything; the fallback applies only to runs too small to
// calibrate, and is flagged in the answer.
const (
	bandFloor    = 0.01
	bandFallback = 0.25
)

// ErrNoData means a run has no valid decode cell to model.
var ErrNoData = NewRefusal(msg.New("calculator.no_data"), msg.Message{})

// Fit builds a run's model: it chooses the run's interpolant (linear or
// log2 in concurrency) by held-out error, and calibrates its bands by
// holding out cells.
func Fit(r Run) (*Model, error) { return FitContext(context.Background(), r) }

// Holdouts a fit calibrates on, at most: every cell and line of a run that
// has fewer, an even spread of a larger one. Each holdout is a refit of
// the whole run, so this keeps a fit's cost about linear in the cells
// (a 64 × 64 grid in about a second) while the bundled runs use them all.
const (
	fitHoldoutCells = 48
	fitHoldoutLines = 12
	// chooseHoldoutCells is how many cells, at most, each of the four
	// candidate interpolants is judged on.
	chooseHoldoutCells = 16
)

// FitContext is Fit that stops, with ctx's error, when ctx is done.
func FitContext(ctx context.Context, r Run) (*Model, error) {
	ip, err := chooseInterpolant(ctx, r)
	if err != nil {
		return nil, err
	}
	m, err := fitCore(r, ip)
	if err != nil {
		return nil, err
	}
	rep, err := evaluate(ctx, r, ip, evalLimits{cells: fitHoldoutCells, lines: fitHoldoutLines})
	if err != nil {
		return nil, err
	}
	m.raw = rep.bands()
	m.bands = calibrated(m.raw, BandFamily(r.Engine, r.Method))
	return m, nil
}

// interp is how a run's step times are interpolated along concurrency:
// in B or in log2 B, piecewise linearly or by monotone cubic (PCHIP)
// through the measured points.
type interp struct {
	logB, cubic bool
	// rowT and rowS weigh the estimates of T and of S along concurrency
	// against those along context where both exist.
	rowT, rowS float64
	// shapeT and shapeS weigh the shape-transfer estimate (see
	// surface.shape) against that of the rows and columns.
	shapeT, shapeS float64
	// kv reads the rows' levels as a full KV cache or a limit on the
	// requests run at once (see kvLevel).
	kv bool
	// physT and physS weigh the smoothed physical model (see
	// surface.smoothed) against the estimate from the cells around a
	// point: a run whose cells scatter more than its surface bends is read
	// better smoothed.
	physT, physS float64
	// ratioT weighs T read as S times the ratio T/S of the cells around
	// (see surface.ratio) against T read alone.
	ratioT float64
}

// usesShape reports whether the shape-transfer estimate weighs in at all.
func (ip interp) usesShape() bool { return ip.shapeT > 0 || ip.shapeS > 0 }

func (ip interp) String() string {
	s := "linear"
	if ip.cubic {
		s = "monotone cubic"
	}
	if ip.logB {
		s += " in log2 concurrency"
	} else {
		s += " in concurrency"
	}
	s = fmt.Sprintf("%s, %.0f%%/%.0f%% row-wise (TBT/total)", s, 100*ip.rowT, 100*ip.rowS)
	if ip.usesShape() {
		s += fmt.Sprintf(", %.0f%%/%.0f%% from other rows' shape", 100*ip.shapeT, 100*ip.shapeS)
	}
	if ip.physT > 0 || ip.physS > 0 {
		s += fmt.Sprintf(", %.0f%%/%.0f%% smoothed", 100*ip.physT, 100*ip.physS)
	}
	if ip.kv {
		s += ", levels read as KV-cache and request limits"
	}
	if ip.ratioT > 0 {
		s += fmt.Sprintf(", TBT %.0f%% from total × TBT/step ratio", 100*ip.ratioT)
	}
	return s
}

// rowWeights are the weights of the row-first path a fit chooses among.
func rowWeights() []float64 { return []float64{0, 0.25, 0.5, 0.75, 1} }

// interpKinds are the interpolants along concurrency a fit chooses among
// (their weights unset): linear or monotone cubic, in B or in log2 B.
func interpKinds() []interp {
	return []interp{{}, {logB: true}, {cubic: true}, {logB: true, cubic: true}}
}

// shapeWeights are the weights of the shape-transfer estimate a fit
// chooses among.
func shapeWeights() []float64 { return []float64{0, 0.5, 1} }

// chooseInterpolant picks the interpolant with the least leave-one-out
// error of interpolated cells on this run, and within it the most even
// weights whose error is close to the least (see chooseTolerance). Dense
// models are close to linear in B; mixture-of-experts models rise steeply
// and then flatten; smooth curves gain from the cubic. Ties, and runs with
// nothing to hold out, stay linear in B.
func chooseInterpolant(ctx context.Context, r Run) (interp, error) {
	ip, err := chooseLevels(ctx, r)
	if err != nil {
		return ip, err
	}
	return chooseRatio(ctx, r, ip)
}

// ratioWeights are the weights of T read from S and the ratio T/S a fit
// chooses among.
func ratioWeights() []float64 { return []float64{0, 0.25, 0.5, 0.75, 1} }

// chooseRatio picks the weight of T read as S times the cells' ratio T/S
// by the held-out error of the time between tokens of the run's answers:
// where the ratio is smooth (1 in a lockstep batch; in a sustained decode,
// rising with B where staggered prefills stretch the steps) it carries
// the total's accuracy to TBT.
func chooseRatio(ctx context.Context, r Run, ip interp) (interp, error) {
	ws := ratioWeights()
	errs := make([][]float64, len(ws))
	n := 0
	for _, c := range spread(filter(r.Decode, usable), chooseHoldoutCells) {
		if err := ctx.Err(); err != nil {
			return interp{}, err
		}
		m, err := fitCore(without(r, []Cell{c}), ip)
		if err != nil {
			continue
		}
		tm := stepT(c)
		row := make([]float64, len(ws))
		ok := true
		for i, w := range ws {
			m.sf.ip.ratioT = w
			sp, err := m.speed(c.ContextTokens, float64(c.Concurrency), true)
			if err != nil || sp.basis == Measured || !(sp.t > 0) {
				ok = false
				break
			}
			row[i] = math.Abs(sp.t-tm) / tm
		}
		if !ok {
			continue
		}
		for i := range ws {
			errs[i] = append(errs[i], row[i])
		}
		n++
	}
	if n == 0 {
		return ip, nil
	}
	means := make([]float64, len(ws))
	for i := range ws {
		for _, e := range errs[i] {
			means[i] += e / float64(n)
		}
	}
	best := argmin(means)
	ip.ratioT = ws[best]
	return ip, nil
}

// chooseLevels is chooseInterpolant's pick of the interpolant and of
// reading levels as limits.
func chooseLevels(ctx context.Context, r Run) (interp, error) {
	best, err := chooseAmong(ctx, r, interpKinds())
	if err != nil || !readsKVLevel(r) {
		return best, err
	}
	// Where the rows level off as a full KV cache or a request limit
	// would, the fit weighs reading them so against not, on every answer
	// the run's held-out cells get (beyond the rows too, where the two
	// differ most).
	// The kind chosen stays (it bounds the cost): only its weights are
	// chosen again for the levels read so.
	withKV, err := chooseAmong(ctx, r, []interp{{logB: best.logB, cubic: best.cubic, kv: true}})
	if err != nil {
		return interp{}, err
	}
	eOff, eOn, err := looSpeedError(ctx, r, best, withKV)
	if err != nil {
		return interp{}, err
	}
	if eOn < eOff {
		return withKV, nil
	}
	return best, nil
}

// chooseAmong is chooseInterpolant's pick among kinds.
func chooseAmong(ctx context.Context, r Run, kinds []interp) (interp, error) {
	bestErr := math.Inf(1)
	var tied []interp // the kinds at the least error, with their weights
	ws, sws, pws := rowWeights(), shapeWeights(), physWeights()
	for _, ip := range kinds {
		errT, errS, meanT, meanS, err := looInterpolatedError(ctx, r, ip)
		if err != nil {
			return interp{}, err
		}
		// Weights of the rows, columns and shapes are chosen as if alone,
		// then the physical model is weighed in where it errs clearly less:
		// on every held-out cell, as what it smooths is the cells that
		// scatter most (trimmed, a grid scattered ±10 % was not smoothed).
		// The kind is chosen by the step time's error alone: total tok/s
		// is read from it, and time between tokens mostly from it and the
		// cells' ratio (chooseRatio); chosen by the sum of both errors, a
		// kind that read TBT better but the total worse won (corpus total
		// 3.49 % → 3.45 %, TBT 5.86 % → 5.81 %).
		plainT, plainS := every(errT, len(pws)), every(errS, len(pws))
		e := plainS[argmin(plainS)]
		if math.IsInf(e, 1) || !(e <= bestErr) {
			continue // NaN never qualifies
		}
		iT, iS := mostBalanced(plainT), mostBalanced(plainS)
		ip.rowT, ip.shapeT = ws[iT/len(sws)], sws[iT%len(sws)]
		ip.rowS, ip.shapeS = ws[iS/len(sws)], sws[iS%len(sws)]
		ip.physT = pws[smoothest(meanT[iT*len(pws):(iT+1)*len(pws)])]
		ip.physS = pws[smoothest(meanS[iS*len(pws):(iS+1)*len(pws)])]
		if e < bestErr {
			tied = tied[:0]
		}
		bestErr = e
		tied = append(tied, ip)
	}
	switch len(tied) {
	case 0:
		return interp{rowT: 0.5, rowS: 0.5, kv: kinds[0].kv}, nil
	case 1:
		return tied[0], nil
	}
	// Kinds that tie (where the least error reads no row, every kind
	// scores alike) are told apart by their whole answers' total tok/s on
	// the same held-out cells, as a user would get them. Before, the first
	// kind, linear, was kept: bundled leave-one-cell-out total 0.72 % →
	// 0.69 %, corpus 3.45 % → 3.42 %.
	errs, err := looSpeedErrors(ctx, r, tied)
	if err != nil {
		return interp{}, err
	}
	return tied[argmin(errs)], nil
}

// physWeights are the weights of the physical model a fit chooses among.
func physWeights() []float64 { return []float64{0, 0.25, 0.5} }

// every is each n-th of xs, from the first.
func every(xs []float64, n int) []float64 {
	out := make([]float64, 0, len(xs)/n)
	for i := 0; i < len(xs); i += n {
		out = append(out, xs[i])
	}
	return out
}

// smoothest is the index of the physical model's weight to take, given
// the held-out errors with each (errs[0] without it): the least, where it
// is below the error without by more than chooseTolerance, else none.
func smoothest(errs []float64) int {
	i := argmin(errs)
	if !(errs[i]*chooseTolerance < errs[0]) {
		return 0
	}
	return i
}

// looSpeedError is the mean leave-one-out error of total tok/s of two
// interpolants' answers, over the held-out cells both answer. (The time
// between tokens is left out: a level holds it where requests wait and
// grows it where a batch's requests all run, and a run's few cells tell
// those apart less surely than they tell its totals.)
func looSpeedError(ctx context.Context, r Run, a, b interp) (ea, eb float64, err error) {
	errs, err := looSpeedErrors(ctx, r, []interp{a, b})
	if err != nil {
		return 0, 0, err
	}
	return errs[0], errs[1], nil
}

// looSpeedErrors is looSpeedError for any number of interpolants.
func looSpeedErrors(ctx context.Context, r Run, ips []interp) ([]float64, error) {
	sum, e := make([]float64, len(ips)), make([]float64, len(ips))
	n := 0
	for _, c := range spread(filter(r.Decode, usable), chooseHoldoutCells) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rest := without(r, []Cell{c})
		ok := true
		for i, ip := range ips {
			m, err := fitCore(rest, ip)
			if err != nil {
				ok = false
				break
			}
			bb := float64(c.Concurrency)
			sp, err := m.speed(c.ContextTokens, bb, true)
			if err != nil {
				ok = false
				break
			}
			e[i] = math.Abs(bb*1000/sp.s-*c.TotalTokS) / *c.TotalTokS
		}
		if ok {
			for i := range sum {
				sum[i] += e[i]
			}
			n++
		}
	}
	for i := range sum {
		if n == 0 {
			sum[i] = math.Inf(1)
		} else {
			sum[i] /= float64(n)
		}
	}
	return sum, nil
}

// chooseTolerance: weights whose held-out error is within this factor of
// the least are told apart by a few held-out cells only, so the fit takes
// the most even mix among them (the one nearest ½ row-wise and ½ from
// other rows' shape) rather than the luckiest: a mix of estimates errs
// less on cells the choice did not see.
const chooseTolerance = 1.10

// mostBalanced is the index (i·len(shapeWeights)+j, as looInterpolatedError
// lays them out) of the most even pair of weights whose error is within
// chooseTolerance of the least. The shape estimate is weighed in only where
// the held-out cells saw it: when its weights all err alike (nothing to
// tell them apart), it gets none.
func mostBalanced(errs []float64) int {
	ws, sws := rowWeights(), shapeWeights()
	best := argmin(errs)
	least := errs[best]
	pick, dist := best, math.Inf(1)
	for i, e := range errs {
		if !(e <= chooseTolerance*least) {
			continue // NaN never qualifies
		}
		shape := sws[i%len(sws)]
		if shape > 0 && e == errs[i-i%len(sws)] {
			continue // no better than without the shape: not weighed in
		}
		if d := math.Abs(ws[i/len(sws)]-0.5) + math.Abs(shape-0.5); d < dist {
			pick, dist = i, d
		}
	}
	return pick
}

// argmin is the index of the least of xs, NaN ignored (0 when all are).
func argmin(xs []float64) int {
	best := -1
	for i, x := range xs {
		if !math.IsNaN(x) && (best < 0 || x < xs[best]) {
			best = i
		}
	}
	return max(best, 0)
}

// looInterpolatedError is the mean leave-one-out error of time between
// tokens and of total tok/s, trimmed (errT, errS; see trimmedMean) and not
// (meanT, meanS), over the cells the rows and columns around them
// estimate, for each pair of rowWeights and shapeWeights (at index
// i·len(shapeWeights)+j).
func looInterpolatedError(ctx context.Context, r Run, ip interp) (errT, errS, meanT, meanS []float64, err error) {
	ws, sws, pws := rowWeights(), shapeWeights(), physWeights()
	nw := len(ws) * len(sws) * len(pws)
	errT, errS = make([]float64, nw), make([]float64, nw)
	cellT, cellS := make([][]float64, nw), make([][]float64, nw)
	n := 0
	for _, c := range spread(filter(r.Decode, usable), chooseHoldoutCells) {
		if err := ctx.Err(); err != nil {
			return nil, nil, nil, nil, err
		}
		m, err := fitCore(without(r, []Cell{c}), ip)
		if err != nil {
			continue
		}
		b, l := float64(c.Concurrency), float64(c.ContextTokens)/tokensPerK
		// A cell the limits capped ran bc requests: the surface is read
		// there, and its total carried to b.
		bc, full := m.kv.effective(m.sf.snap(l), b)
		if _, _, rough := m.sf.rough(l, bc); rough {
			continue
		}
		row, col := m.sf.paths(l, bc)
		sh := m.sf.shape(m.sf.snap(l), bc)
		ph := m.sf.smoothed(l, bc)
		if full {
			f := b / bc
			row.s, col.s, sh.s, ph.s = row.s*f, col.s*f, sh.s*f, ph.s*f
			if m.kv.lockstep {
				row.t, col.t, sh.t, ph.t = row.t*f, col.t*f, sh.t*f, ph.t*f
			}
		}
		tm := stepT(c)
		counted := false
		for i, w := range ws {
			t0, s0, _, ok := combine(row, col, w, w)
			if !ok || t0 <= 0 || s0 <= 0 {
				continue
			}
			for j, v := range sws {
				t1, s1 := mixShape(t0, s0, sh, v, v)
				for p, pw := range pws {
					t, s := mixShape(t1, s1, ph, pw, pw)
					k := (i*len(sws)+j)*len(pws) + p
					cellT[k] = append(cellT[k], math.Abs(t-tm)/tm)
					cellS[k] = append(cellS[k], math.Abs(b*1000/s-*c.TotalTokS) / *c.TotalTokS)
				}
			}
			counted = true
		}
		if counted {
			n++
		}
	}
	meanT, meanS = make([]float64, nw), make([]float64, nw)
	for i := range nw {
		errT[i], errS[i] = trimmedMean(cellT[i], n), trimmedMean(cellS[i], n)
		var st, ss float64
		for j := range cellT[i] {
			st, ss = st+cellT[i][j], ss+cellS[i][j]
		}
		meanT[i], meanS[i] = st/float64(n), ss/float64(n)
		if n == 0 {
			errT[i], errS[i] = math.Inf(1), math.Inf(1)
			meanT[i], meanS[i] = math.Inf(1), math.Inf(1)
		}
	}
	return errT, errS, meanT, meanS, nil
}

// trimmedMean is the mean of errs, errors of n held-out cells, without
// the largest one in each trimEvery: one cell a grid's scatter puts far
// off (a serving sweep's preempted cell) otherwise decides a run's
// weights alone, and they then err more on the cells the choice did not
// see (tune split 3.44 % → 3.41 %, holdout 3.84 % → 3.76 %).
func trimmedMean(errs []float64, n int) float64 {
	k := len(errs) / trimEvery
	if n-k <= 0 {
		return 0
	}
	e := slices.Clone(errs)
	slices.Sort(e)
	var sum float64
	for _, x := range e[:len(e)-k] {
		sum += x
	}
	return sum / float64(n-k)
}

// trimEvery is how many held-out errors trimmedMean drops the largest of
// one per: the worst of the 16 cells a choice is made on (dropping two or
// four of them erred more; see docs/calculator.md).
const trimEvery = chooseHoldoutCells

// spread is at most n of xs, evenly spaced, in order; all of them when
// there are no more than n.
func spread[T any](xs []T, n int) []T {
	if n <= 0 || len(xs) <= n {
		return xs
	}
	out := make([]T, n)
	for i := range n {
		out[i] = xs[i*len(xs)/n]
	}
	return out
}

// Interpolant names how the model interpolates along concurrency.
func (m *Model) Interpolant() string { return m.sf.ip.String() }

// fitCore builds the model without calibrating bands.
func fitCore(r Run, ip interp) (*Model, error) {
	m := &Model{run: r, cells: make(map[CellRef]Cell, len(r.Decode)+len(r.SharedSpeed)), maxOut: r.MaxOutputTokens}
	var samples []sample
	var outs []float64
	for _, c := range r.Decode {
		m.cells[CellRef{c.ContextTokens, c.Concurrency}] = c
		if !usable(c) {
			continue
		}
		b := float64(c.Concurrency)
		samples = append(samples, sample{l: float64(c.ContextTokens) / tokensPerK, b: b, t: stepT(c), s: b * 1000 / *c.TotalTokS})
		outs = append(outs, cellOutput(c, r.MaxOutputTokens))
	}
	var measured []sample
	if ip.kv {
		m.kv = readKVLevel(samples, outs)
		if m.kv.c > 0 {
			measured = samples
		}
		samples = m.kv.desaturate(samples)
	}
	own := len(samples)
	for _, c := range r.SharedSpeed {
		ref := CellRef{c.ContextTokens, c.Concurrency}
		if _, own := m.cells[ref]; own || !usable(c) {
			continue
		}
		m.cells[ref] = Cell{ContextTokens: c.ContextTokens, Concurrency: c.Concurrency} // taken: later duplicates are skipped
		b := float64(c.Concurrency)
		samples = append(samples, sample{l: float64(c.ContextTokens) / tokensPerK, b: b, t: stepT(c), s: b * 1000 / *c.TotalTokS})
	}
	for _, c := range r.SharedSpeed {
		ref := CellRef{c.ContextTokens, c.Concurrency}
		if m.cells[ref].Status == "" {
			delete(m.cells, ref) // shared cells are not this run's measurements
		}
	}
	if len(samples) == 0 {
		return nil, ErrNoData
	}
	raw := samples[own:]
	if measured != nil {
		raw = append(slices.Clip(measured), raw...)
	} else {
		raw = samples
	}
	m.byB, _ = snapRows(slices.Clone(raw))
	slices.SortFunc(m.byB, func(a, b sample) int {
		if c := cmpF(a.b, b.b); c != 0 {
			return c
		}
		return cmpF(a.l, b.l)
	})
	m.sf = newSurface(samples, ip)
	if own < len(samples) {
		m.sf.ownLevels(samples[:own])
	}
	if measured != nil {
		flat := ip
		flat.kv = false
		m.unlevelled = &lazySurface{samples: append(measured, samples[own:]...), own: len(measured), ip: flat}
	}
	m.cap = newCapacity(r, m.maxOut)
	for _, c := range r.Decode {
		if c.Status == CellRequestsQueued && c.TotalTokS != nil && *c.TotalTokS > 0 {
			if m.queued == nil {
				m.queued = map[int][]Cell{}
			}
			m.queued[c.Concurrency] = append(m.queued[c.Concurrency], c)
		}
	}
	for _, cs := range m.queued {
		slices.SortFunc(cs, func(a, b Cell) int { return a.ContextTokens - b.ContextTokens })
	}
	for _, c := range r.Decode {
		if _, ok := m.queued[c.Concurrency]; ok && c.Status == CellValid {
			if m.longestValid == nil {
				m.longestValid = map[int]int{}
			}
			m.longestValid[c.Concurrency] = max(m.longestValid[c.Concurrency], c.ContextTokens)
		}
	}
	m.ttft = fitDecodeTTFT(r.Decode)
	m.prefill = fitPrefill(r.Prefill)
	m.bands = Bands{bandFallback, bandFallback, bandFallback, bandFallback, bandFallback, bandFallback, false, "", bandFallback}
	return m, nil
}

// usable reports a valid cell with a positive total tok/s (and time between
// tokens, when published): the only cells speed is modelled from.
func usable(c Cell) bool {
	if c.Status != CellValid || c.TotalTokS == nil || !(*c.TotalTokS > 0) || math.IsInf(*c.TotalTokS, 0) {
		return false
	}
	return c.TBTMs == nil || *c.TBTMs > 0
}

// stepT is a usable cell's time between tokens: as published, else from
// its per-request speed, else the step time of its total (requests decoding
// in lockstep, as in a batched benchmark that publishes only throughput).
func stepT(c Cell) float64 {
	switch {
	case c.TBTMs != nil:
		return *c.TBTMs
	case c.PerRequestTokS != nil && *c.PerRequestTokS > 0:
		return 1000 / *c.PerRequestTokS
	}
	return float64(c.Concurrency) * 1000 / *c.TotalTokS
}

// Bands returns the model's calibrated error bands.
func (m *Model) Bands() Bands { return m.bands }

// Cells are the run's decode cells as fitted, shared with the model: read
// them, do not change them.
func (m *Model) Cells() []Cell { return m.run.Decode }

// speedRead is a speed read at one point: the two step times (ms), how
// they were obtained and the measured cells they lean on. levelFrom is the
// concurrency from which the rows around the point are level, where the
// answer was read from that level (0 otherwise).
type speedRead struct {
	t, s      float64
	basis     Basis
	used      []CellRef
	levelFrom float64
}

// speed predicts the two step times at (L, B) with how they were obtained.
//
// Where the run's own rows around the context level off before b (see
// saturated) and levels is true, the answer is read from the level, and
// levelFrom is the concurrency from which they are level (0 otherwise).
// Callers that move the KV pool (another VRAM size or GPU) pass levels
// false: a level set by this run's KV cache would move with it.
func (m *Model) speed(lTokens int, b float64, levels bool) (speedRead, error) {
	r, err := m.speedAt(lTokens, b, levels)
	if err == nil && r.basis != Measured {
		l := m.sf.snap(float64(lTokens) / tokensPerK)
		r.s = m.alongContext(l, b, r.s, func(p sample) float64 { return p.s })
		if r.levelFrom == 0 && !(m.kv.c > 0 && !math.IsInf(m.kv.c, 1)) {
			// Where a full KV cache caps the requests that run, fewer run
			// at a longer context, each step serving fewer of them: there
			// the time between tokens may fall with context.
			if w := m.sf.ip.ratioT; w > 0 {
				if ratio, ok := m.sf.ratio(l, b); ok && ratio > 0 {
					r.t = (1-w)*r.t + w*r.s*ratio
				}
			}
			r.t = m.alongContext(l, b, r.t, func(p sample) float64 { return p.t })
		}
	}
	return r, err
}

// alongContext keeps a step time v predicted at (l, b) (S or T, as f
// reads a sample) within those measured at b at the nearest shorter and
// longer contexts: at one concurrency, a step does not get shorter, nor
// throughput rise, with context (each step reads more KV cache). Where
// those two cells contradict that themselves, it says nothing. Held out
// one cell at a time, a serving sweep's scatter had put 18 of 843 answers
// beyond a measured neighbour (SGLang holdout 15.2 % → 8.1 %).
func (m *Model) alongContext(l, b, v float64, f func(sample) float64) float64 {
	i, _ := slices.BinarySearchFunc(m.byB, b, func(p sample, b float64) int { return cmpF(p.b, b) })
	lo, hi := math.NaN(), math.NaN()
	for ; i < len(m.byB) && m.byB[i].b == b; i++ {
		switch p := m.byB[i]; {
		case p.l < l:
			lo = f(p)
		case p.l > l && math.IsNaN(hi):
			hi = f(p)
		}
	}
	if lo > hi {
		return v
	}
	if lo > v {
		v = lo
	}
	if hi < v {
		v = hi
	}
	return v
}

// queuedBelow is the cell published as requests queued at concurrency b
// at the longest context shorter than l, when no cell at b at a longer
// context than it ran valid (which would make the queueing the cell's own
// scatter).
func (m *Model) queuedBelow(l, b int) (Cell, bool) {
	cs := m.queued[b]
	i, _ := slices.BinarySearchFunc(cs, l, func(c Cell, l int) int { return c.ContextTokens - l })
	if i == 0 || !m.windowQueued(cs[i-1]) {
		return Cell{}, false
	}
	c := cs[i-1]
	if c.ContextTokens < m.longestValid[b] {
		return Cell{}, false
	}
	return c, true
}

// limitQueuedFactor is, for the run's cell published as requests queued
// because a request limit held the rest back that lies nearest context l,
// the ratios of its measured step times (TBT, S) to those the surface reads
// for the requests that ran there; ok false when the run has none.
func (m *Model) limitQueuedFactor(l int, levels bool) (c Cell, kT, kS float64, ok bool) {
	best := -1
	for _, cs := range m.queued {
		for _, qc := range cs {
			if m.windowQueued(qc) || qc.AvgActiveRequests == nil {
				continue
			}
			if d := abs(qc.ContextTokens - l); best < 0 || d < best || (d == best && qc.ContextTokens < c.ContextTokens) {
				c, best = qc, d
			}
		}
	}
	if best < 0 {
		return Cell{}, 0, 0, false
	}
	run := float64(m.cap.running(c.Concurrency))
	sp, err := m.speed(c.ContextTokens, run, levels)
	if err != nil || !(sp.t > 0) || !(sp.s > 0) {
		return Cell{}, 0, 0, false
	}
	t, s := sp.t, sp.s
	kS = run * 1000 / *c.TotalTokS / s
	kT = kS
	if c.TBTMs != nil && *c.TBTMs > 0 {
		kT = *c.TBTMs / t
	}
	return c, kT, kS, finite(kT, kS) && kT > 0 && kS > 0
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// windowQueued reports whether a cell published as queued is one no
// request limit of the run explains (its sequence limit, --max-num-seqs):
// a long prefill kept its requests out of the decode batch for part of the
// window, whatever the KV pool.
func (m *Model) windowQueued(c Cell) bool {
	return c.Status == CellRequestsQueued && m.cap.running(c.Concurrency) == c.Concurrency
}

// speedAt is speed before alongContext.
func (m *Model) speedAt(lTokens int, b float64, levels bool) (speedRead, error) {
	l := float64(lTokens) / tokensPerK
	if c, ok := m.cells[CellRef{lTokens, int(b)}]; ok && float64(int(b)) == b && usable(c) {
		return speedRead{t: stepT(c), s: b * 1000 / *c.TotalTokS, basis: Measured, used: []CellRef{{lTokens, int(b)}}}, nil
	}
	if n := len(m.byB); n > 0 && m.byB[0].b == m.byB[n-1].b && b != m.byB[0].b {
		// One concurrency says nothing of how the speed changes with the
		// number of requests: any answer would be the surface's assumption.
		_, minL, maxL := m.sf.limits(0)
		return speedRead{}, refuse(msg.New("calculator.supported_one_concurrency", int(minL*tokensPerK), int(maxL*tokensPerK), m.byB[0].b),
			"calculator.one_concurrency", m.byB[0].b, b)
	}
	if !levels && m.unlevelled != nil {
		// A level the KV cache set moves with the pool: the cells are
		// read as measured.
		moved := *m
		moved.sf, moved.kv, moved.unlevelled = m.unlevelled.get(), kvLevel{}, nil
		return moved.speed(lTokens, b, false)
	}
	l = m.sf.snap(l) // a context within 5 % of a measured row reads that row
	supported := m.supportedRange("calculator.supported_range")
	if bc, full := m.kv.effective(l, b); levels && full {
		return m.speedCapped(l, b, bc, lTokens, supported)
	}
	if t, s, from, beyond, ok := m.sf.saturated(l, b); levels && ok {
		maxB, _, _ := m.sf.limits(l)
		switch {
		case !beyond:
			return speedRead{t: t, s: s, basis: Interpolated, used: m.neighbours(l, b), levelFrom: from}, nil
		case b <= maxB:
			return speedRead{t: t, s: s, basis: Extrapolated, used: m.neighbours(l, b), levelFrom: from}, nil
		}
		return speedRead{}, pastConcurrency(supported, b, lTokens, maxB)
	}
	if lo, hi, rough := m.sf.rough(l, b); rough {
		// Along the row nothing is known across the break; where this
		// concurrency was measured at other contexts, its column still says
		// it (step time is close to linear in context).
		if _, col := m.sf.paths(l, b); col.ok && m.sf.measuredColumn(b) && col.t > 0 && col.s > 0 {
			basis := Interpolated
			if col.extended {
				basis = Extrapolated
			}
			return speedRead{t: col.t, s: col.s, basis: basis, used: m.neighbours(l, b)}, nil
		}
		return speedRead{}, refuse(supported, "calculator.not_smooth", lo, hi, lTokens)
	}
	if lo, hi, at, jump := m.sf.jump(b); jump {
		return speedRead{}, refuse(m.supportedRange("calculator.supported_range_jump"), "calculator.concurrency_jump", lo, hi, int(math.Round(at*tokensPerK)), b)
	}
	if r, ok := m.speedInside(l, b); ok {
		return r, nil
	}
	return m.speedBeyond(l, b, lTokens, supported)
}

// speedCapped is speedAt where a full KV cache (or the request limit) runs
// bc of b requests at once; the rest wait.
func (m *Model) speedCapped(l, b, bc float64, lTokens int, supported msg.Message) (speedRead, error) {
	if maxB := concurrencyReach * m.kv.maxB(l); b > maxB {
		return speedRead{}, pastConcurrency(supported, b, lTokens, maxB)
	}
	within := *m
	within.kv, within.unlevelled = kvLevel{}, nil
	r, err := within.speed(int(math.Round(l*tokensPerK)), bc, false)
	if err != nil {
		return speedRead{}, err
	}
	r.s *= b / bc
	if m.kv.lockstep {
		r.t *= b / bc
	}
	switch {
	case b > m.kv.maxB(l):
		r.basis = Extrapolated // past the row's end
	case r.basis == Measured:
		r.basis = Interpolated
	}
	r.levelFrom = bc
	return r, nil
}

// speedInside is speedAt where the surface interpolates (l, b), or
// extends its rows and columns a little past it; ok false elsewhere.
func (m *Model) speedInside(l, b float64) (speedRead, bool) {
	var read []CellRef // the other rows' cells a shape-transfer estimate read
	t, s, extended, ok := m.sf.interpolate(l, b, func(l, b float64) {
		read = append(read, CellRef{int(math.Round(l * tokensPerK)), int(b)})
	})
	if !ok || !(t > 0) || !(s > 0) {
		return speedRead{}, false
	}
	used := m.neighbours(l, b)
	for _, ref := range read {
		if !slices.Contains(used, ref) {
			used = append(used, ref)
		}
	}
	if extended {
		return speedRead{t: t, s: s, basis: Extrapolated, used: used}, true
	}
	return speedRead{t: t, s: s, basis: Interpolated, used: used}, true
}

// speedBeyond is speedAt outside the measured region, within the run's
// reach (see limits).
func (m *Model) speedBeyond(l, b float64, lTokens int, supported msg.Message) (speedRead, error) {
	maxB, minL, maxL := m.sf.limits(l)
	if l > maxL {
		return speedRead{}, refuse(supported, "calculator.context_beyond_longest", lTokens, longestReach, int(math.Round(m.sf.maxL*tokensPerK)))
	}
	if l < minL {
		return speedRead{}, refuse(supported, "calculator.context_below_shortest", lTokens, shortestReach, int(math.Round(m.sf.rows[0].key*tokensPerK)))
	}
	if b > maxB {
		return speedRead{}, pastConcurrency(supported, b, lTokens, maxB)
	}
	t, s, anchor := m.sf.extrapolate(l, b)
	if !finite(t, s) || t <= 0 || s <= 0 {
		return speedRead{}, refuse(supported, "calculator.no_usable_step_time", lTokens, b)
	}
	return speedRead{t: t, s: s, basis: Extrapolated, used: []CellRef{{int(anchor.l * tokensPerK), int(anchor.b)}}}, nil
}

// neighbours lists the measured cells an interpolation at (l, b) leans on.
func (m *Model) neighbours(l, b float64) []CellRef {
	var out []CellRef
	lo, hi, _, _ := bracket(m.sf.rows, l)
	for _, r := range []line{lo, hi} {
		i, found := slices.BinarySearch(r.xs, b)
		idx := []int{i}
		if !found {
			idx = []int{i - 1, i}
		}
		for _, j := range idx {
			if j >= 0 && j < len(r.xs) {
				ref := CellRef{int(math.Round(r.key * tokensPerK)), int(r.xs[j])}
				if !slices.Contains(out, ref) {
					out = append(out, ref)
				}
			}
		}
	}
	return out
}

// supportedRange says the range the run answers, as code (the range
// alone, or with what a jump leaves).
func (m *Model) supportedRange(code string) msg.Message {
	maxB := 0.0
	for _, r := range m.sf.rows {
		maxB = max(maxB, r.xs[len(r.xs)-1])
	}
	_, minL, maxL := m.sf.limits(0)
	return msg.New(code, int(minL*tokensPerK), int(maxL*tokensPerK), int(concurrencyReach*maxB), concurrencyReach)
}

// pastConcurrency refuses concurrency b, beyond maxB, the reach of the
// run's concurrencies near context lTokens.
func pastConcurrency(supported msg.Message, b float64, lTokens int, maxB float64) error {
	return refuse(supported, "calculator.concurrency_beyond_largest", b, concurrencyReach, lTokens, maxB/concurrencyReach)
}

// maxOutput is the output reservation a query uses: its own, else the
// run's. A run that does not say refuses, since capacity is B·(L + it).
func (m *Model) maxOutput(q Query) (int, error) {
	if q.MaxOutputTokens > 0 {
		return q.MaxOutputTokens, nil
	}
	if m.maxOut > 0 {
		return m.maxOut, nil
	}
	return 0, errNoMaxOutput()
}

// errNoMaxOutput refuses a question that needs the KV capacity of a run
// that does not say what each request reserves for output.
func errNoMaxOutput() error {
	return refuse(msg.New("calculator.supported_max_output"), "calculator.max_output_unknown")
}

// capacityUnknownWarning is said of a speed answered without the KV
// capacity (CapacityUnknown).
func capacityUnknownWarning() msg.Message { return msg.New("calculator.capacity_unknown") }

// concurrencyText is a concurrency as said: one decimal at most (a KV
// cache's limit falls between whole requests).
func concurrencyText(b float64) string {
	return strconv.FormatFloat(math.Round(b*10)/10, 'f', -1, 64)
}

// modelMove is how the run's speed moves to another model: its engine
// family's calibrated move.
func (m *Model) modelMove() ModelMove { return calibration().ModelMoveFor(EngineFamily(m.run.Engine)) }

// otherModelSpeed says how the speed of an answer for another model was
// made.
func otherModelSpeed(r ModelRatios, mv ModelMove) msg.Message {
	return msg.New("calculator.other_model_speed",
		r.Weights, mv.WeightPower, r.KV, mv.KVPower, 100*mv.Band)
}

// otherModelVRAM refuses another model together with another VRAM size or
// memory utilization: its KV pool is moved from the measured one, each
// move was measured alone.
func otherModelVRAM(q Query) error {
	if q.VRAMGB > 0 || q.GPUMemoryUtilization > 0 || q.TargetGPU != "" {
		return refuse(msg.New("calculator.supported_other_model_same_memory"), "calculator.other_model_vram")
	}
	return nil
}

// targetVRAM sets an answer on another GPU to that GPU's VRAM unless the
// query names one. Where the run's KV pool cannot be scaled to it (the
// run does not say its VRAM, memory utilization or model size), its
// capacity is kept, with a warning, rather than the answer refused: the
// other GPU's speed does not depend on them.
func (m *Model) targetVRAM(q *Query, gpu *gpuScaling) error {
	if !gpu.scaled || q.VRAMGB != 0 {
		return nil
	}
	moved := *q
	moved.VRAMGB = gpu.target.VRAMGB
	_, err := m.vramScale(moved)
	var r *Refusal
	var full noRoom
	switch {
	case err == nil:
		*q = moved
	case errors.As(err, &full):
		// The weights alone fill the other GPU: nothing runs there.
		return refuse(full.SupportedMessage, "calculator.no_room_on_gpu", gpu.target.Name, full.Message)
	case errors.As(err, &r):
		gpu.warnings = append(gpu.warnings, msg.New("calculator.kv_not_moved_to_gpu", gpu.target.Name, r.Message))
	}
	return nil
}

// sameSpeed is said of answers for another VRAM size of the measured GPU.
func sameSpeed() msg.Message { return msg.New("calculator.same_speed") }

// capacityFor is the run's capacity for another max_output and KV pool.
func (m *Model) capacityFor(maxOut int, scale vramScaling) capacity {
	c := m.cap
	switch {
	case maxOut == m.maxOut:
	case m.maxOut == 0:
		// The run does not say what each request reserved: the asked
		// reservation is taken as the one its cells ran with.
		c = newCapacity(m.run, maxOut)
	default:
		// The KV pool is what the run's cells, with their own
		// reservation, showed; the asked reservation only changes what
		// each request takes of it.
		c.maxOut = maxOut
	}
	return c.scale(scale.lo, scale.hi)
}

// invBand is the interval of a quantity inversely proportional to one known
// within ±rel (rel taken as at most 0.9, so the upper bound stays within
// 10× the value).
func invBand(v, rel float64) *Estimate {
	return &Estimate{Value: v, Low: v / (1 + rel), High: v / (1 - math.Min(rel, 0.9))}
}

func roundingBand(v, halfUnit float64) float64 {
	if v <= 0 {
		return 0
	}
	return halfUnit / v
}

// measuredAnswer answers a query at a published cell with its measurement.
func (m *Model) measuredAnswer(p Prediction, c Cell) Prediction {
	p.Basis, p.SpeedBasis = Measured, Measured
	p.Cells = []CellRef{{c.ContextTokens, c.Concurrency}}
	switch c.Status {
	case CellRequestsQueued:
		p.Status = RequestsQueued
	case CellValid:
		p.Status = Fits
	default:
		wasRun, output := ran(c)
		p.Status = OverCapacity
		if wasRun && !output {
			p.Status = TTFTExceedsWindow
		}
	}
	p.TotalTokS = exact(c.TotalTokS, 0.05)
	p.PerRequestTokS = exact(c.PerRequestTokS, 0.05)
	p.TBTMs = exact(c.TBTMs, 0.05)
	p.TTFTMs = exact(c.TTFTMs, 0.5)
	if p.TotalTokS == nil {
		p.Basis, p.SpeedBasis = NoSpeed, NoSpeed
	}
	return p
}

// exact is a published value with its rounding (half a unit of its last
// digit either side); nil when not published.
func exact(v *float64, half float64) *Estimate {
	if v == nil {
		return nil
	}
	return &Estimate{Value: *v, Low: max(*v-half, 0), High: *v + half}
}

// PrefillPrediction is a cold-prefill answer.
type PrefillPrediction struct {
	TTFTMs     Estimate
	PromptTokS Estimate
	Basis      Basis
	// Contexts are the measured prefill contexts the fit used.
	Contexts []int
	Warnings []msg.Message
}

// prefillReach is how far beyond its longest measured prefill a run's
// prefill is read: the quadratic term is extrapolated up to this many times
// that context.
const prefillReach = 2

// Prefill predicts cold TTFT and prompt tok/s at context l from
// TTFT(L) = p·L + q·L².
func (m *Model) Prefill(l int) (PrefillPrediction, error) {
	pm := m.prefill
	if len(pm.points) < 2 || pm.p+pm.q <= 0 {
		return PrefillPrediction{}, refuse(msg.New("calculator.supported_two_prefills"), "calculator.prefill_too_few")
	}
	limit := prefillReach * pm.maxL
	if m.run.MaxModelLen > 0 {
		limit = min(limit, m.run.MaxModelLen)
	}
	minL := pm.maxL
	for _, p := range pm.points {
		minL = min(minL, p.ContextTokens)
	}
	// Below half the shortest measured prompt, fixed per-request costs the
	// fit has no term for (scheduling, a decode step, sampling) make most
	// of the time: 1 token was answered 0.25 ms ±4 %, under one decode step.
	floor := max(1, (minL+1)/2)
	supported := msg.New("calculator.supported_prefill_range", floor, limit)
	if l < floor || l > limit {
		return PrefillPrediction{}, refuse(supported, "calculator.prefill_out_of_range", l, minL, prefillReach)
	}
	out := PrefillPrediction{Basis: Interpolated}
	for _, p := range pm.points {
		out.Contexts = append(out.Contexts, p.ContextTokens)
		if p.ContextTokens == l && p.TTFTMs > 0.5 {
			v := p.TTFTMs
			out.Basis = Measured
			// ± half the last published digit (1 ms), the time at most halved.
			out.TTFTMs = Estimate{Value: v, Low: max(v-0.5, v/2), High: v + 0.5}
			tok := float64(l) / v * 1000
			out.PromptTokS = Estimate{Value: tok, Low: float64(l) / out.TTFTMs.High * 1000, High: float64(l) / out.TTFTMs.Low * 1000}
			out.Contexts = []int{l}
			return out, nil
		}
	}
	switch {
	case l > pm.maxL:
		out.Basis = Extrapolated
		out.Warnings = append(out.Warnings, msg.New("calculator.prefill_beyond_longest"))
	case l < minL:
		out.Basis = Extrapolated
		out.Warnings = append(out.Warnings, msg.New("calculator.prefill_below_shortest"))
	}
	v := pm.eval(l)
	if !finite(v) || v <= 0 {
		return PrefillPrediction{}, refuse(supported, "calculator.prefill_no_usable_time", l)
	}
	rel := m.bands.Prefill
	if out.Basis == Extrapolated {
		rel *= 2
	}
	out.TTFTMs = *band(v, rel)
	tok := float64(l) / v * 1000
	out.PromptTokS = *invBand(tok, rel)
	if !finiteEstimates(&out.TTFTMs, &out.PromptTokS) {
		return PrefillPrediction{}, refuse(supported, "calculator.prefill_no_finite_time", l)
	}
	return out, nil
}

// PrefillModelBand is the least relative half-width of a cold-prefill
// answer for another model: scaled by FLOPs, not measured (see
// PrefillOtherModel; docs/calculator.md gives how it was measured).
const PrefillModelBand = 0.5

// PrefillOtherModel predicts cold prefill at context l for another model
// (r) on the run's GPU and engine: prefill is bound by compute, so the
// run's own cold TTFT at l is scaled by the ratio of what a prompt token
// costs each model, 2 × active parameters + (2 × 2 × full-attention layers
// × heads × head dimension) × l/2 FLOPs, with at least PrefillModelBand.
func (m *Model) PrefillOtherModel(l int, r ModelRatios) (PrefillPrediction, error) {
	if err := r.check(); err != nil {
		return PrefillPrediction{}, err
	}
	if !(r.From.FLOPsPerToken > 0 && r.To.FLOPsPerToken > 0 && r.From.AttentionFLOPs > 0 && r.To.AttentionFLOPs > 0) {
		return PrefillPrediction{}, refuse(msg.New("calculator.supported_prefill_other_model"), "calculator.prefill_other_model_flops")
	}
	p, err := m.Prefill(l)
	if err != nil {
		return PrefillPrediction{}, err
	}
	k := r.To.prefillFLOPs(l) / r.From.prefillFLOPs(l)
	v := p.TTFTMs.Value * k
	rel := max(PrefillModelBand, (p.TTFTMs.High-p.TTFTMs.Value)/p.TTFTMs.Value, (p.TTFTMs.Value-p.TTFTMs.Low)/p.TTFTMs.Value)
	out := PrefillPrediction{TTFTMs: *band(v, rel), PromptTokS: *invBand(float64(l)/v*1000, rel), Basis: ScaledModel, Contexts: p.Contexts,
		Warnings: append(p.Warnings, msg.New("calculator.prefill_other_model",
			p.Basis, p.TTFTMs.Value, k, 100*rel))}
	if !finite(k, v) || !finiteEstimates(&out.TTFTMs, &out.PromptTokS) {
		return PrefillPrediction{}, refuse(msg.New("calculator.supported_finite_flops"), "calculator.prefill_other_model_not_finite")
	}
	return out, nil
}

// CapacityAnswer is the KV-capacity picture at one context.
type CapacityAnswer struct {
	ContextTokens int
	// MaxConcurrency surely fits at the context; up to
	// MaxConcurrencyPossible may (boundary uncertain beyond the first); nil
	// when no reservation was refused, so no upper bound is known.
	MaxConcurrency         int
	MaxConcurrencyPossible *int
	// MaxContextTokens at Concurrency surely fits (when Concurrency > 0);
	// nil when no context fits that many requests.
	Concurrency      int
	MaxContextTokens *int
	KVTokensLow      int
	KVTokensHigh     int
	SequenceLimit    int
	MaxOutputTokens  int
	Basis            Basis
	Warnings         []msg.Message
}

// Capacity answers how many requests fit at q's context, and how long a
// context fits at q's concurrency (when given).
func (m *Model) Capacity(q Query) (CapacityAnswer, error) {
	if q.ContextTokens < 0 || q.Concurrency < 0 {
		return CapacityAnswer{}, refuse(msg.New("calculator.supported_capacity_query"), "calculator.capacity_negative")
	}
	maxOut, err := m.maxOutput(q)
	if err != nil {
		return CapacityAnswer{}, err
	}
	other := q.OtherModel.other()
	if other {
		if err := q.OtherModel.check(); err != nil {
			return CapacityAnswer{}, err
		}
		if err := otherModelVRAM(q); err != nil {
			return CapacityAnswer{}, err
		}
		if !q.OtherModel.sized() {
			return CapacityAnswer{}, refuse(msg.New("calculator.supported_other_model_sizes"), "calculator.capacity_other_model_sizes")
		}
	}
	if q.TargetGPU != "" && q.VRAMGB == 0 {
		g, ok := LookupGPU(q.TargetGPU)
		if !ok {
			return CapacityAnswer{}, unknownGPU(q.TargetGPU, "calculator.gpu_vram_unknown")
		}
		q.VRAMGB = g.VRAMGB
	}
	scale, err := m.vramScale(q)
	if err != nil {
		return CapacityAnswer{}, err
	}
	mv := moveOf(gpuScaling{}, scale, other) // the speed is not asked
	if q.TargetGPU != "" && mv == moveVRAM {
		scale.warnings = append(scale.warnings, msg.New("calculator.capacity_for_gpu", q.TargetGPU, q.VRAMGB))
	}
	c := m.capacityFor(maxOut, scale)
	if mv == moveModel {
		var warn []msg.Message
		if c, warn, err = c.toModel(q.OtherModel); err != nil {
			return CapacityAnswer{}, err
		}
		scale.warnings = append(scale.warnings, warn...)
	}
	a := CapacityAnswer{
		ContextTokens: q.ContextTokens, Concurrency: q.Concurrency,
		KVTokensLow: c.cLo, KVTokensHigh: c.cHi, SequenceLimit: c.seqLimit, MaxOutputTokens: maxOut,
		Basis: mv.basis(Measured), Warnings: scale.warnings,
	}
	if c.pastModelLen(q.ContextTokens) {
		a.Warnings = append(a.Warnings, msg.New("calculator.past_max_model_len", c.maxModelLen))
		zero := 0
		a.MaxConcurrencyPossible = &zero
		return a, nil
	}
	a.MaxConcurrency = c.maxConcurrency(q.ContextTokens)
	a.Warnings = append(a.Warnings, c.capNotes(q.ContextTokens, a.MaxConcurrency)...)
	if c.cHi > 0 {
		possible := c.running(max(a.MaxConcurrency, (c.cHi-1)/(q.ContextTokens+maxOut)))
		a.MaxConcurrencyPossible = &possible
	} else {
		a.Warnings = append(a.Warnings, msg.New("calculator.capacity_may_be_larger"))
	}
	if q.Concurrency > 0 {
		if l := c.cLo/c.running(q.Concurrency) - maxOut; l >= 0 {
			if c.maxModelLen > 0 {
				l = min(l, max(c.maxModelLen-maxOut, c.servedL))
			}
			a.MaxContextTokens = &l
		} else {
			a.Warnings = append(a.Warnings, msg.New("calculator.never_surely_fit", q.Concurrency))
		}
		if r := c.running(q.Concurrency); r < q.Concurrency {
			a.Warnings = append(a.Warnings, msg.New("calculator.only_some_run", r))
		}
	}
	return a, nil
}

// GridCell is one cell of a predicted grid: a prediction, or why none.
type GridCell struct {
	ContextTokens int
	Concurrency   int
	Prediction    Prediction
	Refusal       *Refusal
}

// Grid predicts every context × concurrency combination. Cells the data
// does not support carry their refusal instead of failing the grid.
func (m *Model) Grid(contexts, concurrencies []int, base Query) ([]GridCell, []msg.Message, error) {
	gpu, err := m.gpuScale(base, m.gpuMove())
	if err != nil {
		return nil, nil, err
	}
	vq := base
	if err := m.targetVRAM(&vq, &gpu); err != nil {
		return nil, nil, err
	}
	scale, err := m.vramScale(vq)
	if err != nil {
		return nil, nil, err
	}
	// What moving to another GPU or VRAM size says holds for every cell:
	// the grid says it once (and another model's move, below).
	warnings := append(slices.Clone(gpu.warnings), scale.warnings...)
	if moveOf(gpu, scale, false) == moveVRAM {
		warnings = append(warnings, sameSpeed())
	}
	if _, err := m.maxOutput(base); err != nil {
		warnings = append(warnings, capacityUnknownWarning()) // its cells answer speed alone
	}
	if base.OtherModel.other() {
		if maxOut, err := m.maxOutput(base); err == nil {
			if _, capWarn, err := m.capacityFor(maxOut, scale).toModel(base.OtherModel); err == nil {
				warnings = append(warnings, capWarn...)
			}
		}
		warnings = append(warnings, otherModelSpeed(base.OtherModel, m.modelMove()))
	}
	out := make([]GridCell, 0, len(contexts)*len(concurrencies))
	for _, l := range contexts {
		for _, b := range concurrencies {
			q := base
			q.ContextTokens, q.Concurrency = l, b
			p, err := m.Decode(q)
			cell := GridCell{ContextTokens: l, Concurrency: b, Prediction: p}
			if err != nil {
				var r *Refusal
				if !errors.As(err, &r) {
					return nil, nil, err
				}
				cell.Refusal = r
			}
			out = append(out, cell)
		}
	}
	return out, warnings, nil
}

// MeasuredAxes returns the run's measured contexts and concurrencies,
// ascending.
func (m *Model) MeasuredAxes() (contexts, concurrencies []int) {
	for _, c := range m.run.Decode {
		contexts = append(contexts, c.ContextTokens)
		concurrencies = append(concurrencies, c.Concurrency)
	}
	slices.Sort(contexts)
	slices.Sort(concurrencies)
	return slices.Compact(contexts), slices.Compact(concurrencies)
}
