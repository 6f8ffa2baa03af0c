package calculator_test

import (
	"runtime"
	"testing"

	"github.com/matrixd/matrixd/calculator"
)

// TestBytesMatchesTheHeap holds n fits of each run, each fitted from a run
// of its own, and compares what the heap grew by, after a collection, with
// what Bytes says they hold: a cache bounded by Bytes holds about what it
// says.
func TestBytesMatchesTheHeap(t *testing.T) {
	shared := func() calculator.Run {
		r := bigRun(16)
		r.SharedSpeed = bigRun(32).Decode // a quarter of them are r's own cells, skipped
		return r
	}
	for _, tc := range []struct {
		name string
		run  func() calculator.Run
		n    int
	}{
		{"64 × 64", func() calculator.Run { return bigRun(64) }, 3},
		{"16 × 16", func() calculator.Run { return bigRun(16) }, 15},
		{"fara", faraRun, 100},
		{"16 × 16 sharing 32 × 32", shared, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			held := make([]*calculator.Model, tc.n)
			var ms runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms)
			before := ms.HeapAlloc
			for i := range held {
				held[i] = fit(t, tc.run())
			}
			runtime.GC()
			runtime.ReadMemStats(&ms)
			measured := float64(ms.HeapAlloc-before) / float64(tc.n)
			estimate := float64(held[0].Bytes())
			runtime.KeepAlive(held)
			t.Logf("%s: Bytes %.0f, heap %.0f a fit (%.3f)", tc.name, estimate, measured, estimate/measured)
			if r := estimate / measured; r < 0.9 || r > 1.1 {
				t.Errorf("Bytes says %.0f, the heap grew %.0f a fit (%.2f×)", estimate, measured, r)
			}
		})
	}
}
