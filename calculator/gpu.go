package calculator

import (
	"fmt"
	"sort"
	"strings"
)

// GPUSpec is what scaling speed to another GPU needs.
type GPUSpec struct {
	Name         string
	Generation   string
	BandwidthGBs float64
	VRAMGB       float64
}

// knownGPUs lists memory bandwidth (GB/s) and default VRAM of common
// inference GPUs, from the vendors' data sheets.
func knownGPUs() []GPUSpec {
	return []GPUSpec{
		{"RTX 3060", "ampere", 360, 12}, {"RTX 3060 Ti", "ampere", 448, 8}, {"RTX 3070", "ampere", 448, 8},
		{"RTX 3080", "ampere", 760, 10}, {"RTX 3080 Ti", "ampere", 912, 12}, {"RTX 3090", "ampere", 936, 24},
		{"RTX 3090 Ti", "ampere", 1008, 24}, {"RTX A4000", "ampere", 448, 16}, {"RTX A5000", "ampere", 768, 24},
		{"RTX A6000", "ampere", 768, 48}, {"A10", "ampere", 600, 24}, {"A100", "ampere", 2039, 80},
		{"A100 40GB", "ampere", 1555, 40},
		{"RTX 4060", "ada", 272, 8}, {"RTX 4060 Ti", "ada", 288, 16}, {"RTX 4070", "ada", 504, 12},
		{"RTX 4070 Ti", "ada", 504, 12}, {"RTX 4070 Ti Super", "ada", 672, 16}, {"RTX 4080", "ada", 717, 16},
		{"RTX 4080 Super", "ada", 736, 16}, {"RTX 4090", "ada", 1008, 24}, {"L4", "ada", 300, 24},
		{"L40S", "ada", 864, 48}, {"RTX 6000 Ada", "ada", 960, 48},
		{"H100", "hopper", 3350, 80}, {"H100 PCIe", "hopper", 2000, 80}, {"H200", "hopper", 4800, 141},
		{"RTX 5060 Ti", "blackwell", 448, 16}, {"RTX 5070", "blackwell", 672, 12}, {"RTX 5070 Ti", "blackwell", 896, 16},
		{"RTX 5080", "blackwell", 960, 16}, {"RTX 5090", "blackwell", 1792, 32}, {"RTX PRO 6000", "blackwell", 1792, 96},
		{"B200", "blackwell", 8000, 192},
	}
}

func normGPU(s string) string {
	s = strings.ToLower(s)
	for _, drop := range []string{"nvidia", "geforce"} {
		s = strings.ReplaceAll(s, drop, "")
	}
	return strings.Join(strings.Fields(s), " ")
}

// LookupGPU finds a GPU by name, ignoring case, spacing and vendor words.
func LookupGPU(name string) (GPUSpec, bool) {
	n := normGPU(name)
	for _, g := range knownGPUs() {
		if normGPU(g.Name) == n {
			return g, true
		}
	}
	return GPUSpec{}, false
}

// KnownGPUNames lists the GPUs speed can be scaled to.
func KnownGPUNames() []string {
	var names []string
	for _, g := range knownGPUs() {
		names = append(names, g.Name)
	}
	sort.Strings(names)
	return names
}

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
	if q.TargetGPU == "" || normGPU(q.TargetGPU) == normGPU(m.run.GPU) {
		return gpuScaling{ratio: 1}, nil
	}
	supported := "target_gpu one of: " + strings.Join(KnownGPUNames(), ", ")
	from, ok := LookupGPU(m.run.GPU)
	if !ok {
		return gpuScaling{}, refuse(supported, "the run's GPU %q has no known memory bandwidth, so its speed cannot be moved to another GPU", m.run.GPU)
	}
	to, ok := LookupGPU(q.TargetGPU)
	if !ok {
		return gpuScaling{}, refuse(supported, "GPU %q is not one whose memory bandwidth is known", q.TargetGPU)
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
