package calculator_test

import (
	"testing"

	"github.com/matrixd/matrixd/calculator"
)

// go test ./calculator -run '^$' -bench . -count 6

// BenchmarkFit fits a run and calibrates its bands (every holdout refitted).
func BenchmarkFit(b *testing.B) {
	r := faraRun()
	for b.Loop() {
		if _, err := calculator.Fit(r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecode is one interpolated prediction on a fitted run.
func BenchmarkDecode(b *testing.B) {
	m := fit(b, faraRun())
	q := calculator.Query{ContextTokens: 48 << 10, Concurrency: 6}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Decode(q); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeExtrapolated is one extrapolated prediction.
func BenchmarkDecodeExtrapolated(b *testing.B) {
	m := fit(b, faraRun())
	q := calculator.Query{ContextTokens: 16 << 10, Concurrency: 24}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Decode(q); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGrid6x8 predicts a 6×8 grid of unmeasured cells.
func BenchmarkGrid6x8(b *testing.B) {
	m := fit(b, nemotronRun())
	contexts := []int{4 << 10, 12 << 10, 24 << 10, 48 << 10, 80 << 10, 100 << 10}
	concurrencies := []int{1, 3, 6, 12, 24, 48, 96, 128}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := m.Grid(contexts, concurrencies, calculator.Query{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSummarize reads a fitted run at the summary's ladder, as every
// fit does before it is stored.
func BenchmarkSummarize(b *testing.B) {
	m := fit(b, faraRun())
	for b.Loop() {
		calculator.Summarize(m)
	}
}
