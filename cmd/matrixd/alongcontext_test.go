package main

import (
	"slices"
	"testing"

	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/predict"
)

// TestThroughputDoesNotRiseWithContext: at one concurrency a longer
// context reads more KV cache each step, so a predicted total lies between
// those measured at that concurrency at the nearest shorter and longer
// contexts. Held out on M2 Ultra (gpt-oss-20b, llama.cpp), 4096 tokens × 2
// was predicted 10.7 % low, under the 8192-token cell.
func TestThroughputDoesNotRiseWithContext(t *testing.T) {
	runs, err := loadCorpus("../../ingest/testdata/corpus")
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(runs, func(cr corpusRun) bool { return cr.Entry.Name == "m2-ultra-gpt-oss-20b" })
	if i < 0 {
		t.Fatal("the corpus has no m2-ultra-gpt-oss-20b grid")
	}
	r := predict.Run(runs[i].Run)
	const l, b = 4096, 2
	byContext := map[int]float64{}
	var kept []calculator.Cell
	for _, c := range r.Decode {
		if c.Concurrency == b && c.TotalTokS != nil {
			byContext[c.ContextTokens] = *c.TotalTokS
		}
		if c.ContextTokens != l || c.Concurrency != b {
			kept = append(kept, c)
		}
	}
	truth, ok := byContext[l]
	if !ok {
		t.Fatalf("no measured %d × %d", l, b)
	}
	var shorter, longer int
	for ctx := range byContext {
		if ctx < l && ctx > shorter {
			shorter = ctx
		}
		if ctx > l && (longer == 0 || ctx < longer) {
			longer = ctx
		}
	}
	if longer == 0 {
		t.Fatal("no longer context measured at this concurrency")
	}
	r.Decode = kept
	m, err := calculator.Fit(r)
	if err != nil {
		t.Fatal(err)
	}
	p, err := m.Decode(calculator.Query{ContextTokens: l, Concurrency: b, MaxOutputTokens: 1})
	if err != nil || p.TotalTokS == nil {
		t.Fatalf("%d × %d: %v", l, b, err)
	}
	lo, hi := byContext[longer], byContext[shorter]
	if v := p.TotalTokS.Value; v < min(lo, hi)*(1-1e-9) || v > max(lo, hi)*(1+1e-9) {
		t.Errorf("%d × %d held out: %.1f tok/s (measured %.1f), outside %.1f at %d and %.1f at %d tokens", l, b, v, truth, hi, shorter, lo, longer)
	}
}
