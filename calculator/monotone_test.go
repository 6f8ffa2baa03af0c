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

// TestServedContextIsNotPastMaxModelLen: a run that served requests at a
// context whose reservation (context + max output) exceeds its stated
// max_model_len shows the engine admitted them: every concurrency there is
// judged by the same rule as the measured ones, not rejected between them.
func TestServedContextIsNotPastMaxModelLen(t *testing.T) {
	r := calculator.Run{ID: "edge", MaxModelLen: 131072, MaxOutputTokens: 8192}
	for _, l := range []int{0, 32768, 131072} {
		for _, b := range []int{1, 2, 4, 8} {
			step := 10 + 0.5*float64(b) + 0.0001*float64(b*l)
			r.Decode = append(r.Decode, cell(l, b, "valid", f(float64(b)*1000/step), f(1000/step), f(100), f(step), f(float64(b)), n(b*3000), f(30)))
		}
	}
	m, err := calculator.Fit(r)
	if err != nil {
		t.Fatal(err)
	}
	for b := 1; b <= 8; b++ {
		p, err := m.Decode(calculator.Query{ContextTokens: 131072, Concurrency: b})
		if err != nil {
			t.Fatal(err)
		}
		if p.Status == calculator.ExceedsMaxModelLen {
			t.Errorf("131072 × %d: %s, though the run served this context at 1, 2, 4 and 8", b, p.Status)
		}
	}
	if p, _ := m.Decode(calculator.Query{ContextTokens: 131000, Concurrency: 1}); p.Status == calculator.ExceedsMaxModelLen {
		t.Errorf("131000 × 1: %s, a shorter context than one served", p.Status)
	}
	if p, _ := m.Decode(calculator.Query{ContextTokens: 140000, Concurrency: 1}); p.Status != calculator.ExceedsMaxModelLen {
		t.Errorf("140000 × 1: %s, want exceeds_max_model_len past every served context", p.Status)
	}
	if p, _ := m.Decode(calculator.Query{ContextTokens: 131072, Concurrency: 1, MaxOutputTokens: 16384}); p.Status != calculator.ExceedsMaxModelLen {
		t.Errorf("131072 × 1 with twice the output reservation: %s, want exceeds_max_model_len", p.Status)
	}
	c, err := m.Capacity(calculator.Query{ContextTokens: 131072, Concurrency: 4})
	if err != nil || c.MaxConcurrency < 8 {
		t.Errorf("capacity at 131072: max concurrency %d (%v), want at least the 8 that ran", c.MaxConcurrency, err)
	}
}
