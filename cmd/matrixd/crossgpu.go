package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/predict"
	"github.com/matrixd/matrixd/trust"
)

// moveScore is how the answers of moving one run's speed to another GPU
// (or model) compare with what was measured there.
type moveScore struct {
	Answers   int     `json:"answers"`
	Refused   int     `json:"refused"`
	Mean      float64 `json:"error_mean"`
	P90       float64 `json:"error_p90"`
	Coverage  float64 `json:"coverage"`
	HalfWidth float64 `json:"mean_half_width"`
}

func scoreAnswers(hs []calculator.HeldOut, refused int) moveScore {
	s := moveScore{Answers: len(hs), Refused: refused}
	if len(hs) == 0 {
		return s
	}
	var errs []float64
	covered := 0
	for _, h := range hs {
		errs = append(errs, h.Err)
		s.HalfWidth += h.Band
		if h.Covered() {
			covered++
		}
	}
	n := float64(len(hs))
	s.Mean, s.P90 = meanP90(errs)
	s.Coverage, s.HalfWidth = float64(covered)/n, s.HalfWidth/n
	return s
}

// gpuRow is one leave-one-GPU-out pair: a grid predicted from the same
// model and engine's grid on another GPU.
type gpuRow struct {
	Family string `json:"family"`
	Model  string `json:"model"`
	From   string `json:"from"`
	To     string `json:"to"`
	// Split is the target grid's: tune pairs calibrate the move.
	Split      string    `json:"split"`
	Rough      bool      `json:"rough"`
	Bandwidth  moveScore `json:"bandwidth_ratio"`
	Calibrated moveScore `json:"calibrated"`
	answers    [2][]calculator.HeldOut
	refused    [2]int
}

// gpuPairs are the ordered pairs of corpus grids of one model (as the
// model facts name it) and engine family on two GPUs of the catalog, as
// many of each, each source fitted once.
func gpuPairs(ctx context.Context, runs []corpusRun) ([]calculator.GPUPair, []gpuRow, error) {
	facts, err := trust.ModelFacts()
	if err != nil {
		return nil, nil, err
	}
	modelOf := func(cr corpusRun) string {
		if m, ok := facts.Lookup(cr.Run.Model.Name); ok {
			return m.Name
		}
		return cr.Run.Model.Name
	}
	fits := map[string]*calculator.Model{}
	var pairs []calculator.GPUPair
	var rows []gpuRow
	for _, dst := range runs {
		to, ok := calculator.LookupGPU(dst.Run.Hardware.GPU)
		if !ok {
			continue
		}
		for _, src := range runs {
			from, ok := calculator.LookupGPU(src.Run.Hardware.GPU)
			fam := calculator.EngineFamily(src.Run.Engine.Name)
			if !ok || from.Name == to.Name || fam != calculator.EngineFamily(dst.Run.Engine.Name) || modelOf(src) != modelOf(dst) ||
				!sameCount(src.Run.Hardware.GPUCount, dst.Run.Hardware.GPUCount) {
				continue
			}
			m, ok := fits[src.Run.ID]
			if !ok {
				if m, err = calculator.FitContext(ctx, predict.Run(src.Run)); err != nil {
					return nil, nil, fmt.Errorf("%s: %w", src.Run.ID, err)
				}
				fits[src.Run.ID] = m
			}
			pairs = append(pairs, calculator.GPUPair{Family: fam, Tune: dst.Entry.Split == "tune", From: m, To: predict.Run(dst.Run)})
			rows = append(rows, gpuRow{Family: fam, Model: modelOf(dst), From: from.Name, To: to.Name, Split: dst.Entry.Split, Rough: from.Generation != to.Generation})
		}
	}
	return pairs, rows, nil
}

// sameCount reports whether two GPU counts may be the same (nil: not
// stated).
func sameCount(a, b *int) bool { return a == nil || b == nil || *a == *b }

// crossGPU scores every pair with the bandwidth-ratio move and with the
// calibrated one.
func crossGPU(ctx context.Context, pairs []calculator.GPUPair, rows []gpuRow) error {
	cal := calculator.Calibration()
	for i, p := range pairs {
		for j, mv := range []calculator.GPUMove{calculator.BandwidthMove, cal.GPUMoveFor(p.Family)} {
			rep, err := calculator.MoveToGPU(ctx, p.From, p.To, mv)
			if err != nil {
				return err
			}
			rows[i].answers[j], rows[i].refused[j] = rep.Answers, rep.Refused
		}
		rows[i].Bandwidth = scoreAnswers(rows[i].answers[0], rows[i].refused[0])
		rows[i].Calibrated = scoreAnswers(rows[i].answers[1], rows[i].refused[1])
	}
	return nil
}

