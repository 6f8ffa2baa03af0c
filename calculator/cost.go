package calculator

import (
	"errors"
	"math"
)

// HoursPerYear is the Julian year (365.25 days) hardware is amortized over.
const HoursPerYear = 8766

// Price is what a GPU costs: rented by the hour (GPUHourUSD), or owned
// (HardwareUSD amortized over AmortizationYears, plus the electricity its
// power draws). Every price is per GPU; nil is absent.
type Price struct {
	GPUHourUSD           *float64
	HardwareUSD          *float64
	AmortizationYears    *float64
	ElectricityUSDPerKWh *float64
}

// Given reports whether any price was given.
func (p Price) Given() bool {
	return p.GPUHourUSD != nil || p.HardwareUSD != nil || p.AmortizationYears != nil || p.ElectricityUSDPerKWh != nil
}

// Owned reports whether the price is an owned machine's.
func (p Price) Owned() bool { return p.GPUHourUSD == nil && p.Given() }

// Check says which parameter makes a price unusable, and why ("" when it
// is usable or absent): a rental price excludes the owned ones, hardware
// and its amortization come together, an owned price needs electricity
// (0 when it is free), and every value is finite and not negative.
func (p Price) Check() (field, message string) {
	for _, v := range []struct {
		name string
		p    *float64
	}{{"gpu_hour_usd", p.GPUHourUSD}, {"hardware_usd", p.HardwareUSD}, {"amortization_years", p.AmortizationYears}, {"electricity_usd_per_kwh", p.ElectricityUSDPerKWh}} {
		if v.p != nil && (math.IsNaN(*v.p) || math.IsInf(*v.p, 0) || *v.p < 0) {
			return v.name, "must be a finite number, not negative"
		}
	}
	switch {
	case p.GPUHourUSD != nil && p.HardwareUSD != nil:
		return "hardware_usd", "gpu_hour_usd prices a rented GPU and hardware_usd an owned one: give one or the other"
	case p.GPUHourUSD != nil && p.AmortizationYears != nil:
		return "amortization_years", "gpu_hour_usd prices a rented GPU: amortization_years is for an owned one (with hardware_usd)"
	case p.GPUHourUSD != nil && p.ElectricityUSDPerKWh != nil:
		return "electricity_usd_per_kwh", "gpu_hour_usd prices a rented GPU, power included: electricity_usd_per_kwh is for an owned one"
	case p.HardwareUSD != nil && p.AmortizationYears == nil:
		return "amortization_years", "hardware_usd needs amortization_years, the years it is paid off over"
	case p.AmortizationYears != nil && p.HardwareUSD == nil:
		return "hardware_usd", "amortization_years needs hardware_usd, the price of one GPU"
	case p.AmortizationYears != nil && *p.AmortizationYears == 0:
		return "amortization_years", "must be more than 0"
	case p.Owned() && p.ElectricityUSDPerKWh == nil:
		return "electricity_usd_per_kwh", "an owned GPU's cost needs electricity_usd_per_kwh (0 when power is free)"
	}
	return "", ""
}

// Where a power figure comes from, best first.
const (
	PowerMeasured   = "measured"    // the run's (or its cell's) measured average draw
	PowerLimit      = "power_limit" // the launch's power limit
	PowerCatalogTDP = "catalog_tdp" // the hardware catalog's TDP
	// PowerSystemMax is the catalog's maximum power of the whole system a
	// GPU without a TDP ships in (an Apple Mac): more than the GPU draws.
	PowerSystemMax = "system_max_power"
)

// Power is one GPU's draw in watts and where the figure comes from.
type Power struct {
	WattsPerGPU float64
	Source      string
}

