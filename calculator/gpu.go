package calculator

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/matrixd/matrixd/msg"
)

// GPUMove is how step times move to another GPU. With ρ the measured GPU's
// memory bandwidth over the target's, the weight-streaming intercept of the
// physical model (a, the time to read the weights once per step) scales by
// ρ^Alpha and the rest of the step (KV reads, per-sequence work) by
// ρ^Gamma: Alpha 1 is streaming at the same share of peak bandwidth on
// both GPUs, Gamma 0 a rest bound by something that does not change with
// bandwidth, 1 a rest bound by it too. Within a GPU generation (one
// architecture, its kernels) both are at most 1: memory-bound work does
// not shrink faster than the bandwidth grows. Across generations compute
// and kernels change too, and RoughAlpha and RoughGamma, fitted on pairs
// across generations, apply. Band and RoughBand are the relative
// half-widths of answers within a GPU generation and across generations.
type GPUMove struct {
	Family     string  `json:"family"`
	Alpha      float64 `json:"alpha"`
	Gamma      float64 `json:"gamma"`
	RoughAlpha float64 `json:"rough_alpha"`
	RoughGamma float64 `json:"rough_gamma"`
	Band       float64 `json:"band"`
	RoughBand  float64 `json:"rough_band"`
	// Pairs and Answers are the grid pairs and held-out cells the move
	// was derived from (0: a default).
	Pairs   int `json:"pairs,omitempty"`
	Answers int `json:"answers,omitempty"`
}

// BandwidthMove is the move before calibration: the intercept scales with
// bandwidth, the rest is kept from the measured GPU, ±20 % within a
// generation and ±40 % across.
var BandwidthMove = GPUMove{Alpha: 1, Gamma: 0, RoughAlpha: 1, RoughGamma: 0, Band: 0.20, RoughBand: 0.40}

// exponents are the move's (alpha, gamma) within a generation, or across
// generations when rough.
func (mv GPUMove) exponents(rough bool) (float64, float64) {
	if rough {
		return mv.RoughAlpha, mv.RoughGamma
	}
	return mv.Alpha, mv.Gamma
}

// gpuScaling says how to move step times to another GPU.
type gpuScaling struct {
	scaled   bool
	rough    bool    // across GPU generations
	ratio    float64 // measured bandwidth / target bandwidth
	band     float64
	move     GPUMove
	target   GPUSpec
	warnings []msg.Message
}

// gpuMove is the calibrated move of the run's family (BandFamily's engine
// part), else the pooled one, else BandwidthMove.
func (m *Model) gpuMove() GPUMove {
	return calibration().GPUMoveFor(EngineFamily(m.run.Engine))
}

func (m *Model) gpuScale(q Query, mv GPUMove) (gpuScaling, error) {
	if q.TargetGPU == "" || gpuKey(q.TargetGPU) == gpuKey(m.run.GPU) {
		return gpuScaling{ratio: 1}, nil
	}
	from, ok := LookupRunGPU(m.run.GPU, m.run.VRAMGB)
	if !ok {
		return gpuScaling{}, refuse(msg.New("calculator.supported_catalog_run_gpu"), "calculator.run_gpu_not_in_catalog", clipName(m.run.GPU))
	}
	to, ok := LookupGPU(q.TargetGPU)
	if !ok {
		return gpuScaling{}, unknownGPU(q.TargetGPU, "calculator.gpu_bandwidth_unknown")
	}
	if to.Name == from.Name {
		return gpuScaling{ratio: 1}, nil
	}
	s := gpuScaling{scaled: true, ratio: from.BandwidthGBs / to.BandwidthGBs, band: mv.Band, move: mv, target: to}
	if from.Generation != to.Generation {
		if !q.Rough {
			return gpuScaling{}, refuse(msg.New("calculator.supported_same_generation", from.Generation),
				"calculator.gpu_generations",
				from.Name, from.Generation, to.Name, to.Generation)
		}
		s.band, s.rough = mv.RoughBand, true
		s.warnings = append(s.warnings, msg.New("calculator.rough_generations", from.Generation, to.Generation, 100*s.band))
	}
	a, g := mv.exponents(s.rough)
	s.warnings = append(s.warnings, msg.New("calculator.speed_moved_gpu",
		from.Name, from.BandwidthGBs, to.Name, to.BandwidthGBs, a, g, 100*s.band))
	return s, nil
}

