package predict

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

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

// maxSources (K) bounds the independent sources one answer by model and
// GPU fits and pools: the newest K, each fitted once and kept like any
// run's fit.
const maxSources = 5

// maxRenamedCandidates bounds the runs under other names a source's cells
// are compared with (those whose peak cell agrees, the earliest first).
const maxRenamedCandidates = 4

// source is one independent source an answer by model and GPU pools: the
// newest run of the submitter whose run came first (a group's origin),
// and that submitter's other runs, whose cells fill the cells it lacks.
type source struct {
	id     string
	shared []string
}

// sources groups ids (newest first, runs that could share a surface) into
// independent sources: runs sent by one API key or publisher, or whose
// cells are a near-copy of another's (most common valid cells within
// noise), are one source: the runs of the submitter of its earliest run,
// modelled from the newest of them with the others' cells (a near-copy by
// another key adds nothing); a source whose earliest run's cells repeat a
// run stored before under another model or GPU name is a copy of it (left
// out while another source remains). The sources are in the order of each
// group's newest run; warn names every copy counted once. Groups past the
// K+1-th source are not compared with runs under other names.
func (c *Service) sources(ctx context.Context, ids []string) (srcs []source, warn []msg.Message, err error) {
	if len(ids) == 1 {
		return c.oneSource(ctx, ids[0])
	}
	type group struct {
		runs  []store.Run // newest first
		first int         // index in runs of the earliest
		cells []cellIndex
	}
	var groups []*group
	for _, id := range ids {
		r, err := c.store.Run(ctx, id)
		if err != nil {
			return nil, nil, err
		}
		cells := indexCells(Run(r).Decode)
		var g *group
		for _, o := range groups {
			for i, or := range o.runs {
				if nearCopy(r, or, cells, o.cells[i]) {
					g = o
					break
				}
			}
			if g != nil {
				break
			}
		}
		if g == nil {
			groups = append(groups, &group{runs: []store.Run{r}, cells: []cellIndex{cells}})
			continue
		}
		g.runs, g.cells = append(g.runs, r), append(g.cells, cells)
		if earlierRun(r, g.runs[g.first]) {
			g.first = len(g.runs) - 1
		}
	}
	var renamed []source
	for _, g := range groups {
		if len(srcs) > maxSources {
			break // more than are pooled: the rest are not compared
		}
		orig := g.runs[g.first]
		var own []string // the origin's submitter's measurements, newest first
		for i, r := range g.runs {
			switch {
			case i == g.first:
				own = append(own, r.ID)
			case sameCells(g.cells[i], g.cells[g.first]):
				warn = append(warn, msg.New("predict.source_near_copy", r.ID, orig.ID, 100*copyTolerance))
			case sameKey(r, orig):
				own = append(own, r.ID)
			default:
				warn = append(warn, msg.New("predict.source_same_publisher", r.ID, orig.ID))
			}
		}
		s := source{id: own[0], shared: own[1:min(len(own), maxShared+1)]}
		if len(own) > 1 {
			warn = append(warn, msg.New("predict.source_one_submitter", strings.Join(own, ", "), own[0]))
		}
		cells := g.cells[g.first]
		twin, err := c.renamedOriginal(ctx, orig.ID, orig.CreatedAt, store.Summarize(orig).Peak, func() (cellIndex, error) { return cells, nil }, ids)
		if err != nil {
			return nil, nil, err
		}
		if twin != nil {
			warn = append(warn, renamedWarning(orig.ID, *twin))
			renamed = append(renamed, s)
			continue
		}
		srcs = append(srcs, s)
	}
	if len(srcs) == 0 {
		// Only copies of runs under other names: the newest answers for
		// this name, as one source, each copy said so above.
		srcs = renamed[:1]
	}
	return srcs, warn, nil
}

