package calculator

import (
	"cmp"
	"math"
	"slices"
)

// sample is a valid cell's two step times, in ms; l is context in K tokens.
type sample struct {
	l, b float64
	t, s float64
}

// tokensPerK is the tokens in one K, the unit of context the surface reads
// (l = tokens / tokensPerK).
const tokensPerK = 1024

// line is one row (fixed l, points along b) or one column (fixed b, points
// along l) of the grid, sorted by x.
type line struct {
	key  float64
	xs   []float64
	t, s []float64
	// gx and gk map positions along x and between keys before linear
	// interpolation: log2 on the concurrency axis for runs whose step time
	// is closer to linear in log B; nil is the identity.
	gx, gk func(float64) float64
	// dt and ds, when set, are the slopes (per unit of gx(x)) of a monotone
	// cubic through the points; nil interpolates linearly.
	dt, ds []float64
}

// withCubic returns lines with monotone cubic slopes along x.
func withCubic(lines []line) []line {
	for i := range lines {
		ln := &lines[i]
		if len(ln.xs) < 3 {
			continue
		}
		xs := make([]float64, len(ln.xs))
		for j, x := range ln.xs {
			xs[j] = x
			if ln.gx != nil {
				xs[j] = ln.gx(x)
			}
		}
		ln.dt, ln.ds = pchipSlopes(xs, ln.t), pchipSlopes(xs, ln.s)
	}
	return lines
}

// pchipSlopes are Fritsch–Carlson slopes: the interpolant through (x, y)
// is monotone wherever the data are, and never overshoots a local extreme.
func pchipSlopes(x, y []float64) []float64 {
	n := len(x)
	h, d := make([]float64, n-1), make([]float64, n-1)
	for i := range n - 1 {
		h[i] = x[i+1] - x[i]
		d[i] = (y[i+1] - y[i]) / h[i]
	}
	m := make([]float64, n)
	for i := 1; i < n-1; i++ {
		if d[i-1]*d[i] <= 0 {
			continue
		}
		w1, w2 := 2*h[i]+h[i-1], h[i]+2*h[i-1]
		m[i] = (w1 + w2) / (w1/d[i-1] + w2/d[i])
	}
	end := func(h0, h1, d0, d1 float64) float64 {
		s := ((2*h0+h1)*d0 - h0*d1) / (h0 + h1)
		switch {
		case s*d0 <= 0:
			return 0
		case d0*d1 <= 0 && math.Abs(s) > math.Abs(3*d0):
			return 3 * d0
		}
		return s
	}
	m[0] = end(h[0], h[1], d[0], d[1])
	m[n-1] = end(h[n-2], h[n-3], d[n-2], d[n-3])
	return m
}

// frac is where x lies between a and b, measured after g.
func frac(g func(float64) float64, a, b, x float64) float64 {
	if g != nil {
		a, b, x = g(a), g(b), g(x)
	}
	return (x - a) / (b - a)
}

// surface is the fitted speed model of one run.
type surface struct {
	samples []sample
	rows    []line // by l; xs are b
	cols    []line // by b; xs are l
	physT   physModel
	physS   physModel
	maxL    float64
	// ip is how to interpolate along concurrency (chosen per run by
	// held-out error).
	ip interp
	// rowKeys are the rows' contexts (K tokens) after snapping.
	rowKeys []float64
	// resRows and resCols hold T and S divided by the physical model: T's
	// curvature in B is mostly captured by the model, so its residual
	// interpolates better than T itself.
	resRows, resCols []line
	// levelRows are the rows levels are read from (see ownLevels), and
	// switching marks them showing a kernel or scheduler switch.
	levelRows []line
	switching bool
	// ratioRows are the rows' T/S (in t), on the rows' concurrencies.
	ratioRows []line
}

// ratio is T/S at (l, b): linear in B along each row (extended along the
// line through a row's two nearest points), linear in L between rows, the
// nearest row's beyond them.
func (sf *surface) ratio(l, b float64) (float64, bool) {
	field := func(ln line) []float64 { return ln.t }
	if lo, hi, f, ok := bracket(sf.ratioRows, l); ok {
		r0, ok0 := rowAt(lo, b, field, true)
		r1, ok1 := rowAt(hi, b, field, true)
		if ok0 && ok1 {
			return lerp(r0, r1, f), true
		}
		return 0, false
	}
	if len(sf.ratioRows) == 0 {
		return 0, false
	}
	near := sf.ratioRows[len(sf.ratioRows)-1]
	if l < sf.ratioRows[0].key {
		near = sf.ratioRows[0]
	}
	return rowAt(near, b, field, true)
}