// apply moves step times t and s to the target GPU.
func (g gpuScaling) apply(m *Model, t, s float64) (float64, float64) {
	if !g.scaled {
		return t, s
	}
	aT, aS := m.sf.physT[0], m.sf.physS[0]
	// The intercept can exceed a small step time only by fit error; keep at
	// least the part that does not scale.
	aT, aS = min(aT, 0.95*t), min(aS, 0.95*s)
	a, gm := g.move.exponents(g.rough)
	ka, kr := math.Pow(g.ratio, a), math.Pow(g.ratio, gm)
	return aT*ka + (t-aT)*kr, aS*ka + (s-aS)*kr
}

// GPUReport is the record of moving one run's speed to another GPU and
// comparing it with a run of the same model and engine measured there.
type GPUReport struct {
	From, To string
	// Rough is true across GPU generations.
	Rough   bool
	Cells   int
	Refused int
	Answers []HeldOut
	// Refusals says why, per refused cell.
	Refusals []string
}

// MoveToGPU predicts every valid cell of dst from m (fitted on a run of the
// same model and engine on another GPU) moved to dst's GPU by mv, as a
// user asking for dst's GPU would get it (rough across generations).
func MoveToGPU(ctx context.Context, m *Model, dst Run, mv GPUMove) (GPUReport, error) {
	rep := GPUReport{From: m.run.GPU, To: dst.GPU, Rough: acrossGenerations(m.run, dst)}
	for _, c := range dst.Decode {
		if !usable(c) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		rep.Cells++
		q := Query{ContextTokens: c.ContextTokens, Concurrency: c.Concurrency, TargetGPU: dst.GPU, Rough: true, MaxOutputTokens: 1}
		p, err := m.decode(q, mv)
		if err == nil && p.TotalTokS == nil {
			err = fmt.Errorf("no speed: status %s", p.Status)
		}
		if err != nil {
			rep.Refused++
			rep.Refusals = append(rep.Refusals, fmt.Sprintf("%s: %v", cellName(c), err))
			continue
		}
		truth, v := *c.TotalTokS, p.TotalTokS.Value
		h := HeldOut{Cell: CellRef{c.ContextTokens, c.Concurrency}, Basis: ScaledGPU, Err: math.Abs(v-truth) / truth,
			Need: math.Abs(v-truth) / v, Band: p.BandTotal, TBTNeed: math.NaN(), TBTBand: p.BandTBT}
		if c.TBTMs != nil && p.TBTMs != nil {
			h.TBTNeed = math.Abs(p.TBTMs.Value-*c.TBTMs) / p.TBTMs.Value
		}
		rep.Answers = append(rep.Answers, h)
	}
	return rep, nil
}

// GPUPair is a run fitted on one GPU and a run of the same model and
// engine measured on another, for calibrating and scoring moves.
type GPUPair struct {
	Family string // EngineFamily of the runs' engine
	// Tune says the pair may calibrate (its target grid is in the tune
	// split); the others only score.
	Tune bool
	From *Model
	To   Run
}

// gpuAlphas and gpuGammas are the exponents CalibrateGPU chooses among,
// within a generation (capped at 1) or across generations.
func gpuAlphas(rough bool) []float64 {
	if rough {
		return steps(0.5, 1.5, 0.05)
	}
	return steps(0.5, 1, 0.05)
}

func gpuGammas(rough bool) []float64 {
	if rough {
		return steps(0, 3, 0.05)
	}
	return steps(0, 1, 0.05)
}

// acrossGenerations reports whether moving from's speed to to's GPU
// crosses GPU generations (false where either GPU is not in the catalog).
func acrossGenerations(from, to Run) bool {
	f, ok := LookupRunGPU(from.GPU, from.VRAMGB)
	if !ok {
		return false
	}
	t, ok := LookupRunGPU(to.GPU, to.VRAMGB)
	return ok && f.Generation != t.Generation
}

// tunePairsByFamily groups the tune pairs by engine family, every family
// one's also under "" (the pooled move's), and lists the families, sorted.
func tunePairsByFamily[P any](pairs []P, of func(P) (tune bool, family string)) (map[string][]P, []string) {
	byFamily := map[string][]P{}
	var fams []string
	for _, p := range pairs {
		tune, fam := of(p)
		if !tune {
			continue
		}
		if _, ok := byFamily[fam]; !ok && fam != "" {
			fams = append(fams, fam)
		}
		byFamily[fam] = append(byFamily[fam], p)
		if fam != "" {
			byFamily[""] = append(byFamily[""], p)
		}
	}
	slices.Sort(fams)
	return byFamily, fams
}

func steps(lo, hi, d float64) []float64 {
	var out []float64
	for i := 0; lo+float64(i)*d <= hi+1e-9; i++ {
		out = append(out, math.Round((lo+float64(i)*d)*100)/100)
	}
	return out
}

