package predict

import (
	"context"
	"errors"

	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/msg"
)

// CheckPrice is a 400 naming the parameter that makes p unusable.
func CheckPrice(p calculator.Price) error {
	if field, msg := p.Check(); field != "" {
		return invalidParam(field, msg)
	}
	return nil
}

// catalogPower is the catalog's TDP of gpu and its system's maximum power
// (each nil when unknown).
func catalogPower(gpu string) (tdp, systemMax *float64) {
	if spec, ok := calculator.LookupGPU(gpu); ok {
		return spec.TDPW, spec.SystemMaxPowerW
	}
	return nil, nil
}

// priced prices gpus GPUs of gpu at total tok/s, saying in a warning what
// could not be priced.
func priced(p calculator.Price, gpu string, gpus int, power *calculator.Power, total *calculator.Estimate) (*calculator.Cost, []msg.Message) {
	c, err := calculator.CostOf(p, gpus, power, total)
	var warn []msg.Message
	switch {
	case errors.Is(err, calculator.ErrNoPower):
		warn = append(warn, msg.New("predict.cost_no_power", gpu))
	case total != nil && c.USDPerMillion == nil && c.USDPerHour != nil:
		warn = append(warn, msg.New("predict.cost_unbounded"))
	}
	if power == nil && err == nil && total != nil {
		// A rented GPU is priced without its power: only the energy per
		// token is missing, and says so.
		warn = append(warn, msg.New("predict.energy_no_power", gpu))
	}
	return &c, warn
}

// power is one GPU's power: measured, else the launch's limit, else the
// catalog's TDP of gpu, else its system's maximum. Scaled to gpu from
// another GPU, only the catalog's figures; for another model on the run's
// GPU, not the draw measured with the run's model, but the limit the
// machine was launched with.
func power(measured, limit *float64, gpu string, otherGPU, otherModel bool) *calculator.Power {
	if otherGPU {
		measured, limit = nil, nil
	}
	if otherModel {
		measured = nil
	}
	tdp, systemMax := catalogPower(gpu)
	pw, ok := calculator.PowerOf(measured, limit, tdp, systemMax)
	if !ok {
		return nil
	}
	return &pw
}

// DecodeCost prices a decode answer: the instance of the run it was
// modelled from (its GPU count), at the answer's total tok/s. Without a
// price it is nil.
func (c *Service) DecodeCost(ctx context.Context, a Answer[calculator.Prediction], q calculator.Query, p calculator.Price) (*calculator.Cost, []msg.Message, error) {
	if !p.Given() {
		return nil, nil, nil
	}
	costs, warn, err := c.Costs(ctx, a.RunIDs[0], q, p, []calculator.Prediction{a.Result})
	if err != nil {
		return nil, nil, err
	}
	return costs[0], warn, nil
}

// GridCosts prices a grid's cells as DecodeCost does one, in the order of
// its cells; a refused cell's is nil, and every one is without a price.
func (c *Service) GridCosts(ctx context.Context, a Answer[Grid], q calculator.Query, p calculator.Price) ([]*calculator.Cost, []msg.Message, error) {
	if !p.Given() {
		return make([]*calculator.Cost, len(a.Result.Cells)), nil, nil
	}
	preds := make([]calculator.Prediction, len(a.Result.Cells))
	for i, gc := range a.Result.Cells {
		preds[i] = gc.Prediction
	}
	costs, warn, err := c.Costs(ctx, a.RunIDs[0], q, p, preds)
	if err != nil {
		return nil, nil, err
	}
	for i, gc := range a.Result.Cells {
		if gc.Refusal != nil {
			costs[i] = nil
		}
	}
	return costs, warn, nil
}

// Costs prices predictions of run id asked with q (a grid's cells): each
// at its total tok/s, with the power of its measured cell, else of the
// run. The warnings are each said once.
func (c *Service) Costs(ctx context.Context, id string, q calculator.Query, p calculator.Price, preds []calculator.Prediction) ([]*calculator.Cost, []msg.Message, error) {
	r, err := c.store.Run(ctx, id)
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
	cellPower := map[calculator.CellRef]*float64{}
	for _, cell := range r.Decode {
		if cell.AvgPowerW != nil {
			cellPower[calculator.CellRef{ContextTokens: cell.ContextTokens, Concurrency: cell.Concurrency}] = cell.AvgPowerW
		}
	}
	out := make([]*calculator.Cost, len(preds))
	var warn []msg.Message
	said := map[string]bool{}
	for i, pred := range preds {
		// A measured answer is its cell's measurement, power included.
		measured := r.Hardware.AvgPowerW
		if pred.Basis == calculator.Measured && len(pred.Cells) == 1 && cellPower[pred.Cells[0]] != nil {
			measured = cellPower[pred.Cells[0]]
		}
		var w []msg.Message
		pw := power(measured, r.Hardware.PowerLimitW, gpu, q.TargetGPU != "", pred.Basis == calculator.ScaledModel)
		out[i], w = priced(p, gpu, gpus, pw, pred.TotalTokS)
		for _, x := range w {
			if !said[x.Text] {
				said[x.Text] = true
				warn = append(warn, x)
			}
		}
	}
	return out, warn, nil
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