// physSamples bounds the samples the physical model is fitted on.
const physSamples = 1024

// rowTolerance is how close, relatively, contexts must be to make one row:
// serving benchmarks draw prompt lengths at random, so the cells of one
// nominal input length land a few percent apart.
const rowTolerance = 0.05

// rowContexts groups contexts (sorted, distinct) into rows of contexts
// within rowTolerance of the row's first that measured no concurrency
// twice: cells of one nominal input length each have their own
// concurrency, while a grid that measured one concurrency at two close
// contexts (a dense grid at long contexts: 94K and 98K) meant two rows.
// Each row is keyed by its cells' mean context.
func rowContexts(samples []sample) (reps []float64, rep map[float64]float64) {
	ls := make([]float64, 0, len(samples))
	for _, p := range samples {
		ls = append(ls, p.l)
	}
	slices.Sort(ls)
	var bs map[float64][]float64 // the concurrencies at each context, read when two are close
	concurrencies := func(l float64) []float64 {
		if bs == nil {
			bs = map[float64][]float64{}
			for _, p := range samples {
				bs[p.l] = append(bs[p.l], p.b)
			}
		}
		return bs[l]
	}
	rep = map[float64]float64{}
	for i := 0; i < len(ls); {
		j, sum := i, 0.0
		var seen map[float64]bool // the row's concurrencies, once it spans two contexts
		for j < len(ls) && ls[j]-ls[i] <= rowTolerance*ls[j] {
			if ls[j] != ls[i] && ls[j] != ls[j-1] { // another context, within tolerance
				if seen == nil {
					seen = map[float64]bool{}
					for _, b := range concurrencies(ls[i]) {
						seen[b] = true
					}
				}
				shared := false
				for _, b := range concurrencies(ls[j]) {
					shared = shared || seen[b]
					seen[b] = true
				}
				if shared {
					break // this context measured a concurrency the row has: a row of its own
				}
			}
			sum += ls[j]
			j++
		}
		mean := sum / float64(j-i)
		for _, l := range ls[i:j] {
			rep[l] = mean
		}
		reps = append(reps, mean)
		i = j
	}
	return reps, rep
}

// snapRows moves each sample onto its row's context, averaging step times
// where one row measured a concurrency twice. Samples already on their
// rows come back as they are.
func snapRows(samples []sample) ([]sample, []float64) {
	reps, rep := rowContexts(samples)
	moved := false
	for _, p := range samples {
		moved = moved || rep[p.l] != p.l
	}
	if !moved {
		return samples, reps
	}
	type key struct{ l, b float64 }
	at := map[key]int{}
	var out []sample
	var n []float64
	for _, p := range samples {
		k := key{rep[p.l], p.b}
		if i, ok := at[k]; ok {
			out[i].t, out[i].s = out[i].t+p.t, out[i].s+p.s
			n[i]++
			continue
		}
		at[k] = len(out)
		out = append(out, sample{l: k.l, b: p.b, t: p.t, s: p.s})
		n = append(n, 1)
	}
	for i := range out {
		out[i].t, out[i].s = out[i].t/n[i], out[i].s/n[i]
	}
	return out, reps
}

// snap is the row context a query context reads: a measured row's within
// rowTolerance, else l itself. Where rows lie closer than twice that to
// each other (a dense grid, not prompt lengths drawn at random), a context
// between them is interpolated, not read off the nearest.
func (sf *surface) snap(l float64) float64 {
	for i, r := range sf.rowKeys {
		if math.Abs(l-r) > rowTolerance*math.Max(l, r) {
			continue
		}
		dense := (i > 0 && r-sf.rowKeys[i-1] <= 2*rowTolerance*r) || (i+1 < len(sf.rowKeys) && sf.rowKeys[i+1]-r <= 2*rowTolerance*sf.rowKeys[i+1])
		if !dense || l == r {
			return r
		}
	}
	return l
}

