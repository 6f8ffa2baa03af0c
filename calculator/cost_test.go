package calculator

import (
	"errors"
	"math"
	"testing"
)

func f(v float64) *float64 { return &v }

func near(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-12*math.Max(math.Abs(a), math.Abs(b))
}

func TestHourlyAndPerMillion(t *testing.T) {
	owned := Price{HardwareUSD: f(8766), AmortizationYears: f(1), ElectricityUSDPerKWh: f(0.2)}
	w350 := &Power{WattsPerGPU: 350, Source: PowerLimit}
	for _, c := range []struct {
		name      string
		p         Price
		gpus      int
		power     *Power
		total     float64
		hourly    float64
		perMillon float64
	}{
		// 1.8 $/h over 500 tok/s × 3600 s = 1.8e6 tokens an hour: 1 $/M.
		{"rented", Price{GPUHourUSD: f(1.8)}, 1, nil, 500, 1.8, 1},
		{"rented, 8 GPUs", Price{GPUHourUSD: f(2.5)}, 8, nil, 10000, 20, 20.0 / 3.6e7 * 1e6},
		// 8766 $ over one year of 8766 h is 1 $/h; 350 W at 0.2 $/kWh 0.07 $/h.
		{"owned", owned, 1, w350, 1000, 1.07, 1.07 / 3.6},
		{"owned, 2 GPUs", owned, 2, w350, 1000, 2.14, 2.14 / 3.6},
		{"owned, free power needs none", Price{HardwareUSD: f(30000), AmortizationYears: f(3), ElectricityUSDPerKWh: f(0)}, 4, nil, 2000, 4 * 30000 / (3 * 8766.0), 4 * 30000 / (3 * 8766.0) / 7.2e6 * 1e6},
		{"electricity only", Price{ElectricityUSDPerKWh: f(0.3)}, 1, &Power{WattsPerGPU: 450}, 100, 0.135, 0.135 / 0.36},
	} {
		t.Run(c.name, func(t *testing.T) {
			if field, msg := c.p.Check(); field != "" {
				t.Fatalf("Check: %s %s", field, msg)
			}
			h, err := HourlyUSD(c.p, c.gpus, c.power)
			if err != nil || !near(h, c.hourly) {
				t.Fatalf("HourlyUSD = %v, %v; want %v", h, err, c.hourly)
			}
			if got := USDPerMillion(h, c.total); !near(got, c.perMillon) {
				t.Fatalf("USDPerMillion = %v, want %v", got, c.perMillon)
			}
		})
	}
	if _, err := HourlyUSD(owned, 1, nil); !errors.Is(err, ErrNoPower) {
		t.Fatalf("owned without power: %v", err)
	}
	if !math.IsInf(USDPerMillion(1, 0), 1) || !math.IsInf(JoulesPerToken(*w350, 1, 0), 1) {
		t.Fatal("0 tok/s must cost +Inf")
	}
}

func TestCostOfInterval(t *testing.T) {
	// 2 GPUs at 300 W, 600 tok/s (500–750): 1 J a token (0.8–1.2); at
	// 3.6 $/h, 1.666… $/M (1.333…–2).
	p := &Power{WattsPerGPU: 300, Source: PowerMeasured}
	c, err := CostOf(Price{GPUHourUSD: f(1.8)}, 2, p, &Estimate{Value: 600, Low: 500, High: 750})
	if err != nil {
		t.Fatal(err)
	}
	want := Estimate{Value: 3.6 / 2.16e6 * 1e6, Low: 3.6 / 2.7e6 * 1e6, High: 2}
	if u := c.USDPerMillion; u == nil || !near(u.Value, want.Value) || !near(u.Low, want.Low) || !near(u.High, want.High) {
		t.Fatalf("USDPerMillion = %+v, want %+v", u, want)
	}
	if j := c.JoulesPerToken; j == nil || !near(j.Value, 1) || !near(j.Low, 0.8) || !near(j.High, 1.2) {
		t.Fatalf("JoulesPerToken = %+v", j)
	}
	if *c.USDPerHour != 3.6 || c.Owned {
		t.Fatalf("hourly %v owned %v", *c.USDPerHour, c.Owned)
	}
	c, _ = CostOf(Price{GPUHourUSD: f(1)}, 1, nil, &Estimate{Value: 10, Low: 0, High: 20})
	if c.USDPerMillion != nil {
		t.Fatal("an interval reaching 0 tok/s has no bounded cost")
	}
	c, err = CostOf(Price{ElectricityUSDPerKWh: f(0.1)}, 1, nil, &Estimate{Value: 10, Low: 9, High: 11})
	if !errors.Is(err, ErrNoPower) || c.USDPerHour != nil || c.USDPerMillion != nil {
		t.Fatalf("no power: %+v %v", c, err)
	}
}

func TestPowerOfPrecedence(t *testing.T) {
	for _, c := range []struct {
		measured, limit, tdp, system *float64
		want                         Power
		ok                           bool
	}{
		{f(280), f(350), f(400), f(500), Power{280, PowerMeasured}, true},
		{nil, f(350), f(400), f(500), Power{350, PowerLimit}, true},
		{f(0), nil, f(400), f(500), Power{400, PowerCatalogTDP}, true},
		{nil, nil, nil, f(295), Power{295, PowerSystemMax}, true},
		{nil, f(150), nil, f(295), Power{150, PowerLimit}, true},
		{nil, nil, f(0), f(0), Power{}, false},
		{nil, nil, nil, nil, Power{}, false},
	} {
		got, ok := PowerOf(c.measured, c.limit, c.tdp, c.system)
		if got != c.want || ok != c.ok {
			t.Errorf("PowerOf = %+v %v, want %+v %v", got, ok, c.want, c.ok)
		}
	}
}

func TestPriceCheck(t *testing.T) {
	for _, c := range []struct {
		p     Price
		field string
	}{
		{Price{}, ""},
		{Price{GPUHourUSD: f(2)}, ""},
		{Price{GPUHourUSD: f(math.NaN())}, "gpu_hour_usd"},
		{Price{GPUHourUSD: f(-1)}, "gpu_hour_usd"},
		{Price{GPUHourUSD: f(2), HardwareUSD: f(1)}, "hardware_usd"},
		{Price{GPUHourUSD: f(2), ElectricityUSDPerKWh: f(0.1)}, "electricity_usd_per_kwh"},
		{Price{HardwareUSD: f(1000), ElectricityUSDPerKWh: f(0.1)}, "amortization_years"},
		{Price{AmortizationYears: f(3), ElectricityUSDPerKWh: f(0.1)}, "hardware_usd"},
		{Price{HardwareUSD: f(1000), AmortizationYears: f(0), ElectricityUSDPerKWh: f(0.1)}, "amortization_years"},
		{Price{HardwareUSD: f(1000), AmortizationYears: f(3)}, "electricity_usd_per_kwh"},
		{Price{HardwareUSD: f(1000), AmortizationYears: f(math.Inf(1)), ElectricityUSDPerKWh: f(0.1)}, "amortization_years"},
	} {
		if field, _ := c.p.Check(); field != c.field {
			t.Errorf("%+v: field %q, want %q", c.p, field, c.field)
		}
	}
}
