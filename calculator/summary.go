package calculator

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
)

// A Summary is a run's fitted model read at a fixed ladder of contexts and
// concurrencies: enough to bound, without the model, what the planner or a
// predicted leaderboard would answer for the run, so that a question over
// every stored run refines only the few runs whose bounds can win.
//
// The bounds assume what the planner assumes along concurrency, and the
// same along context: per-request speed does not rise and TTFT does not
// fall with more concurrent requests or a longer context, and a request
// that does not fit does not fit with a longer context either. Where a
// fitted surface departs from that by a little, summaryMargin covers it.
type Summary struct {
	total, perReq [summaryPoints]uint16
	// ttft is the least TTFT at the point or any with a shorter context
	// or fewer requests.
	ttft [summaryPoints]uint16
	// level marks points answered on a level stretch of throughput: the
	// requests run, but a plan stops before them (more would only wait).
	level [(summaryPoints + 7) / 8]byte
}

// SummaryContexts and SummaryConcurrencies are the ladder a Summary is
// read at.
var (
	summaryContexts      = [...]int{0, 1 << 10, 2 << 10, 4 << 10, 8 << 10, 12 << 10, 16 << 10, 24 << 10, 32 << 10, 48 << 10, 64 << 10, 96 << 10, 128 << 10, 192 << 10, 256 << 10}
	summaryConcurrencies = [...]int{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512}
)

const (
	summaryPoints = len(summaryContexts) * len(summaryConcurrencies)
	// SummaryBytes bounds the size of an encoded Summary.
	SummaryBytes = 2 + (summaryPoints+7)/8 + 2*len(summaryContexts) + 3*2*summaryPoints
	// summaryVersion is the encoding's first byte.
	summaryVersion = 2
	// summaryMargin is how far a bound allows the fitted surface to depart
	// from the monotone shape the bounds assume.
	summaryMargin = 1.15
)

// Codes of a summary point: unknown (the model refused, or gave no such
// value), no speed (the requests do not all fit and run: over capacity,
// queued, beyond max_model_len), else a value on a log scale with 0.07 %
// steps.
const (
	codeUnknown = 0
	codeNoFit   = 1
	codeFirst   = 2
	codeScale   = 1024
	codeOffset  = 20 // log2 of the smallest value coded
)

func encodeValue(v float64, up bool) uint16 {
	if !(v > 0) || math.IsInf(v, 0) {
		return codeUnknown
	}
	x := (math.Log2(v) + codeOffset) * codeScale
	if up {
		x = math.Ceil(x)
	} else {
		x = math.Floor(x)
	}
	return uint16(min(max(x, 0), math.MaxUint16-codeFirst) + codeFirst)
}

func decodeValue(c uint16) float64 {
	return math.Exp2(float64(c-codeFirst)/codeScale - codeOffset)
}

// Summarize reads m at the summary ladder (with no VRAM, GPU or output
// override).
func Summarize(m *Model) Summary {
	var s Summary
	ls, _ := m.MeasuredAxes()
	for i := range summaryContexts {
		at := intervalContexts(i, ls)
		for j, b := range summaryConcurrencies {
			k := i*len(summaryConcurrencies) + j
			fits, noFit := false, false
			var total, perReq, ttft uint16
			for _, l := range at {
				p, err := m.Decode(Query{ContextTokens: l, Concurrency: b})
				if err != nil || p.Capacity.Unknown {
					continue // unknown: refused here, or whether it fits
				}
				if p.LevelFrom > 0 {
					s.level[k/8] |= 1 << (k % 8)
				}
				if p.Status != Fits {
					noFit = true
					continue
				}
				fits = true
				if p.TotalTokS != nil {
					total = max(total, encodeValue(p.TotalTokS.Value, true))
				}
				var pr uint16
				switch {
				case p.PerRequestTokS != nil:
					pr = encodeValue(p.PerRequestTokS.Value, true)
				case p.TBTMs != nil: // a measured cell that published no per-request speed
					pr = encodeValue(1000/p.TBTMs.Value, true)
				case p.TotalTokS != nil:
					pr = encodeValue(p.TotalTokS.Value/float64(b), true)
				}
				perReq = max(perReq, pr)
				if p.TTFTMs != nil {
					if c := encodeValue(p.TTFTMs.Value, false); c >= codeFirst && (ttft < codeFirst || c < ttft) {
						ttft = c
					}
				}
			}
			switch {
			case fits:
				s.total[k], s.perReq[k], s.ttft[k] = total, perReq, ttft
			case noFit:
				s.total[k], s.perReq[k], s.ttft[k] = codeNoFit, codeNoFit, codeNoFit
			}
		}
	}
	// TTFT is kept as the least at this or any shorter context and fewer
	// requests: measured TTFT is noisy along both.
	nb := len(summaryConcurrencies)
	for i := range summaryContexts {
		for j := range nb {
			k := i*nb + j
			low := s.ttft[k]
			for _, n := range []int{k - 1, k - nb} {
				if n < 0 || (n == k-1 && j == 0) {
					continue
				}
				if c := s.ttft[n]; c >= codeFirst && (low < codeFirst || c < low) {
					low = c
				}
			}
			if low >= codeFirst && s.ttft[k] >= codeFirst {
				s.ttft[k] = low
			}
		}
	}
	return s
}

