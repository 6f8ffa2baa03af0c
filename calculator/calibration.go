package calculator

import (
	_ "embed"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode"
)

// BandFamily is the family a run's bands are calibrated for: its engine's
// family (EngineFamily) and how its cells were measured (the method class,
// e.g. "vllm/serving_sweep"): one engine's serving sweeps and sustained
// decode tables err differently. "" (the pooled calibration) when the
// engine is none of the known ones or the method is not stated.
func BandFamily(engine, method string) string {
	e := EngineFamily(engine)
	if e == "" || method == "" {
		return ""
	}
	return e + "/" + method
}

// EngineFamily is the engine family of a published engine name:
// "llama.cpp", "lmdeploy", "sglang", "tensorrt-llm" or "vllm"; "" for any
// other.
func EngineFamily(engine string) string {
	key := strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return unicode.ToLower(r)
		}
		return -1
	}, engine)
	switch {
	case strings.HasPrefix(key, "llamacpp"):
		return "llama.cpp"
	case strings.HasPrefix(key, "lmdeploy"):
		return "lmdeploy"
	case strings.HasPrefix(key, "sglang"):
		return "sglang"
	case strings.HasPrefix(key, "tensorrtllm"), strings.HasPrefix(key, "trtllm"):
		return "tensorrt-llm"
	case strings.HasPrefix(key, "vllm"):
		return "vllm"
	}
	return ""
}

// BandFactors calibrate a run's own held-out bands (the conformal bound of
// its held-out errors, see Report.bands) so that, over a family's held-out
// answers, the intervals hold the measurement the target share of the
// time and are as narrow as that allows: a run's own few errors, chosen on
// the same cells, misjudge its new cells' errors by an amount that differs
// per engine family and per basis.
type BandFactors struct {
	Family string `json:"family"`
	// Factors for total tok/s and time between tokens, interpolated and
	// extrapolated answers.
	InterpolatedTotal Factor `json:"interpolated_total"`
	ExtrapolatedTotal Factor `json:"extrapolated_total"`
	InterpolatedTBT   Factor `json:"interpolated_tbt"`
	ExtrapolatedTBT   Factor `json:"extrapolated_tbt"`
	// Answers are the held-out answers the factors were derived from
	// (total; TBT where published); fewer than minCalibrationAnswers
	// take the pooled factor.
	AnswersInterpolated int `json:"answers_interpolated"`
	AnswersExtrapolated int `json:"answers_extrapolated"`
}

// Factor maps a run's own band b to Scale·b^Power (then the noise floor):
// Power 1 trusts the run's own spread of errors, 0 gives every run of the
// family one band; the calibration takes the narrowest that holds. An
// extrapolated answer's b is its run's extrapolated band e and
// interpolated band i mixed as e^(1−Mix)·i^Mix: a run's extrapolated band
// comes from whole rows and columns held out, which may say less of one
// missing corner than how noisy the run is inside.
type Factor struct {
	Scale float64 `json:"scale"`
	Power float64 `json:"power"`
	Mix   float64 `json:"mix,omitempty"`
}

// apply is the band for a run's own band (of the answer's basis) raw and
// its interpolated band interp.
func (f Factor) apply(raw, interp float64) float64 {
	b := math.Pow(raw, 1-f.Mix) * math.Pow(interp, f.Mix)
	return math.Max(f.Scale*math.Pow(b, f.Power), bandFloor)
}

// calibrationPowers and calibrationMixes are the powers and mixes
// Calibrate chooses among.
func calibrationPowers() []float64 { return []float64{0, 0.25, 0.5, 0.75, 1} }
func calibrationMixes() []float64  { return []float64{0, 0.5, 1} }

// BandCalibration is the table of family factors, derived from the corpus
// tune split (matrixd eval --corpus DIR --calibrate writes it).
type BandCalibration struct {
	// Coverage is the share of held-out answers the factors make the
	// intervals hold.
	Coverage float64       `json:"coverage"`
	Families []BandFactors `json:"families"`
	// GPU are the moves to another GPU per engine family (EngineFamily;
	// "" pooled), from the corpus's grids of one model and engine on
	// several GPUs.
	GPU []GPUMove `json:"gpu,omitempty"`
	// Model are the moves to another model on the same GPU and engine,
	// per engine family ("" pooled), from the corpus's grids of several
	// models on one GPU.
	Model []ModelMove `json:"model,omitempty"`
}

