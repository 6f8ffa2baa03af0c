package calculator_test

import (
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
