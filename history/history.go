// Package history compares measurements of one configuration across
// engine versions: per cell, the ratio of the newer value to the older and
// a verdict against a stated noise floor; per context row and for the
// whole grid, whether the change is beyond what noise explains. It is pure
// arithmetic on the cells it is given: choosing a series and estimating
// the noise are its callers' work.
package history

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/matrixd/matrixd/msg"
)

// Verdict is what a comparison says of a change.
type Verdict string

// The verdicts: beyond the noise floor up or down, within it, or not
// decidable (the floor is too wide, or too few cells).
const (
	Improved     Verdict = "improved"
	Regressed    Verdict = "regressed"
	Unchanged    Verdict = "unchanged"
	Inconclusive Verdict = "inconclusive"
)

// Cell is one value of a run at a grid point, higher is better (tok/s),
// with the relative standard deviation of its noise. A Predicted cell is
// the calculator's answer where the run has no measurement; its Sigma is
// the prediction's, which is wider.
type Cell struct {
	ContextTokens int
	Concurrency   int
	Value         float64
	Sigma         float64
	Predicted     bool
}

// Rule is the significance rule; DefaultRule is the documented one.
type Rule struct {
	// Z scales the combined noise of a pair of cells into the floor a
	// change must pass: |ln(b/a)| > Z·σ.
	Z float64
	// MinFloor is the least floor, whatever the noise: a change smaller
	// than this is never called one.
	MinFloor float64
	// MaxFloor is the widest floor that still decides: a pair noisier than
	// this is inconclusive.
	MaxFloor float64
	// Majority is the share of a group's cells that must each be beyond
	// the floor, in one direction, for the group to have changed.
	Majority float64
	// MinCells is the least number of compared cells a group needs.
	MinCells int
	// Alpha bounds the one-sided sign test of a group of SignFrom cells or
	// more: under noise alone the chance that this many cells fall the
	// same way. (In a smaller group each cell's floor carries the test:
	// two cells each beyond 2σ the same way happen by chance about once
	// in 2,000.)
	Alpha    float64
	SignFrom int
}

// DefaultRule: a cell changes when the change is over twice its combined
// noise and at least 1 %; a row (or the grid) changes when at least 2
// cells are compared and 80 % of them changed the same way, and, from 6
// cells on, a one-sided sign test puts that at p ≤ 0.05.
var DefaultRule = Rule{Z: 2, MinFloor: 0.01, MaxFloor: 0.25, Majority: 0.8, MinCells: 2, Alpha: 0.05, SignFrom: 6}

// CellChange is one compared grid point.
type CellChange struct {
	ContextTokens int
	Concurrency   int
	From, To      float64
	Ratio         float64 // To / From
	// Floor is the relative change this cell had to pass: exp(Z·σ) − 1.
	Floor     float64
	Verdict   Verdict
	Predicted bool // one side is the calculator's prediction
}

// Group is the verdict of a set of cells: a context row, or all of them.
type Group struct {
	ContextTokens int // for a row; -1 for the whole grid
	Cells         int
	Up, Down      int     // cells beyond the floor each way
	MedianRatio   float64 // of the group's cells
	SignP         float64 // one-sided sign test in the direction of the median
	Verdict       Verdict
}

// Step is the comparison of an older run (From) with a newer (To).
type Step struct {
	Verdict Verdict
	// Why says in a sentence what the verdict stands on; WhyMessage is
	// the same with its code and parameters.
	Why        string
	WhyMessage msg.Message
	Cells      []CellChange
	Rows       []Group
	Grid       Group
	// RegressedRows and ImprovedRows are the contexts of rows that changed.
	RegressedRows []int
	ImprovedRows  []int
	// Measured counts the cells both runs measured; the rest are compared
	// with a prediction.
	Measured int
}

// Compare compares run a (the older) with run b at every grid point both
// have, and where one has a measurement and the other a prediction.
// Two predictions are not compared.
func Compare(a, b []Cell, rule Rule) Step {
	type key struct{ l, c int }
	index := func(cells []Cell) map[key]Cell {
		m := make(map[key]Cell, len(cells))
		for _, c := range cells {
			if c.Value > 0 && !math.IsInf(c.Value, 0) && !math.IsNaN(c.Value) {
				k := key{c.ContextTokens, c.Concurrency}
				if old, ok := m[k]; !ok || old.Predicted && !c.Predicted {
					m[k] = c
				}
			}
		}
		return m
	}
	am, bm := index(a), index(b)
	var st Step
	for k, ca := range am {
		cb, ok := bm[k]
		if !ok || ca.Predicted && cb.Predicted {
			continue
		}
		sigma := math.Hypot(ca.Sigma, cb.Sigma)
		floor := math.Max(rule.Z*sigma, math.Log1p(rule.MinFloor))
		d := math.Log(cb.Value / ca.Value)
		v := Unchanged
		switch {
		case floor > math.Log1p(rule.MaxFloor):
			v = Inconclusive
		case d > floor:
			v = Improved
		case d < -floor:
			v = Regressed
		}
		pred := ca.Predicted || cb.Predicted
		if !pred {
			st.Measured++
		}
		st.Cells = append(st.Cells, CellChange{ContextTokens: k.l, Concurrency: k.c, From: ca.Value, To: cb.Value,
			Ratio: cb.Value / ca.Value, Floor: math.Expm1(floor), Verdict: v, Predicted: pred})
	}
	slices.SortFunc(st.Cells, func(x, y CellChange) int {
		return cmp.Or(cmp.Compare(x.ContextTokens, y.ContextTokens), cmp.Compare(x.Concurrency, y.Concurrency))
	})
	for i := 0; i < len(st.Cells); {
		j := i
		for j < len(st.Cells) && st.Cells[j].ContextTokens == st.Cells[i].ContextTokens {
			j++
		}
		g := group(st.Cells[i:j], rule)
		g.ContextTokens = st.Cells[i].ContextTokens
		st.Rows = append(st.Rows, g)
		switch g.Verdict {
		case Regressed:
			st.RegressedRows = append(st.RegressedRows, g.ContextTokens)
		case Improved:
			st.ImprovedRows = append(st.ImprovedRows, g.ContextTokens)
		}
		i = j
	}
	st.Grid = group(st.Cells, rule)
	st.Grid.ContextTokens = -1
	st.Verdict, st.WhyMessage = overall(st, rule)
	st.Why = st.WhyMessage.Text
	return st
}