// PowerOf picks the best power figure there is, per GPU: measured, else
// the power limit, else the catalog's TDP, else the catalog's system
// maximum (nil or non-positive: absent).
func PowerOf(measuredW, limitW, tdpW, systemMaxW *float64) (Power, bool) {
	for _, c := range []struct {
		w      *float64
		source string
	}{{measuredW, PowerMeasured}, {limitW, PowerLimit}, {tdpW, PowerCatalogTDP}, {systemMaxW, PowerSystemMax}} {
		if c.w != nil && *c.w > 0 && !math.IsInf(*c.w, 0) {
			return Power{WattsPerGPU: *c.w, Source: c.source}, true
		}
	}
	return Power{}, false
}

// ErrNoPower: an owned GPU's electricity cannot be priced without its
// power.
var ErrNoPower = errors.New("no power figure for this GPU (measured, power limit, catalog TDP or system maximum)")

// HourlyUSD is what gpus GPUs cost an hour: gpus × gpu_hour_usd rented;
// owned, gpus × hardware_usd / (amortization_years × 8766 h) plus
// gpus × watts per GPU / 1000 × electricity_usd_per_kwh. power may be nil
// when electricity costs nothing. p must pass Check.
func HourlyUSD(p Price, gpus int, power *Power) (float64, error) {
	n := float64(gpus)
	if p.GPUHourUSD != nil {
		return n * *p.GPUHourUSD, nil
	}
	var usd float64
	if p.HardwareUSD != nil {
		usd = n * *p.HardwareUSD / (*p.AmortizationYears * HoursPerYear)
	}
	if e := *p.ElectricityUSDPerKWh; e > 0 {
		if power == nil {
			return 0, ErrNoPower
		}
		usd += n * power.WattsPerGPU / 1000 * e
	}
	return usd, nil
}

// USDPerMillion is the cost of a million output tokens at usdPerHour and
// totalTokS: usdPerHour / (totalTokS × 3600) × 10⁶ (+Inf at 0 tok/s).
func USDPerMillion(usdPerHour, totalTokS float64) float64 {
	if totalTokS <= 0 {
		return math.Inf(1)
	}
	return usdPerHour / (totalTokS * 3600) * 1e6
}

// JoulesPerToken is the energy of one output token: gpus × watts per GPU
// / totalTokS (+Inf at 0 tok/s).
func JoulesPerToken(p Power, gpus int, totalTokS float64) float64 {
	if totalTokS <= 0 {
		return math.Inf(1)
	}
	return float64(gpus) * p.WattsPerGPU / totalTokS
}

// Cost is what an answer costs: one instance of GPUs GPUs.
type Cost struct {
	GPUs  int
	Owned bool
	// USDPerHour is nil when it cannot be priced (ErrNoPower).
	USDPerHour *float64
	// USDPerMillion follows from the total tok/s interval: its low end
	// from the high end of tok/s and its high end from the low end; nil
	// without a price, a speed, or when the speed's low end is 0.
	USDPerMillion *Estimate
	// Power is nil when no figure is known; JoulesPerToken then is nil.
	Power          *Power
	JoulesPerToken *Estimate
}

// inverse maps a tok/s interval through f, decreasing in tok/s; nil when
// the interval reaches 0.
func inverse(total Estimate, f func(float64) float64) *Estimate {
	if !(total.Low > 0) {
		return nil
	}
	return &Estimate{Value: f(total.Value), Low: f(total.High), High: f(total.Low)}
}

// CostOf prices gpus GPUs running at total tok/s (nil: no speed) at p,
// with power per GPU if known. err is ErrNoPower when p needs power that
// is not known (the energy is still given when it is).
func CostOf(p Price, gpus int, power *Power, total *Estimate) (Cost, error) {
	out := Cost{GPUs: gpus, Owned: p.Owned(), Power: power}
	hourly, err := HourlyUSD(p, gpus, power)
	if err == nil {
		out.USDPerHour = &hourly
	}
	if total == nil {
		return out, err
	}
	if err == nil {
		out.USDPerMillion = inverse(*total, func(t float64) float64 { return USDPerMillion(hourly, t) })
	}
	if power != nil {
		out.JoulesPerToken = inverse(*total, func(t float64) float64 { return JoulesPerToken(*power, gpus, t) })
	}
	return out, err
}
