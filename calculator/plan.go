package calculator

import (
	"errors"
	"math"
	"strconv"

	"github.com/matrixd/matrixd/msg"
)

// Target is a capacity-planning question: serve requests of ContextTokens
// at MinPerRequestTokS each, with the first token within MaxTTFTMs (0: no
// bound), for Users concurrent users (0: as many as fit).
type Target struct {
	ContextTokens     int
	MinPerRequestTokS float64
	MaxTTFTMs         float64
	Users             int
	// Base carries the overrides of an ordinary query (VRAM, utilization,
	// max output, target GPU); its context and concurrency are ignored.
	Base Query
}

// Limits that bind a plan: what stops one more concurrent request.
const (
	BindKVTokens  = "kv_tokens"      // the KV cache would not hold the reservation
	BindSequences = "sequences"      // the engine runs no more requests at once
	BindSpeed     = "speed"          // per-request speed would fall below the target
	BindTTFT      = "ttft"           // the first token would come too late
	BindRange     = "measured_range" // the data does not support more
	// BindMaxModelLen: the context and output reservation exceed the run's
	// max_model_len, for one request as for any number.
	BindMaxModelLen = "max_model_len"
)

// Shortfall says how far a run is from a target it cannot meet.
type Shortfall struct {
	// Metric is per_request_tok_s, ttft_ms, capacity or coverage.
	Metric string
	// Value is what the run achieves at its best (concurrency 1), Target the
	// asked bound; both zero for capacity and coverage.
	Value, Target float64
	Reason        string
	// Notice is Reason with its code and parameters.
	Notice msg.Message
}

// Plan answers a Target for one run.
type Plan struct {
	// Meets is true when some concurrency meets every bound.
	Meets bool
	// Concurrency is the largest concurrency that meets the target; 0 when
	// none does.
	Concurrency int
	// At is the prediction at Concurrency, or at concurrency 1 when the
	// target is not met (nil when even that cannot be predicted).
	At *Prediction
	// Binding is what stops one more request (Bind*); BindingDetail says it
	// in words, BindingNotice with its code and parameters.
	Binding, BindingDetail string
	BindingNotice          msg.Message
	// Surely is true when the target holds across the intervals too (the
	// low bound of per-request speed, the high bound of TTFT).
	Surely bool
	// Shortfall is set when the target is not met.
	Shortfall *Shortfall
	// TTFTChecked is false when the answer has no TTFT (another GPU): a
	// TTFT bound, asked or not, could not be applied.
	TTFTChecked bool
	// Instances is how many copies of the run's machine serve Target.Users
	// (0 when Users is 0 or the target is not met).
	Instances int
}

// maxPlanConcurrency bounds the search; no engine runs more at once.
const maxPlanConcurrency = 1 << 16

// planStep is one concurrency's verdict.
type planStep struct {
	b       int
	p       *Prediction
	refusal *Refusal
	fails   string // "" when the target is met, else a Bind* constant
	detail  msg.Message
	// queuedCell is set when b fails as a measured cell whose requests
	// queued: a verdict on that cell alone, not on larger concurrencies.
	queuedCell bool
}

// Plan finds the largest concurrency at which the run meets t. It assumes
// that more concurrent requests never make each faster nor the first token
// sooner, so it probes concurrency 1, 2, 4 … until the target fails, then
// bisects: O(log B) predictions. A measured cell whose requests queued
// (at a long context each request spends part of the window in its
// prefill) fails only its own concurrency: larger ones of the row may have
// run every request at once, so the search steps over it, and from the
// largest concurrency that does not fail otherwise it steps down past such
// cells, one prediction each.
func (m *Model) Plan(t Target) (Plan, error) {
	if t.ContextTokens < 0 || t.MinPerRequestTokS < 0 || t.MaxTTFTMs < 0 || t.Users < 0 {
		return Plan{}, refuse(msg.New("calculator.supported_plan_target"), "calculator.plan_negative")
	}
	var pass *planStep // the largest concurrency probed that meets t
	step := func(b int) (planStep, error) {
		s, err := m.planStep(t, b)
		if err == nil && s.fails == "" && (pass == nil || b > pass.b) {
			pass = &s
		}
		return s, err
	}
	first, err := step(1)
	if err != nil {
		return Plan{}, err
	}
	if first.fails != "" && !first.queuedCell {
		return m.planFailed(t, first), nil
	}
	// top is the largest concurrency found that fails at most as a queued
	// cell, bad the smallest above it that fails otherwise.
	top := first
	var bad *planStep
	for b := 2; b <= maxPlanConcurrency; b *= 2 {
		s, err := step(b)
		if err != nil {
			return Plan{}, err
		}
		if s.fails != "" && !s.queuedCell {
			bad = &s
			break
		}
		top = s
	}
	if top, bad, err = planBisect(step, top, bad, true); err != nil {
		return Plan{}, err
	}
	for top.fails != "" {
		if top.b == 1 {
			return m.planFailed(t, first), nil
		}
		s, err := step(top.b - 1)
		if err != nil {
			return Plan{}, err
		}
		if s.fails != "" && !s.queuedCell {
			// Not the shape assumed: search below as if queued cells
			// bound like any other failure.
			if pass == nil {
				return m.planFailed(t, first), nil
			}
			if top, bad, err = planBisect(step, *pass, &s, false); err != nil {
				return Plan{}, err
			}
			break
		}
		bad, top = &top, s
	}
	good := top
	pl := Plan{Meets: true, Concurrency: good.b, At: good.p, TTFTChecked: good.p != nil && good.p.TTFTMs != nil}
	if bad != nil {
		pl.Binding, pl.BindingDetail, pl.BindingNotice = bad.fails, bad.detail.Text, bad.detail
	} else {
		m := msg.New("calculator.bind_searched", maxPlanConcurrency)
		pl.Binding, pl.BindingDetail, pl.BindingNotice = BindRange, m.Text, m
	}
	pl.Surely = surely(t, good.p)
	if t.Users > 0 {
		pl.Instances = (t.Users + good.b - 1) / good.b
	}
	return pl, nil
}

