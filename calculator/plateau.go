package calculator

import "math"

// An engine whose KV cache or compute is full gains nothing from more
// requests: they wait, or share the same steps, and total throughput stays
// level (or sags a little under preemption). A row that levels off so, and
// stays level to its end or to the asked concurrency, is answered on that
// level rather than along a surface fitted for a rising curve.
const (
	// plateauRise is how much a cell may rise over the best total at smaller
	// concurrency of its row and still count as level.
	plateauRise = 0.03
	// plateauSag is how far below the knee's total a level cell may fall.
	plateauSag = 0.05
)

// level is where a row levels off: knee is the index of its cell with the
// largest total before the first level cell, last the index of the last
// cell of the level stretch that follows (within plateauRise above and
// plateauSag below the knee's total). ok is false for a row that keeps
// rising.
type level struct {
	knee, last int
	ok         bool
}

func rowTotal(r line, i int) float64 { return r.xs[i] / r.s[i] }

func levelOf(r line) level {
	best := -1
	for k := range r.xs {
		if best >= 0 && rowTotal(r, k) <= (1+plateauRise)*rowTotal(r, best) {
			lv := level{knee: best, last: best}
			kt := rowTotal(r, best)
			for i := best + 1; i < len(r.xs); i++ {
				if t := rowTotal(r, i); t > (1+plateauRise)*kt || t < (1-plateauSag)*kt {
					break
				}
				lv.last = i
			}
			lv.ok = lv.last > lv.knee
			return lv
		}
		if best < 0 || rowTotal(r, k) > rowTotal(r, best) {
			best = k
		}
	}
	return level{}
}

// onLevel returns the row's T and total (per millisecond) at b when b is
// past the row's knee and on its level stretch, interpolated between its
// cells; or, when the stretch runs to the row's last cell, beyond it: the
// total held level and T extended along the line through the stretch's
// last two cells, never falling (a batch whose requests all run takes
// longer steps as it grows; an engine whose extra requests wait does not).
// beyond reports the latter.
func onLevel(r line, lv level, b float64) (t, tot float64, beyond, ok bool) {
	if !lv.ok || b <= r.xs[lv.knee] {
		return 0, 0, false, false
	}
	for i := lv.knee + 1; i <= lv.last; i++ {
		if b <= r.xs[i] {
			f := (b - r.xs[i-1]) / (r.xs[i] - r.xs[i-1])
			return lerp(r.t[i-1], r.t[i], f), lerp(rowTotal(r, i-1), rowTotal(r, i), f), false, true
		}
	}
	n := lv.last
	if n != len(r.xs)-1 {
		return 0, 0, false, false
	}
	t = math.Max(r.t[n], lerp(r.t[n-1], r.t[n], (b-r.xs[n-1])/(r.xs[n]-r.xs[n-1])))
	return t, rowTotal(r, n), true, true
}

// switches reports rows in which throughput rises much faster over one step
// of concurrency than over the step before (see jump): a kernel or
// scheduler switch, after which a level stretch is not the engine's last
// word, so no level of such a run is answered on.
func switches(rows []line) bool {
	for _, r := range rows {
		for i := 2; i < len(r.xs); i++ {
			if jumpsAt(r, i) {
				return true
			}
		}
	}
	return false
}

// ownLevels makes the run's own cells, without those shared from runs
// with other capacity settings, the rows its levels are read from: a level
// is a capacity effect.
func (sf *surface) ownLevels(own []sample) {
	own, _ = snapRows(own)
	sf.levelRows = group(own, func(p sample) (float64, float64) { return p.l, p.b }, nil, nil)
	sf.switching = switches(sf.levelRows)
}

// saturated answers T and S at (l, b) where the run's own rows around l
// both level off before b: T and the total interpolated along each row's
// level stretch (or carried past its end), then linearly in context. from
// is the concurrency from which both rows are level; beyond reports an
// answer carried past some row's last cell.
func (sf *surface) saturated(l, b float64) (t, s, from float64, beyond, ok bool) {
	if sf.switching {
		return 0, 0, 0, false, false
	}
	lo, hi, f, in := bracket(sf.levelRows, l)
	if !in {
		return 0, 0, 0, false, false
	}
	lvLo, lvHi := levelOf(lo), levelOf(hi)
	t0, p0, b0, ok0 := onLevel(lo, lvLo, b)
	t1, p1, b1, ok1 := onLevel(hi, lvHi, b)
	if !ok0 || !ok1 {
		return 0, 0, 0, false, false
	}
	tot := lerp(p0, p1, f)
	if !(tot > 0) {
		return 0, 0, 0, false, false
	}
	from = math.Max(lo.xs[lvLo.knee], hi.xs[lvHi.knee])
	return lerp(t0, t1, f), b / tot, from, b0 || b1, true
}
