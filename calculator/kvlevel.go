package calculator

import (
	"math"
	"slices"
	"sync"
)

// A full KV cache caps how many requests run at once: at context L with
// each request holding L + o tokens (o its output), no more than
// C / (L + o) of them fit, and more requests only wait. A row's
// throughput therefore levels off where B·(L + o) reaches C, and does so
// at a smaller concurrency the longer the context. kvLevel is that
// capacity as the run's own rows show it: read from the rows that level
// off, it says where the rows that do not (or whose level a held-out
// cell hid) level off too, and lets the rising part of the surface be
// fitted on what each cell really ran.
type kvLevel struct {
	// c is the capacity in tokens and seqs the requests that run at once
	// whatever the context: +Inf where the rows show no such limit, c 0
	// where they show none at all.
	c, seqs float64
	// rowL are the run's own rows' contexts (K tokens), ascending; rowOut
	// each one's output tokens per request and rowMaxB its largest
	// measured concurrency.
	rowL, rowOut, rowMaxB []float64
	// lockstep is set where the run's cells publish no time between
	// tokens (its T is the step time of the total).
	lockstep bool
}

// cellOutput is the output tokens each request of c generated: the cell's
// output tokens over its requests where that is within the run's output
// reservation (a batched benchmark, every request generating alike), else
// the reservation (a serving sweep counts all its prompts' tokens).
func cellOutput(c Cell, maxOut int) float64 {
	if c.OutputTokens != nil && c.Concurrency > 0 {
		if o := float64(*c.OutputTokens) / float64(c.Concurrency); o > 0 && (maxOut == 0 || o <= float64(maxOut)) {
			return o
		}
	}
	return float64(maxOut)
}

// out is the output per request at context l (K tokens): the nearest
// rows', linearly between them.
func (k kvLevel) out(l float64) float64 {
	n := len(k.rowL)
	switch {
	case n == 0:
		return 0
	case l <= k.rowL[0]:
		return k.rowOut[0]
	case l >= k.rowL[n-1]:
		return k.rowOut[n-1]
	}
	i, _ := slices.BinarySearch(k.rowL, l)
	return lerp(k.rowOut[i-1], k.rowOut[i], (l-k.rowL[i-1])/(k.rowL[i]-k.rowL[i-1]))
}

// perRequest is the KV tokens one request holds at context l (K tokens).
func (k kvLevel) perRequest(l float64) float64 { return l*tokensPerK + k.out(l) }

// effective is how many requests run at once at (l, b), and whether the
// limits cap them below b.
func (k kvLevel) effective(l, b float64) (float64, bool) { return k.limit(l, b, k) }

// limit is effective with k's limits and rows' outputs from at.
func (k kvLevel) limit(l, b float64, at kvLevel) (float64, bool) {
	if k.c <= 0 {
		return b, false
	}
	bc := math.Min(k.seqs, k.c/at.perRequest(l))
	if b <= bc*(1+1e-9) {
		return b, false
	}
	return bc, true
}

// maxB is the largest measured concurrency of the own rows around l.
func (k kvLevel) maxB(l float64) float64 {
	n := len(k.rowL)
	if n == 0 {
		return 0
	}
	i, found := slices.BinarySearch(k.rowL, l)
	switch {
	case found:
		return k.rowMaxB[i]
	case i == 0:
		return k.rowMaxB[0]
	case i == n:
		return k.rowMaxB[n-1]
	}
	return math.Max(k.rowMaxB[i-1], k.rowMaxB[i])
}

