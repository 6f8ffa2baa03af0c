package calculator_test

import (
	"math"
	"testing"

	"github.com/matrixd/matrixd/calculator"
)

// TestTTFTGrowsWithLoadPerRow: an empty prompt's TTFT hardly grows with
// load while a long prompt's does (each row's own queueing), so a TTFT
// between two measured concurrencies of the long row lies between them,
// not below both as one α for the whole run put it.
func TestTTFTGrowsWithLoadPerRow(t *testing.T) {
	var cells []calculator.Cell
	for _, b := range []int{1, 2, 4, 8, 16} {
		tot := 100 * float64(b) / (1 + 0.05*float64(b))
		per := tot / float64(b)
		tbt := 1000 / per
		cells = append(cells,
			cell(0, b, "valid", f(tot), f(per), f(40), f(tbt), f(float64(b)), n(int(tot*30)), f(30)),
			cell(16384, b, "valid", f(tot*0.8), f(per*0.8), f(40+48*float64(b)), f(tbt/0.8), f(float64(b)), n(int(tot*24)), f(30)))
	}
	r := calculator.Run{ID: "ttft-rows", GPU: "H100 SXM", MaxModelLen: 131072, MaxNumSeqs: 64, MaxOutputTokens: 1024, GPUMemoryUtilization: 0.9,
		VRAMGB: 80, ParamsB: 4, WindowS: 30, Decode: cells}
	m, err := calculator.Fit(r)
	if err != nil {
		t.Fatal(err)
	}
	p, err := m.Decode(calculator.Query{ContextTokens: 16384, Concurrency: 6})
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := 40+48*4.0, 40+48*8.0 // the measured 4 and 8
	if p.TTFTMs == nil || p.TTFTMs.Value < lo || p.TTFTMs.Value > hi {
		t.Errorf("TTFT at 16K × 6: %v, want between the measured %v (× 4) and %v (× 8)", p.TTFTMs, lo, hi)
	}
	p0, err := m.Decode(calculator.Query{ContextTokens: 0, Concurrency: 6})
	if err != nil {
		t.Fatal(err)
	}
	if p0.TTFTMs == nil || p0.TTFTMs.Value > 45 {
		t.Errorf("TTFT at 0 × 6: %v, want about the flat 40 ms its row measured", p0.TTFTMs)
	}
}

// TestTTFTStaysBetweenMeasuredConcurrencies: in a measured row, an
// unmeasured concurrency's TTFT lies between the TTFTs measured at the
// nearest concurrencies below and above it (Fara at an empty prompt: the
// queue model alone gave 9 requests 319 ms, under the 358 ms measured at 8).
func TestTTFTStaysBetweenMeasuredConcurrencies(t *testing.T) {
	checked := 0
	for _, r := range seeds() {
		m := fit(t, r)
		rows := map[int]map[int]float64{}
		for _, c := range r.Decode {
			if c.Status == calculator.CellValid && c.TTFTMs != nil {
				if rows[c.ContextTokens] == nil {
					rows[c.ContextTokens] = map[int]float64{}
				}
				rows[c.ContextTokens][c.Concurrency] = *c.TTFTMs
			}
		}
		for l, row := range rows {
			for b := 2; b < 64; b++ {
				if _, ok := row[b]; ok {
					continue
				}
				below, above := lastBelow(row, b), firstAbove(row, b)
				if below == 0 || above == math.MaxInt {
					continue
				}
				lo, hi := row[below], row[above]
				if lo > hi {
					continue
				}
				p, err := m.Decode(calculator.Query{ContextTokens: l, Concurrency: b})
				if err != nil || p.TTFTMs == nil || p.Status != calculator.Fits {
					continue
				}
				checked++
				if v := p.TTFTMs.Value; v < lo-1e-9 || v > hi+1e-9 {
					t.Errorf("%s %d × %d: TTFT %.1f ms outside the measured %.1f–%.1f ms of its neighbours", r.ID, l, b, v, lo, hi)
				}
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d answers checked", checked)
	}
}

func lastBelow(row map[int]float64, b int) int {
	best := 0
	for mb := range row {
		if mb < b && mb > best {
			best = mb
		}
	}
	return best
}

func firstAbove(row map[int]float64, b int) int {
	best := math.MaxInt
	for mb := range row {
		if mb > b && mb < best {
			best = mb
		}
	}
	return best
}
