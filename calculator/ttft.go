package calculator

import (
	"math"
	"slices"
)

// decodeTTFT models the decode table's TTFT (prompt cache warmed) as
// T1(L)·(1 + α(L)(B−1)): a first-come-first-served queue behind the
// recompute of an uncached tail, T1 and α measured per context row (an
// empty prompt's TTFT hardly grows with load while a long one's does; a
// row with no TTFT beyond one request takes the run's pooled α).
type decodeTTFT struct {
	rows  []float64 // contexts with a concurrency-1 TTFT, ascending
	t1    []float64
	alpha []float64 // per row
	// cells are each row's measured TTFTs (valid cells), by concurrency.
	cells [][]ttftCell
}

// ttftCell is one measured TTFT of a row.
type ttftCell struct{ b, ms float64 }

func fitDecodeTTFT(cells []Cell) decodeTTFT {
	var d decodeTTFT
	t1 := map[int]float64{}
	for _, c := range cells {
		if c.Concurrency == 1 && c.TTFTMs != nil && *c.TTFTMs > 0 && c.Status != CellOverCapacity {
			t1[c.ContextTokens] = *c.TTFTMs
		}
	}
	for l := range t1 {
		d.rows = append(d.rows, float64(l))
	}
	slices.Sort(d.rows)
	for _, l := range d.rows {
		d.t1 = append(d.t1, t1[int(l)])
	}
	d.cells = make([][]ttftCell, len(d.rows))
	for _, c := range cells {
		if i, ok := slices.BinarySearch(d.rows, float64(c.ContextTokens)); ok && c.Status == CellValid && c.TTFTMs != nil && *c.TTFTMs > 0 {
			d.cells[i] = append(d.cells[i], ttftCell{float64(c.Concurrency), *c.TTFTMs})
		}
	}
	for _, row := range d.cells {
		slices.SortFunc(row, func(a, b ttftCell) int { return cmpF(a.b, b.b) })
	}
	var num, den float64
	rowNum, rowDen := map[int]float64{}, map[int]float64{}
	for _, c := range cells {
		base, ok := t1[c.ContextTokens]
		if !ok || c.Concurrency == 1 || c.Status != CellValid || c.TTFTMs == nil {
			continue
		}
		x := float64(c.Concurrency - 1)
		num += (*c.TTFTMs/base - 1) * x
		den += x * x
		rowNum[c.ContextTokens] += (*c.TTFTMs/base - 1) * x
		rowDen[c.ContextTokens] += x * x
	}
	pooled := 0.0
	if den > 0 {
		pooled = math.Max(num/den, 0)
	}
	for _, l := range d.rows {
		a := pooled
		if rd := rowDen[int(l)]; rd > 0 {
			a = math.Max(rowNum[int(l)]/rd, 0)
		}
		d.alpha = append(d.alpha, a)
	}
	return d
}

// at predicts TTFT at (l, b). Between measured rows T1 jumps, so the
// interval spans both neighbours' values; beyond the last row it grows with
// the context.
func (d decodeTTFT) at(l, b int, rel float64) *Estimate {
	n := len(d.rows)
	if n == 0 {
		return nil
	}
	at := func(i int) float64 { return d.t1[i] * (1 + d.alpha[i]*float64(b-1)) }
	x := float64(l)
	i, found := slices.BinarySearch(d.rows, x)
	switch {
	case found:
		return band(d.withinRow(i, float64(b), at(i)), rel)
	case i == 0:
		v := at(0)
		return &Estimate{Value: v * x / math.Max(d.rows[0], 1), Low: 0, High: v * (1 + rel)}
	case i == n:
		v := at(n - 1)
		grow := x / math.Max(d.rows[n-1], 1)
		return &Estimate{Value: v * math.Sqrt(grow), Low: math.Max(v*(1-rel), 0), High: v * grow * (1 + rel)}
	}
	lo, hi := at(i-1), at(i)
	f := (x - d.rows[i-1]) / (d.rows[i] - d.rows[i-1])
	return &Estimate{Value: lerp(lo, hi, f), Low: math.Max(math.Min(lo, hi)*(1-rel), 0), High: math.Max(lo, hi) * (1 + rel)}
}

// atLeastRow is v kept at least the TTFT the measured row at l has at the
// nearest concurrency below b (v itself off a measured row).
func (d decodeTTFT) atLeastRow(l, b int, v float64) float64 {
	i, found := slices.BinarySearch(d.rows, float64(l))
	if !found {
		return v
	}
	row := d.cells[i]
	j, _ := slices.BinarySearchFunc(row, float64(b), func(c ttftCell, b float64) int { return cmpF(c.b, b) })
	if j > 0 {
		return math.Max(v, row[j-1].ms)
	}
	return v
}

// withinRow keeps a TTFT v at concurrency b of row i between those the
// row measured at the nearest concurrencies below and above b: one more
// request at once never gets the first token sooner (the queue model alone
// put 9 requests at 319 ms, under the 358 ms measured at 8).
func (d decodeTTFT) withinRow(i int, b, v float64) float64 {
	row := d.cells[i]
	j, _ := slices.BinarySearchFunc(row, b, func(c ttftCell, b float64) int { return cmpF(c.b, b) })
	lo, hi := math.Inf(-1), math.Inf(1)
	if j > 0 {
		lo = row[j-1].ms
	}
	if j < len(row) && row[j].b > b {
		hi = row[j].ms
	}
	if lo > hi {
		return v // the row's cells disagree themselves
	}
	return math.Min(math.Max(v, lo), hi)
}

// prefillModel is cold prefill: TTFT(L) = p·L + q·L², L in K tokens.
type prefillModel struct {
	p, q   float64
	points []PrefillPoint
	maxL   int
}

func fitPrefill(points []PrefillPoint) prefillModel {
	var m prefillModel
	var a [][]float64
	var rhs []float64
	for _, pt := range points {
		if pt.TTFTMs <= 0 || pt.ContextTokens <= 0 {
			continue
		}
		m.points = append(m.points, pt)
		l := float64(pt.ContextTokens) / tokensPerK
		a = append(a, []float64{l / pt.TTFTMs, l * l / pt.TTFTMs})
		rhs = append(rhs, 1)
		m.maxL = max(m.maxL, pt.ContextTokens)
	}
	if len(a) == 0 {
		return m
	}
	x := nnls(a, rhs, 2)
	m.p, m.q = x[0], x[1]
	return m
}

func (m prefillModel) eval(l int) float64 {
	k := float64(l) / tokensPerK
	return m.p*k + m.q*k*k
}
