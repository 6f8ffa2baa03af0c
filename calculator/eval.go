package calculator

import (
	"context"
	"math"
	"slices"
	"strconv"
)

// ErrorStats summarises absolute relative errors (fractions, not %).
type ErrorStats struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	P90  float64 `json:"p90"`
	Max  float64 `json:"max"`
	errs []float64
}

func (s *ErrorStats) add(e float64) { s.errs = append(s.errs, e) }

func (s *ErrorStats) finish() {
	s.N = len(s.errs)
	if s.N == 0 {
		s.Mean, s.P90, s.Max = 0, 0, 0
		return
	}
	sorted := slices.Clone(s.errs)
	slices.Sort(sorted)
	sum := 0.0
	for _, e := range sorted {
		sum += e
	}
	s.Mean = sum / float64(s.N)
	s.P90 = quantile(sorted, 0.9)
	s.Max = sorted[s.N-1]
}

// quantile interpolates linearly between order statistics.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 1 {
		return sorted[0]
	}
	pos := q * float64(len(sorted)-1)
	i := int(pos)
	if i >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	return lerp(sorted[i], sorted[i+1], pos-float64(i))
}

// RegimeErrors are the held-out errors of one regime.
type RegimeErrors struct {
	Total ErrorStats `json:"total_tok_s"`
	TBT   ErrorStats `json:"tbt_ms"`
}

// StatusCalls counts held-out status calls against what was published.
type StatusCalls struct {
	Right    int `json:"right"`
	Boundary int `json:"boundary_uncertain"`
	Wrong    int `json:"wrong"`
	// Misses names the cells called boundary_uncertain or wrong, as
	// "context×concurrency: called (published)".
	Misses []string `json:"misses"`
}

// Report is the held-out accuracy of the calculator on one run (or pooled
// over runs).
type Report struct {
	RunID string `json:"run_id"`
	// Interpolant is how the run's model interpolates along concurrency.
	Interpolant  string       `json:"interpolant"`
	Interpolated RegimeErrors `json:"interpolated"`
	Extrapolated RegimeErrors `json:"extrapolated"`
	// Refused counts held-out cells the calculator declined to predict.
	Refused int         `json:"refused"`
	Status  StatusCalls `json:"status_calls"`
	TTFT    ErrorStats  `json:"ttft_ms"`
	Prefill ErrorStats  `json:"prefill_ttft_ms"`
}

// Evaluate measures the calculator on a run by holding out, in turn, every
// valid cell, every context row and every concurrency column, predicting
// the held-out valid cells from the rest; status calls hold out one cell at
// a time; TTFT and prefill hold out one point at a time.
//
// The interpolant is chosen on the whole run first (as Fit does), so the
// held-out errors include that one choice's slight optimism.
func Evaluate(r Run) Report {
	ip, _ := chooseInterpolant(context.Background(), r)
	rep, _ := evaluate(context.Background(), r, ip, evalLimits{statuses: true})
	rep.finish()
	return rep
}

// evalLimits bound an evaluation: at most cells single-cell holdouts and
// lines rows and columns each (0: all), and whether to call statuses (a
// fit's bands do not need them).
type evalLimits struct {
	cells, lines int
	statuses     bool
}