// planBisect narrows lo, which does not fail, and hi, which does (nil:
// nothing above lo was found failing), to adjacent concurrencies; with
// skipQueued a queued cell counts as not failing.
func planBisect(step func(int) (planStep, error), lo planStep, hi *planStep, skipQueued bool) (planStep, *planStep, error) {
	for hi != nil && hi.b-lo.b > 1 {
		s, err := step(lo.b + (hi.b-lo.b)/2)
		if err != nil {
			return planStep{}, nil, err
		}
		if s.fails == "" || (skipQueued && s.queuedCell) {
			lo = s
		} else {
			hi = &s
		}
	}
	return lo, hi, nil
}

// planStep predicts concurrency b and judges it against t. Only errors
// that are not refusals are returned: a refusal is a verdict.
func (m *Model) planStep(t Target, b int) (planStep, error) {
	q := t.Base
	q.ContextTokens, q.Concurrency = t.ContextTokens, b
	p, err := m.Decode(q)
	var ref *Refusal
	switch {
	case errors.As(err, &ref):
		return planStep{b: b, refusal: ref, fails: BindRange, detail: ref.Message}, nil
	case err != nil:
		return planStep{}, err
	}
	if p.Capacity.Unknown {
		// Sizing needs the KV capacity the speed answer did without.
		errors.As(errNoMaxOutput(), &ref)
		return planStep{b: b, refusal: ref, fails: BindRange, detail: ref.Message}, nil
	}
	s := planStep{b: b, p: &p}
	switch p.Status {
	case Fits:
	case OverCapacity:
		s.fails, s.detail = BindKVTokens, msg.New(plural(b, "calculator.bind_refused_one", "calculator.bind_refused"), b, t.ContextTokens, p.Capacity.ReservedTokens, p.Capacity.KVTokensHigh)
		if !capacityMeasured(p) {
			s.detail = msg.New(plural(b, "calculator.bind_beyond_estimated_one", "calculator.bind_beyond_estimated"), b, t.ContextTokens, p.Capacity.ReservedTokens, p.Capacity.KVTokensHigh)
		}
	case BoundaryUncertain:
		if p.Capacity.ReservedTokens > p.Capacity.KVTokensLow {
			s.fails, s.detail = BindKVTokens, msg.New(plural(b, "calculator.bind_more_than_ran_one", "calculator.bind_more_than_ran"), b, t.ContextTokens, p.Capacity.ReservedTokens, p.Capacity.KVTokensLow)
			switch {
			case capacityMeasured(p):
			case p.Capacity.KVTokensHigh == 0:
				s.detail = msg.New(plural(b, "calculator.bind_within_estimated_open_one", "calculator.bind_within_estimated_open"), b, t.ContextTokens, p.Capacity.ReservedTokens, p.Capacity.KVTokensLow)
			default:
				s.detail = msg.New(plural(b, "calculator.bind_within_estimated_one", "calculator.bind_within_estimated"), b, t.ContextTokens, p.Capacity.ReservedTokens, p.Capacity.KVTokensLow, p.Capacity.KVTokensHigh)
			}
		} else {
			s.fails, s.detail = BindSequences, msg.New("calculator.bind_not_seen_running", b)
		}
	case RequestsQueued:
		s.fails, s.detail = BindSequences, msg.New("calculator.bind_queues", b)
		// A queue the sequence limits make holds for every larger
		// concurrency too.
		s.queuedCell = (p.Basis == Measured || p.queuedShorter) && m.cap.running(b) == b
	case ExceedsMaxModelLen:
		s.fails, s.detail = BindMaxModelLen, msg.New("calculator.bind_max_model_len", t.ContextTokens)
	case TTFTExceedsWindow:
		s.fails, s.detail = BindTTFT, msg.New("calculator.bind_no_first_token", t.ContextTokens)
	}
	if s.fails == "" && p.LevelFrom > 0 {
		s.fails, s.detail = BindSequences, msg.New("calculator.bind_level", concurrencyText(p.LevelFrom))
	}
	if s.fails != "" {
		return s, nil
	}
	if p.PerRequestTokS == nil {
		s.fails, s.detail = BindRange, msg.New("calculator.bind_no_speed")
		return s, nil
	}
	if v := p.PerRequestTokS.Value; v < t.MinPerRequestTokS {
		s.fails, s.detail = BindSpeed, msg.New("calculator.bind_speed", b, under(v, t.MinPerRequestTokS), num(t.MinPerRequestTokS))
		return s, nil
	}
	if t.MaxTTFTMs > 0 && p.TTFTMs != nil && p.TTFTMs.Value > t.MaxTTFTMs {
		s.fails, s.detail = BindTTFT, msg.New("calculator.bind_ttft", b, p.TTFTMs.Value, num(t.MaxTTFTMs))
	}
	return s, nil
}

