package predict

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/store"
)

// copyTolerance is the relative difference within which two runs' cells
// count as the same measurement: the noise of published values (the
// calculator's 1 % floor).
const copyTolerance = 0.01

// copyShare is the share of common valid cells that must agree within
// copyTolerance for two runs to be one measurement: a copy with a few
// cells changed is still a copy.
const copyShare = 0.8

// independent keeps, of ids (newest first, runs that could share a
// surface), one run per independent measurement: a run that is a near-copy
// of another (the same submitter re-posting, or cells within noise) adds
// no certainty, so each group of copies counts once, as its earliest run
// (the original), in the place of the group's newest. copies counts the
// runs left out.
func (c *Service) independent(ctx context.Context, ids []string) (kept []string, copies int, err error) {
	var reps []store.Run
	for _, id := range ids {
		r, err := c.store.Run(ctx, id)
		if err != nil {
			return nil, 0, err
		}
		j := -1
		for i := range reps {
			if nearCopy(r, reps[i]) {
				j = i
				break
			}
		}
		if j < 0 {
			reps = append(reps, r)
			continue
		}
		copies++
		if r.CreatedAt.Before(reps[j].CreatedAt) {
			reps[j] = r
		}
	}
	for _, r := range reps {
		kept = append(kept, r.ID)
	}
	return kept, copies, nil
}

// nearCopy reports whether a and b are one measurement: sent by the same
// API key, or most of their common valid cells agree within noise on
// total tok/s and TBT.
func nearCopy(a, b store.Run) bool {
	if a.SubmittedBy != "" && a.SubmittedBy == b.SubmittedBy {
		return true
	}
	return sameCells(indexCells(Run(a).Decode), indexCells(Run(b).Decode))
}

// cellIndex is a run's valid cells by (context, concurrency).
type cellIndex map[[2]int]calculator.Cell

func indexCells(cells []calculator.Cell) cellIndex {
	out := make(cellIndex, len(cells))
	for _, d := range cells {
		if d.Status == calculator.CellValid {
			out[[2]int{d.ContextTokens, d.Concurrency}] = d
		}
	}
	return out
}

// sameCells reports whether most of a and b's common valid cells (at
// least 3) agree within noise on total tok/s and TBT.
func sameCells(a, b cellIndex) bool {
	if len(b) < len(a) {
		a, b = b, a
	}
	common, same := 0, 0
	for k, d := range a {
		o, ok := b[k]
		if !ok {
			continue
		}
		common++
		if within(d.TotalTokS, o.TotalTokS) && within(d.TBTMs, o.TBTMs) {
			same++
		}
	}
	return common >= 3 && float64(same) >= copyShare*float64(common)
}

// within reports whether two optional values agree within copyTolerance
// (both absent agrees).
func within(a, b *float64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return math.Abs(*a-*b) <= copyTolerance*math.Max(math.Abs(*a), math.Abs(*b))
}

// listedCopies keeps a ranked list (the planner's options, a predicted
// ranking) to one entry per measurement: a run whose cells are a
// near-copy of a listed run's (sameCells; the same submitter alone does
// not make one, a re-measurement is listed) is listed once, as the
// earliest of them. Only runs of one model on one GPU whose listed values
// agree within noise are compared, on the cells of their models in
// memory; the store is read only for a copy found (which is the earlier)
// or a run whose model is not at hand.
type listedCopies struct {
	c      *Service
	known  map[string]*calculator.Model
	cells  map[string]cellIndex
	copies int
}

func (c *Service) listedCopies() *listedCopies {
	return &listedCopies{c: c, known: map[string]*calculator.Model{}, cells: map[string]cellIndex{}}
}

// know gives the cells of run id from its model (nil: none at hand),
// indexed when first compared.
func (lc *listedCopies) know(id string, m *calculator.Model) {
	if _, ok := lc.cells[id]; !ok && m != nil {
		lc.known[id] = m
	}
}

