package calculator_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/matrixd/matrixd/calculator"
)

// bigRun is an n × n grid shaped like a real dense-model run.
func bigRun(n int) calculator.Run {
	r := calculator.Run{ID: "big", MaxModelLen: 1 << 20, MaxOutputTokens: 1024, VRAMGB: 80, WindowS: 30}
	for i := range n {
		l := i * 2048
		for j := range n {
			b := j + 1
			tbt := 10 + 0.05*float64(b) + 0.0004*float64(b)*float64(l)/1024
			total := float64(b) * 1000 / tbt
			per := 1000 / tbt
			ttft := 50 + float64(l)/1000
			r.Decode = append(r.Decode, calculator.Cell{ContextTokens: l, Concurrency: b, Status: calculator.CellValid,
				TotalTokS: &total, PerRequestTokS: &per, TBTMs: &tbt, TTFTMs: &ttft})
		}
	}
	return r
}

// fitChecks is a context that counts how often a fit asks whether it
// was canceled: a fit asks before each fit of a held-out part of its run,
// so the count is the work it does, in fits of part of the grid.
type fitChecks struct {
	context.Context
	n int
}

func (c *fitChecks) Err() error {
	c.n++
	return c.Context.Err()
}

// TestFitLargestGrid fits the largest grid a run may have (64 × 64) with
// no more fits of held-out parts than a 16 × 16 grid takes: a fit
// calibrates on a bounded number of holdouts, so its cost grows about
// linearly with the cells. BenchmarkFitGrid measures the time.
func TestFitLargestGrid(t *testing.T) {
	checks := map[int]int{}
	for _, n := range []int{16, 64} {
		ctx := &fitChecks{Context: context.Background()}
		m, err := calculator.FitContext(ctx, bigRun(n))
		if err != nil {
			t.Fatalf("%d × %d fit: %v", n, n, err)
		}
		if !m.Bands().Calibrated {
			t.Errorf("the bands of a %d × %d run were not calibrated", n, n)
		}
		checks[n] = ctx.n
	}
	t.Logf("holdout fits: %d at 16 × 16, %d at 64 × 64", checks[16], checks[64])
	if checks[16] == 0 || checks[64] > checks[16] {
		t.Errorf("a 64 × 64 fit made %d holdout fits, a 16 × 16 one %d: the holdouts are not bounded", checks[64], checks[16])
	}
}

// TestFitHonoursCancellation: a canceled fit returns at its first check,
// before any fit of a held-out part.
func TestFitHonoursCancellation(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	ctx := &fitChecks{Context: canceled}
	if _, err := calculator.FitContext(ctx, bigRun(64)); !errors.Is(err, context.Canceled) {
		t.Fatalf("a canceled fit returned %v", err)
	}
	if ctx.n != 1 {
		t.Errorf("a canceled fit checked its context %d times, want once (it went on fitting)", ctx.n)
	}
}

// BenchmarkFitGrid fits square grids of growing size.
//
//	go test ./calculator -run '^$' -bench FitGrid -count 6
func BenchmarkFitGrid(b *testing.B) {
	for _, n := range []int{8, 16, 32, 64} {
		r := bigRun(n)
		b.Run(fmt.Sprintf("%dx%d", n, n), func(b *testing.B) {
			for b.Loop() {
				if _, err := calculator.Fit(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestDenseRowsStayApart: a dense grid's rows (every 2048 tokens, closer
// than rowTolerance at long contexts) each measured every concurrency, so
// they are rows of their own, and a context between two of them is
// interpolated: total tok/s falls with context, with no step where an
// averaged row used to stand.
func TestDenseRowsStayApart(t *testing.T) {
	m, err := calculator.Fit(bigRun(64))
	if err != nil {
		t.Fatal(err)
	}
	const b = 10
	last := 1e18
	for l := 94208; l <= 102400; l += 512 {
		p, err := m.Decode(calculator.Query{ContextTokens: l, Concurrency: b})
		if err != nil {
			t.Fatal(err)
		}
		tbt := 10 + 0.05*b + 0.0004*b*float64(l)/1024
		if want := b * 1000 / tbt; math.Abs(p.TotalTokS.Value-want) > 0.002*want {
			t.Errorf("%d×%d: %.2f tok/s, the grid's law gives %.2f", l, b, p.TotalTokS.Value, want)
		}
		if p.TotalTokS.Value >= last {
			t.Errorf("%d×%d: %.2f tok/s, not below %.2f at %d", l, b, p.TotalTokS.Value, last, l-512)
		}
		last = p.TotalTokS.Value
		for _, c := range p.Cells {
			if c.ContextTokens%2048 != 0 {
				t.Errorf("%d×%d reads cell %v, which the grid did not measure", l, b, c)
			}
		}
	}
}
