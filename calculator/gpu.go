package calculator

import (
	"fmt"
)

// Bands of a cross-GPU answer: memory bandwidth explains the weight-streaming
// term to within a few percent, but not the KV term, which is kept from the
// measured GPU; rough estimates across generations get twice that.
const (
	gpuBand      = 0.20
	gpuRoughBand = 0.40
)

// gpuScaling says how to move step times to another GPU: the physical
// model's intercept (weight streaming per step) scales with bandwidth.
type gpuScaling struct {
	scaled   bool
	ratio    float64 // measured bandwidth / target bandwidth
	band     float64
	target   GPUSpec
	warnings []string
}

func (m *Model) gpuScale(q Query) (gpuScaling, error) {
	if q.TargetGPU == "" || gpuKey(q.TargetGPU) == gpuKey(m.run.GPU) {
		return gpuScaling{ratio: 1}, nil
	}
	from, ok := LookupGPU(m.run.GPU)
	if !ok {
		return gpuScaling{}, refuse("runs measured on a GPU of the hardware catalog (GET /v1/hardware)", "the run's GPU %q is not in the hardware catalog, so its speed cannot be moved to another GPU", clipName(m.run.GPU))
	}
	to, ok := LookupGPU(q.TargetGPU)
	if !ok {
		return gpuScaling{}, unknownGPU(q.TargetGPU, "memory bandwidth")
	}
	if to.Name == from.Name {
		return gpuScaling{ratio: 1}, nil
	}
	s := gpuScaling{scaled: true, ratio: from.BandwidthGBs / to.BandwidthGBs, band: gpuBand, target: to}
	if from.Generation != to.Generation {
		if !q.Rough {
			return gpuScaling{}, refuse("a GPU of the measured one's generation ("+from.Generation+"), or rough=true for a labelled rough estimate",
				"%s (%s) and %s (%s) are different GPU generations: kernels and KV-read efficiency change, so the measured speed does not carry over",
				from.Name, from.Generation, to.Name, to.Generation)
		}
		s.band = gpuRoughBand
		s.warnings = append(s.warnings, fmt.Sprintf("rough estimate across GPU generations (%s → %s): ±%.0f%%", from.Generation, to.Generation, 100*gpuRoughBand))
	}
	s.warnings = append(s.warnings, fmt.Sprintf("speed moved from %s (%.0f GB/s) to %s (%.0f GB/s): the weight-streaming term scales with memory bandwidth, the per-sequence and KV-read terms are kept from the measured GPU; ±%.0f%%",
		from.Name, from.BandwidthGBs, to.Name, to.BandwidthGBs, 100*s.band))
	return s, nil
}

// apply moves step times t and s to the target GPU.
func (g gpuScaling) apply(m *Model, t, s float64) (float64, float64) {
	if !g.scaled {
		return t, s
	}
	aT, aS := m.sf.physT[0], m.sf.physS[0]
	// The intercept can exceed a small step time only by fit error; keep at
	// least the part that does not scale.
	aT, aS = min(aT, 0.95*t), min(aS, 0.95*s)
	return t - aT*(1-g.ratio), s - aS*(1-g.ratio)
}
