package predict

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"

	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/history"
	"github.com/matrixd/matrixd/msg"
	"github.com/matrixd/matrixd/store"
)

// NoiseFloor says what a step's verdicts were measured against.
type NoiseFloor struct {
	// Basis is "repeated_runs" (runs of the series at one engine version
	// measured the noise), "step_scatter" (the spread of the step's own
	// ratios within each row, where it is the narrower bound) or
	// "run_scatter" (each run's own held-out error: how far a cell sits
	// from what its neighbours predict). The last two are never smaller
	// than the noise.
	Basis string
	// SigmaFrom and SigmaTo are the relative standard deviations of one
	// cell of each run.
	SigmaFrom, SigmaTo float64
	// Pairs is how many cells of repeated runs, or of the step, measured
	// the noise.
	Pairs int
	Rule  history.Rule
}

// Step is the comparison of two runs, older first.
type Step struct {
	From, To string
	history.Step
	Noise NoiseFloor
	// Differ names the settings the two runs differ in other than the
	// engine version: capacity-only ones within a series, anything for
	// two runs compared at will.
	Differ []string
}

// SeriesAnswer is a run's series: its runs in engine-version order (then
// date), and a step between each two neighbours.
type SeriesAnswer struct {
	Runs     []store.SeriesMember
	Steps    []Step
	More     bool // the series has more runs than were lined up
	Warnings []msg.Message
}

// sigmaOf is the relative standard deviation of one cell of a fitted
// run: its own 90 % interpolation band (before the engine family's
// calibration, which sizes intervals, not this run's scatter) over 1.645.
func sigmaOf(m *calculator.Model) float64 {
	b := m.Bands()
	return math.Max(b.OwnInterpolatedTotal, 0.01) / 1.645
}

