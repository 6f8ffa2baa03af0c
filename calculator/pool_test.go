package calculator

import (
	"math"
	"testing"
)

func TestPoolEstimates(t *testing.T) {
	e := func(v, rel float64) *Estimate { return band(v, rel) }
	tests := []struct {
		name          string
		in            []*Estimate
		value, lo, hi float64
	}{
		{"one source is itself", []*Estimate{e(100, 0.05)}, 100, 95, 105},
		{"agreeing sources keep the band", []*Estimate{e(100, 0.05), e(101.5, 0.05)}, 100.75, 100.75 * 0.95, 100.75 * 1.05},
		{"a disagreeing source widens it to hold both", []*Estimate{e(100, 0.05), e(130, 0.05)}, 115, 100, 130},
		{"nil sources are left out", []*Estimate{nil, e(100, 0.05), nil}, 100, 95, 105},
		{"each of four sources moves the mean by its share", []*Estimate{e(100, 0.05), e(100, 0.05), e(100, 0.05), e(200, 0.05)}, 125, 100, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PoolEstimates(tt.in)
			if got == nil {
				t.Fatal("nil estimate")
			}
			for _, c := range [][2]float64{{got.Value, tt.value}, {got.Low, tt.lo}, {got.High, tt.hi}} {
				if math.Abs(c[0]-c[1]) > 1e-9*math.Abs(c[1]) {
					t.Errorf("got %+v, want value %g in [%g, %g]", *got, tt.value, tt.lo, tt.hi)
					break
				}
			}
		})
	}
	if PoolEstimates([]*Estimate{nil}) != nil {
		t.Error("no estimate pooled into one")
	}
}

func TestPoolKeepsTheFirstSourcesStatus(t *testing.T) {
	a := Prediction{Status: Fits, Basis: Interpolated, TotalTokS: band(100, 0.05), PerRequestTokS: band(20, 0.05), TBTMs: band(50, 0.04), BandTotal: 0.05, BandTBT: 0.04}
	b := Prediction{Status: BoundaryUncertain, Basis: Extrapolated, TotalTokS: band(130, 0.05), PerRequestTokS: band(26, 0.05), TBTMs: band(38, 0.04), BandTotal: 0.05, BandTBT: 0.04}
	got, spread := PoolSources([]Prediction{a, b})
	if got.Status != Fits || got.Basis != Interpolated {
		t.Errorf("status %s basis %s, want the first source's", got.Status, got.Basis)
	}
	if got.TotalTokS.Value != 115 || math.Abs(spread-15.0/115) > 1e-12 {
		t.Errorf("total %g spread %g, want 115 and 15/115", got.TotalTokS.Value, spread)
	}
	if want := 15.0 / 115; math.Abs(got.BandTotal-want) > 1e-12 {
		t.Errorf("band %g, want %g (holding both sources)", got.BandTotal, want)
	}
	if got.PerRequestTokS.Value != 23 || got.TBTMs.Value != 44 {
		t.Errorf("per request %g, TBT %g: want the means 23, 44", got.PerRequestTokS.Value, got.TBTMs.Value)
	}
	none := Prediction{Status: OverCapacity}
	if got, _ := PoolSources([]Prediction{none, b}); got.TotalTokS != nil || got.Status != OverCapacity {
		t.Errorf("a first source without speed gave %+v", got)
	}
}
