package predict

import (
	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/store"
)

// Run maps a stored run to what the calculator models.
func Run(r store.Run) calculator.Run {
	out := calculator.Run{
		ID:           r.ID,
		GPU:          r.Hardware.GPU,
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
	for _, c := range r.Decode {
		out.Decode = append(out.Decode, calculator.Cell{
			ContextTokens: c.ContextTokens, Concurrency: c.Concurrency, Status: c.Status,
			TotalTokS: c.TotalTokS, PerRequestTokS: c.PerRequestTokS, TTFTMs: c.TTFTMs, TBTMs: c.TBTMs,
			AvgActiveRequests: c.AvgActiveRequests, OutputTokens: c.OutputTokens, DurationS: c.DurationS,
		})
	}
	for _, p := range r.Prefill {
		if p.Status == store.StatusValid && p.TTFTMs != nil {
			out.Prefill = append(out.Prefill, calculator.PrefillPoint{ContextTokens: p.ContextTokens, TTFTMs: *p.TTFTMs})
		}
	}
	return out
}