// planFailed explains a target not met even by one request.
func (m *Model) planFailed(t Target, s planStep) Plan {
	pl := Plan{At: s.p, TTFTChecked: s.p != nil && s.p.TTFTMs != nil}
	sh := &Shortfall{Notice: s.detail}
	switch s.fails {
	case BindSpeed:
		sh.Metric, sh.Value, sh.Target = "per_request_tok_s", s.p.PerRequestTokS.Value, t.MinPerRequestTokS
		sh.Notice = msg.New("calculator.short_speed", sh.Value, num(sh.Target), 100*(1-sh.Value/sh.Target))
	case BindTTFT:
		sh.Metric = "ttft_ms"
		if s.p != nil && s.p.TTFTMs != nil && s.p.Status == Fits {
			sh.Value, sh.Target = s.p.TTFTMs.Value, t.MaxTTFTMs
			sh.Notice = msg.New("calculator.short_ttft", sh.Value, num(sh.Target), 100*(sh.Value/sh.Target-1))
		}
	case BindKVTokens, BindSequences, BindMaxModelLen:
		sh.Metric = "capacity"
		sh.Notice = msg.New("calculator.short_capacity", s.detail)
		if s.p != nil && s.p.Status == BoundaryUncertain {
			sh.Notice = msg.New("calculator.short_capacity_uncertain", s.detail)
		}
	default:
		sh.Metric = "coverage"
		if s.refusal != nil && s.refusal.Supported != "" {
			sh.Notice = msg.New("calculator.refused_supported", s.refusal.Message, s.refusal.SupportedMessage)
		}
	}
	sh.Reason = sh.Notice.Text
	pl.Binding, pl.BindingDetail, pl.BindingNotice, pl.Shortfall = s.fails, s.detail.Text, s.detail, sh
	return pl
}

// capacityMeasured reports whether p's KV capacity is the run's as
// measured, not moved to other VRAM, another GPU or another model.
func capacityMeasured(p Prediction) bool {
	switch p.Basis {
	case ScaledVRAM, ScaledGPU, ScaledModel:
		return false
	}
	return true
}

// surely reports whether the target holds at the intervals' pessimistic
// ends.
func surely(t Target, p *Prediction) bool {
	if p.PerRequestTokS == nil || p.PerRequestTokS.Low < t.MinPerRequestTokS {
		return false
	}
	if t.MaxTTFTMs > 0 && (p.TTFTMs == nil || p.TTFTMs.High > t.MaxTTFTMs) {
		return false
	}
	return p.Status == Fits
}

// Ratio orders plans that miss: how far the best achieved value is
// from the target, as a factor ≥ 1 (1 = on target); +Inf when unknown.
func (s *Shortfall) Ratio() float64 {
	switch {
	case s == nil:
		return 1
	case s.Metric == "per_request_tok_s" && s.Value > 0:
		return s.Target / s.Value
	case s.Metric == "ttft_ms" && s.Target > 0 && s.Value > 0:
		return s.Value / s.Target
	}
	return math.Inf(1)
}

// under prints v, which is below bound, with one decimal or as many more
// as it takes to read as below it (19.985 under 20 is "19.985", not
// "20.0").
func under(v, bound float64) string {
	for d := 1; d < 6; d++ {
		if s := strconv.FormatFloat(v, 'f', d, 64); mustParse(s) < bound {
			return s
		}
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func mustParse(s string) float64 {
	v, _ := strconv.ParseFloat(s, 64)
	return v
}

// num prints a number a person gave as they would write it: 60000, not
// 6e+04.
func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// plural is one or many, as n says.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