// GPUMoveFor is the move of an engine family (EngineFamily), else the
// pooled one, else BandwidthMove.
func (c BandCalibration) GPUMoveFor(family string) GPUMove {
	mv := BandwidthMove
	for _, g := range c.GPU {
		if g.Family == "" {
			mv = g
		}
	}
	for _, g := range c.GPU {
		if g.Family == family && family != "" {
			return g
		}
	}
	return mv
}

// minCalibrationAnswers: a family's factor for a basis needs this many
// held-out answers, else the pooled one applies. Ten give SGLang's ten
// interpolated tune answers a factor of their own: ±6.5 % over its 11
// held-out answers, 10 held, where the pooled factor gave ±15 % and held
// all 11.
const minCalibrationAnswers = 10

// calibrationJSON is the table derived from the corpus tune split.
//
//go:embed bands.json
var calibrationJSON []byte

var calibration = sync.OnceValue(func() BandCalibration {
	var c BandCalibration
	if err := json.Unmarshal(calibrationJSON, &c); err != nil {
		panic("calculator: embedded band calibration: " + err.Error())
	}
	return c
})

// Calibration returns the embedded band calibration.
func Calibration() BandCalibration { return calibration() }

// factors are family's factors, the pooled ones ("" family) for a family
// the table lacks; all 1 when the table has neither.
func (c BandCalibration) factors(family string) BandFactors {
	one := Factor{Scale: 1, Power: 1}
	pooled := BandFactors{InterpolatedTotal: one, ExtrapolatedTotal: one, InterpolatedTBT: one, ExtrapolatedTBT: one}
	for _, f := range c.Families {
		if f.Family == "" {
			pooled = f
		}
	}
	for _, f := range c.Families {
		if f.Family == family && family != "" {
			return f
		}
	}
	return pooled
}

// Calibrated reports whether the table has factors of family's own (else
// its runs take the pooled ones).
func (c BandCalibration) Calibrated(family string) bool {
	for _, f := range c.Families {
		if f.Family == family && family != "" {
			return true
		}
	}
	return false
}

// calibrated applies family's factors to a run's own bands; uncalibrated
// (fallback) bands are kept as they are.
func calibrated(raw Bands, family string) Bands {
	b := raw
	b.Family, b.OwnInterpolatedTotal = family, raw.InterpolatedTotal
	if !raw.Calibrated {
		return b
	}
	f := calibration().factors(family)
	b.InterpolatedTotal = f.InterpolatedTotal.apply(raw.InterpolatedTotal, raw.InterpolatedTotal)
	b.ExtrapolatedTotal = f.ExtrapolatedTotal.apply(raw.ExtrapolatedTotal, raw.InterpolatedTotal)
	b.InterpolatedTBT = f.InterpolatedTBT.apply(raw.InterpolatedTBT, raw.InterpolatedTBT)
	b.ExtrapolatedTBT = f.ExtrapolatedTBT.apply(raw.ExtrapolatedTBT, raw.InterpolatedTBT)
	return b
}

// Calibrate derives the factor table from held-out answers per family
// (BandFamily of each run's engine): for each family and basis the least
// factor whose intervals, floored at the noise floor, hold the share
// nearest to coverage, round(coverage·n) of its n answers; the pooled row
// ("") from all answers. A family's basis with too few answers takes the
// pooled factor.
//
// The share is the plain one, not the conformal ⌈coverage·(n+1)⌉: that
// guarantees at least the coverage asked, and on the corpus it held 92–97
// % of each small family's held-out cells (LMDeploy 93.8 %, SGLang 94.1 %,
// llama.cpp 92.4 % at 1.9 × its p90 error), where the aim is 88–93 % at
// the narrowest width; the nearest share holds 89.5 % of the cells of the
// grids held out of all tuning.
func Calibrate(answers map[string][]HeldOut, coverage float64) BandCalibration {
	out := BandCalibration{Coverage: coverage}
	var all []HeldOut
	var fams []string
	for f, hs := range answers {
		all = append(all, hs...)
		if f != "" {
			fams = append(fams, f)
		}
	}
	slices.Sort(fams)
	// The pooled row serves families the corpus does not have, whose error
	// level is unknown: it keeps each run's own spread (power 1) and
	// calibrates the scale only.
	pooled := calibrateOne("", all, coverage, nil)
	out.Families = append(out.Families, pooled)
	for _, f := range fams {
		out.Families = append(out.Families, calibrateOne(f, answers[f], coverage, &pooled))
	}
	return out
}

