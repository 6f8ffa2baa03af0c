package calculator

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/matrixd/matrixd/msg"
)

// ModelRatios compare the model asked for with the measured one (target
// over measured): Weights the bytes of weights one token reads (active
// parameters × bytes per parameter), KV the bytes of KV cache one token of
// context takes (full-attention layers × KV heads × head dimension). From
// and To size the measured model and the asked one where the facts give
// them: another model's KV capacity and prefill need them, and are
// refused without.
type ModelRatios struct {
	Weights, KV float64
	From, To    ModelSize
}

// ModelSize is what a model takes on the run's engine: the memory of its
// weights (every parameter, not only those a token reads), the KV cache
// one token of context takes at the run's KV cache dtype, the FLOPs a
// prompt token costs outside attention (2 × active parameters) and those
// attending to one more token of context adds (2 × 2 × full-attention
// layers × heads × head dimension; 0 when the facts lack the heads), and
// whether some of its layers keep state that does not grow with the
// context (a hybrid).
type ModelSize struct {
	WeightsGB       float64
	KVBytesPerToken float64
	FLOPsPerToken   float64
	AttentionFLOPs  float64
	Hybrid          bool
}

// prefillFLOPs is what one token of a cold prompt of l tokens costs on
// average: its share of the weights' work and of the causal attention
// over the tokens before it (l/2 of them on average).
func (s ModelSize) prefillFLOPs(l int) float64 {
	return s.FLOPsPerToken + s.AttentionFLOPs*float64(l)/2
}

// other reports whether r asks for another model.
func (r ModelRatios) other() bool { return r != (ModelRatios{}) }

// check refuses ratios that are not positive numbers.
func (r ModelRatios) check() error {
	if !(r.Weights > 0) || !(r.KV > 0) || !finite(r.Weights, r.KV) {
		return refuse(msg.New("calculator.supported_positive_ratios"), "calculator.other_model_ratios", r.Weights, r.KV)
	}
	return nil
}

// ModelMove is how step times move to another model on the same GPU and
// engine: the physical model's weight-streaming and per-sequence terms
// (a + b·B) scale by Weights^WeightPower, its context terms (c·B·L + d·L +
// e·B²·L, KV reads) by KV^KVPower; Band is the relative half-width of the
// answers, measured on grids of other models.
type ModelMove struct {
	Family      string  `json:"family"`
	WeightPower float64 `json:"weight_power"`
	KVPower     float64 `json:"kv_power"`
	Band        float64 `json:"band"`
	Pairs       int     `json:"pairs,omitempty"`
	Answers     int     `json:"answers,omitempty"`
}

// PhysicalModelMove scales each term by its bytes, uncalibrated.
var PhysicalModelMove = ModelMove{WeightPower: 1, KVPower: 1, Band: 0.25}

// moveToModel scales step times t, s at (l K tokens, b) by ratios r.
func (m *Model) moveToModel(l, b, t, s float64, r ModelRatios, mv ModelMove) (float64, float64) {
	kw, kkv := math.Pow(r.Weights, mv.WeightPower), math.Pow(r.KV, mv.KVPower)
	f := physTerms(l, b)
	scale := func(p physModel) float64 {
		w := p[0]*f[0] + p[1]*f[1]
		kv := p[2]*f[2] + p[3]*f[3] + p[4]*f[4]
		if !(w+kv > 0) {
			return kw
		}
		return (w*kw + kv*kkv) / (w + kv)
	}
	return t * scale(m.sf.physT), s * scale(m.sf.physS)
}

