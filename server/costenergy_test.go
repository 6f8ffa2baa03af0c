package server_test

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/store"
)

// near allows the answer's rounding: costs to 6 significant digits, the
// speeds they are checked against to 3 decimals.
func near(a, b float64) bool { return math.Abs(a-b) <= 1e-5*math.Max(math.Abs(a), math.Abs(b)) }

// decodeCost asks the calculator with extra parameters and decodes its
// answer (e.do validates it against openapi.yaml).
func decodeCost(t *testing.T, e *env, runID, extra string) api.DecodePrediction {
	t.Helper()
	rec := e.do(t, http.MethodGet, "/v1/calculator/decode?run_id="+runID+"&context_tokens=16384&concurrency=8&"+extra, nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("%s: %d %s", extra, rec.Code, rec.Body)
	}
	var p api.DecodePrediction
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDecodeCost(t *testing.T) {
	e := newEnv(t, 0)
	nemo := e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090") // 1 × RTX 3090, 350 W limit

	t.Run("without a price, no cost", func(t *testing.T) {
		if p := decodeCost(t, e, nemo.ID, ""); p.Cost != nil {
			t.Fatalf("cost %+v without a price", p.Cost)
		}
	})
	t.Run("rented", func(t *testing.T) {
		p := decodeCost(t, e, nemo.ID, "gpu_hour_usd=2")
		c, tot := p.Cost, p.TotalTokS
		if c == nil || c.Pricing != api.Rented || c.Gpus != 1 || *c.USDPerHour != 2 {
			t.Fatalf("cost %+v", c)
		}
		// 2 $/h × 1 GPU / (total tok/s × 3600) × 10⁶, the interval from total's.
		u := c.USDPerMillionOutputTokens
		if !near(u.Value, 2/(tot.Value*3600)*1e6) || !near(u.Low, 2/(tot.High*3600)*1e6) || !near(u.High, 2/(tot.Low*3600)*1e6) {
			t.Fatalf("usd_per_million_output_tokens %+v from total %+v", u, tot)
		}
		if *c.PowerSource != api.CostPowerSourcePowerLimit || *c.PowerW != 350 || !near(c.JoulesPerOutputToken.Value, 350/tot.Value) {
			t.Fatalf("power %v %v, J/token %+v", *c.PowerSource, *c.PowerW, c.JoulesPerOutputToken)
		}
	})
	t.Run("owned", func(t *testing.T) {
		p := decodeCost(t, e, nemo.ID, "hardware_usd=1500&amortization_years=3&electricity_usd_per_kwh=0.3")
		c := p.Cost
		hourly := 1500/(3*8766.0) + 0.350*0.3
		if c == nil || c.Pricing != api.Owned || !near(*c.USDPerHour, hourly) || !near(c.USDPerMillionOutputTokens.Value, hourly/(p.TotalTokS.Value*3600)*1e6) {
			t.Fatalf("cost %+v, want %v $/h", c, hourly)
		}
	})
	t.Run("catalog TDP without a power limit", func(t *testing.T) {
		r := nemo
		r.ID, r.Hardware.PowerLimitW = "", nil
		r.Title += " (no power limit)"
		stored, _, err := e.st.CreateRun(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		c := decodeCost(t, e, stored.ID, "electricity_usd_per_kwh=0.2").Cost
		if *c.PowerSource != api.CostPowerSourceCatalogTdp || *c.PowerW != 350 || !near(*c.USDPerHour, 0.35*0.2) {
			t.Fatalf("cost %+v", c)
		}
	})
	t.Run("a GPU without a TDP takes its system's maximum, named so", func(t *testing.T) {
		r := nemo
		r.ID, r.Hardware.GPU, r.Hardware.PowerLimitW, r.Hardware.AvgPowerW = "", "M2 Ultra", nil, nil
		r.Title += " (on a Mac Studio)"
		stored, _, err := e.st.CreateRun(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		// Apple's Mac Studio (2023) M2 Ultra maximum: 295 W at the wall.
		c := decodeCost(t, e, stored.ID, "electricity_usd_per_kwh=0.2").Cost
		if *c.PowerSource != api.CostPowerSourceSystemMaxPower || *c.PowerW != 295 || !near(*c.USDPerHour, 0.295*0.2) {
			t.Fatalf("power %v %v, cost %+v", *c.PowerSource, *c.PowerW, c)
		}
	})
	t.Run("another GPU takes its TDP", func(t *testing.T) {
		rec := e.do(t, http.MethodGet, "/v1/calculator/decode?run_id="+nemo.ID+"&context_tokens=16384&concurrency=8&target_gpu=RTX+3080&gpu_hour_usd=1", nil)
		var p api.DecodePrediction
		if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &p) != nil || p.Cost == nil {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
		if *p.Cost.PowerSource != api.CostPowerSourceCatalogTdp || *p.Cost.PowerW != 320 {
			t.Fatalf("power %v %v: the RTX 3080's TDP is 320 W", *p.Cost.PowerSource, *p.Cost.PowerW)
		}
	})
	t.Run("a rented GPU without a power figure says energy is not given", func(t *testing.T) {
		rec := e.do(t, http.MethodGet, "/v1/calculator/decode?run_id="+nemo.ID+"&context_tokens=16384&concurrency=8&target_gpu=A16&rough=true&gpu_hour_usd=1", nil)
		var p api.DecodePrediction
		if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &p) != nil || p.Cost == nil {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
		if p.Cost.JoulesPerOutputToken != nil || p.Cost.USDPerMillionOutputTokens == nil ||
			!strings.Contains(strings.Join(p.Warnings, " "), "energy: A16 has no power figure") {
			t.Fatalf("cost %+v, warnings %q; want a price, no energy and a warning saying why", p.Cost, p.Warnings)
		}
	})
	base := "/v1/calculator/decode?run_id=" + nemo.ID + "&context_tokens=16384&concurrency=8&"
	for _, c := range []struct{ name, q, field string }{
		{"negative", "gpu_hour_usd=-1", "gpu_hour_usd"},
		{"NaN", "gpu_hour_usd=NaN", "gpu_hour_usd"},
		{"infinite", "electricity_usd_per_kwh=Inf", "electricity_usd_per_kwh"},
		{"absurd", "gpu_hour_usd=1e9", "gpu_hour_usd"},
		{"absurd years", "hardware_usd=1000&amortization_years=500&electricity_usd_per_kwh=0.1", "amortization_years"},
		{"zero years", "hardware_usd=1000&amortization_years=0&electricity_usd_per_kwh=0.1", "amortization_years"},
		{"rented and owned", "gpu_hour_usd=2&hardware_usd=1000", "hardware_usd"},
		{"hardware without years", "hardware_usd=1000&electricity_usd_per_kwh=0.1", "amortization_years"},
		{"owned without electricity", "hardware_usd=1000&amortization_years=3", "electricity_usd_per_kwh"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := e.do(t, http.MethodGet, base+c.q, nil)
			if rec.Code != 400 || !strings.Contains(rec.Body.String(), `"field":"`+c.field+`"`) {
				t.Fatalf("%s: %d %s; want a 400 naming %s", c.q, rec.Code, rec.Body, c.field)
			}
		})
	}
}

func TestPlannerSortByCost(t *testing.T) {
	e := newEnv(t, 0)
	q := func(extra url.Values) url.Values {
		v := url.Values{"context_tokens": {"0"}, "min_per_request_tok_s": {"40"}, "include_scaled": {"true"}}
		for k, x := range extra {
			v[k] = x
		}
		return v
	}
	t.Run("refused without a price", func(t *testing.T) {
		rec := e.do(t, http.MethodGet, "/v1/planner?"+q(url.Values{"sort": {"cost"}}).Encode(), nil)
		if rec.Code != 400 || !strings.Contains(rec.Body.String(), `"field":"sort"`) || !strings.Contains(rec.Body.String(), "gpu_hour_usd") {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
	})
	t.Run("owned, cheapest per million tokens first", func(t *testing.T) {
		p := plan(t, e, q(url.Values{"sort": {"cost"}, "hardware_usd": {"1500"}, "amortization_years": {"3"}, "electricity_usd_per_kwh": {"0.3"}}))
		last, priced := 0.0, 0
		for _, o := range p.Options {
			if !o.Meets || o.Cost == nil || o.Cost.USDPerMillionOutputTokens == nil {
				continue
			}
			priced++
			u := o.Cost.USDPerMillionOutputTokens.Value
			if u < last {
				t.Errorf("%s: %v $/M after %v", o.GPU, u, last)
			}
			last = u
			want := float64(o.GPUCount) * (1500/(3*8766.0) + *o.Cost.PowerW/1000*0.3)
			if !near(*o.Cost.USDPerHour, want) || !near(u, want/(o.TotalTokS.Value*3600)*1e6) {
				t.Errorf("%s: %v $/h %v $/M, want %v $/h", o.GPU, *o.Cost.USDPerHour, u, want)
			}
		}
		if priced < 3 {
			t.Fatalf("%d options priced", priced)
		}
	})
	t.Run("with users, cheapest fleet first", func(t *testing.T) {
		p := plan(t, e, q(url.Values{"sort": {"cost"}, "gpu_hour_usd": {"0.5"}, "users": {"100"}}))
		last := 0.0
		for _, o := range p.Options {
			if !o.Meets {
				continue
			}
			if o.FleetUSDPerHour == nil || !near(*o.FleetUSDPerHour, float64(*o.Instances)*0.5*float64(o.GPUCount)) {
				t.Fatalf("%s: fleet %v, instances %v", o.GPU, o.FleetUSDPerHour, o.Instances)
			}
			if *o.FleetUSDPerHour < last {
				t.Errorf("%s: fleet %v $/h after %v", o.GPU, *o.FleetUSDPerHour, last)
			}
			last = *o.FleetUSDPerHour
		}
	})
}

// TestMeasuredPower: a run's measured power is stored and read back, and
// prices its answers before the power limit; a measured cell's own power
// before the run's; bounds are 400s naming the field.
func TestMeasuredPower(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "alice")
	nemo := e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090") // 350 W limit
	r := nemo
	r.Title += " (power measured)"
	r.Hardware.AvgPowerW = ptrF(300)
	r.Decode = fasterBy(nemo.Decode, 0.95) // a measurement of its own: a copy of the seed's cells is planned once
	var cell int
	for i, c := range r.Decode {
		if c.ContextTokens == 16384 && c.Concurrency == 8 {
			cell = i
		}
	}
	r.Decode[cell].AvgPowerW = ptrF(310)
	rec := e.send(t, "POST", "/v1/runs", k["alice"], runJSON(t, r))
	if rec.Code != 201 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	stored := decodeRun(t, rec.Body.Bytes())
	if stored.Hardware.AvgPowerW == nil || *stored.Hardware.AvgPowerW != 300 || *stored.Decode[cell].AvgPowerW != 310 {
		t.Fatalf("read back hardware %v, cell %v", stored.Hardware.AvgPowerW, stored.Decode[cell].AvgPowerW)
	}

	t.Run("a measured cell's power first", func(t *testing.T) {
		p := decodeCost(t, e, stored.ID, "gpu_hour_usd=1")
		c := p.Cost
		if *c.PowerSource != api.CostPowerSourceMeasured || *c.PowerW != 310 || !near(c.JoulesPerOutputToken.Value, 310/p.TotalTokS.Value) {
			t.Fatalf("power %v %v J/token %+v", *c.PowerSource, *c.PowerW, c.JoulesPerOutputToken)
		}
	})
	t.Run("else the run's", func(t *testing.T) {
		rec := e.do(t, http.MethodGet, "/v1/calculator/decode?run_id="+stored.ID+"&context_tokens=12000&concurrency=6&gpu_hour_usd=1", nil)
		var p api.DecodePrediction
		if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &p) != nil || p.Cost == nil {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
		if p.Basis.Method == api.CalcBasisMethodMeasured || *p.Cost.PowerSource != api.CostPowerSourceMeasured || *p.Cost.PowerW != 300 {
			t.Fatalf("basis %s, power %v %v", p.Basis.Method, *p.Cost.PowerSource, *p.Cost.PowerW)
		}
	})
	t.Run("the planner takes the run's", func(t *testing.T) {
		p := plan(t, e, url.Values{"context_tokens": {"0"}, "min_per_request_tok_s": {"40"}, "gpu_hour_usd": {"1"}, "model": {"nemotron"}})
		var seen int
		for _, o := range p.Options {
			switch o.RunID {
			case stored.ID:
				seen++
				if *o.Cost.PowerSource != api.CostPowerSourceMeasured || *o.Cost.PowerW != 300 {
					t.Errorf("measured run: %v %v", *o.Cost.PowerSource, *o.Cost.PowerW)
				}
			case nemo.ID:
				seen++
				if *o.Cost.PowerSource != api.CostPowerSourcePowerLimit || *o.Cost.PowerW != 350 {
					t.Errorf("seed: %v %v", *o.Cost.PowerSource, *o.Cost.PowerW)
				}
			}
		}
		if seen != 2 {
			t.Fatalf("%d of the two runs planned: %+v", seen, p.Options)
		}
	})
	// Another model on the run's GPU draws what that model draws, not
	// what this one was measured at: its cost takes the machine's limit.
	t.Run("another model takes the limit, not the measured draw", func(t *testing.T) {
		rec := e.do(t, http.MethodGet, "/v1/calculator/decode?model=fara&gpu=RTX%203090&context_tokens=16384&concurrency=8&gpu_hour_usd=1", nil)
		var p api.DecodePrediction
		if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &p) != nil || p.Cost == nil {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
		if p.Basis.Method != api.CalcBasisMethodScaledModel || p.Basis.RunIDs[0] != stored.ID {
			t.Fatalf("basis %s from %v, want scaled_model from the measured run %s", p.Basis.Method, p.Basis.RunIDs, stored.ID)
		}
		if *p.Cost.PowerSource != api.CostPowerSourcePowerLimit || *p.Cost.PowerW != 350 {
			t.Errorf("decode: power %v %v, want the 350 W limit", *p.Cost.PowerSource, *p.Cost.PowerW)
		}
		pl := plan(t, e, url.Values{"context_tokens": {"16384"}, "min_per_request_tok_s": {"20"}, "gpu_hour_usd": {"1"}, "model": {"fara"}, "include_scaled_model": {"true"}})
		seen := 0
		for _, o := range pl.Options {
			if o.RunID != stored.ID || o.Cost == nil {
				continue
			}
			seen++
			if *o.Cost.PowerSource != api.CostPowerSourcePowerLimit || *o.Cost.PowerW != 350 {
				t.Errorf("planner, another model from %s: power %v %v, want the 350 W limit", o.RunID, *o.Cost.PowerSource, *o.Cost.PowerW)
			}
		}
		if seen == 0 {
			t.Fatalf("no option of fara from the measured run: %+v", pl.Options)
		}
	})
	for _, c := range []struct {
		name string
		edit func(*store.Run)
		ptr  string
	}{
		{"negative run power", func(r *store.Run) { r.Hardware.AvgPowerW = ptrF(-1) }, "/hardware/avg_power_w"},
		{"absurd cell power", func(r *store.Run) { r.Decode[0].AvgPowerW = ptrF(1e9) }, "/decode/0/avg_power_w"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := nemo
			bad.Decode = append([]store.DecodeCell(nil), nemo.Decode...)
			c.edit(&bad)
			rec := e.send(t, "POST", "/v1/runs", k["alice"], runJSON(t, bad))
			if rec.Code != 400 && rec.Code != 422 || !strings.Contains(rec.Body.String(), c.ptr) {
				t.Fatalf("%d %s; want a rejection naming %s", rec.Code, rec.Body, c.ptr)
			}
		})
	}
}

func ptrF(v float64) *float64 { return &v }

// TestGridCost: each grid cell is priced from its own total tok/s.
func TestGridCost(t *testing.T) {
	e := newEnv(t, 0)
	nemo := e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090")
	rec := e.do(t, http.MethodGet, "/v1/calculator/grid?run_id="+nemo.ID+"&contexts=0,16384&concurrencies=1,8,12&gpu_hour_usd=0.5", nil)
	var g api.GridPrediction
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &g) != nil {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	priced := 0
	for _, row := range g.Rows {
		for _, c := range row.Cells {
			if c.TotalTokS == nil {
				continue
			}
			priced++
			if c.Cost == nil || !near(c.Cost.USDPerMillionOutputTokens.Value, 0.5/(c.TotalTokS.Value*3600)*1e6) {
				t.Fatalf("%d × %d: cost %+v at %+v", row.ContextTokens, c.Concurrency, c.Cost, c.TotalTokS)
			}
		}
	}
	if priced < 4 {
		t.Fatalf("%d cells priced", priced)
	}
	if rec := e.do(t, http.MethodGet, "/v1/calculator/grid?run_id="+nemo.ID+"&gpu_hour_usd=-2", nil); rec.Code != 400 || !strings.Contains(rec.Body.String(), `"field":"gpu_hour_usd"`) {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}
