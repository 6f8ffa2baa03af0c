package calculator

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// HoldoutReport is the calculator's leave-one-cell-out record on one run:
// each valid cell is removed, the run refitted (bands included) and the
// cell asked for, as a user of the API would.
type HoldoutReport struct {
	RunID string `json:"run_id"`
	// Cells is how many cells were held out.
	Cells int `json:"cells"`
	// Total is the absolute relative error of total tok/s over the cells
	// answered.
	Total ErrorStats `json:"total_tok_s"`
	// TBT is the absolute relative error of the time between tokens over
	// the answered cells that publish it.
	TBT ErrorStats `json:"tbt_ms"`
	// Covered counts answers whose total tok/s interval held the truth.
	Covered int `json:"covered"`
	// Refused counts cells not answered; Refusals says why, per cell.
	Refused  int      `json:"refused"`
	Refusals []string `json:"refusals,omitempty"`
	// Outside names the answers whose interval missed the truth.
	Outside []string `json:"outside,omitempty"`
	// Answers are the held-out answers, one per cell answered.
	Answers []HeldOut `json:"-"`
}

// HeldOut is one held-out answer: its speed basis, the half-width of its
// total tok/s interval relative to the answer (Band, and RawBand before the
// family calibration), and Need, the half-width that would just have held
// the measurement (|answer − measured| / answer); TBT likewise, NaN where
// the cell publishes none.
type HeldOut struct {
	Cell                     CellRef
	Basis                    Basis
	Err, Need, Band, RawBand float64
	TBTNeed, TBTBand, TBTRaw float64
	// RawInterpolated and TBTRawInterpolated are the run's own
	// interpolated bands, whatever the answer's basis.
	RawInterpolated, TBTRawInterpolated float64
}

// Covered reports whether the total's interval held the measurement.
func (h HeldOut) Covered() bool { return h.Need <= h.Band }

// maxHoldoutCells bounds a leave-one-cell-out evaluation: each held-out
// cell is a full fit.
const maxHoldoutCells = 400

// LeaveOneOut holds out every valid cell of r in turn (at most 400, spread
// over the grid), refits and predicts it.
func LeaveOneOut(ctx context.Context, r Run) (HoldoutReport, error) {
	rep := HoldoutReport{RunID: r.ID}
	var valid []Cell
	for _, c := range r.Decode {
		if usable(c) {
			valid = append(valid, c)
		}
	}
	for _, c := range spread(valid, maxHoldoutCells) {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		rep.Cells++
		refused := func(err error) {
			rep.Refused++
			rep.Refusals = append(rep.Refusals, fmt.Sprintf("%s: %v", cellName(c), err))
		}
		m, err := FitContext(ctx, without(r, []Cell{c}))
		if err != nil {
			if !errors.Is(err, ErrRefused) {
				return rep, err
			}
			refused(err)
			continue
		}
		q := Query{ContextTokens: c.ContextTokens, Concurrency: c.Concurrency}
		if m.maxOut == 0 {
			// Speed does not depend on the output reservation; a run that
			// does not state it is still asked for its speed.
			q.MaxOutputTokens = 1
		}
		p, err := m.Decode(q)
		switch {
		case err != nil:
			refused(err)
			continue
		case p.TotalTokS == nil:
			refused(fmt.Errorf("no speed: status %s", p.Status))
			continue
		}
		truth := *c.TotalTokS
		rep.Total.add(math.Abs(p.TotalTokS.Value-truth) / truth)
		h := HeldOut{Cell: CellRef{c.ContextTokens, c.Concurrency}, Basis: p.SpeedBasis, Err: math.Abs(p.TotalTokS.Value-truth) / truth,
			Need: math.Abs(p.TotalTokS.Value-truth) / p.TotalTokS.Value, Band: p.BandTotal,
			TBTNeed: math.NaN(), TBTBand: p.BandTBT}
		h.RawBand, h.TBTRaw = m.raw.InterpolatedTotal, m.raw.InterpolatedTBT
		h.RawInterpolated, h.TBTRawInterpolated = m.raw.InterpolatedTotal, m.raw.InterpolatedTBT
		if p.SpeedBasis == Extrapolated {
			h.RawBand, h.TBTRaw = m.raw.ExtrapolatedTotal, m.raw.ExtrapolatedTBT
		}
		if c.TBTMs != nil && p.TBTMs != nil {
			h.TBTNeed = math.Abs(p.TBTMs.Value-*c.TBTMs) / p.TBTMs.Value
			rep.TBT.add(math.Abs(p.TBTMs.Value-*c.TBTMs) / *c.TBTMs)
		}
		rep.Answers = append(rep.Answers, h)
		if p.TotalTokS.Low <= truth && truth <= p.TotalTokS.High {
			rep.Covered++
		} else {
			rep.Outside = append(rep.Outside, fmt.Sprintf("%s: %.1f (%.1f–%.1f, %s), measured %.1f", cellName(c), p.TotalTokS.Value, p.TotalTokS.Low, p.TotalTokS.High, p.SpeedBasis, truth))
		}
	}
	rep.Total.finish()
	rep.TBT.finish()
	return rep, nil
}

