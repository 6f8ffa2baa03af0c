package predict

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"strings"

	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/msg"
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
	type rep struct {
		run   store.Run
		cells cellIndex
	}
	var reps []rep
	for _, id := range ids {
		r, err := c.store.Run(ctx, id)
		if err != nil {
			return nil, 0, err
		}
		cur := rep{r, indexCells(Run(r).Decode)}
		j := -1
		for i := range reps {
			if nearCopy(cur.run, reps[i].run, cur.cells, reps[i].cells) {
				j = i
				break
			}
		}
		if j < 0 {
			reps = append(reps, cur)
			continue
		}
		copies++
		if r.CreatedAt.Before(reps[j].run.CreatedAt) {
			reps[j] = cur
		}
	}
	for _, r := range reps {
		kept = append(kept, r.run.ID)
	}
	return kept, copies, nil
}

// nearCopy reports whether a and b (their valid cells ca and cb) are one
// measurement: sent by the same API key, or most of their common valid
// cells agree within noise on total tok/s and TBT.
func nearCopy(a, b store.Run, ca, cb cellIndex) bool {
	if a.SubmittedBy != "" && a.SubmittedBy == b.SubmittedBy {
		return true
	}
	return sameCells(ca, cb)
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
// earliest stored of them. Only runs of one model on one GPU whose listed
// values agree within noise are compared, on the cells of their models in
// memory (the store is read only for a run whose model is not at hand).
//
// A list stops taking runs once none left can rank above its last place
// (by their summaries' bounds, which allow summaryMargin): an earlier copy
// ranked below that is not seen, and the later one stays listed. Copies
// agree within 2·copyTolerance where they are listed, well inside the
// margin, so a copy's bound is never below the place its twin holds.
type listedCopies struct {
	c     *Service
	known map[string]*calculator.Model
	cells map[string]cellIndex
	// left are the runs left out as copies of listed ones.
	left map[string]bool
}

func (c *Service) listedCopies() *listedCopies {
	return &listedCopies{c: c, known: map[string]*calculator.Model{}, cells: map[string]cellIndex{}, left: map[string]bool{}}
}

// know gives the cells of run id from its model (nil: none at hand),
// indexed when first compared.
func (lc *listedCopies) know(id string, m *calculator.Model) {
	if _, ok := lc.cells[id]; !ok && m != nil {
		lc.known[id] = m
	}
}

// cellsOf is run id's valid cells; nil for a run hidden or deleted since
// the list was read (it is then no one's copy).
func (lc *listedCopies) cellsOf(ctx context.Context, id string) (cellIndex, error) {
	if cs, ok := lc.cells[id]; ok {
		return cs, nil
	}
	var cells []calculator.Cell
	if m, ok := lc.known[id]; ok {
		cells = m.Cells()
	} else {
		r, err := lc.c.store.Run(ctx, id)
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrGone) {
			lc.cells[id] = nil
			return nil, nil
		}
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
// before that one (then, or at the same time with the smaller id, it
// takes its place).
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
		if a == nil || b == nil || !sameCells(a, b) {
			continue
		}
		earlier := cmp.Or(cfg.CreatedAt.Compare(o.CreatedAt), cmp.Compare(cfg.ID, o.ID)) < 0
		if earlier {
			lc.left[o.ID] = true
		} else {
			lc.left[cfg.ID] = true
		}
		return j, earlier, nil
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

// spent reports whether a list that has modelled n runs may model no
// more: at most maxRefine listable runs, and as many copies besides.
func (lc *listedCopies) spent(n int) bool {
	return n-len(lc.left) >= maxRefine || len(lc.left) >= maxRefine
}

// sources are configs without the runs left out as copies: what a list
// scales to other GPUs is the measurement it lists, not a later copy.
func (lc *listedCopies) sources(configs []store.RunConfig) []store.RunConfig {
	return slices.DeleteFunc(slices.Clone(configs), func(c store.RunConfig) bool { return lc.left[c.ID] })
}

// warning says how many runs were left out as copies of listed ones.
func (lc *listedCopies) warning() []msg.Message {
	n := len(lc.left)
	if n == 0 {
		return nil
	}
	return []msg.Message{msg.New(plural(n, "predict.copies_left_out_one", "predict.copies_left_out"), n, 100*copyTolerance)}
}

// planOptionAt reads a plan's i-th option for copyOf: measured options
// with an answer only (a scaled or other model's option is an estimate,
// not a run's; one that could not be planned has no value to compare).
func planOptionAt(opts []PlanOption) func(int) (store.RunConfig, float64, bool) {
	return func(i int) (store.RunConfig, float64, bool) {
		o := opts[i]
		return o.Run, total(o), listable(o)
	}
}

// listable reports whether o is a measured run's planned option.
func listable(o PlanOption) bool { return !o.estimated() && o.Err.Code == "" && o.Plan.At != nil }

// dropCopies keeps one of opts' measured options per measurement (see
// listedCopies); the plan sorts them after.
func (lc *listedCopies) dropCopies(ctx context.Context, opts []PlanOption) ([]PlanOption, error) {
	var out []PlanOption
	for _, o := range opts {
		if listable(o) {
			var list bool
			var err error
			if out, list, err = listOnce(ctx, lc, out, o.Run, total(o), planOptionAt(out)); err != nil {
				return nil, err
			} else if !list {
				continue
			}
		}
		out = append(out, o)
	}
	return out, nil
}