func evaluate(ctx context.Context, r Run, ip interp, lim evalLimits) (Report, error) {
	rep := Report{RunID: r.ID, Interpolant: ip.String()}
	var valid []Cell
	rows, cols := map[int]bool{}, map[int]bool{}
	for _, c := range r.Decode {
		if usable(c) {
			valid = append(valid, c)
			rows[c.ContextTokens], cols[c.Concurrency] = true, true
		}
	}
	var holdouts [][]Cell
	for _, c := range spread(valid, lim.cells) {
		holdouts = append(holdouts, []Cell{c})
	}
	for _, l := range spread(sortedKeys(rows), lim.lines) {
		holdouts = append(holdouts, filter(valid, func(c Cell) bool { return c.ContextTokens == l }))
	}
	for _, b := range spread(sortedKeys(cols), lim.lines) {
		holdouts = append(holdouts, filter(valid, func(c Cell) bool { return c.Concurrency == b }))
	}
	for _, held := range holdouts {
		if err := ctx.Err(); err != nil {
			return Report{}, err
		}
		rest := without(r, held)
		m, err := fitCore(rest, ip)
		if err != nil {
			rep.Refused += len(held)
			continue
		}
		for _, c := range held {
			b := float64(c.Concurrency)
			sp, err := m.speed(c.ContextTokens, b, true)
			if err != nil {
				rep.Refused++
				continue
			}
			t, s := sp.t, sp.s
			reg := &rep.Interpolated
			if sp.basis == Extrapolated {
				reg = &rep.Extrapolated
			}
			if c.TBTMs != nil {
				reg.TBT.add(math.Abs(t-*c.TBTMs) / *c.TBTMs)
			}
			reg.Total.add(math.Abs(b*1000/s-*c.TotalTokS) / *c.TotalTokS)
		}
	}

	for _, c := range r.Decode {
		if !lim.statuses {
			break
		}
		m, err := fitCore(without(r, []Cell{c}), ip)
		if err != nil {
			continue
		}
		got, _ := m.cap.status(c.ContextTokens, c.Concurrency)
		want, alsoRight := publishedStatus(c)
		switch {
		case got == want || got == alsoRight:
			rep.Status.Right++
		case got == BoundaryUncertain:
			rep.Status.Boundary++
			rep.Status.Misses = append(rep.Status.Misses, cellName(c)+": boundary_uncertain ("+string(want)+")")
		default:
			rep.Status.Wrong++
			rep.Status.Misses = append(rep.Status.Misses, cellName(c)+": "+string(got)+" ("+string(want)+")")
		}
	}

	for _, c := range spread(valid, lim.cells) {
		if c.Concurrency == 1 || c.TTFTMs == nil {
			continue
		}
		d := fitDecodeTTFT(without(r, []Cell{c}).Decode)
		i, found := slices.BinarySearch(d.rows, float64(c.ContextTokens))
		if !found {
			continue
		}
		pred := d.t1[i] * (1 + d.alpha[i]*float64(c.Concurrency-1))
		rep.TTFT.add(math.Abs(pred-*c.TTFTMs) / *c.TTFTMs)
	}
	for i, p := range r.Prefill {
		rest := slices.Delete(slices.Clone(r.Prefill), i, i+1)
		if len(rest) < 2 || p.TTFTMs <= 0 {
			continue
		}
		pm := fitPrefill(rest)
		rep.Prefill.add(math.Abs(pm.eval(p.ContextTokens)-p.TTFTMs) / p.TTFTMs)
	}
	return rep, nil
}

// publishedStatus maps a published cell to the call a perfect calculator
// would make; a queued cell whose requests all ran most of the time may
// also be called fits.
func publishedStatus(c Cell) (want, alsoRight Status) {
	switch c.Status {
	case CellValid:
		return Fits, Fits
	case CellRequestsQueued:
		if queuedBySequences(c) {
			return RequestsQueued, RequestsQueued
		}
		return RequestsQueued, Fits
	}
	if wasRun, output := ran(c); wasRun && !output {
		return TTFTExceedsWindow, TTFTExceedsWindow
	}
	return OverCapacity, OverCapacity
}

func cellName(c Cell) string {
	return strconv.Itoa(c.ContextTokens) + "×" + strconv.Itoa(c.Concurrency)
}

func without(r Run, held []Cell) Run {
	out := r
	out.Decode = filter(r.Decode, func(c Cell) bool {
		for _, h := range held {
			if h.ContextTokens == c.ContextTokens && h.Concurrency == c.Concurrency {
				return false
			}
		}
		return true
	})
	return out
}

func filter(cells []Cell, keep func(Cell) bool) []Cell {
	out := make([]Cell, 0, len(cells))
	for _, c := range cells {
		if keep(c) {
			out = append(out, c)
		}
	}
	return out
}

