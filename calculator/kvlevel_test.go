package calculator_test

import (
	"math"
	"testing"

	"github.com/matrixd/matrixd/calculator"
)

// TestLevelsWhereTheKVCacheFills: a row levels off where B·(L + output)
// reaches the KV capacity, so the capacity the other rows show says where
// a row whose own level a held-out cell hid levels off too, and what its
// cells really ran (a rising line through them misses by 8–15 %).
func TestLevelsWhereTheKVCacheFills(t *testing.T) {
	// TensorRT-LLM, Llama-2-7B on A100 (static batches generating L tokens
	// each, published throughput only): from 32K tokens of reservation on,
	// more requests do not run.
	batch := func(skip calculator.CellRef) calculator.Run {
		r := calculator.Run{ID: "batch", MaxOutputTokens: 2048}
		for _, c := range []struct {
			l, b  int
			total float64
		}{
			{128, 1, 84.5}, {128, 16, 1132.7}, {128, 32, 1942.0}, {128, 64, 3057.8},
			{256, 1, 83.8}, {256, 16, 1042.5}, {256, 32, 1713.3}, {256, 64, 2532.5},
			{512, 1, 82.5}, {512, 16, 903.4}, {512, 32, 1381.6}, {512, 64, 1378.6},
			{1024, 1, 80.1}, {1024, 16, 716.8}, {1024, 32, 729.2}, {1024, 64, 722.4},
			{2048, 1, 75.8}, {2048, 16, 375.7}, {2048, 32, 371.5}, {2048, 64, 311.8},
		} {
			if c.l == skip.ContextTokens && c.b == skip.Concurrency {
				continue
			}
			out := c.b * c.l
			r.Decode = append(r.Decode, calculator.Cell{ContextTokens: c.l, Concurrency: c.b, Status: calculator.CellValid, TotalTokS: f(c.total), OutputTokens: &out})
		}
		return r
	}
	// A serving engine that runs at most 100 requests at once, and fewer
	// where 150,000 tokens of KV cache fill first (at long contexts).
	serving := func(skip calculator.CellRef) calculator.Run {
		running := func(l, b int) float64 { return math.Min(math.Min(float64(b), 100), 150000/float64(l+128)) }
		step := func(l int, n float64) float64 { return 7 + 0.3*n + 0.0008*n*float64(l) }
		r := calculator.Run{ID: "serving", MaxOutputTokens: 128}
		for _, l := range []int{128, 1024, 4096} {
			for _, b := range []int{1, 10, 50, 100, 200} {
				if l == skip.ContextTokens && b == skip.Concurrency {
					continue
				}
				n := running(l, b)
				r.Decode = append(r.Decode, calculator.Cell{ContextTokens: l, Concurrency: b, Status: calculator.CellValid,
					TotalTokS: f(math.Round(n*1000/step(l, n)*10) / 10), TBTMs: f(math.Round(step(l, n)*100) / 100)})
			}
		}
		return r
	}
	for _, c := range []struct {
		name  string
		run   func(calculator.CellRef) calculator.Run
		cell  calculator.CellRef
		total float64
	}{
		{"batch: the row's only full cell held out", batch, calculator.CellRef{ContextTokens: 512, Concurrency: 32}, 1381.6},
		{"batch: a full row's knee held out", batch, calculator.CellRef{ContextTokens: 1024, Concurrency: 16}, 716.8},
		{"serving: past the row's end, at the request limit", serving, calculator.CellRef{ContextTokens: 128, Concurrency: 200}, 100 * 1000 / (7 + 30 + 0.0008*100*128)},
	} {
		p, err := fit(t, c.run(c.cell)).Decode(calculator.Query{ContextTokens: c.cell.ContextTokens, Concurrency: c.cell.Concurrency})
		if err != nil || p.TotalTokS == nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := p.TotalTokS.Value; math.Abs(got/c.total-1) > 0.03 {
			t.Errorf("%s: %v predicted %.1f tok/s, measured %.1f (%.1f%% off)", c.name, c.cell, got, c.total, 100*(got/c.total-1))
		}
	}
}