// renamedOriginal is the earliest run stored under another model or GPU
// name than run id (stored at created, its peak cell peak) and not among
// ids, the runs asked about, whose cells the run's (read by cells when
// first needed) repeat (sameCells); nil if none. The candidates are the
// few runs whose peak cell agrees within noise, read through the peak
// index.
func (c *Service) renamedOriginal(ctx context.Context, id string, created time.Time, peak *store.PeakCell, cells func() (cellIndex, error), ids []string) (*store.RunConfig, error) {
	if peak == nil {
		return nil, nil
	}
	cands, err := c.store.RunsNearPeak(ctx, id, *peak, copyTolerance, maxRenamedCandidates)
	if err != nil {
		return nil, err
	}
	var own cellIndex
	for _, cand := range cands {
		if slices.Contains(ids, cand.ID) || cmp.Or(cand.CreatedAt.Compare(created), cmp.Compare(cand.ID, id)) >= 0 {
			continue
		}
		o, err := c.store.Run(ctx, cand.ID)
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrGone) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if own == nil {
			if own, err = cells(); err != nil {
				return nil, err
			}
		}
		if sameCells(own, indexCells(Run(o).Decode)) {
			return &cand, nil
		}
	}
	return nil, nil
}

// oneSource is sources for a selection that matched one run, id: its
// stored summary names the peak the copies of it are looked for by, and
// its cells are read only where a candidate is found.
func (c *Service) oneSource(ctx context.Context, id string) ([]source, []msg.Message, error) {
	sums, err := c.store.RunSummaries(ctx, []string{id})
	if err != nil {
		return nil, nil, err
	}
	sum, ok := sums[id]
	if !ok {
		return nil, nil, &store.Error{Kind: store.ErrNotFound, Msg: "run " + id + " does not exist"}
	}
	cells := func() (cellIndex, error) {
		r, err := c.store.Run(ctx, id)
		if err != nil {
			return nil, err
		}
		return indexCells(Run(r).Decode), nil
	}
	twin, err := c.renamedOriginal(ctx, id, sum.CreatedAt, sum.Peak, cells, []string{id})
	if err != nil || twin == nil {
		return []source{{id: id}}, nil, err
	}
	return []source{{id: id}}, []msg.Message{renamedWarning(id, *twin)}, nil
}

// renamedWarning says that run id repeats the cells of twin, stored
// before under another name.
func renamedWarning(id string, twin store.RunConfig) msg.Message {
	return msg.New("predict.renamed_copy", id, twin.ID, clip(twin.ModelName), clip(twin.GPU))
}

// earlierRun reports whether a was stored before b (at the same time: the
// smaller id).
func earlierRun(a, b store.Run) bool {
	return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID)) < 0
}

// sameSubmitter reports whether a and b were sent by one API key or
// published by one publisher.
func sameSubmitter(a, b store.Run) bool {
	return a.SubmittedBy != "" && a.SubmittedBy == b.SubmittedBy || a.Publisher != "" && strings.EqualFold(a.Publisher, b.Publisher)
}

// sameKey reports whether a and b were sent by one API key (runs stored
// without one, as a seed's, by one publisher): a re-measurement whose
// cells may fill the other's.
func sameKey(a, b store.Run) bool {
	if a.SubmittedBy != "" || b.SubmittedBy != "" {
		return a.SubmittedBy == b.SubmittedBy
	}
	return a.Publisher != "" && strings.EqualFold(a.Publisher, b.Publisher)
}

// nearCopy reports whether a and b (their valid cells ca and cb) are one
// source: sent by the same API key or publisher, or most of their common
// valid cells agree within noise on total tok/s and TBT.
func nearCopy(a, b store.Run, ca, cb cellIndex) bool {
	return sameSubmitter(a, b) || sameCells(ca, cb)
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
// earliest stored of them, whatever model or GPU name each is stored
// under. Only runs whose listed values agree within noise are compared, on
// the cells of their models in memory (the store is read only for a run whose model is not at hand).
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
	// left are the runs left out as copies of listed ones, each with the
	// run it repeats.
	left map[string]store.RunConfig
}

func (c *Service) listedCopies() *listedCopies {
	return &listedCopies{c: c, known: map[string]*calculator.Model{}, cells: map[string]cellIndex{}, left: map[string]store.RunConfig{}}
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
		if !ok || o.ID == cfg.ID || !(math.Abs(ov-v) <= 2*copyTolerance*math.Max(math.Abs(ov), math.Abs(v))) {
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
			lc.left[o.ID] = cfg
		} else {
			lc.left[cfg.ID] = o
		}
		return j, earlier, nil
	}
	return -1, false, nil
}