// CalibrateGPU derives a move per engine family with enough tune pairs
// (and a pooled one, "", from all) from the tune pairs: within a
// generation and across generations apart, the exponents with the least
// mean error of total tok/s over the pairs' cells of that kind (within a
// generation at most 1), then the bands that hold ⌈coverage·(n+1)⌉ of the
// n answers of each kind. A family without pairs of a kind takes the
// pooled move's exponents and band for it; the pooled one, without any,
// BandwidthMove's.
func CalibrateGPU(ctx context.Context, pairs []GPUPair, coverage float64) ([]GPUMove, error) {
	byFamily, fams := tunePairsByFamily(pairs, func(p GPUPair) (bool, string) { return p.Tune, p.Family })
	fams = slices.DeleteFunc(fams, func(f string) bool { return !enoughForMove(len(byFamily[f]), gpuAnswers(ctx, byFamily[f])) })
	var out []GPUMove
	pooled := BandwidthMove
	for _, f := range append([]string{""}, fams...) {
		ps := byFamily[f]
		if len(ps) == 0 {
			continue
		}
		best := pooled
		best.Family, best.Pairs, best.Answers = f, 0, 0
		for _, rough := range []bool{false, true} {
			var kind []GPUPair
			for _, p := range ps {
				if acrossGenerations(p.From.run, p.To) == rough {
					kind = append(kind, p)
				}
			}
			if len(kind) == 0 {
				continue
			}
			a, g, err := leastMove(ctx, kind, rough)
			if err != nil {
				return nil, err
			}
			mv := best
			if rough {
				mv.RoughAlpha, mv.RoughGamma = a, g
			} else {
				mv.Alpha, mv.Gamma = a, g
			}
			var needs []float64
			for _, p := range kind {
				rep, err := MoveToGPU(ctx, p.From, p.To, mv)
				if err != nil {
					return nil, err
				}
				best.Pairs++
				for _, h := range rep.Answers {
					best.Answers++
					needs = append(needs, h.Need)
				}
			}
			band := pooled.Band
			if rough {
				band = pooled.RoughBand
			}
			if len(needs) > 0 {
				band = roundUp4(conformalAt(needs, coverage))
			}
			if rough {
				best.RoughAlpha, best.RoughGamma, best.RoughBand = a, g, band
			} else {
				best.Alpha, best.Gamma, best.Band = a, g, band
			}
		}
		if f == "" {
			pooled = best
		}
		out = append(out, best)
	}
	return out, nil
}

// leastMove is the (alpha, gamma) with the least mean error of total tok/s
// over the cells of pairs, all within a generation or all across.
func leastMove(ctx context.Context, pairs []GPUPair, rough bool) (float64, float64, error) {
	bestA, bestG, bestErr := 1.0, 0.0, math.Inf(1)
	for _, a := range gpuAlphas(rough) {
		for _, g := range gpuGammas(rough) {
			mv := GPUMove{Alpha: a, Gamma: g, RoughAlpha: a, RoughGamma: g, Band: BandwidthMove.Band, RoughBand: BandwidthMove.RoughBand}
			sum, n := 0.0, 0
			for _, p := range pairs {
				rep, err := MoveToGPU(ctx, p.From, p.To, mv)
				if err != nil {
					return 0, 0, err
				}
				for _, h := range rep.Answers {
					sum += h.Err
					n++
				}
			}
			if n > 0 && sum/float64(n) < bestErr-1e-12 {
				bestA, bestG, bestErr = a, g, sum/float64(n)
			}
		}
	}
	return bestA, bestG, nil
}

// A family's own move needs this many tune pairs and cells, else it takes
// the pooled one: a move fitted to one or two pairs fits their quirks.
const (
	minMovePairs   = 4
	minMoveAnswers = 60
)

func enoughForMove(pairs, answers int) bool {
	return pairs >= minMovePairs && answers >= minMoveAnswers
}

// gpuAnswers counts the cells pairs answer under BandwidthMove.
func gpuAnswers(ctx context.Context, pairs []GPUPair) int {
	n := 0
	for _, p := range pairs {
		rep, _ := MoveToGPU(ctx, p.From, p.To, BandwidthMove)
		n += len(rep.Answers)
	}
	return n
}

// conformalAt is the ⌈q·(n+1)⌉-th smallest of xs (the largest when n is
// too small), at least bandFloor.
func conformalAt(xs []float64, q float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	k := min(int(math.Ceil(q*float64(len(s)+1))), len(s))
	return math.Max(s[k-1], bandFloor)
}
