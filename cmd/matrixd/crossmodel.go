package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"

	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/predict"
	"github.com/matrixd/matrixd/trust"
)

// modelRow is one leave-one-model-out pair: a grid predicted from another
// model's grid on the same GPU and engine, scaled by the models' facts.
type modelRow struct {
	Family     string                 `json:"family"`
	GPU        string                 `json:"gpu"`
	From       string                 `json:"from"`
	To         string                 `json:"to"`
	Split      string                 `json:"split"`
	Ratios     calculator.ModelRatios `json:"ratios"`
	Physical   moveScore              `json:"physical"`
	Calibrated moveScore              `json:"calibrated"`
	answers    [2][]calculator.HeldOut
	refused    [2]int
}

// modelPairs are the ordered pairs of corpus grids of two models of one
// kind (dense, or mixture of experts: a batch of B requests reads more
// experts than one does, so the weights read per step grow with B in one
// and not the other) on the same GPU (and count), engine family and
// output length, each source fitted once.
func modelPairs(ctx context.Context, runs []corpusRun) ([]calculator.ModelPair, []modelRow, error) {
	facts, err := trust.ModelFacts()
	if err != nil {
		return nil, nil, err
	}
	name := func(cr corpusRun) string {
		if m, ok := facts.Lookup(cr.Run.Model.Name); ok {
			return m.Name
		}
		return cr.Run.Model.Name
	}
	fits := map[string]*calculator.Model{}
	var pairs []calculator.ModelPair
	var rows []modelRow
	for _, dst := range runs {
		gpu, ok := calculator.LookupGPU(dst.Run.Hardware.GPU)
		if !ok {
			continue
		}
		fam, to := calculator.EngineFamily(dst.Run.Engine.Name), name(dst)
		for _, src := range runs {
			g, ok := calculator.LookupGPU(src.Run.Hardware.GPU)
			if !ok || g.Name != gpu.Name || name(src) == to || calculator.EngineFamily(src.Run.Engine.Name) != fam ||
				!sameCount(src.Run.Hardware.GPUCount, dst.Run.Hardware.GPUCount) || !sameCount(src.Run.Benchmark.MaxOutputTokens, dst.Run.Benchmark.MaxOutputTokens) {
				continue
			}
			r, err := predict.ModelRatios(facts, src.Run, dst.Run.Model.Name, predict.Run(dst.Run).Quantization)
			if errors.Is(err, calculator.ErrRefused) {
				continue
			}
			if err != nil {
				return nil, nil, err
			}
			m, ok := fits[src.Run.ID]
			if !ok {
				if m, err = calculator.FitContext(ctx, predict.Run(src.Run)); err != nil {
					return nil, nil, fmt.Errorf("%s: %w", src.Run.ID, err)
				}
				fits[src.Run.ID] = m
			}
			pairs = append(pairs, calculator.ModelPair{Family: fam, Tune: dst.Entry.Split == "tune", From: m, To: predict.Run(dst.Run), Ratios: r})
			rows = append(rows, modelRow{Family: fam, GPU: gpu.Name, From: name(src), To: to, Split: dst.Entry.Split, Ratios: r})
		}
	}
	return pairs, rows, nil
}

// crossModel scores every pair with the physical move and the calibrated
// one.
func crossModel(ctx context.Context, pairs []calculator.ModelPair, rows []modelRow) error {
	cal := calculator.Calibration()
	for i, p := range pairs {
		for j, mv := range []calculator.ModelMove{calculator.PhysicalModelMove, cal.ModelMoveFor(p.Family)} {
			rep, err := calculator.MoveToModel(ctx, p.From, p.To, p.Ratios, mv)
			if err != nil {
				return err
			}
			rows[i].answers[j], rows[i].refused[j] = rep.Answers, rep.Refused
		}
		rows[i].Physical = scoreAnswers(rows[i].answers[0], rows[i].refused[0])
		rows[i].Calibrated = scoreAnswers(rows[i].answers[1], rows[i].refused[1])
	}
	return nil
}

// summariseModels pools the pairs of a family and split, as gpuSummary
// (bandwidth_ratio there is the physical move here).
func summariseModels(rows []modelRow) []gpuSummary {
	var as []gpuRow
	for _, r := range rows {
		as = append(as, gpuRow{Family: r.Family, Split: r.Split, answers: r.answers, refused: r.refused})
	}
	return summariseGPU(as)
}

