package calculator

import (
	"encoding/json"
	"fmt"
	"math"
)

// MethodVersion names the fitting method: the interpolants a fit chooses
// among, how it calibrates bands and how a fitted model predicts. A stored
// fit made under another version is not used; the run is fitted again.
// Change it with any change to what Fit chooses or what a Model answers.
const MethodVersion = "fit-2026-12-04.4"

// FitParams are what a fit chose for a run: the interpolant and its
// weights, and the calibrated bands. Everything else in a Model follows
// from the run's cells, so a stored FitParams and the run rebuild the
// same model without the held-out refits that make a fit slow.
type FitParams struct {
	LogB   bool    `json:"log_b,omitempty"`
	Cubic  bool    `json:"cubic,omitempty"`
	RowT   float64 `json:"row_t"`
	RowS   float64 `json:"row_s"`
	ShapeT float64 `json:"shape_t,omitempty"`
	ShapeS float64 `json:"shape_s,omitempty"`
	// PhysT and PhysS weigh the smoothed physical model in.
	PhysT float64 `json:"phys_t,omitempty"`
	PhysS float64 `json:"phys_s,omitempty"`
	// KV reads the rows' levels as a full KV cache or a request limit
	// (see kvLevel).
	KV bool `json:"kv,omitempty"`
	// RatioT weighs T read from S and the ratio T/S (see surface.ratio).
	RatioT float64 `json:"ratio_t,omitempty"`
	Bands  Bands   `json:"bands"`
}

// MaxFitParamsBytes bounds an encoded FitParams (about 250 bytes).
const MaxFitParamsBytes = 1024

// Params returns what the fit of m chose.
func (m *Model) Params() FitParams {
	ip := m.sf.ip
	return FitParams{LogB: ip.logB, Cubic: ip.cubic, RowT: ip.rowT, RowS: ip.rowS, ShapeT: ip.shapeT, ShapeS: ip.shapeS, PhysT: ip.physT, PhysS: ip.physS, KV: ip.kv, RatioT: ip.ratioT, Bands: m.bands}
}

// Encode is p as stored.
func (p FitParams) Encode() []byte {
	b, _ := json.Marshal(p) // plain numbers and booleans: cannot fail
	return b
}

// DecodeFitParams reads stored FitParams, checking that they could have
// come from a fit.
func DecodeFitParams(b []byte) (FitParams, error) {
	var p FitParams
	if len(b) > MaxFitParamsBytes {
		return p, fmt.Errorf("stored fit parameters: %d bytes, more than %d", len(b), MaxFitParamsBytes)
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("stored fit parameters: %w", err)
	}
	for _, w := range []float64{p.RowT, p.RowS, p.ShapeT, p.ShapeS, p.PhysT, p.PhysS, p.RatioT} {
		if !(w >= 0 && w <= 1) {
			return p, fmt.Errorf("stored fit parameters: weight %v outside 0…1", w)
		}
	}
	bs := p.Bands
	for _, v := range []float64{bs.InterpolatedTotal, bs.InterpolatedTBT, bs.ExtrapolatedTotal, bs.ExtrapolatedTBT, bs.TTFT, bs.Prefill} {
		if !(v >= 0) || math.IsInf(v, 0) {
			return p, fmt.Errorf("stored fit parameters: band %v is not a relative error", v)
		}
	}
	return p, nil
}

// Rebuild makes the model Fit would make of r, given what that fit chose:
// the same predictions, without calibrating again. r must be the run the
// parameters were fitted on.
func Rebuild(r Run, p FitParams) (*Model, error) {
	m, err := fitCore(r, interp{logB: p.LogB, cubic: p.Cubic, rowT: p.RowT, rowS: p.RowS, shapeT: p.ShapeT, shapeS: p.ShapeS, physT: p.PhysT, physS: p.PhysS, kv: p.KV, ratioT: p.RatioT})
	if err != nil {
		return nil, err
	}
	m.bands = p.Bands
	return m, nil
}