// gpuSummary pools the pairs of a family and split.
type gpuSummary struct {
	Family     string    `json:"family"`
	Split      string    `json:"split"`
	Pairs      int       `json:"pairs"`
	Bandwidth  moveScore `json:"bandwidth_ratio"`
	Calibrated moveScore `json:"calibrated"`
}

func summariseGPU(rows []gpuRow) []gpuSummary {
	type key struct{ family, split string }
	var keys []key
	acc := map[key]*[2][]calculator.HeldOut{}
	refused := map[key]*[2]int{}
	pairs := map[key]int{}
	for _, r := range rows {
		for _, k := range []key{{r.Family, r.Split}, {r.Family, "all"}, {"all families", r.Split}, {"all families", "all"}} {
			if _, ok := acc[k]; !ok {
				keys = append(keys, k)
				acc[k], refused[k] = &[2][]calculator.HeldOut{}, &[2]int{}
			}
			pairs[k]++
			for j := range 2 {
				acc[k][j] = append(acc[k][j], r.answers[j]...)
				refused[k][j] += r.refused[j]
			}
		}
	}
	slices.SortStableFunc(keys, func(a, b key) int {
		if c := compareFamily(a.family, b.family); c != 0 {
			return c
		}
		return compareStr(splitOrder(a.split), splitOrder(b.split))
	})
	var out []gpuSummary
	for _, k := range keys {
		out = append(out, gpuSummary{Family: k.family, Split: k.split, Pairs: pairs[k],
			Bandwidth: scoreAnswers(acc[k][0], refused[k][0]), Calibrated: scoreAnswers(acc[k][1], refused[k][1])})
	}
	return out
}

func compareStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// compareFamily orders families by name, "all families" last.
func compareFamily(a, b string) int {
	if (a == "all families") != (b == "all families") {
		if a == "all families" {
			return 1
		}
		return -1
	}
	return compareStr(a, b)
}

func printGPU(w io.Writer, rows []gpuRow, sums []gpuSummary) error {
	fmt.Fprintln(w, "\nleave-one-GPU-out: each grid predicted from the same model and engine's grid on another GPU (rough across generations)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "family\tmodel\tfrom → to\tsplit\tcells\tbandwidth ratio: mean\tp90\tcoverage\tcalibrated: mean\tp90\tcoverage\tmean half-width\trefused\t")
	for _, r := range rows {
		to := r.To
		if r.Rough {
			to += " (rough)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s → %s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t\n", r.Family, r.Model, r.From, to, r.Split, r.Calibrated.Answers+r.Calibrated.Refused,
			pct(r.Bandwidth.Mean), pct(r.Bandwidth.P90), pct(r.Bandwidth.Coverage), pct(r.Calibrated.Mean), pct(r.Calibrated.P90), pct(r.Calibrated.Coverage), pct(r.Calibrated.HalfWidth), r.Calibrated.Refused)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "family\tsplit\tpairs\tanswers\tbandwidth ratio: mean\tp90\tcoverage (±20/40 %)\trefused\tcalibrated: mean\tp90\tcoverage\tmean half-width\trefused\t")
	for _, s := range sums {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%d\t\n", s.Family, s.Split, s.Pairs, s.Calibrated.Answers,
			pct(s.Bandwidth.Mean), pct(s.Bandwidth.P90), pct(s.Bandwidth.Coverage), s.Bandwidth.Refused,
			pct(s.Calibrated.Mean), pct(s.Calibrated.P90), pct(s.Calibrated.Coverage), pct(s.Calibrated.HalfWidth), s.Calibrated.Refused)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	cal := calculator.Calibration()
	for _, mv := range cal.GPU {
		name := mv.Family
		if name == "" {
			name = "pooled"
		}
		fmt.Fprintf(w, "move %s: within a generation the weights term × bandwidth ratio^%.2f, the rest × ratio^%.2f, ±%s; across generations ^%.2f and ^%.2f, ±%s (from %d tune pairs, %d cells)\n",
			name, mv.Alpha, mv.Gamma, pct(mv.Band), mv.RoughAlpha, mv.RoughGamma, pct(mv.RoughBand), mv.Pairs, mv.Answers)
	}
	return nil
}