// intervalContexts are the contexts a summary's row i is read at: its
// ladder context, every measured context before the next one, and the
// midpoints between them and up to the next. A row holds the best answer
// over them, so that a bound read from it holds across its interval where
// the fitted surface is not monotone along context: a sparse grid whose
// concurrencies were each measured at one context reaches further along
// concurrency near a longer one, and a grid whose short context measured
// slower (a warm-up in its first cell) is faster at longer ones. On a
// grid measured at the ladder's contexts this is the ladder context and
// one midpoint.
func intervalContexts(i int, measured []int) []int {
	l := summaryContexts[i]
	next := 2 * l
	if i+1 < len(summaryContexts) {
		next = summaryContexts[i+1]
	}
	at := []int{l}
	for _, ml := range measured {
		if ml > l && ml < next {
			at = append(at, ml)
		}
	}
	out := make([]int, 0, 2*len(at))
	for n, c := range at {
		out = append(out, c)
		end := next
		if n+1 < len(at) {
			end = at[n+1]
		}
		if mid := (c + end) / 2; mid > c && mid < end {
			out = append(out, mid)
		}
	}
	return out
}

// Encode is s as stored, at most SummaryBytes bytes: a version byte, the
// ladder's row count, the level bits, then per context row the number of
// points written, the code every later point of the row holds (unknown or
// no fit, the same in all three figures), and the points written as
// (total, per-request, TTFT) triples. Rows end in such a tail wherever the
// model stops answering or the requests stop fitting, so a summary is a
// third of its fixed size on generated runs (577 bytes against 1,656).
func (s Summary) Encode() []byte {
	nb := len(summaryConcurrencies)
	b := make([]byte, 0, SummaryBytes)
	b = append(b, summaryVersion, byte(len(summaryContexts)))
	b = append(b, s.level[:]...)
	for i := range summaryContexts {
		row := i * nb
		n, tail := nb, uint16(codeUnknown)
		if t := s.total[row+nb-1]; t < codeFirst && s.perReq[row+nb-1] == t && s.ttft[row+nb-1] == t {
			tail = t
			for n > 0 && s.blank(row+n-1, tail) {
				n--
			}
		}
		b = append(b, byte(n), byte(tail))
		for k := row; k < row+n; k++ {
			b = binary.LittleEndian.AppendUint16(b, s.total[k])
			b = binary.LittleEndian.AppendUint16(b, s.perReq[k])
			b = binary.LittleEndian.AppendUint16(b, s.ttft[k])
		}
	}
	return b
}

// blank reports whether point k holds code in all three figures.
func (s Summary) blank(k int, code uint16) bool {
	return s.total[k] == code && s.perReq[k] == code && s.ttft[k] == code
}