// listOnce makes room in kept for the run of cfg, listed at value v (at
// reads kept for copyOf): where kept holds a later copy of it, that copy
// is dropped; list says whether cfg's run is to be listed (not where kept
// holds an earlier copy, nor where a run stored earlier under any name has
// its cells: renamedOriginal).
func listOnce[T any](ctx context.Context, lc *listedCopies, kept []T, cfg store.RunConfig, v float64, at func(int) (store.RunConfig, float64, bool)) (out []T, list bool, err error) {
	j, earlier, err := lc.copyOf(ctx, cfg, v, len(kept), at)
	switch {
	case err != nil:
		return nil, false, err
	case j >= 0 && !earlier:
		return kept, false, nil
	case j >= 0:
		kept = slices.Delete(kept, j, j+1)
	}
	orig, err := lc.renamedOriginal(ctx, cfg)
	if err != nil || orig != nil {
		return kept, false, err
	}
	return kept, true, nil
}

// renamedOriginal is the earliest run stored before cfg's whose cells
// cfg's repeat (sameCells), under any model or GPU name, found among the
// few whose peak cell agrees within noise (through the store's index on
// the peak); nil if none. It is then the run cfg's is left out for.
func (lc *listedCopies) renamedOriginal(ctx context.Context, cfg store.RunConfig) (*store.RunConfig, error) {
	cells, err := lc.cellsOf(ctx, cfg.ID)
	if err != nil || cells == nil {
		return nil, err
	}
	peak, ok := peakOf(cells)
	if !ok {
		return nil, nil
	}
	cands, err := lc.c.store.RunsNearPeak(ctx, cfg.ID, peak, copyTolerance, maxRenamedCandidates)
	if err != nil {
		return nil, err
	}
	for _, o := range cands {
		if cmp.Or(o.CreatedAt.Compare(cfg.CreatedAt), cmp.Compare(o.ID, cfg.ID)) >= 0 {
			continue
		}
		oc, err := lc.cellsOf(ctx, o.ID)
		if err != nil {
			return nil, err
		}
		if oc != nil && sameCells(cells, oc) {
			lc.left[cfg.ID] = o
			return &o, nil
		}
	}
	return nil, nil
}

// peakOf is the valid cell of highest total tok/s (of those tied, the
// smallest context, then concurrency), as the store keeps it per run.
func peakOf(cells cellIndex) (store.PeakCell, bool) {
	var p store.PeakCell
	found := false
	for k, c := range cells {
		if c.TotalTokS == nil {
			continue
		}
		v := *c.TotalTokS
		if !found || v > p.TotalTokS || v == p.TotalTokS && (k[0] < p.ContextTokens || k[0] == p.ContextTokens && k[1] < p.Concurrency) {
			p, found = store.PeakCell{TotalTokS: v, ContextTokens: k[0], Concurrency: k[1]}, true
		}
	}
	return p, found
}

// spent reports whether a list that has modelled n runs may model no
// more: at most maxRefine listable runs, and as many copies besides.
func (lc *listedCopies) spent(n int) bool {
	return n-len(lc.left) >= maxRefine || len(lc.left) >= maxRefine
}

// sources are configs without the runs left out as copies: what a list
// scales to other GPUs is the measurement it lists, not a later copy.
func (lc *listedCopies) sources(configs []store.RunConfig) []store.RunConfig {
	return slices.DeleteFunc(slices.Clone(configs), func(c store.RunConfig) bool { _, ok := lc.left[c.ID]; return ok })
}

// warning says how many runs were left out as copies of listed ones, and
// names up to namedCopies of them with the run each repeats.
func (lc *listedCopies) warning() []msg.Message {
	n := len(lc.left)
	if n == 0 {
		return nil
	}
	out := []msg.Message{msg.New(plural(n, "predict.copies_left_out_one", "predict.copies_left_out"), n, 100*copyTolerance)}
	ids := slices.Sorted(maps.Keys(lc.left))
	for _, id := range ids[:min(len(ids), namedCopies)] {
		o := lc.left[id]
		out = append(out, renamedWarning(id, o))
	}
	return out
}

// namedCopies bounds the copies a list's warnings name one by one.
const namedCopies = 3

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