func printModels(w io.Writer, rows []modelRow, sums []gpuSummary) error {
	fmt.Fprintln(w, "\nleave-one-model-out: each grid predicted from another model's grid on the same GPU and engine, scaled by the models' weight and KV bytes per token")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "family\tGPU\tfrom → to\tsplit\tweights ×\tKV ×\tcells\tphysical: mean\tp90\tcalibrated: mean\tp90\tcoverage\tmean half-width\trefused\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s → %s\t%s\t%.2f\t%.2f\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t\n", r.Family, r.GPU, r.From, r.To, r.Split, r.Ratios.Weights, r.Ratios.KV,
			r.Calibrated.Answers+r.Calibrated.Refused, pct(r.Physical.Mean), pct(r.Physical.P90),
			pct(r.Calibrated.Mean), pct(r.Calibrated.P90), pct(r.Calibrated.Coverage), pct(r.Calibrated.HalfWidth), r.Calibrated.Refused)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "family\tsplit\tpairs\tanswers\tphysical: mean\tp90\tcalibrated: mean\tp90\tcoverage\tmean half-width\trefused\t")
	for _, s := range sums {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t\n", s.Family, s.Split, s.Pairs, s.Calibrated.Answers,
			pct(s.Bandwidth.Mean), pct(s.Bandwidth.P90), pct(s.Calibrated.Mean), pct(s.Calibrated.P90), pct(s.Calibrated.Coverage), pct(s.Calibrated.HalfWidth), s.Calibrated.Refused)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, mv := range calculator.Calibration().Model {
		name := mv.Family
		if name == "" {
			name = "pooled"
		}
		fmt.Fprintf(w, "model move %s: weights terms × weight-bytes ratio^%.2f, KV terms × KV-bytes ratio^%.2f; ±%s (from %d tune pairs, %d cells)\n",
			name, mv.WeightPower, mv.KVPower, pct(mv.Band), mv.Pairs, mv.Answers)
	}
	return nil
}

// prefillScore is how cold prefill answered for another model
// (calculator.Model.PrefillOtherModel) did on the pairs whose target grid
// publishes cold prefill: errors relative to the measurement, the share of
// measurements within the answers' intervals, and the band that would
// hold bandCoverage of them (relative to the answer, as bands are).
type prefillScore struct {
	Pairs    int     `json:"pairs"`
	Answers  int     `json:"answers"`
	Refused  int     `json:"refused"`
	Mean     float64 `json:"mean"`
	P90      float64 `json:"p90"`
	Max      float64 `json:"max"`
	Coverage float64 `json:"coverage"`
	Needed   float64 `json:"band_needed"`
}

// crossModelPrefill predicts each target grid's cold prefill from its
// pair's source, scaled by FLOPs.
func crossModelPrefill(pairs []calculator.ModelPair) (prefillScore, error) {
	var s prefillScore
	var errs, needs []float64
	covered := 0
	for _, p := range pairs {
		answered := false
		for _, pt := range p.To.Prefill {
			if !(pt.TTFTMs > 0) {
				continue
			}
			a, err := p.From.PrefillOtherModel(pt.ContextTokens, p.Ratios)
			if errors.Is(err, calculator.ErrRefused) {
				s.Refused++
				continue
			}
			if err != nil {
				return s, err
			}
			answered = true
			v, truth := a.TTFTMs.Value, pt.TTFTMs
			errs, needs = append(errs, math.Abs(v-truth)/truth), append(needs, math.Abs(v-truth)/v)
			if truth >= a.TTFTMs.Low && truth <= a.TTFTMs.High {
				covered++
			}
		}
		if answered {
			s.Pairs++
		}
	}
	if s.Answers = len(errs); s.Answers == 0 {
		return s, nil
	}
	s.Mean, s.P90 = meanP90(errs)
	s.Max = slices.Max(errs)
	s.Coverage = float64(covered) / float64(s.Answers)
	slices.Sort(needs)
	s.Needed = needs[min(len(needs)-1, int(math.Ceil(bandCoverage*float64(len(needs)+1)))-1)]
	return s, nil
}

func printModelPrefill(w io.Writer, s prefillScore) {
	fmt.Fprintf(w, "\ncross-model cold prefill (TTFT scaled by the FLOPs of a prompt token, at least ±%s): %d pairs, %d measurements (%d refused): mean error %s, p90 %s, max %s; intervals hold %s; a %s band would hold %.0f %%\n",
		pct(calculator.PrefillModelBand), s.Pairs, s.Answers, s.Refused, pct(s.Mean), pct(s.P90), pct(s.Max), pct(s.Coverage), pct(s.Needed), 100*bandCoverage)
}