// PoolHoldouts merges reports over all their cells.
func PoolHoldouts(id string, reports []HoldoutReport) HoldoutReport {
	p := HoldoutReport{RunID: id}
	for _, r := range reports {
		p.Cells += r.Cells
		p.Covered += r.Covered
		p.Refused += r.Refused
		p.Total.errs = append(p.Total.errs, r.Total.errs...)
		p.TBT.errs = append(p.TBT.errs, r.TBT.errs...)
		p.Answers = append(p.Answers, r.Answers...)
		for _, s := range r.Refusals {
			p.Refusals = append(p.Refusals, r.RunID+" "+s)
		}
		for _, s := range r.Outside {
			p.Outside = append(p.Outside, r.RunID+" "+s)
		}
	}
	p.Total.finish()
	p.TBT.finish()
	return p
}

// Coverage is the share of answered cells whose interval held the truth.
func (r HoldoutReport) Coverage() float64 {
	if r.Total.N == 0 {
		return 0
	}
	return float64(r.Covered) / float64(r.Total.N)
}

// RefusalRate is the share of held-out cells not answered.
func (r HoldoutReport) RefusalRate() float64 {
	if r.Cells == 0 {
		return 0
	}
	return float64(r.Refused) / float64(r.Cells)
}

// Hindsight is the least leave-one-cell-out error of total tok/s that any
// one fixed choice of the calculator's (kind × row weight × shape weight ×
// smoothing weight, levels read as limits or not; the same for TBT and
// total) reaches on a run, picked with hindsight on the very cells it is
// scored on: a reference for what choosing among them from the other cells can
// be expected to do.
type Hindsight struct {
	Interpolant string     `json:"interpolant"`
	Total       ErrorStats `json:"total_tok_s"`
}

// hindsightChoices are the fixed choices BestInHindsight scores: every
// option chooseInterpolant picks among, levels read as limits only where
// the run's rows level off at all.
func hindsightChoices(r Run) []interp {
	kvs := []bool{false}
	if readsKVLevel(r) {
		kvs = append(kvs, true)
	}
	var ips []interp
	for _, kv := range kvs {
		for _, kind := range interpKinds() {
			for _, w := range rowWeights() {
				for _, v := range shapeWeights() {
					for _, p := range physWeights() {
						ip := kind
						ip.rowT, ip.rowS, ip.shapeT, ip.shapeS, ip.physT, ip.physS, ip.kv = w, w, v, v, p, p, kv
						ips = append(ips, ip)
					}
				}
			}
		}
	}
	return ips
}

// BestInHindsight holds every valid cell of r out in turn (at most 400,
// spread over the grid) and scores each fixed choice on it, without
// bands. Its cost is 180 fits per held-out cell (360 where the rows level
// off).
func BestInHindsight(ctx context.Context, r Run) (Hindsight, error) {
	ips := hindsightChoices(r)
	stats := make([]ErrorStats, len(ips))
	for _, c := range spread(filter(r.Decode, usable), maxHoldoutCells) {
		rest := without(r, []Cell{c})
		for i, ip := range ips {
			if err := ctx.Err(); err != nil {
				return Hindsight{}, err
			}
			m, err := fitCore(rest, ip)
			if err != nil {
				continue
			}
			b := float64(c.Concurrency)
			if sp, err := m.speed(c.ContextTokens, b, true); err == nil {
				stats[i].add(math.Abs(b*1000/sp.s-*c.TotalTokS) / *c.TotalTokS)
			}
		}
	}
	best := -1
	for i := range stats {
		stats[i].finish()
		if stats[i].N > 0 && (best < 0 || stats[i].Mean < stats[best].Mean) {
			best = i
		}
	}
	if best < 0 {
		return Hindsight{}, nil
	}
	return Hindsight{Interpolant: ips[best].String(), Total: stats[best]}, nil
}
