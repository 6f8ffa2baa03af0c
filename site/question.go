package site

import (
	"math"
	"net/url"
	"slices"
	"strconv"

	"github.com/matrixd/matrixd/store"
)

// The question a run page's "predict other cells" opens: one the run
// answers, inside what it measured, so that the calculator opens on an
// answer rather than a refusal.

// otherCell is a cell between the run's measured valid cells: the
// midpoint of two neighbouring measured contexts at the measured
// concurrency nearest 8 (the pair nearest 16K), else of two
// concurrencies at one context, else its only measured cell; ok is false
// when it measured none.
func otherCell(cells []store.DecodeCell) (ctx, conc int, ok bool) {
	byConc, byCtx := map[int][]int{}, map[int][]int{}
	for _, c := range cells {
		if c.Status != "valid" || c.TotalTokS == nil || *c.TotalTokS <= 0 {
			continue
		}
		byConc[c.Concurrency] = append(byConc[c.Concurrency], c.ContextTokens)
		byCtx[c.ContextTokens] = append(byCtx[c.ContextTokens], c.Concurrency)
		if !ok {
			ctx, conc, ok = c.ContextTokens, c.Concurrency, true
		}
	}
	best := math.Inf(1)
	for b, ls := range byConc {
		slices.Sort(ls)
		for i := 1; i < len(ls); i++ {
			mid := (ls[i-1] + ls[i]) / 2
			if mid == ls[i-1] {
				continue
			}
			// Nearest 8 first, then nearest 16K; ties to the smaller.
			d := 100*math.Abs(math.Log2(float64(b)/8)) + math.Abs(math.Log2(float64(mid+1024)/(16384+1024)))
			if d < best || (d == best && (b < conc || (b == conc && mid < ctx))) {
				best, ctx, conc = d, mid, b
			}
		}
	}
	if !math.IsInf(best, 1) {
		return ctx, conc, true
	}
	for l, bs := range byCtx {
		slices.Sort(bs)
		for i := 1; i < len(bs); i++ {
			mid := (bs[i-1] + bs[i]) / 2
			if mid == bs[i-1] {
				continue
			}
			d := math.Abs(math.Log2(float64(mid) / 8))
			if d < best || (d == best && (l < ctx || (l == ctx && mid < conc))) {
				best, ctx, conc = d, l, mid
			}
		}
	}
	return ctx, conc, ok
}

// predictHref is the calculator widget opened on a question run r
// answers: a run that does not say what each request reserves for its
// output (one_shot runs of a few generations) is asked with the output
// its method measured, without which the calculator cannot read its KV
// capacity.
func predictHref(r store.Run) string {
	q := url.Values{"run": {r.ID}}
	if ctx, conc, ok := otherCell(r.Decode); ok {
		q.Set("context", strconv.Itoa(ctx))
		q.Set("concurrency", strconv.Itoa(conc))
	}
	if m := r.MethodOf(); r.Benchmark.MaxOutputTokens == nil && m.OutputTokensPerRequest != nil && *m.OutputTokensPerRequest > 0 {
		q.Set("max_output", strconv.Itoa(*m.OutputTokensPerRequest))
	}
	return "/widget/calculator?" + q.Encode()
}
