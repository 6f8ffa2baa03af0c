package calculator

import "math"

// Pooling independent sources: each source (a run, or one submitter's runs
// of one configuration) answers the same query from its own fit, and the
// answer is their mean, each source counting alike, so that one source of
// n moves it by at most its share, 1/n of its own deviation. The interval
// is never narrower than the sources' mean relative band, and holds every
// source's value: a source that disagrees widens it, one that agrees
// within the band leaves it as it was.

// PoolEstimates combines the estimates of independent sources (nil ones
// are left out; nil when none is left): the value is their mean, each
// side of the interval the larger of the sources' mean relative half-width
// on that side and the distance to the farthest source's value.
func PoolEstimates(es []*Estimate) *Estimate {
	var vs []Estimate
	for _, e := range es {
		if e != nil && finite(e.Value, e.Low, e.High) {
			vs = append(vs, *e)
		}
	}
	switch len(vs) {
	case 0:
		return nil
	case 1:
		out := vs[0]
		return &out
	}
	var sum, lowRel, highRel float64
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, e := range vs {
		sum += e.Value
		lo, hi = math.Min(lo, e.Value), math.Max(hi, e.Value)
		if e.Value > 0 {
			lowRel += (e.Value - e.Low) / e.Value
			highRel += (e.High - e.Value) / e.Value
		}
	}
	n := float64(len(vs))
	v := sum / n
	lowRel, highRel = lowRel/n, highRel/n
	if v > 0 {
		lowRel = math.Max(lowRel, (v-lo)/v)
		highRel = math.Max(highRel, (hi-v)/v)
	}
	return &Estimate{Value: v, Low: math.Max(v*(1-lowRel), 0), High: v * (1 + highRel)}
}

// PoolSources combines the predictions of one query by independent sources, the
// first being the one whose status, capacity, basis and cells the answer
// keeps (the others inform only its figures). Sources without a speed are
// left out of the speed's figures. spread is the largest relative distance
// of a source's total tok/s from the pooled value (0 with one source).
func PoolSources(ps []Prediction) (out Prediction, spread float64) {
	if len(ps) == 0 {
		return Prediction{}, 0
	}
	out = ps[0]
	if len(ps) == 1 {
		return out, 0
	}
	pick := func(f func(Prediction) *Estimate) []*Estimate {
		es := make([]*Estimate, len(ps))
		for i, p := range ps {
			es[i] = f(p)
		}
		return es
	}
	total := pick(func(p Prediction) *Estimate { return p.TotalTokS })
	if out.TotalTokS == nil {
		return out, 0 // no speed to pool: the first source's status stands
	}
	out.TotalTokS = PoolEstimates(total)
	out.PerRequestTokS = PoolEstimates(pick(func(p Prediction) *Estimate { return p.PerRequestTokS }))
	out.TBTMs = PoolEstimates(pick(func(p Prediction) *Estimate { return p.TBTMs }))
	out.TTFTMs = PoolEstimates(pick(func(p Prediction) *Estimate { return p.TTFTMs }))
	if out.TBTMs != nil {
		out.BandTBT = math.Max(meanBand(ps, func(p Prediction) float64 { return p.BandTBT }), relHalfWidth(out.TBTMs))
	}
	out.BandTotal = math.Max(meanBand(ps, func(p Prediction) float64 { return p.BandTotal }), relHalfWidth(out.TotalTokS))
	for _, e := range total {
		if e != nil && out.TotalTokS.Value > 0 {
			spread = math.Max(spread, math.Abs(e.Value-out.TotalTokS.Value)/out.TotalTokS.Value)
		}
	}
	return out, spread
}

// meanBand is the mean of band over the predictions that have a speed.
func meanBand(ps []Prediction, band func(Prediction) float64) float64 {
	var sum float64
	n := 0
	for _, p := range ps {
		if p.TotalTokS != nil {
			sum += band(p)
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// relHalfWidth is e's wider side relative to its value.
func relHalfWidth(e *Estimate) float64 {
	if e == nil || e.Value <= 0 {
		return 0
	}
	return math.Max(e.Value-e.Low, e.High-e.Value) / e.Value
}

// PoolPrefill combines the prefill predictions of independent sources, the
// first keeping its basis and contexts.
func PoolPrefill(ps []PrefillPrediction) PrefillPrediction {
	if len(ps) == 0 {
		return PrefillPrediction{}
	}
	out := ps[0]
	if len(ps) == 1 {
		return out
	}
	ttft, prompt := make([]*Estimate, len(ps)), make([]*Estimate, len(ps))
	for i := range ps {
		ttft[i], prompt[i] = &ps[i].TTFTMs, &ps[i].PromptTokS
	}
	out.TTFTMs, out.PromptTokS = *PoolEstimates(ttft), *PoolEstimates(prompt)
	return out
}
