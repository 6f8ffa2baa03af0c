package calculator_test

import (
	"math"
	"testing"

	"github.com/matrixd/matrixd/calculator"
)

// TestStepTimeStaysBetweenItsRowsNeighbours: one more request at once
// never shortens a step. Held out, the nemotron run's empty-prompt cell at
// 16 requests lies between its row's 8 and 32; a column carried along
// context from long prompts put it under 8's (10.8 ms, half the answer).
func TestStepTimeStaysBetweenItsRowsNeighbours(t *testing.T) {
	r := nemotronRun()
	var lo, hi, truth float64
	kept := r.Decode[:0:0]
	for _, c := range r.Decode {
		switch {
		case c.ContextTokens == 0 && c.Concurrency == 16:
			truth = *c.TBTMs
			continue
		case c.ContextTokens == 0 && c.Concurrency == 8:
			lo = *c.TBTMs
		case c.ContextTokens == 0 && c.Concurrency == 32:
			hi = *c.TBTMs
		}
		kept = append(kept, c)
	}
	r.Decode = kept
	m, err := calculator.Fit(r)
	if err != nil {
		t.Fatal(err)
	}
	for b := 9; b < 32; b++ {
		p, err := m.Decode(calculator.Query{ContextTokens: 0, Concurrency: b})
		if err != nil || p.TBTMs == nil {
			t.Fatalf("0 × %d: %v", b, err)
		}
		if v := p.TBTMs.Value; v < lo || v > hi {
			t.Errorf("0 × %d: TBT %.2f ms, outside the row's measured %.1f (8) … %.1f (32)", b, v, lo, hi)
		}
	}
	p, _ := m.Decode(calculator.Query{ContextTokens: 0, Concurrency: 16})
	if e := math.Abs(p.TBTMs.Value-truth) / truth; e > 0.12 {
		t.Errorf("0 × 16 held out: TBT %.2f ms, measured %.1f (%.0f %% off)", p.TBTMs.Value, truth, 100*e)
	}
}
