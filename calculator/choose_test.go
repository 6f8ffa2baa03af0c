package calculator

import (
	"math"
	"strings"
	"testing"
)

// TestMostBalancedWeights: among row/shape weights whose held-out error is
// within chooseTolerance of the least, the most even mix is taken; a mix
// further off than that is not.
func TestMostBalancedWeights(t *testing.T) {
	ws, sws := rowWeights(), shapeWeights()
	idx := func(row, shape float64) int {
		for i, w := range ws {
			for j, v := range sws {
				if w == row && v == shape {
					return i*len(sws) + j
				}
			}
		}
		t.Fatalf("no weights %v/%v", row, shape)
		return 0
	}
	errs := make([]float64, len(ws)*len(sws))
	for i := range errs {
		errs[i] = 0.10
	}
	errs[idx(1, 0)] = 0.050     // least: all row-wise, no shape
	errs[idx(0.5, 0.5)] = 0.054 // even, within 10 %
	if got := mostBalanced(errs); got != idx(0.5, 0.5) {
		t.Errorf("picked %d, want the even mix %d within %.0f%% of the least", got, idx(0.5, 0.5), 100*(chooseTolerance-1))
	}
	errs[idx(0.5, 0.5)] = 0.056 // now 12 % worse: the least stands
	errs[idx(0.75, 0)] = 0.0545 // the most even within 10 %
	if got := mostBalanced(errs); got != idx(0.75, 0) {
		t.Errorf("picked %d, want %d (the most even within tolerance)", got, idx(0.75, 0))
	}
}

// TestMostBalancedWithoutEvidence: when every weight errs alike, the rows
// and columns are weighed evenly and the shape estimate, which nothing
// held out told apart, not at all; a NaN error never qualifies.
func TestMostBalancedWithoutEvidence(t *testing.T) {
	ws, sws := rowWeights(), shapeWeights()
	errs := make([]float64, len(ws)*len(sws))
	for i := range errs {
		errs[i] = 0.02
	}
	got := mostBalanced(errs)
	if row, shape := ws[got/len(sws)], sws[got%len(sws)]; row != 0.5 || shape != 0 {
		t.Errorf("all tied: row %g, shape %g; want row 0.5, shape 0", row, shape)
	}
	errs[0] = math.NaN()
	if got := mostBalanced(errs); math.IsNaN(errs[got]) {
		t.Errorf("picked the NaN error at %d", got)
	}
}

// TestBestInHindsight: on a run whose step time is exactly linear in log2
// of concurrency (and in context), the best fixed interpolant in hindsight
// is one linear in log2 concurrency, and it errs by no more than rounding.
func TestBestInHindsight(t *testing.T) {
	r := Run{ID: "log"}
	for _, l := range []int{1024, 4096, 16384} {
		for _, b := range []int{1, 2, 4, 8, 16, 32} {
			step := (10 + 4*math.Log2(float64(b))) * (1 + float64(l)/16384)
			total := float64(b) * 1000 / step
			r.Decode = append(r.Decode, Cell{ContextTokens: l, Concurrency: b, Status: CellValid, TotalTokS: &total})
		}
	}
	h, err := BestInHindsight(t.Context(), r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.Interpolant, "linear in log2 concurrency") || h.Total.N == 0 || h.Total.Mean > 1e-9 {
		t.Errorf("best in hindsight %q, mean error %g over %d cells; want linear in log2 concurrency, exact", h.Interpolant, h.Total.Mean, h.Total.N)
	}
}

// TestBestInHindsightReadsLevels: the hindsight reference scores every
// option a fit chooses among, levels read as limits included: on a serving
// run whose rows level off at a request limit of 100, the best choice in
// hindsight reads them so.
func TestBestInHindsightReadsLevels(t *testing.T) {
	running := func(l, b int) float64 { return math.Min(math.Min(float64(b), 100), 150000/float64(l+128)) }
	step := func(l int, n float64) float64 { return 7 + 0.3*n + 0.0008*n*float64(l) }
	r := Run{ID: "serving", MaxOutputTokens: 128}
	for _, l := range []int{128, 1024, 4096} {
		for _, b := range []int{1, 10, 50, 100, 200} {
			n := running(l, b)
			total, tbt := math.Round(n*1000/step(l, n)*10)/10, math.Round(step(l, n)*100)/100
			r.Decode = append(r.Decode, Cell{ContextTokens: l, Concurrency: b, Status: CellValid, TotalTokS: &total, TBTMs: &tbt})
		}
	}
	ips := hindsightChoices(r)
	kv, smoothed := 0, 0
	for _, ip := range ips {
		if ip.kv {
			kv++
		}
		if ip.physS > 0 {
			smoothed++
		}
	}
	if kv == 0 || smoothed == 0 {
		t.Fatalf("%d choices, %d reading levels as limits, %d smoothed; want both kinds among them", len(ips), kv, smoothed)
	}
	h, err := BestInHindsight(t.Context(), r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.Interpolant, "levels read as") {
		t.Errorf("best in hindsight %q (%.2f%%); want levels read as limits", h.Interpolant, 100*h.Total.Mean)
	}
}