func (lc *listedCopies) cellsOf(ctx context.Context, id string) (cellIndex, error) {
	if cs, ok := lc.cells[id]; ok {
		return cs, nil
	}
	var cells []calculator.Cell
	if m, ok := lc.known[id]; ok {
		cells = m.Cells()
	} else {
		r, err := lc.c.store.Run(ctx, id)
		if err != nil {
			return nil, err
		}
		cells = Run(r).Decode
	}
	cs := indexCells(cells)
	lc.cells[id] = cs
	return cs, nil
}

// copyOf is the index, among n listed entries (at(i) gives the i-th's
// run and value; ok false skips it), of the run cfg (listed at value v)
// is a near-copy of, -1 if none; earlier says whether cfg's run was stored
// before that one (it then takes its place).
func (lc *listedCopies) copyOf(ctx context.Context, cfg store.RunConfig, v float64, n int, at func(int) (store.RunConfig, float64, bool)) (i int, earlier bool, err error) {
	for j := range n {
		o, ov, ok := at(j)
		if !ok || o.ID == cfg.ID || !strings.EqualFold(o.ModelName, cfg.ModelName) || !strings.EqualFold(o.GPU, cfg.GPU) ||
			!(math.Abs(ov-v) <= 2*copyTolerance*math.Max(math.Abs(ov), math.Abs(v))) {
			continue
		}
		a, err := lc.cellsOf(ctx, cfg.ID)
		if err != nil {
			return -1, false, err
		}
		b, err := lc.cellsOf(ctx, o.ID)
		if err != nil {
			return -1, false, err
		}
		if !sameCells(a, b) {
			continue
		}
		ra, err := lc.c.store.Run(ctx, cfg.ID)
		if err != nil {
			return -1, false, err
		}
		rb, err := lc.c.store.Run(ctx, o.ID)
		if err != nil {
			return -1, false, err
		}
		lc.copies++
		return j, ra.CreatedAt.Before(rb.CreatedAt), nil
	}
	return -1, false, nil
}

// listOnce makes room in kept for the run of cfg, listed at value v (at
// reads kept for copyOf): where kept holds a later copy of it, that copy
// is dropped; list says whether cfg's run is to be listed (not where kept
// holds an earlier copy).
func listOnce[T any](ctx context.Context, lc *listedCopies, kept []T, cfg store.RunConfig, v float64, at func(int) (store.RunConfig, float64, bool)) (out []T, list bool, err error) {
	j, earlier, err := lc.copyOf(ctx, cfg, v, len(kept), at)
	switch {
	case err != nil:
		return nil, false, err
	case j < 0:
		return kept, true, nil
	case earlier:
		return slices.Delete(kept, j, j+1), true, nil
	}
	return kept, false, nil
}

// warning says how many listed runs' copies were left out.
func (lc *listedCopies) warning() []string {
	if lc.copies == 0 {
		return nil
	}
	return []string{fmt.Sprintf("%d %s left out (cells within %.0f %% of theirs): each measurement is listed once, as its earliest run",
		lc.copies, plural(lc.copies, "near-copy of a listed run", "near-copies of listed runs"), 100*copyTolerance)}
}

// planOptionAt reads a plan's i-th option for copyOf: measured options
// only (a scaled or other model's option is an estimate, not a run's).
func planOptionAt(opts []PlanOption) func(int) (store.RunConfig, float64, bool) {
	return func(i int) (store.RunConfig, float64, bool) {
		o := opts[i]
		return o.Run, total(o), !o.estimated() && o.Err == ""
	}
}

// dropCopies keeps one of opts' measured options per measurement (see
// listedCopies), in their order.
func (lc *listedCopies) dropCopies(ctx context.Context, opts []PlanOption) ([]PlanOption, error) {
	var out []PlanOption
	for _, o := range opts {
		if o.estimated() || o.Err != "" {
			out = append(out, o)
			continue
		}
		j, earlier, err := lc.copyOf(ctx, o.Run, total(o), len(out), planOptionAt(out))
		switch {
		case err != nil:
			return nil, err
		case j < 0:
			out = append(out, o)
		case earlier:
			out[j] = o
		}
	}
	return out, nil
}