// DecodeSummary reads a stored Summary: the encoding Encode writes, or the
// fixed-size one of the first version (every point, figure by figure).
func DecodeSummary(b []byte) (Summary, error) {
	var s Summary
	bad := errors.New("stored summary: not a summary of this version")
	if len(b) < 2 || int(b[1]) != len(summaryContexts) {
		return s, bad
	}
	switch b[0] {
	case 1:
		if len(b) != 2+3*2*summaryPoints+len(s.level) {
			return s, bad
		}
		b = b[2:]
		for _, a := range []*[summaryPoints]uint16{&s.total, &s.perReq, &s.ttft} {
			for i := range a {
				a[i] = binary.LittleEndian.Uint16(b)
				b = b[2:]
			}
		}
		copy(s.level[:], b)
		return s, nil
	case summaryVersion:
	default:
		return s, bad
	}
	b = b[2:]
	if len(b) < len(s.level) {
		return s, bad
	}
	b = b[copy(s.level[:], b):]
	nb := len(summaryConcurrencies)
	for i := range summaryContexts {
		if len(b) < 2 || int(b[0]) > nb || b[1] >= codeFirst || len(b) < 2+6*int(b[0]) {
			return s, bad
		}
		n, tail := int(b[0]), uint16(b[1])
		b = b[2:]
		row := i * nb
		for k := row; k < row+nb; k++ {
			if k < row+n {
				s.total[k], s.perReq[k], s.ttft[k] = binary.LittleEndian.Uint16(b), binary.LittleEndian.Uint16(b[2:]), binary.LittleEndian.Uint16(b[4:])
				b = b[6:]
			} else {
				s.total[k], s.perReq[k], s.ttft[k] = tail, tail, tail
			}
		}
	}
	if len(b) != 0 {
		return s, bad
	}
	return s, nil
}

// summaryRow is the first point of the ladder row a bound at context l
// reads: the longest ladder context ≤ l at which the model answered one
// request; ok is false when there is none.
func (s Summary) summaryRow(l int) (row int, ok bool) {
	for i := floorRung(summaryContexts[:], l); i >= 0; i-- {
		if s.perReq[i*len(summaryConcurrencies)] != codeUnknown {
			return i * len(summaryConcurrencies), true
		}
	}
	return 0, false
}

// floorRung is the index of the largest ladder value ≤ v (0 when v is below
// the ladder).
func floorRung(ladder []int, v int) int {
	i, found := slices.BinarySearch(ladder, v)
	if found || i == 0 {
		return i
	}
	return i - 1
}

// PlanBound is what a plan of the run can achieve at best: if Meets is
// false no concurrency meets the target; else the plan's concurrency is at
// most Concurrency and its total tok/s at most TotalTokS (+Inf when the
// summary does not bound it). ShortfallRatio bounds from below how far a
// plan that misses falls short (Shortfall.Ratio).
type PlanBound struct {
	Meets          bool
	Concurrency    int
	TotalTokS      float64
	ShortfallRatio float64
}

// unbounded is the bound of a run the summary says nothing about.
var unbounded = PlanBound{Meets: true, Concurrency: maxPlanConcurrency, TotalTokS: math.Inf(1), ShortfallRatio: 1}