// group applies the rule to a set of compared cells.
func group(cells []CellChange, rule Rule) Group {
	g := Group{Cells: len(cells), Verdict: Inconclusive}
	if len(cells) == 0 {
		return g
	}
	ratios := make([]float64, 0, len(cells))
	decided, unchanged, below, above := 0, 0, 0, 0 // decided: not inconclusive
	for _, c := range cells {
		ratios = append(ratios, c.Ratio)
		switch c.Verdict {
		case Improved:
			g.Up++
		case Regressed:
			g.Down++
		case Unchanged:
			unchanged++
		}
		if c.Verdict != Inconclusive {
			decided++
		}
		if c.Ratio < 1 {
			below++
		} else if c.Ratio > 1 {
			above++
		}
	}
	slices.Sort(ratios)
	g.MedianRatio = median(ratios)
	n := below + above
	if g.MedianRatio < 1 {
		g.SignP = signTest(below, n)
	} else {
		g.SignP = signTest(above, n)
	}
	need := int(math.Ceil(rule.Majority * float64(len(cells))))
	signed := len(cells) < rule.SignFrom || g.SignP <= rule.Alpha
	switch {
	case len(cells) < rule.MinCells || decided < need:
	case g.Down >= need && g.MedianRatio < 1 && signed:
		g.Verdict = Regressed
	case g.Up >= need && g.MedianRatio > 1 && signed:
		g.Verdict = Improved
	case unchanged >= need:
		g.Verdict = Unchanged
	}
	return g
}

// overall is the step's verdict: a regression anywhere is said (with its
// rows) before an improvement elsewhere, as it is what a reader must see.
func overall(st Step, rule Rule) (Verdict, msg.Message) {
	switch {
	case len(st.Cells) == 0:
		return Inconclusive, msg.New("history.no_shared_cell")
	case len(st.RegressedRows) > 0 || st.Grid.Verdict == Regressed:
		if len(st.RegressedRows) == 0 {
			return Regressed, msg.New("history.regressed_grid",
				st.Grid.Down, st.Grid.Cells, st.Grid.MedianRatio, st.Grid.SignP)
		}
		return Regressed, msg.New("history.regressed_rows",
			rowList(st.RegressedRows), st.Grid.Down, st.Grid.Cells)
	case len(st.ImprovedRows) > 0 && st.Grid.Verdict != Improved:
		return Improved, msg.New("history.improved_rows",
			rowList(st.ImprovedRows), st.Grid.Up, st.Grid.Cells)
	case len(st.ImprovedRows) > 0 || st.Grid.Verdict == Improved:
		return Improved, msg.New("history.improved_grid",
			st.Grid.Up, st.Grid.Cells, st.Grid.MedianRatio, st.Grid.SignP)
	case st.Grid.Verdict == Unchanged:
		return Unchanged, msg.New("history.unchanged",
			st.Grid.Cells-st.Grid.Up-st.Grid.Down, st.Grid.Cells, st.Grid.MedianRatio)
	}
	if st.Grid.Cells < rule.MinCells {
		return Inconclusive, msg.New(plural(st.Grid.Cells, "history.too_few_cells_one", "history.too_few_cells"), st.Grid.Cells, rule.MinCells)
	}
	return Inconclusive, msg.New("history.disagree",
		st.Grid.Up, st.Grid.Down, st.Grid.Cells, st.Grid.MedianRatio)
}

func rowList(rows []int) string {
	s := ""
	for i, r := range rows {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("context %d", r)
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// signTest is the one-sided probability of at least k of n fair coin
// flips falling one way: how often noise alone puts this many cells on
// one side of 1.
func signTest(k, n int) float64 {
	if n == 0 {
		return 1
	}
	p := 0.0
	for i := k; i <= n; i++ {
		p += math.Exp(lchoose(n, i) - float64(n)*math.Ln2)
	}
	return math.Min(1, p)
}

func lchoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}