// cellsOf are run id's valid measured cells, and its fit.
func (c *Service) cellsOf(ctx context.Context, id string) ([]history.Cell, *calculator.Model, error) {
	m, err := c.model(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	cells, err := c.store.DecodeCells(ctx, id, store.DecodeFilter{Status: "valid"})
	if err != nil {
		return nil, nil, err
	}
	sigma := sigmaOf(m)
	out := make([]history.Cell, 0, len(cells))
	for _, dc := range cells {
		if dc.TotalTokS != nil && *dc.TotalTokS > 0 {
			out = append(out, history.Cell{ContextTokens: dc.ContextTokens, Concurrency: dc.Concurrency, Value: *dc.TotalTokS, Sigma: sigma})
		}
	}
	return out, m, nil
}

// predictedAt adds to cells the model's interpolated answers at the points
// of others that cells lack, labelled as predictions.
func predictedAt(cells, others []history.Cell, m *calculator.Model) []history.Cell {
	have := map[[2]int]bool{}
	for _, c := range cells {
		have[[2]int{c.ContextTokens, c.Concurrency}] = true
	}
	out := slices.Clone(cells)
	for _, o := range others {
		if have[[2]int{o.ContextTokens, o.Concurrency}] {
			continue
		}
		p, err := m.Decode(calculator.Query{ContextTokens: o.ContextTokens, Concurrency: o.Concurrency})
		if err != nil || p.Basis != calculator.Interpolated || p.TotalTokS == nil || p.BandTotal <= 0 {
			continue
		}
		out = append(out, history.Cell{ContextTokens: o.ContextTokens, Concurrency: o.Concurrency, Value: p.TotalTokS.Value,
			Sigma: p.BandTotal / 1.645, Predicted: true})
	}
	return out
}

// compare is the step from run a to run b, with the noise floor given
// (repeated-runs sigma, or 0 for each run's own scatter).
func (c *Service) compare(ctx context.Context, a, b string, repeated float64, pairs int) (Step, error) {
	ca, ma, err := c.cellsOf(ctx, a)
	if err != nil {
		return Step{}, err
	}
	cb, mb, err := c.cellsOf(ctx, b)
	if err != nil {
		return Step{}, err
	}
	noise := NoiseFloor{Basis: "run_scatter", SigmaFrom: sigmaOf(ma), SigmaTo: sigmaOf(mb), Rule: history.DefaultRule}
	if sp, n := stepNoise(ca, cb); repeated == 0 && sp > 0 && sp < math.Hypot(noise.SigmaFrom, noise.SigmaTo) {
		s := sp / math.Sqrt2
		noise = NoiseFloor{Basis: "step_scatter", SigmaFrom: s, SigmaTo: s, Pairs: n, Rule: history.DefaultRule}
		for _, cs := range [][]history.Cell{ca, cb} {
			for i := range cs {
				cs[i].Sigma = s
			}
		}
	}
	if repeated > 0 {
		noise = NoiseFloor{Basis: "repeated_runs", SigmaFrom: repeated, SigmaTo: repeated, Pairs: pairs, Rule: history.DefaultRule}
		for _, cs := range [][]history.Cell{ca, cb} {
			for i := range cs {
				cs[i].Sigma = repeated
			}
		}
	}
	pa, pb := predictedAt(ca, cb, ma), predictedAt(cb, ca, mb)
	return Step{From: a, To: b, Step: history.Compare(pa, pb, history.DefaultRule), Noise: noise}, nil
}

// minStepDOF is the least number of degrees of freedom (shared cells
// less the row and column effects) with which a step's own scatter
// measures its noise.
const minStepDOF = 5

// stepNoise is the noise of ln(b/a) at one cell measured from the step
// itself: the spread of the shared cells' log ratios about a row effect
// plus a concurrency effect (an engine change that speeds up long
// contexts, or some batch sizes, is a change, not noise), taken at its
// one-sided 95 % upper confidence bound. A change of another shape widens
// it, so like a run's own scatter it is never smaller than the noise. It
// is zero with fewer than minStepDOF degrees of freedom; n is the cells
// that measured it.
func stepNoise(a, b []history.Cell) (sigma float64, n int) {
	type pt struct {
		l, c int
		d    float64
	}
	at := map[[2]int]float64{}
	for _, c := range a {
		at[[2]int{c.ContextTokens, c.Concurrency}] = c.Value
	}
	var pts []pt
	row, col := map[int]float64{}, map[int]float64{}
	for _, c := range b {
		if v, ok := at[[2]int{c.ContextTokens, c.Concurrency}]; ok {
			pts = append(pts, pt{c.ContextTokens, c.Concurrency, math.Log(c.Value / v)})
			row[c.ContextTokens], col[c.Concurrency] = 0, 0
		}
	}
	n = len(pts)
	dof := n - len(row) - len(col) + 1
	if dof < minStepDOF {
		return 0, 0
	}
	// The additive fit by alternating means; a few rounds settle it.
	for range 25 {
		for _, fx := range []struct {
			eff  map[int]float64
			key  func(pt) int
			rest func(pt) float64
		}{
			{row, func(p pt) int { return p.l }, func(p pt) float64 { return col[p.c] }},
			{col, func(p pt) int { return p.c }, func(p pt) float64 { return row[p.l] }},
		} {
			sum, cnt := map[int]float64{}, map[int]int{}
			for _, p := range pts {
				sum[fx.key(p)] += p.d - fx.rest(p)
				cnt[fx.key(p)]++
			}
			for k := range fx.eff {
				fx.eff[k] = sum[k] / float64(cnt[k])
			}
		}
	}
	ss := 0.0
	for _, p := range pts {
		e := p.d - row[p.l] - col[p.c]
		ss += e * e
	}
	k := float64(dof)
	// Wilson–Hilferty: the 5 % point of χ² with k degrees of freedom.
	chi := k * math.Pow(1-2/(9*k)-1.645*math.Sqrt(2/(9*k)), 3)
	return math.Sqrt(ss / chi), n
}

// CompareRuns compares run a (the older) with run b, whatever they are:
// Differ names every setting they differ in.
func (c *Service) CompareRuns(ctx context.Context, a, b string) (Step, error) {
	ka, err := c.store.RunConfigOf(ctx, a)
	if err != nil {
		return Step{}, err
	}
	kb, err := c.store.RunConfigOf(ctx, b)
	if err != nil {
		return Step{}, err
	}
	st, err := c.compare(ctx, a, b, 0, 0)
	if err != nil {
		return Step{}, err
	}
	fa, fb := configFields(ka), configFields(kb)
	for i := range fa {
		if fa[i][1] != fb[i][1] {
			st.Differ = append(st.Differ, fa[i][0])
		}
	}
	if !strings.EqualFold(ka.GPU, kb.GPU) {
		st.Differ = append(st.Differ, "gpu")
	}
	return st, nil
}

// minRepeatedPairs is how many cells of repeated runs it takes to measure
// the noise from them rather than from each run's scatter.
const minRepeatedPairs = 5

// Series lines up run id's series by engine version, then date, and
// compares each run with the one before it.
func (c *Service) Series(ctx context.Context, id string) (SeriesAnswer, error) {
	members, more, err := c.lineUp(ctx, id)
	if err != nil {
		return SeriesAnswer{}, err
	}
	ans := SeriesAnswer{Runs: members, More: more}
	if more {
		ans.Warnings = append(ans.Warnings, msg.New("predict.series_newest", len(members)))
	}
	repeated, pairs, err := c.repeatedNoise(ctx, members)
	if err != nil {
		return SeriesAnswer{}, err
	}
	for i := 1; i < len(members); i++ {
		st, err := c.compare(ctx, members[i-1].ID, members[i].ID, repeated, pairs)
		if err != nil {
			return SeriesAnswer{}, err
		}
		st.Differ = capacityDiffer(members[i-1], members[i])
		ans.Steps = append(ans.Steps, st)
	}
	return ans, nil
}

// lineUp is run id's series in engine-version order, then date.
func (c *Service) lineUp(ctx context.Context, id string) ([]store.SeriesMember, bool, error) {
	members, more, err := c.store.Series(ctx, id)
	if err != nil {
		return nil, false, err
	}
	slices.SortStableFunc(members, func(x, y store.SeriesMember) int {
		if v := history.CompareVersions(x.EngineVersion, y.EngineVersion); v != 0 {
			return v
		}
		return x.CreatedAt.Compare(y.CreatedAt)
	})
	return members, more, nil
}

// Into is the step into a run from the run before it in its series.
type Into struct {
	From, To store.SeriesMember
	// Step is set by LatestSteps only: Predecessor needs no fit.
	Step Step
	// members is the series the step was lined up in, for its noise.
	members []store.SeriesMember
}

// Predecessor finds the run before run id in its series (by engine
// version, then date), reading no cells; ok is false when id is the first
// (or its series has more runs than are lined up and id is not among them).
func (c *Service) Predecessor(ctx context.Context, id string) (Into, bool, error) {
	members, _, err := c.lineUp(ctx, id)
	if err != nil {
		return Into{}, false, err
	}
	i := slices.IndexFunc(members, func(m store.SeriesMember) bool { return m.ID == id })
	if i < 1 {
		return Into{}, false, nil
	}
	return Into{From: members[i-1], To: members[i], members: members}, true, nil
}

// LatestSteps examines the newest examine runs f matches (flagged ones
// left out, as series leave them out) and compares each that has a run
// before it in its series with that run, exactly as its series' step
// does: the steps, newest run first, and how many runs were examined.
// A step one of whose runs cannot be fitted (no valid cell) is left out.
// Every fit the steps need is started before the first is waited for, so
// that they are made side by side; an answer still waits for each at
// most as long as any answer does (then *Fitting).
func (c *Service) LatestSteps(ctx context.Context, f store.RunFilter, examine int) ([]Into, int, error) {
	f.ExcludeFlagged = true
	configs, _, err := c.store.RunConfigs(ctx, f, examine)
	if err != nil {
		return nil, 0, err
	}
	var out []Into
	for _, rc := range configs {
		in, ok, err := c.Predecessor(ctx, rc.ID)
		if err != nil {
			return nil, 0, err
		}
		if ok {
			c.Warm(in.From.ID)
			c.Warm(in.To.ID)
			out = append(out, in)
		}
	}
	// Runs of one series share its noise: measured once per series, not
	// once per step (it reads the cells of its same-version runs).
	type noise struct {
		sigma float64
		pairs int
	}
	bySeries := map[string]noise{}
	kept := out[:0]
	for _, in := range out {
		nz, seen := bySeries[in.members[0].ID]
		if !seen {
			var err error
			if nz.sigma, nz.pairs, err = c.repeatedNoise(ctx, in.members); err != nil {
				return nil, 0, err
			}
			bySeries[in.members[0].ID] = nz
		}
		repeated, pairs := nz.sigma, nz.pairs
		st, err := c.compare(ctx, in.From.ID, in.To.ID, repeated, pairs)
		if errors.Is(err, calculator.ErrRefused) {
			continue // a run with nothing to fit (no valid cell) has no verdict
		}
		if err != nil {
			return nil, 0, err
		}
		st.Differ = capacityDiffer(in.From, in.To)
		in.Step = st
		kept = append(kept, in)
	}
	return kept, len(configs), nil
}

// repeatedNoise measures the noise of one cell from runs of the series at
// one engine version: the spread of ln(b/a) over their shared cells is
// that of two cells' noise. Zero when fewer than minRepeatedPairs cells
// are shared.
func (c *Service) repeatedNoise(ctx context.Context, members []store.SeriesMember) (float64, int, error) {
	var ds []float64
	for i := 1; i < len(members); i++ {
		a, b := members[i-1], members[i]
		if a.EngineVersion == "" || history.CompareVersions(a.EngineVersion, b.EngineVersion) != 0 {
			continue
		}
		ca, err := c.store.DecodeCells(ctx, a.ID, store.DecodeFilter{Status: "valid"})
		if err != nil {
			return 0, 0, err
		}
		cb, err := c.store.DecodeCells(ctx, b.ID, store.DecodeFilter{Status: "valid"})
		if err != nil {
			return 0, 0, err
		}
		at := map[[2]int]float64{}
		for _, x := range ca {
			if x.TotalTokS != nil && *x.TotalTokS > 0 {
				at[[2]int{x.ContextTokens, x.Concurrency}] = *x.TotalTokS
			}
		}
		for _, y := range cb {
			if v, ok := at[[2]int{y.ContextTokens, y.Concurrency}]; ok && y.TotalTokS != nil && *y.TotalTokS > 0 {
				ds = append(ds, math.Log(*y.TotalTokS/v))
			}
		}
	}
	if len(ds) < minRepeatedPairs {
		return 0, 0, nil
	}
	mean := 0.0
	for _, d := range ds {
		mean += d
	}
	mean /= float64(len(ds))
	ss := 0.0
	for _, d := range ds {
		ss += (d - mean) * (d - mean)
	}
	sd := math.Sqrt(ss / float64(len(ds)-1))
	return math.Max(sd/math.Sqrt2, 0.001), len(ds), nil
}

// capacityDiffer names the capacity-only settings two runs of a series
// differ in.
func capacityDiffer(a, b store.SeriesMember) []string {
	var out []string
	fa, fb := configFields(a.RunConfig), configFields(b.RunConfig)
	for i := range fa {
		if capacityOnly(fa[i][0]) && fa[i][1] != fb[i][1] {
			out = append(out, fa[i][0])
		}
	}
	return out
}