func newSurface(samples []sample, ip interp) *surface {
	samples, rowKeys := snapRows(samples)
	sf := &surface{samples: samples, ip: ip, rowKeys: rowKeys}
	var gb func(float64) float64
	if ip.logB {
		gb = math.Log2
	}
	for _, p := range samples {
		sf.maxL = max(sf.maxL, p.l)
	}
	// Five coefficients need no more than physSamples points; an even
	// spread of a large grid fits them as well, at a bounded cost.
	phys := spread(samples, physSamples)
	sf.physT = fitPhys(phys, func(p sample) float64 { return p.t })
	sf.physS = fitPhys(phys, func(p sample) float64 { return p.s })
	sf.rows = group(samples, func(p sample) (float64, float64) { return p.l, p.b }, nil, gb)
	if ip.cubic {
		sf.rows = withCubic(sf.rows)
	}
	sf.cols = group(samples, func(p sample) (float64, float64) { return p.b, p.l }, gb, nil)
	resid := make([]sample, len(samples))
	for i, p := range samples {
		resid[i] = sample{l: p.l, b: p.b, t: p.t / sf.physT.eval(p.l, p.b), s: p.s / sf.physS.eval(p.l, p.b)}
	}
	sf.resRows = group(resid, func(p sample) (float64, float64) { return p.l, p.b }, nil, gb)
	if ip.cubic {
		sf.resRows = withCubic(sf.resRows)
	}
	sf.resCols = group(resid, func(p sample) (float64, float64) { return p.b, p.l }, gb, nil)
	sf.ratioRows = make([]line, len(sf.rows))
	for i, r := range sf.rows {
		q := make([]float64, len(r.xs))
		for j := range q {
			q[j] = r.t[j] / r.s[j]
		}
		sf.ratioRows[i] = line{key: r.key, xs: r.xs, t: q} // linear in B
	}
	sf.levelRows = sf.rows
	sf.switching = switches(sf.rows)
	return sf
}

func group(samples []sample, kx func(sample) (key, x float64), gk, gx func(float64) float64) []line {
	var lines []line
	order := func(a, b sample) int {
		ka, xa := kx(a)
		kb, xb := kx(b)
		if ka != kb {
			return cmpF(ka, kb)
		}
		return cmpF(xa, xb)
	}
	sorted := samples
	if !slices.IsSortedFunc(samples, order) { // rows of a run's cells come sorted
		if lines := groupTransposed(samples, kx, gk, gx); lines != nil {
			return lines
		}
		sorted = slices.Clone(samples)
		slices.SortFunc(sorted, order)
	}
	for _, p := range sorted {
		k, x := kx(p)
		if len(lines) == 0 || lines[len(lines)-1].key != k {
			lines = append(lines, line{key: k, gx: gx, gk: gk})
		}
		ln := &lines[len(lines)-1]
		ln.xs, ln.t, ln.s = append(ln.xs, x), append(ln.t, p.t), append(ln.s, p.s)
	}
	return lines
}