// readKVLevel reads the limits from the run's own samples (outs their
// cells' output per request). A row that levels off (see levelOf) ran as
// many requests at its knee as it ever would: the limit there is more
// than the concurrency before the knee and at most the knee's. A cell
// whose total rises clearly over the cells before it ran more requests
// than the one before. Two limits can explain that: the KV capacity C
// (at most C / (L + o) requests) and a limit on requests running at once
// whatever the context (an engine's --max-num-seqs, a saturated
// scheduler). Each is taken as large as the rows allow (the knee on the
// limit), and of the pairs that explain every row, the one that caps the
// fewest cells, a single limit before two. Rows that level for neither
// reason leave none.
func readKVLevel(own []sample, outs []float64) kvLevel {
	var k kvLevel
	if len(own) == 0 {
		return k
	}
	reps, rep := rowContexts(own)
	sum, n := make(map[float64]float64, len(reps)), make(map[float64]float64, len(reps))
	k.lockstep = true
	for i, p := range own {
		sum[rep[p.l]] += outs[i]
		n[rep[p.l]]++
		k.lockstep = k.lockstep && p.t == p.s
	}
	snapped, _ := snapRows(own)
	rows := group(snapped, func(p sample) (float64, float64) { return p.l, p.b }, nil, nil)
	// A limit x at a row of q tokens a request, where that row says it
	// is above (lo, as a concurrency) or, for a level, at most hi.
	type bound struct{ q, lo, hi float64 }
	var bounds []bound
	var knees []float64
	for _, r := range rows {
		o := sum[r.key] / n[r.key]
		k.rowL = append(k.rowL, r.key)
		k.rowOut = append(k.rowOut, o)
		k.rowMaxB = append(k.rowMaxB, r.xs[len(r.xs)-1])
		q := r.key*tokensPerK + o
		lv := levelOf(r)
		if lv.ok && r.xs[lv.last] < levelSpan*r.xs[lv.knee] {
			// A few percent over a few percent more requests is a rising
			// curve measured densely, not a level.
			lv = level{}
		}
		best := 0
		for i := 1; i < len(r.xs); i++ {
			if lv.ok && i > lv.knee {
				break
			}
			if rowTotal(r, i) > (1+plateauRise)*rowTotal(r, best) {
				bounds = append(bounds, bound{q: q, lo: r.xs[i-1], hi: math.Inf(1)})
			}
			if rowTotal(r, i) > rowTotal(r, best) {
				best = i
			}
		}
		if lv.ok {
			lo := 0.0
			if lv.knee > 0 {
				lo = r.xs[lv.knee-1]
			}
			at := r.xs[lv.knee] * levelGain(r, lv.knee)
			bounds = append(bounds, bound{q: q, lo: lo, hi: at})
			knees = append(knees, at)
		}
	}
	if len(knees) == 0 || switches(rows) {
		return k
	}
	bestCapped := -1
	for _, seqs := range append([]float64{math.Inf(1)}, knees...) {
		// The rows a sequence limit of seqs does not level need C.
		c, ok := math.Inf(1), true
		for _, bd := range bounds {
			if bd.lo >= seqs {
				ok = false // the limit would have levelled this row earlier
				break
			}
			if bd.hi < seqs {
				c = math.Min(c, bd.hi*bd.q)
			}
		}
		for _, bd := range bounds {
			ok = ok && bd.lo*bd.q < c
		}
		if !ok {
			continue
		}
		cand := kvLevel{c: c, seqs: seqs}
		capped := 0
		for _, p := range snapped {
			if _, full := cand.limit(p.l, p.b, k); full {
				capped++
			}
		}
		if bestCapped < 0 || capped < bestCapped {
			k.c, k.seqs, bestCapped = c, seqs, capped
		}
	}
	return k
}

// levelGain is how many more requests than the knee's the first cell of
// a level ran, as a factor: where that cell's total is still a little
// above the knee's, by the row's elasticity (d log total / d log B) just
// before the knee; within the two cells' concurrencies.
func levelGain(r line, knee int) float64 {
	if knee == 0 {
		return 1
	}
	rise := rowTotal(r, knee+1) / rowTotal(r, knee)
	e := math.Log(rowTotal(r, knee)/rowTotal(r, knee-1)) / math.Log(r.xs[knee]/r.xs[knee-1])
	if !(rise > 1) || !(e > 0.05) {
		return 1
	}
	return math.Min(math.Pow(rise, 1/e), r.xs[knee+1]/r.xs[knee])
}

// levelSpan is how far, as a factor of the knee's concurrency, a level
// must reach for readKVLevel to read a limit from it.
const levelSpan = 1.5

// desaturate moves each sample the cache capped to the concurrency that
// ran: its total stays, so its S scales by bc/b (as its T does where T is
// the total's step time; a published T is the running requests' own).
// Samples that land on one point are averaged.
func (k kvLevel) desaturate(samples []sample) []sample {
	if k.c <= 0 {
		return samples
	}
	type key struct{ l, b float64 }
	at := map[key]int{}
	out := make([]sample, 0, len(samples))
	var n []float64
	for _, p := range samples {
		bc, sat := k.effective(p.l, p.b)
		if sat {
			f := bc / p.b
			p.s *= f
			if k.lockstep {
				p.t *= f
			}
			p.b = bc
		}
		kk := key{p.l, p.b}
		if i, ok := at[kk]; ok {
			out[i].t += p.t
			out[i].s += p.s
			n[i]++
			continue
		}
		at[kk] = len(out)
		out = append(out, p)
		n = append(n, 1)
	}
	for i := range out {
		out[i].t /= n[i]
		out[i].s /= n[i]
	}
	return out
}

// readsKVLevel reports whether r's own rows show a KV capacity at all
// (see readKVLevel), so that a fit weighs reading it.
func readsKVLevel(r Run) bool {
	var own []sample
	var outs []float64
	for _, c := range r.Decode {
		if usable(c) {
			b := float64(c.Concurrency)
			own = append(own, sample{l: float64(c.ContextTokens) / tokensPerK, b: b, t: stepT(c), s: b * 1000 / *c.TotalTokS})
			outs = append(outs, cellOutput(c, r.MaxOutputTokens))
		}
	}
	return readKVLevel(own, outs).c > 0
}

// lazySurface is a surface built when first asked for: a fit's held-out
// refits never ask for the surface of a run's cells as measured, only
// answers that move the KV pool do.
type lazySurface struct {
	once    sync.Once
	samples []sample
	own     int // samples[:own] are the run's own
	ip      interp
	sf      *surface
}

func (z *lazySurface) get() *surface {
	z.once.Do(func() {
		z.sf = newSurface(z.samples, z.ip)
		if z.own < len(z.samples) {
			z.sf.ownLevels(z.samples[:z.own])
		}
	})
	return z.sf
}