func calibrateOne(family string, hs []HeldOut, coverage float64, pooled *BandFactors) BandFactors {
	f := BandFactors{Family: family}
	var in, ex []HeldOut
	for _, h := range hs {
		if h.Basis == Extrapolated {
			ex = append(ex, h)
		} else {
			in = append(in, h)
		}
	}
	f.AnswersInterpolated, f.AnswersExtrapolated = len(in), len(ex)
	total := func(h HeldOut) (float64, float64, float64) { return h.Need, h.RawBand, h.RawInterpolated }
	tbt := func(h HeldOut) (float64, float64, float64) { return h.TBTNeed, h.TBTRaw, h.TBTRawInterpolated }
	// pick is the factor of hs, or the pooled one where hs has too few
	// answers to tell.
	pick := func(hs []HeldOut, get func(HeldOut) (float64, float64, float64), fallback func(BandFactors) Factor) Factor {
		powers, mixes := calibrationPowers(), calibrationMixes()
		if pooled == nil {
			powers = []float64{1}
		}
		k, n := leastFactor(hs, get, coverage, powers, mixes)
		if pooled != nil && n < minCalibrationAnswers {
			return fallback(*pooled)
		}
		return k
	}
	f.InterpolatedTotal = pick(in, total, func(p BandFactors) Factor { return p.InterpolatedTotal })
	f.InterpolatedTBT = pick(in, tbt, func(p BandFactors) Factor { return p.InterpolatedTBT })
	f.ExtrapolatedTotal = pick(ex, total, func(p BandFactors) Factor { return p.ExtrapolatedTotal })
	f.ExtrapolatedTBT = pick(ex, tbt, func(p BandFactors) Factor { return p.ExtrapolatedTBT })
	return f
}

// leastFactor is, among powers and mixes, the factor with the narrowest
// mean band whose scale is the least for which the band holds need for at
// least round(coverage·n) (at least one) of the n answers that have a need
// ({1, 1} when none do); the scale is rounded up to 4 significant digits.
func leastFactor(hs []HeldOut, get func(HeldOut) (need, raw, interp float64), coverage float64, powers, mixes []float64) (Factor, int) {
	type answer struct{ need, raw, interp float64 }
	var as []answer
	for _, h := range hs {
		need, raw, interp := get(h)
		if !math.IsNaN(need) && raw > 0 && interp > 0 {
			as = append(as, answer{need, raw, interp})
		}
	}
	n := len(as)
	if n == 0 {
		return Factor{Scale: 1, Power: 1}, 0
	}
	want := max(min(int(math.Round(coverage*float64(n))), n), 1)
	best, bestWidth := Factor{}, math.Inf(1)
	for _, mix := range mixes {
		for _, pw := range powers {
			// An answer is held at scale k when max(k·b^pw, floor) ≥
			// need: always when need ≤ floor, else when k ≥ need / b^pw.
			unit := Factor{Scale: 1, Power: pw, Mix: mix}
			floored := 0
			var ratios []float64
			for _, a := range as {
				if a.need <= bandFloor {
					floored++
					continue
				}
				ratios = append(ratios, a.need/unit.apply(a.raw, a.interp))
			}
			k := 0.0
			if w := want - floored; w > 0 {
				slices.Sort(ratios)
				k = ratios[w-1]
			}
			f := Factor{Scale: roundUp4(k), Power: pw, Mix: mix}
			width := 0.0
			for _, a := range as {
				width += f.apply(a.raw, a.interp)
			}
			if width < bestWidth-1e-12 {
				best, bestWidth = f, width
			}
		}
	}
	return best, n
}

// roundUp4 rounds v > 0 up to 4 significant digits (so that a stored
// table reproduces the coverage it was derived for).
func roundUp4(v float64) float64 {
	if v <= 0 {
		return 0
	}
	e := math.Pow(10, math.Floor(math.Log10(v))-3)
	return math.Ceil(v/e) * e
}
