package main

import (
	"context"
	"testing"

	"github.com/matrixd/matrixd/calculator"
)

// TestCrossModelPrefillOnCorpus: cold prefill predicted for each corpus
// grid from another model's grid on the same GPU and engine (the pairs
// of the cross-model table whose grids publish prefill), scaled by the
// FLOPs of a prompt token: the band holds at least 90 % of them.
func TestCrossModelPrefillOnCorpus(t *testing.T) {
	runs, err := loadCorpus("../../ingest/testdata/corpus")
	if err != nil {
		t.Fatal(err)
	}
	pairs, _, err := modelPairs(context.Background(), runs)
	if err != nil {
		t.Fatal(err)
	}
	s, err := crossModelPrefill(pairs)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", s)
	if s.Pairs < 8 || s.Answers < 20 {
		t.Fatalf("%d pairs, %d answers: want the llama.cpp pairs' prefill", s.Pairs, s.Answers)
	}
	if s.Coverage < 0.9 || s.Needed > calculator.PrefillModelBand {
		t.Errorf("the ±%.0f %% band holds %.1f %% (needs ±%.1f %% for 90 %%)", 100*calculator.PrefillModelBand, 100*s.Coverage, 100*s.Needed)
	}
}