func sortedKeys(m map[int]bool) []int {
	var ks []int
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func (r *Report) finish() {
	for _, s := range []*ErrorStats{&r.Interpolated.Total, &r.Interpolated.TBT, &r.Extrapolated.Total, &r.Extrapolated.TBT, &r.TTFT, &r.Prefill} {
		s.finish()
	}
}

// Pool merges per-run reports into one over all their held-out cells.
func Pool(reports []Report) Report {
	var p Report
	p.RunID, p.Interpolant = "pooled", "per run"
	for _, r := range reports {
		p.Interpolated.Total.errs = append(p.Interpolated.Total.errs, r.Interpolated.Total.errs...)
		p.Interpolated.TBT.errs = append(p.Interpolated.TBT.errs, r.Interpolated.TBT.errs...)
		p.Extrapolated.Total.errs = append(p.Extrapolated.Total.errs, r.Extrapolated.Total.errs...)
		p.Extrapolated.TBT.errs = append(p.Extrapolated.TBT.errs, r.Extrapolated.TBT.errs...)
		p.TTFT.errs = append(p.TTFT.errs, r.TTFT.errs...)
		p.Prefill.errs = append(p.Prefill.errs, r.Prefill.errs...)
		p.Refused += r.Refused
		p.Status.Right += r.Status.Right
		p.Status.Boundary += r.Status.Boundary
		p.Status.Wrong += r.Status.Wrong
		for _, m := range r.Status.Misses {
			p.Status.Misses = append(p.Status.Misses, r.RunID+" "+m)
		}
	}
	p.finish()
	return p
}

// Bands are the conformal bound widened by 1 + 1/√n: a run's few held-out
// errors come from the fit that chose its interpolant on those same cells,
// so they understate a new cell's error, the more so the fewer they are
// (measured: without it, intervals of 8–12-cell grids held 83 % of
// held-out cells).
//
// conformal90 is the split-conformal 90 % bound of held-out errors: the
// ⌈0.9·(n+1)⌉-th smallest of n, which a new error exceeds at most 10 % of
// the time when errors are exchangeable (the plain p90 of a few errors is
// too small a bound more often than that); the largest when n < 9.
func conformal90(errs []float64) float64 {
	sorted := slices.Clone(errs)
	slices.Sort(sorted)
	k := int(math.Ceil(0.9 * float64(len(sorted)+1)))
	return sorted[min(k, len(sorted))-1]
}

// rootMeanSquare of errs (not empty).
func rootMeanSquare(errs []float64) float64 {
	q := 0.0
	for _, e := range errs {
		q += e * e
	}
	return math.Sqrt(q / float64(len(errs)))
}

// bands turns a run's held-out errors into the intervals its answers
// carry. Interpolated ones are the conformal bound of the run's many
// single-cell errors. Extrapolated ones are twice the root mean square of
// its few whole-line errors: they come from the grid's two edge rows and
// columns, so their conformal bound is their largest, which ranks runs by
// one line's worst cell (measured on the corpus: a noisy M2 Ultra grid and
// a smooth DGX Spark one both had ±43–49 % before calibration); the family
// calibration sets the scale.
func (r Report) bands() Bands {
	r.finish()
	pick := func(s ErrorStats, fallback float64) float64 {
		if s.N < 3 {
			return fallback
		}
		return math.Max(conformal90(s.errs)*(1+1/math.Sqrt(float64(s.N))), bandFloor)
	}
	b := Bands{Calibrated: r.Interpolated.Total.N >= 3}
	b.InterpolatedTotal = pick(r.Interpolated.Total, bandFallback)
	b.InterpolatedTBT = pick(r.Interpolated.TBT, bandFallback)
	spread := func(s ErrorStats, fallback float64) float64 {
		if s.N < 3 {
			return fallback
		}
		return math.Max(2*rootMeanSquare(s.errs), bandFloor)
	}
	b.ExtrapolatedTotal = math.Max(spread(r.Extrapolated.Total, bandFallback), b.InterpolatedTotal)
	b.ExtrapolatedTBT = math.Max(spread(r.Extrapolated.TBT, bandFallback), b.InterpolatedTBT)
	b.TTFT = pick(r.TTFT, bandFallback)
	b.Prefill = pick(r.Prefill, bandFallback)
	return b
}