// MoveToModel predicts every valid cell of dst (another model's run on the
// same GPU and engine) from m, scaled by the models' ratios r as mv says,
// and compares each with its measurement.
func MoveToModel(ctx context.Context, m *Model, dst Run, r ModelRatios, mv ModelMove) (GPUReport, error) {
	rep := GPUReport{From: m.run.ID, To: dst.ID}
	if !(r.Weights > 0) || !(r.KV > 0) {
		return rep, fmt.Errorf("model ratios %+v: want positive", r)
	}
	for _, c := range dst.Decode {
		if !usable(c) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		rep.Cells++
		b := float64(c.Concurrency)
		sp, err := m.speed(c.ContextTokens, b, false)
		if err != nil {
			rep.Refused++
			rep.Refusals = append(rep.Refusals, fmt.Sprintf("%s: %v", cellName(c), err))
			continue
		}
		t, s := m.moveToModel(float64(c.ContextTokens)/tokensPerK, b, sp.t, sp.s, r, mv)
		band := mv.Band
		switch sp.basis {
		case Interpolated:
			band = max(band, m.bands.InterpolatedTotal)
		case Extrapolated:
			band = max(band, m.bands.ExtrapolatedTotal)
		}
		v, truth := b*1000/s, *c.TotalTokS
		h := HeldOut{Cell: CellRef{c.ContextTokens, c.Concurrency}, Basis: sp.basis, Err: math.Abs(v-truth) / truth,
			Need: math.Abs(v-truth) / v, Band: band, TBTNeed: math.NaN()}
		if c.TBTMs != nil {
			h.TBTNeed = math.Abs(t-*c.TBTMs) / t
		}
		rep.Answers = append(rep.Answers, h)
	}
	return rep, nil
}

// ModelPair is a run fitted on one model and a run of another model on the
// same GPU and engine, with their ratios.
type ModelPair struct {
	Family string
	Tune   bool
	From   *Model
	To     Run
	Ratios ModelRatios
}

// CalibrateModelMoves derives a move per engine family with enough tune
// pairs (and a pooled one, "", from all) from the tune pairs: the powers with the least mean error of total
// tok/s, then the band that holds ⌈coverage·(n+1)⌉ of the n answers.
func CalibrateModelMoves(ctx context.Context, pairs []ModelPair, coverage float64) ([]ModelMove, error) {
	byFamily, fams := tunePairsByFamily(pairs, func(p ModelPair) (bool, string) { return p.Tune, p.Family })
	fams = slices.DeleteFunc(fams, func(f string) bool { return !enoughForMove(len(byFamily[f]), modelAnswers(ctx, byFamily[f])) })
	var out []ModelMove
	for _, f := range append([]string{""}, fams...) {
		ps := byFamily[f]
		if len(ps) == 0 {
			continue
		}
		best, bestErr := PhysicalModelMove, math.Inf(1)
		for _, wp := range steps(0, 1.5, 0.05) {
			for _, kp := range steps(0, 1.5, 0.05) {
				mv := ModelMove{WeightPower: wp, KVPower: kp, Band: PhysicalModelMove.Band}
				sum, n := 0.0, 0
				for _, p := range ps {
					rep, err := MoveToModel(ctx, p.From, p.To, p.Ratios, mv)
					if err != nil {
						return nil, err
					}
					for _, h := range rep.Answers {
						sum += h.Err
						n++
					}
				}
				if n > 0 && sum/float64(n) < bestErr-1e-12 {
					best, bestErr = mv, sum/float64(n)
				}
			}
		}
		best.Family = f
		var needs []float64
		for _, p := range ps {
			rep, err := MoveToModel(ctx, p.From, p.To, p.Ratios, best)
			if err != nil {
				return nil, err
			}
			best.Pairs++
			for _, h := range rep.Answers {
				needs = append(needs, h.Need)
			}
		}
		best.Answers = len(needs)
		if len(needs) > 0 {
			best.Band = roundUp4(conformalAt(needs, coverage))
		}
		out = append(out, best)
	}
	return out, nil
}

// modelAnswers counts the cells pairs answer under PhysicalModelMove.
func modelAnswers(ctx context.Context, pairs []ModelPair) int {
	n := 0
	for _, p := range pairs {
		rep, _ := MoveToModel(ctx, p.From, p.To, p.Ratios, PhysicalModelMove)
		n += len(rep.Answers)
	}
	return n
}

// ModelMoveFor is the move of an engine family, else the pooled one,
// else PhysicalModelMove.
func (c BandCalibration) ModelMoveFor(family string) ModelMove {
	mv := PhysicalModelMove
	for _, g := range c.Model {
		if g.Family == "" {
			mv = g
		}
	}
	for _, g := range c.Model {
		if g.Family == family && family != "" {
			return g
		}
	}
	return mv
}