// groupTransposed groups samples sorted by x then key (a run's cells, in
// rows, grouped into columns) without sorting them: each line gathers its
// points in order, and only the lines are sorted. Nil when the samples are
// not in that order.
func groupTransposed(samples []sample, kx func(sample) (key, x float64), gk, gx func(float64) float64) []line {
	if !slices.IsSortedFunc(samples, func(a, b sample) int {
		ka, xa := kx(a)
		kb, xb := kx(b)
		return cmp.Or(cmpF(xa, xb), cmpF(ka, kb))
	}) {
		return nil
	}
	index := map[float64]int{}
	var lines []line
	for _, p := range samples {
		k, x := kx(p)
		i, ok := index[k]
		if !ok {
			i = len(lines)
			index[k] = i
			lines = append(lines, line{key: k, gx: gx, gk: gk})
		}
		ln := &lines[i]
		ln.xs, ln.t, ln.s = append(ln.xs, x), append(ln.t, p.t), append(ln.s, p.s)
	}
	slices.SortFunc(lines, func(a, b line) int { return cmpF(a.key, b.key) })
	return lines
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// at interpolates the line linearly at x inside its measured range.
func (ln line) at(x float64) (t, s float64, ok bool) {
	n := len(ln.xs)
	if n == 0 || x < ln.xs[0] || x > ln.xs[n-1] {
		return 0, 0, false
	}
	i, found := slices.BinarySearch(ln.xs, x)
	if found {
		return ln.t[i], ln.s[i], true
	}
	f := frac(ln.gx, ln.xs[i-1], ln.xs[i], x)
	if ln.dt != nil {
		h := ln.xs[i] - ln.xs[i-1]
		if ln.gx != nil {
			h = ln.gx(ln.xs[i]) - ln.gx(ln.xs[i-1])
		}
		return hermite(ln.t[i-1], ln.t[i], ln.dt[i-1]*h, ln.dt[i]*h, f), hermite(ln.s[i-1], ln.s[i], ln.ds[i-1]*h, ln.ds[i]*h, f), true
	}
	return lerp(ln.t[i-1], ln.t[i], f), lerp(ln.s[i-1], ln.s[i], f), true
}

func lerp(a, b, f float64) float64 { return a + (b-a)*f }

// hermite is the cubic from y0 to y1 with end derivatives m0 and m1 (per
// unit of f), at f in [0, 1].
func hermite(y0, y1, m0, m1, f float64) float64 {
	f2, f3 := f*f, f*f*f
	return (2*f3-3*f2+1)*y0 + (f3-2*f2+f)*m0 + (-2*f3+3*f2)*y1 + (f3-f2)*m1
}

// bracket returns the lines whose keys surround k (the same line twice on an
// exact match); ok false outside the keys' range.
func bracket(lines []line, k float64) (lo, hi line, f float64, ok bool) {
	n := len(lines)
	if n == 0 || k < lines[0].key || k > lines[n-1].key {
		return line{}, line{}, 0, false
	}
	i, found := slices.BinarySearchFunc(lines, k, func(ln line, k float64) int { return cmpF(ln.key, k) })
	if found {
		return lines[i], lines[i], 0, true
	}
	return lines[i-1], lines[i], frac(lines[i].gk, lines[i-1].key, lines[i].key, k), true
}

// estimate is one path's T and S at a point.
type estimate struct {
	t, s float64
	ok   bool
	// extended is true for a column-first estimate that extends a column
	// along context beyond its own measured range (within the run's).
	extended bool
}

// paths returns T and S at (l, b) two ways: row-first (L between two
// measured rows, B inside each one's measured range) and column-first (B
// between two measured columns, each evaluated at L: inside a column's
// range, or extended along the line through its two nearest points, by at
// most columnReach× the column's span and within the run's measured contexts, since
// step time is close to linear in context). S is interpolated directly; T, in B, as its ratio to
// the physical model.
func (sf *surface) paths(l, b float64) (row, col estimate) {
	row.t, row.s, row.ok = interpLine(sf.rows, l, b)
	col = sf.columnFirst(sf.cols, l, b)
	if !sf.ip.logB {
		// The physical model is polynomial in B, so in B its residual is the
		// smooth thing to interpolate (in log2 B, T itself is).
		p := sf.physT.eval(l, b)
		if row.ok {
			rt, _, _ := interpLine(sf.resRows, l, b)
			row.t = rt * p
		}
		if col.ok && !col.extended {
			col.t = sf.columnFirst(sf.resCols, l, b).t * p
		}
	}
	return row, col
}

// columnReach bounds how far, in multiples of its own span of contexts, a
// column is extended along context: step time grows close to linearly with
// context (each step reads the KV cache), so a column says much about
// contexts a few spans away, not about ones a hundred spans away (on the
// tune split, reach 1.25 held out at 3.90 %, 4 at 3.86 %, unbounded 4.15 %).
const columnReach = 4

// columnFirst brackets b between columns and evaluates each at l.
func (sf *surface) columnFirst(cols []line, l, b float64) estimate {
	lo, hi, f, ok := bracket(cols, b)
	if !ok || l < sf.rows[0].key || l > sf.maxL {
		return estimate{}
	}
	var e estimate
	at := func(c line) (float64, float64, bool) {
		if t, s, ok := c.at(l); ok {
			return t, s, true
		}
		n := len(c.xs)
		if n < 2 {
			return 0, 0, false
		}
		// A line through a column's points says little far beyond them.
		if span := c.xs[n-1] - c.xs[0]; l < c.xs[0]-columnReach*span || l > c.xs[n-1]+columnReach*span {
			return 0, 0, false
		}
		e.extended = true
		t, okT := rowAt(c, l, func(ln line) []float64 { return ln.t }, true)
		s, okS := rowAt(c, l, func(ln line) []float64 { return ln.s }, true)
		return t, s, okT && okS && t > 0 && s > 0
	}
	t0, s0, ok0 := at(lo)
	t1, s1, ok1 := at(hi)
	if !ok0 || !ok1 {
		return estimate{}
	}
	e.t, e.s, e.ok = lerp(t0, t1, f), lerp(s0, s1, f), true
	return e
}

// combine weighs the two paths, T by wT and S by wS; ok false when neither
// gives an estimate. extended reports an answer that rests on a column
// extended along context alone.
func combine(row, col estimate, wT, wS float64) (t, s float64, extended, ok bool) {
	switch {
	case row.ok && col.ok:
		return wT*row.t + (1-wT)*col.t, wS*row.s + (1-wS)*col.s, false, true
	case row.ok:
		return row.t, row.s, false, true
	case col.ok:
		return col.t, col.s, col.extended, true
	}
	return 0, 0, false, false
}

// interpolate returns T and S from the measured rows and columns around
// (l, b), and whether it extended a column along context.
// Where the run weighs in the shape-transfer estimate, visit (when not nil)
// is told each measured point it read.
func (sf *surface) interpolate(l, b float64, visit func(l, b float64)) (t, s float64, extended, ok bool) {
	row, col := sf.paths(l, b)
	if col.ok {
		col.t = sf.withinRow(l, b, col.t)
	}
	t, s, extended, ok = combine(row, col, sf.ip.rowT, sf.ip.rowS)
	if ok && sf.ip.usesShape() {
		t, s = mixShape(t, s, sf.shapeVisit(l, b, visit), sf.ip.shapeT, sf.ip.shapeS)
	}
	if ok && (sf.ip.physT > 0 || sf.ip.physS > 0) {
		t, s = mixShape(t, s, sf.smoothed(l, b), sf.ip.physT, sf.ip.physS)
	}
	return sf.withinRow(l, b, t), s, extended, ok
}

// withinRow keeps a step time t at (l, b) between the step times the
// measured row at l has at the concurrencies on each side of b: one more
// request at once never shortens a step, nor one fewer lengthens it. A
// column carried along context beyond its cells can say otherwise (RTX
// 3090, an empty prompt, 16 requests: 10.8 ms from the column, under the
// row's own 13.7 ms at 8).
func (sf *surface) withinRow(l, b, t float64) float64 {
	i, found := slices.BinarySearchFunc(sf.rows, l, func(ln line, k float64) int { return cmpF(ln.key, k) })
	if !found {
		return t
	}
	r := sf.rows[i]
	j, at := slices.BinarySearch(r.xs, b)
	if at || j == 0 || j == len(r.xs) {
		return t
	}
	lo, hi := min(r.t[j-1], r.t[j]), max(r.t[j-1], r.t[j])
	return math.Min(math.Max(t, lo), hi)
}

// mixShape weighs an estimate from the rows and columns around a point
// against the shape-transfer estimate, T by wT and S by wS.
func mixShape(t, s float64, sh estimate, wT, wS float64) (float64, float64) {
	if !sh.ok || !finite(sh.t, sh.s) {
		return t, s
	}
	if wT > 0 {
		t = (1-wT)*t + wT*sh.t
	}
	if wS > 0 {
		s = (1-wS)*s + wS*sh.s
	}
	return t, s
}

// shape estimates T and S at (l, b) on a measured row that did not measure
// b by borrowing the shape of other rows: from each other row that measured
// both b and a concurrency b' of this row, step(l, b) = step(l, b') ·
// step(l', b) / step(l', b'). Rows of one run differ mostly by a factor
// (context adds KV reads to every step), so their ratios carry the
// curvature in B a line between this row's own points misses, and the
// steps this row did not measure at its edges. The estimates are averaged,
// weighted towards near concurrencies and near contexts.
func (sf *surface) shape(l, b float64) estimate { return sf.shapeVisit(l, b, nil) }

// shapeVisit is shape, calling visit (when not nil) with each measured
// point, as (context in K tokens, concurrency), the estimate reads.
func (sf *surface) shapeVisit(l, b float64, visit func(l, b float64)) estimate {
	i, found := slices.BinarySearchFunc(sf.rows, l, func(ln line, k float64) int { return cmpF(ln.key, k) })
	if !found {
		return estimate{}
	}
	own := sf.rows[i]
	at, measured := slices.BinarySearch(own.xs, b)
	if measured {
		return estimate{}
	}
	// The nearest shapeReach of this row's concurrencies on each side of b,
	// and the nearest shapeReach rows on each side that measured b and one
	// of them: the weights fall off fast, and the cost stays bounded on
	// large grids.
	first := max(0, at-shapeReach)
	anchors := own.xs[first:min(len(own.xs), at+shapeReach)]
	var st, ss, sw float64
	add := func(r line) (used bool) {
		k, ok := slices.BinarySearch(r.xs, b)
		if !ok {
			return false
		}
		dl := 1 + math.Abs(math.Log((r.key+1)/(l+1)))
		for a, ba := range anchors {
			ka, ok := slices.BinarySearch(r.xs, ba)
			if !ok || r.t[ka] <= 0 || r.s[ka] <= 0 {
				continue
			}
			db := 1 + math.Abs(math.Log2(ba/b))
			w := 1 / (db * db * dl)
			st += w * own.t[first+a] * r.t[k] / r.t[ka]
			ss += w * own.s[first+a] * r.s[k] / r.s[ka]
			sw += w
			if visit != nil {
				visit(own.key, ba)
				visit(r.key, ba)
			}
			used = true
		}
		if used && visit != nil {
			visit(r.key, b)
		}
		return used
	}
	for j, n := i-1, 0; j >= 0 && n < shapeReach; j-- {
		if add(sf.rows[j]) {
			n++
		}
	}
	for j, n := i+1, 0; j < len(sf.rows) && n < shapeReach; j++ {
		if add(sf.rows[j]) {
			n++
		}
	}
	if sw == 0 {
		return estimate{}
	}
	return estimate{t: st / sw, s: ss / sw, ok: true}
}

// shapeReach is how many rows, and concurrencies of a row, on each side of
// a point the shape-transfer estimate reads.
const shapeReach = 2

func interpLine(lines []line, key, x float64) (t, s float64, ok bool) {
	lo, hi, f, ok := bracket(lines, key)
	if !ok {
		return 0, 0, false
	}
	t0, s0, ok0 := lo.at(x)
	t1, s1, ok1 := hi.at(x)
	if !ok0 || !ok1 {
		return 0, 0, false
	}
	return lerp(t0, t1, f), lerp(s0, s1, f), true
}

// measuredColumn reports whether some row measured concurrency b.
func (sf *surface) measuredColumn(b float64) bool {
	_, found := slices.BinarySearchFunc(sf.cols, b, func(c line, b float64) int { return cmpF(c.key, b) })
	return found
}

// jumpElasticity is how much faster throughput may grow with concurrency
// (d log total / d log B) in one segment of a row than in the segment
// before it before the row counts as jumping: a smooth decode curve
// saturates, so its elasticity does not rise by much.
const jumpElasticity = 0.25

// jump finds a segment (lo, hi) of concurrency, b strictly inside, across
// which some row's throughput jumps (its elasticity rises by more than
// jumpElasticity over the previous segment's), where b itself was measured
// in no row: where between lo and hi the switch happens is unknown. at is
// the context of the row that shows the jump.
func (sf *surface) jump(b float64) (lo, hi, at float64, ok bool) {
	if sf.measuredColumn(b) {
		return 0, 0, 0, false
	}
	for _, r := range sf.rows {
		for i := 2; i < len(r.xs); i++ {
			if b <= r.xs[i-1] || b >= r.xs[i] {
				continue
			}
			if jumpsAt(r, i) {
				return r.xs[i-1], r.xs[i], r.key, true
			}
		}
	}
	return 0, 0, 0, false
}

// jumpsAt reports whether row r's throughput rises faster over its
// segment (i-1, i) than over the one before by more than jumpElasticity
// (d log total / d log B).
func jumpsAt(r line, i int) bool {
	g := func(j int) float64 {
		return math.Log(rowTotal(r, j)/rowTotal(r, j-1)) / math.Log(r.xs[j]/r.xs[j-1])
	}
	return g(i) > g(i-1)+jumpElasticity
}

// rough finds a segment of a bracketing row around (l, b) where the grid is
// not smooth: throughput does not rise with concurrency (a kernel or
// scheduler switch), or the segment right after such a one, where the
// switch shows as a jump. The row's last segment also covers b beyond it.
// It returns the segment's ends, or ok false where the rows are smooth.
func (sf *surface) rough(l, b float64) (lo, hi float64, ok bool) {
	r0, r1, _, inside := bracket(sf.rows, math.Max(l, sf.rows[0].key))
	if !inside {
		r0 = sf.rows[len(sf.rows)-1]
		r1 = r0
	}
	for _, r := range []line{r0, r1} {
		n := len(r.xs)
		flat := false // the previous segment did not rise
		for i := 1; i < n; i++ {
			// total = B·1000/S must grow with B, or stay level where the
			// engine is saturated (within saturatedBand): a plateau is not a
			// switch, and predicting on it is safe.
			t0, t1 := r.xs[i-1]/r.s[i-1], r.xs[i]/r.s[i]
			rises := t1 > t0 || math.Abs(t1-t0) <= saturatedBand*t0
			covers := b > r.xs[i-1] && b < r.xs[i] || (i == n-1 && b > r.xs[i])
			if covers && (!rises || flat) {
				return r.xs[i-1], r.xs[i], true
			}
			flat = !rises
		}
	}
	return 0, 0, false
}

// saturatedBand is how level two totals are to count as one plateau.
const saturatedBand = 0.01

// How far a run's answers reach beyond what it measured: contexts from
// shortestReach× its shortest measured context to longestReach× its
// longest, concurrencies up to concurrencyReach× the largest measured near
// the asked context. The refusals past them say them from these constants.
const (
	shortestReach    = 0.8
	longestReach     = 1.25
	concurrencyReach = 2.0
)

// limits returns the largest B the run supports at l (concurrencyReach×
// the largest measured in the bracketing or nearest rows) and the context
// range it supports (shortestReach× the shortest to longestReach× the
// longest measured context).
func (sf *surface) limits(l float64) (maxB, minL, maxL float64) {
	first := sf.rows[0].key
	minL, maxL = shortestReach*first, longestReach*sf.maxL
	lo, hi, _, _ := bracket(sf.rows, math.Min(math.Max(l, first), sf.maxL))
	maxB = concurrencyReach * math.Max(lo.xs[len(lo.xs)-1], hi.xs[len(hi.xs)-1])
	return maxB, minL, maxL
}

// extrapolate predicts T and S outside the measured region (within limits
// checked by the caller). Each is the mean of two extensions, which held out
// better on the published runs than either alone: the physical model scaled
// to agree with measurements, and a straight line through the two nearest
// rows or columns. T uses continuous forms (its residual to the physical
// model held flat from the region's edge, or extended along a line) so that
// it never falls as context or concurrency grows; S, which only sets the
// total, anchors the physical model at the nearest measured cells (see
// anchorRatio), which held out better. anchor is the nearest one.
func (sf *surface) extrapolate(l, b float64) (t, s float64, anchor sample) {
	anchor = sf.nearest(l, b)
	pt := sf.physT.eval(l, b)
	flatT, _ := sf.residual(l, b, func(ln line) []float64 { return ln.t }, false)
	t = pt * flatT
	if linT, ok := sf.residual(l, b, func(ln line) []float64 { return ln.t }, true); ok && linT > 0 {
		t = pt * (flatT + linT) / 2
	}
	s = sf.physS.eval(l, b) * sf.anchorRatio(l, b)
	if linS, ok := sf.extrapolateLin(sf.rows, l, b, func(ln line) []float64 { return ln.s }, true); ok && linS > 0 {
		s = (s + linS) / 2
	}
	// Along context, step times are close to linear (KV reads grow with
	// it): where the asked concurrency was measured at other contexts,
	// extend that column too.
	// Only between measured concurrencies: beyond them, this would extend
	// throughput along B, which saturates.
	if _, _, _, inside := bracket(sf.cols, b); inside {
		cs, okS := sf.extrapolateLin(sf.cols, b, l, func(ln line) []float64 { return ln.s }, true)
		ct, okT := sf.extrapolateLin(sf.cols, b, l, func(ln line) []float64 { return ln.t }, true)
		if okS && okT && cs > 0 && ct > 0 {
			s, t = (s+cs)/2, (t+ct)/2
		}
	}
	return t, s, anchor
}

// residual is the measured/physical ratio at (l, b), extended beyond the
// rows' B range flat (linear false) or along a line (linear true).
func (sf *surface) residual(l, b float64, field func(line) []float64, linear bool) (float64, bool) {
	return sf.extrapolateLin(sf.resRows, l, b, field, linear)
}

// extrapolateLin evaluates a field at (l, b) from rows: within each
// bracketing row at b (extended beyond the row's B range flat, or along the
// line through its two nearest points when linear), then linearly in L;
// beyond the rows' L range, from the nearest row (flat) or the line through
// the two nearest rows (linear).
func (sf *surface) extrapolateLin(rows []line, l, b float64, field func(line) []float64, linear bool) (float64, bool) {
	if lo, hi, f, ok := bracket(rows, l); ok {
		s0, ok0 := rowAt(lo, b, field, linear)
		s1, ok1 := rowAt(hi, b, field, linear)
		if !ok0 || !ok1 {
			return 0, false
		}
		return lerp(s0, s1, f), true
	}
	n := len(rows)
	if n == 0 {
		return 0, false
	}
	near := rows[n-1]
	if l < rows[0].key {
		near = rows[0]
	}
	if !linear || n < 2 {
		return rowAt(near, b, field, linear)
	}
	r0, r1 := rows[n-2], rows[n-1]
	if l < rows[0].key {
		r0, r1 = rows[0], rows[1]
	}
	s0, ok0 := rowAt(r0, b, field, linear)
	s1, ok1 := rowAt(r1, b, field, linear)
	if !ok0 || !ok1 {
		return 0, false
	}
	return lerp(s0, s1, (l-r0.key)/(r1.key-r0.key)), true
}

func rowAt(r line, b float64, field func(line) []float64, linear bool) (float64, bool) {
	ys := field(r)
	n := len(r.xs)
	if n == 0 {
		return 0, false
	}
	if b >= r.xs[0] && b <= r.xs[n-1] {
		i, found := slices.BinarySearch(r.xs, b)
		if found {
			return ys[i], true
		}
		return lerp(ys[i-1], ys[i], frac(r.gx, r.xs[i-1], r.xs[i], b)), true
	}
	if !linear {
		if b < r.xs[0] {
			return ys[0], true
		}
		return ys[n-1], true
	}
	if n < 2 {
		return 0, false
	}
	i, j := n-2, n-1
	if b < r.xs[0] {
		i, j = 0, 1
	}
	return lerp(ys[i], ys[j], frac(r.gx, r.xs[i], r.xs[j], b)), true
}

// nearest is the measured sample closest to (l, b) (see distance).
func (sf *surface) nearest(l, b float64) sample {
	best, bestD := sample{}, math.Inf(1)
	for _, p := range sf.samples {
		if d := sf.distance(p, l, b); d < bestD {
			best, bestD = p, d
		}
	}
	return best
}

// distance is how far a sample is from (l, b), in doublings of B and in
// fractions of the measured context span.
func (sf *surface) distance(p sample, l, b float64) float64 {
	return math.Abs(math.Log2(b)-math.Log2(p.b)) + 4*math.Abs(l-p.l)/math.Max(sf.maxL, 1)
}

// anchorRatio is the measured/physical ratio of S the physical model is
// scaled by when extrapolating to (l, b): that of the nearest samples,
// weighted steeply by distance, so that it is the nearest one's where one
// is clearly nearest and moves smoothly where two are about as near (a
// single nearest anchor jumped there: total tok/s fell 1 % from one
// concurrency to the next).
func (sf *surface) anchorRatio(l, b float64) float64 {
	var sum, wsum float64
	for _, p := range sf.samples {
		d := sf.distance(p, l, b) + anchorSoftness
		w := 1 / (d * d * d * d)
		sum += w * p.s / sf.physS.eval(p.l, p.b)
		wsum += w
	}
	return sum / wsum
}

// smoothed is the physical model at (l, b) scaled by the measured/physical
// ratios of the cells around it, weighed gently by distance (see
// smoothSoftness): a surface that smooths the cells' scatter, where
// interpolating between two cells carries each one's.
func (sf *surface) smoothed(l, b float64) estimate {
	var rt, rs, wsum float64
	for _, p := range sf.samples {
		d := sf.distance(p, l, b) + smoothSoftness
		w := 1 / (d * d)
		rt += w * p.t / sf.physT.eval(p.l, p.b)
		rs += w * p.s / sf.physS.eval(p.l, p.b)
		wsum += w
	}
	if wsum == 0 {
		return estimate{}
	}
	return estimate{t: sf.physT.eval(l, b) * rt / wsum, s: sf.physS.eval(l, b) * rs / wsum, ok: true}
}

// smoothSoftness is how gently smoothed's weights fall with distance
// (1/(d + it)², d in doublings of B): a cell one doubling away weighs
// 0.44 of one at the point (0.25 and 1 held out alike on the tune split).
const smoothSoftness = 0.5

// anchorSoftness keeps anchorRatio's weights finite at a sample and sets
// how quickly the nearest sample's ratio gives way to the next one's.
const anchorSoftness = 0.03

// physModel is T(L,B) = a + b·B + c·B·L + d·L + e·B²·L.
type physModel [5]float64

func physTerms(l, b float64) [5]float64 { return [5]float64{1, b, b * l, l, b * b * l} }

func (m physModel) eval(l, b float64) float64 {
	f := physTerms(l, b)
	v := 0.0
	for i := range f {
		v += m[i] * f[i]
	}
	return v
}

// fitPhys fits the physical form by non-negative least squares on relative
// error, with columns scaled to unit norm for conditioning.
func fitPhys(samples []sample, y func(sample) float64) physModel {
	if len(samples) == 0 {
		return physModel{}
	}
	a := make([][]float64, len(samples))
	rhs := make([]float64, len(samples))
	var norm [5]float64
	for i, p := range samples {
		f := physTerms(p.l, p.b)
		v := y(p)
		a[i] = make([]float64, 5)
		for j := range f {
			a[i][j] = f[j] / v
			norm[j] += a[i][j] * a[i][j]
		}
		rhs[i] = 1
	}
	for j := range norm {
		norm[j] = math.Sqrt(norm[j])
		if norm[j] == 0 {
			norm[j] = 1
		}
	}
	for i := range a {
		for j := range a[i] {
			a[i][j] /= norm[j]
		}
	}
	x := nnls(a, rhs, 5)
	var m physModel
	for j := range m {
		m[j] = x[j] / norm[j]
	}
	return m
}
