package predict

import (
	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/store"
)

// Run maps a stored run to what the calculator models. The cells' values
// are copied into arrays of their own, so that a kept fit holds just them
// (calculator.Model.Bytes counts them so), not the small allocations they
// were read into, each sharing its block with values the fit drops.
func Run(r store.Run) calculator.Run {
	out := calculator.Run{
		ID:           r.ID,
		GPU:          r.Hardware.GPU,
		Engine:       r.Engine.Name,
		Method:       r.MethodOf().Class,
		Quantization: r.Model.Quantization,
		ParamsB:      calculator.ParamsFromName(r.Model.Name),
	}
	if out.Quantization == "" {
		out.Quantization = r.Engine.Quantization
	}
	if r.Launch.MaxModelLen != nil {
		out.MaxModelLen = *r.Launch.MaxModelLen
	}
	if r.Launch.MaxNumSeqs != nil {
		out.MaxNumSeqs = *r.Launch.MaxNumSeqs
	}
	if r.Benchmark.MaxOutputTokens != nil {
		out.MaxOutputTokens = *r.Benchmark.MaxOutputTokens
	}
	if r.Launch.GPUMemoryUtilization != nil {
		out.GPUMemoryUtilization = *r.Launch.GPUMemoryUtilization
	}
	if r.Hardware.VRAMGB != nil {
		out.VRAMGB = *r.Hardware.VRAMGB
	}
	if r.Benchmark.SecondsPerMeasurement != nil {
		out.WindowS = *r.Benchmark.SecondsPerMeasurement
	}
	nf, ni := 0, 0
	for _, c := range r.Decode {
		for _, p := range []*float64{c.TotalTokS, c.PerRequestTokS, c.TTFTMs, c.TBTMs, c.AvgActiveRequests, c.DurationS} {
			if p != nil {
				nf++
			}
		}
		if c.OutputTokens != nil {
			ni++
		}
	}
	floats, ints := make([]float64, 0, nf), make([]int, 0, ni)
	f := func(p *float64) *float64 {
		if p == nil {
			return nil
		}
		floats = append(floats, *p)
		return &floats[len(floats)-1]
	}
	out.Decode = make([]calculator.Cell, 0, len(r.Decode))
	for _, c := range r.Decode {
		var tokens *int
		if c.OutputTokens != nil {
			ints = append(ints, *c.OutputTokens)
			tokens = &ints[len(ints)-1]
		}
		out.Decode = append(out.Decode, calculator.Cell{
			ContextTokens: c.ContextTokens, Concurrency: c.Concurrency, Status: status(c.Status),
			TotalTokS: f(c.TotalTokS), PerRequestTokS: f(c.PerRequestTokS), TTFTMs: f(c.TTFTMs), TBTMs: f(c.TBTMs),
			AvgActiveRequests: f(c.AvgActiveRequests), OutputTokens: tokens, DurationS: f(c.DurationS),
		})
	}
	for _, p := range r.Prefill {
		if p.Status == store.StatusValid && p.TTFTMs != nil {
			out.Prefill = append(out.Prefill, calculator.PrefillPoint{ContextTokens: p.ContextTokens, TTFTMs: *p.TTFTMs})
		}
	}
	return out
}

// status is a cell's status as the calculator's constant, so that the
// cells share its text.
func status(s string) string {
	for _, known := range []string{calculator.CellValid, calculator.CellRequestsQueued, calculator.CellOverCapacity} {
		if s == known {
			return known
		}
	}
	return s
}
