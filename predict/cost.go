package predict

import (
	"context"
	"errors"
	"fmt"

	"github.com/matrixd/matrixd/calculator"
)

// CheckPrice is a 400 naming the parameter that makes p unusable.
func CheckPrice(p calculator.Price) error {
	if field, msg := p.Check(); field != "" {
		return invalidParam(field, msg)
	}
	return nil
}

// tdp is the catalog's TDP of gpu (nil when unknown).
func tdp(gpu string) *float64 {
	if spec, ok := calculator.LookupGPU(gpu); ok {
		return spec.TDPW
	}
	return nil
}

// priced prices gpus GPUs of gpu at total tok/s, saying in a warning what
// could not be priced.
func priced(p calculator.Price, gpu string, gpus int, power *calculator.Power, total *calculator.Estimate) (*calculator.Cost, []string) {
	c, err := calculator.CostOf(p, gpus, power, total)
	var warn []string
	switch {
	case errors.Is(err, calculator.ErrNoPower):
		warn = append(warn, fmt.Sprintf("cost: %s has no power figure (no measured power, no power_limit_w, no TDP in the hardware catalog): its electricity cannot be priced", gpu))
	case total != nil && c.USDPerMillion == nil && c.USDPerHour != nil:
		warn = append(warn, "cost: the total tok/s interval reaches 0, so the cost per token has no upper bound")
	}
	return &c, warn
}

// power is one GPU's power: measured, else the launch's limit, else the
// catalog's TDP of gpu; scaled to gpu from another GPU, only that TDP.
func power(measured, limit *float64, gpu string, scaled bool) *calculator.Power {
	if scaled {
		measured, limit = nil, nil
	}
	pw, ok := calculator.PowerOf(measured, limit, tdp(gpu))
	if !ok {
		return nil
	}
	return &pw
}

// DecodeCost prices a decode answer: the instance of the run it was
// modelled from (its GPU count), at the answer's total tok/s.
func (c *Service) DecodeCost(ctx context.Context, a Answer[calculator.Prediction], q calculator.Query, p calculator.Price) (*calculator.Cost, []string, error) {
	r, err := c.store.Run(ctx, a.RunIDs[0])
	if err != nil {
		return nil, nil, err
	}
	gpus := 1
	if r.Hardware.GPUCount != nil && *r.Hardware.GPUCount > 0 {
		gpus = *r.Hardware.GPUCount
	}
	gpu := r.Hardware.GPU
	if q.TargetGPU != "" {
		gpu = q.TargetGPU
	}
	// A measured answer is its cell's measurement, power included.
	measured := r.Hardware.AvgPowerW
	if res := a.Result; res.Basis == calculator.Measured && len(res.Cells) == 1 {
		for _, c := range r.Decode {
			if c.ContextTokens == res.Cells[0].ContextTokens && c.Concurrency == res.Cells[0].Concurrency && c.AvgPowerW != nil {
				measured = c.AvgPowerW
			}
		}
	}
	pw := power(measured, r.Hardware.PowerLimitW, gpu, q.TargetGPU != "")
	cost, warn := priced(p, gpu, gpus, pw, a.Result.TotalTokS)
	return cost, warn, nil
}

// costKey is what sort=cost orders by: with users, the fleet's USD an
// hour; else USD per million output tokens (false: no cost).
func costKey(o PlanOption, users int) (float64, bool) {
	if o.Cost == nil {
		return 0, false
	}
	if users > 0 {
		if o.Cost.USDPerHour == nil || o.Plan.Instances == 0 {
			return 0, false
		}
		return float64(o.Plan.Instances) * *o.Cost.USDPerHour, true
	}
	if o.Cost.USDPerMillion == nil {
		return 0, false
	}
	return o.Cost.USDPerMillion.Value, true
}