// BoundPlan bounds the answer of Plan(t) from the summary. t.Base must ask
// for no override: other VRAM, output or GPU are not summarized.
//
// Plan probes concurrency 1, 2, 4 … and bisects below the first that
// fails; the bound follows it on the summary's row: the plan stays under
// the first power of two that fails there (a refusal included: the range
// the calculator answers does not widen with a longer context) and under
// any other rung that fails on capacity, speed or TTFT. Between powers of
// two, a refusal (a throughput jump whose position is unknown) decides
// nothing; a level stretch (whose start moves with the context, and which
// a longer context's rows need not have) decides nothing anywhere, nor
// does a measured cell whose requests queued below one that fits.
func (s Summary) BoundPlan(t Target) PlanBound {
	nb := len(summaryConcurrencies)
	row, found := s.summaryRow(t.ContextTokens)
	if !found {
		return unbounded
	}
	// A rung that does not fit below one that does is a measured cell
	// whose requests queued (over capacity, a sequence limit or max_model_len
	// hold for every larger concurrency too): Plan steps over it.
	lastFit := -1
	for j := range nb {
		if s.perReq[row+j] >= codeFirst {
			lastFit = j
		}
	}
	stepped := func(j int) bool { return s.perReq[row+j] == codeNoFit && j < lastFit }
	// verdict: 1 meets, 0 refused, 2 on a level (where a level starts
	// moves with the context, and a longer context's rows may not level
	// off at all: it decides nothing), 3 stepped over, -1 fails.
	verdict := func(j int) int {
		k := row + j
		switch {
		case s.perReq[k] == codeUnknown:
			return 0
		case stepped(j):
			return 3
		case s.perReq[k] == codeNoFit:
			return -1
		}
		if decodeValue(s.perReq[k])*summaryMargin < t.MinPerRequestTokS {
			return -1
		}
		if s.level[k/8]&(1<<(k%8)) != 0 {
			return 2
		}
		if t.MaxTTFTMs > 0 && s.ttft[k] >= codeFirst && decodeValue(s.ttft[k])/summaryMargin > t.MaxTTFTMs {
			return -1
		}
		return 1
	}
	if v := verdict(0); v != 1 && v != 2 && v != 3 {
		ratio := math.Inf(1) // nothing fits, or no answer: a capacity or coverage shortfall
		if c := s.perReq[row]; c >= codeFirst {
			ratio = 1
			if r := t.MinPerRequestTokS / (decodeValue(c) * summaryMargin); r > 1 {
				ratio = r
			}
			if t.MaxTTFTMs > 0 {
				r := 1.0
				if tc := s.ttft[row]; tc >= codeFirst {
					r = max(1, decodeValue(tc)/summaryMargin/t.MaxTTFTMs)
				}
				ratio = min(ratio, r)
			}
		}
		return PlanBound{ShortfallRatio: ratio}
	}
	limit, top := maxPlanConcurrency, nb
	for j := 1; j < nb; j++ {
		b := summaryConcurrencies[j]
		v := verdict(j)
		if v == -1 || (v == 0 && b&(b-1) == 0) {
			limit, top = b-1, j
			break
		}
	}
	if top == nb {
		// Meets at the ladder's top: beyond it nothing is bounded.
		return PlanBound{Meets: true, Concurrency: limit, TotalTokS: math.Inf(1), ShortfallRatio: 1}
	}
	// From each answered rung a below the limit to the next answered one
	// c, the total is at most the larger of the two (it rises with
	// concurrency), or where c has no total, a's per-request speed for
	// every request.
	best := 0.0
	for a := 0; a < top; a++ {
		k := row + a
		if s.perReq[k] < codeFirst {
			continue
		}
		c := a + 1
		for c < nb && (s.perReq[row+c] == codeUnknown || stepped(c)) {
			c++
		}
		switch {
		case c < nb && s.total[row+c] >= codeFirst && s.total[k] >= codeFirst:
			best = max(best, decodeValue(s.total[k]), decodeValue(s.total[row+c]))
		case c < nb:
			best = max(best, float64(min(limit, summaryConcurrencies[c]-1))*decodeValue(s.perReq[k]))
		default:
			best = max(best, float64(limit)*decodeValue(s.perReq[k]))
		}
	}
	return PlanBound{Meets: true, Concurrency: limit, TotalTokS: best * summaryMargin, ShortfallRatio: 1}
}

// CellBound bounds a run's predicted cell at (l, b) from the summary, for
// ranking: Fits is false when the requests surely do not all fit and run
// there; otherwise TotalTokS and PerRequestTokS are at most, TTFTMs and
// TBTMs at least, the values given (+Inf and 0 when not bounded).
type CellBound struct {
	Fits                      bool
	TotalTokS, PerRequestTokS float64
	TTFTMs, TBTMs             float64
}

// BoundCell bounds the prediction at (l, b) with no override, from the
// summary's row at or below l and its answered rung at or below b.
func (s Summary) BoundCell(l, b int) CellBound {
	open := CellBound{Fits: true, TotalTokS: math.Inf(1), PerRequestTokS: math.Inf(1)}
	nb := len(summaryConcurrencies)
	row, found := s.summaryRow(l)
	if !found {
		return open
	}
	j := floorRung(summaryConcurrencies[:], b)
	if s.perReq[row+j] == codeNoFit {
		return CellBound{} // the requests do not all run with fewer of them or a shorter context either
	}
	exact := summaryConcurrencies[j] == b
	for j > 0 && s.perReq[row+j] == codeUnknown {
		j, exact = j-1, false
	}
	k := row + j
	if s.perReq[k] < codeFirst {
		return open
	}
	out := CellBound{Fits: true}
	pr := decodeValue(s.perReq[k])
	out.PerRequestTokS = pr * summaryMargin
	out.TBTMs = 1000 / out.PerRequestTokS
	if c := s.ttft[k]; c >= codeFirst {
		out.TTFTMs = decodeValue(c) / summaryMargin
	}
	switch {
	case exact && s.total[k] >= codeFirst:
		out.TotalTokS = decodeValue(s.total[k]) * summaryMargin
	case summaryConcurrencies[j] < b && j+1 < nb && s.total[k] >= codeFirst && s.total[k+1] >= codeFirst && summaryConcurrencies[j+1] >= b:
		out.TotalTokS = max(decodeValue(s.total[k]), decodeValue(s.total[k+1])) * summaryMargin
	default:
		out.TotalTokS = float64(b) * pr * summaryMargin
	}
	return out
}
