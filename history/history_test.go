package history

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// grid is a run of 6 contexts × 8 concurrencies whose total tok/s rises
// with concurrency and falls with context, each cell with noise sigma.
func grid(sigma float64, f func(l, b int, v float64) float64) []Cell {
	var out []Cell
	for _, l := range []int{0, 8192, 16384, 32768, 65536, 131072} {
		for _, b := range []int{1, 2, 4, 8, 16, 32, 64, 128} {
			v := 100 * float64(b) / (1 + float64(b)/40) / (1 + float64(l)/200000)
			out = append(out, Cell{ContextTokens: l, Concurrency: b, Value: f(l, b, v), Sigma: sigma})
		}
	}
	return out
}

func jitter(rng *rand.Rand, amp float64) func(l, b int, v float64) float64 {
	return func(_, _ int, v float64) float64 { return v * (1 + amp*(2*rng.Float64()-1)) }
}

func TestCompareGeneratedSeries(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 1))
		base := grid(0.01, jitter(rng, 0.01))
		// Two seed-identical runs with ±1 % jitter: never a change.
		again := grid(0.01, jitter(rng, 0.01))
		if st := Compare(base, again, DefaultRule); st.Verdict != Unchanged && st.Verdict != Inconclusive {
			t.Fatalf("seed %d: ±1 %% jitter gave %s: %s", seed, st.Verdict, st.Why)
		}
		// The same with a run that states almost no noise: the 1 % floor
		// still keeps jitter from being called a change.
		if st := Compare(grid(0.001, jitter(rng, 0.01)), grid(0.001, jitter(rng, 0.01)), DefaultRule); st.Verdict == Regressed || st.Verdict == Improved {
			t.Fatalf("seed %d: ±1 %% jitter with a 0.1 %% noise estimate gave %s: %s", seed, st.Verdict, st.Why)
		}
		// +10 % everywhere: improved.
		faster := grid(0.01, func(l, b int, v float64) float64 { return jitter(rng, 0.01)(l, b, v) * 1.10 })
		if st := Compare(base, faster, DefaultRule); st.Verdict != Improved || len(st.RegressedRows) > 0 {
			t.Fatalf("seed %d: +10 %% gave %s (regressed rows %v): %s", seed, st.Verdict, st.RegressedRows, st.Why)
		}
		// −8 % at long context only: regressed there, and those rows named.
		longSlower := grid(0.01, func(l, b int, v float64) float64 {
			v = jitter(rng, 0.01)(l, b, v)
			if l >= 65536 {
				v *= 0.92
			}
			return v
		})
		st := Compare(base, longSlower, DefaultRule)
		if st.Verdict != Regressed || !slices.Equal(st.RegressedRows, []int{65536, 131072}) || len(st.ImprovedRows) > 0 {
			t.Fatalf("seed %d: −8 %% at long context gave %s, regressed rows %v, improved %v: %s", seed, st.Verdict, st.RegressedRows, st.ImprovedRows, st.Why)
		}
	}
}

func TestCompareNoisyRunsAreInconclusive(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	a := grid(0.20, jitter(rng, 0.01))
	b := grid(0.20, func(l, bb int, v float64) float64 { return v * 0.9 })
	if st := Compare(a, b, DefaultRule); st.Verdict != Inconclusive {
		t.Errorf("a −10 %% change with 20 %% noise per cell: %s (%s); want inconclusive", st.Verdict, st.Why)
	}
}

func TestCompareCellsAgainstPredictions(t *testing.T) {
	a := []Cell{{ContextTokens: 0, Concurrency: 1, Value: 100, Sigma: 0.01}, {ContextTokens: 0, Concurrency: 2, Value: 190, Sigma: 0.05, Predicted: true}}
	b := []Cell{{ContextTokens: 0, Concurrency: 1, Value: 100, Sigma: 0.01}, {ContextTokens: 0, Concurrency: 2, Value: 150, Sigma: 0.01},
		{ContextTokens: 0, Concurrency: 4, Value: 300, Sigma: 0.05, Predicted: true}}
	st := Compare(a, b, DefaultRule)
	if len(st.Cells) != 2 || st.Measured != 1 {
		t.Fatalf("compared %d cells, %d measured; want 2 and 1 (two predictions are not compared): %+v", len(st.Cells), st.Measured, st.Cells)
	}
	if c := st.Cells[1]; !c.Predicted || c.Verdict != Regressed {
		t.Errorf("150 against a prediction of 190 ± 5 %%: %+v; want a regressed cell labelled predicted", c)
	}
	if st.Verdict != Inconclusive {
		t.Errorf("two cells, one slower, one the same: %s; want inconclusive (80 %% must agree)", st.Verdict)
	}
}

func TestSignTest(t *testing.T) {
	for _, c := range []struct {
		k, n int
		want float64
	}{{0, 0, 1}, {5, 5, 1.0 / 32}, {8, 8, 1.0 / 256}, {4, 8, 163.0 / 256}} {
		if got := signTest(c.k, c.n); got < c.want-1e-12 || got > c.want+1e-12 {
			t.Errorf("signTest(%d, %d) = %g, want %g", c.k, c.n, got, c.want)
		}
	}
}

// TestCompareSmallRows: a row of two cells both 8 % slower is a
// regression there; noise within the floors in rows that small is not.
func TestCompareSmallRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	var a, b, n []Cell
	for _, l := range []int{0, 1024, 2048, 4096} {
		for _, c := range []int{1, 2} {
			a = append(a, Cell{ContextTokens: l, Concurrency: c, Value: 100, Sigma: 0.006})
			v := 100 * (1 + 0.005*(2*rng.Float64()-1))
			n = append(n, Cell{ContextTokens: l, Concurrency: c, Value: v, Sigma: 0.006})
			if l == 4096 {
				v *= 0.92
			}
			b = append(b, Cell{ContextTokens: l, Concurrency: c, Value: v, Sigma: 0.006})
		}
	}
	if st := Compare(a, b, DefaultRule); st.Verdict != Regressed || !slices.Equal(st.RegressedRows, []int{4096}) {
		t.Errorf("−8 %% at the last two-cell row: %s, rows %v (%s); want regressed at 4096", st.Verdict, st.RegressedRows, st.Why)
	}
	if st := Compare(a, n, DefaultRule); st.Verdict != Unchanged {
		t.Errorf("±0.5 %% noise in two-cell rows: %s (%s); want unchanged", st.Verdict, st.Why)
	}
}
