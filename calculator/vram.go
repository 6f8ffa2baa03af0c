package calculator

import (
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/matrixd/matrixd/msg"
)

// vramScaling is the factor range by which another VRAM size (or memory
// utilization) scales the KV pool.
type vramScaling struct {
	lo, hi   float64
	scaled   bool
	warnings []msg.Message
}

// noRoom is the refusal of a VRAM size that does not hold the model's
// weights and a KV cache: nothing runs there, whatever else is asked.
type noRoom struct{ *Refusal }

func (e noRoom) Unwrap() error { return e.Refusal }

// Overhead outside weights and KV cache (activations, CUDA graphs, the
// runtime) is not published; the interval spans a plausible range.
const (
	overheadLowGB  = 0.5
	overheadHighGB = 2.0
)

// A KV pool scaled by a ratio outside poolConfidentLow–poolConfidentHigh
// is said to be read with low confidence.
const (
	poolConfidentLow  = 0.77
	poolConfidentHigh = 1.3
)

func (m *Model) vramScale(q Query) (vramScaling, error) {
	r := m.run
	vram, util := r.VRAMGB, r.GPUMemoryUtilization
	if q.VRAMGB > 0 {
		vram = q.VRAMGB
	}
	if q.GPUMemoryUtilization > 0 {
		util = q.GPUMemoryUtilization
	}
	if vram == r.VRAMGB && util == r.GPUMemoryUtilization {
		return vramScaling{lo: 1, hi: 1}, nil
	}
	supported := msg.New("calculator.supported_vram")
	switch {
	case r.VRAMGB <= 0:
		return vramScaling{}, refuse(supported, "calculator.vram_unknown")
	case r.GPUMemoryUtilization <= 0:
		return vramScaling{}, refuse(supported, "calculator.utilization_unknown")
	case r.ParamsB <= 0:
		return vramScaling{}, refuse(supported, "calculator.model_size_unknown")
	}
	weights := r.ParamsB * r.WeightBytesPerParam()
	if weights <= 0 {
		return vramScaling{}, refuse(supported, "calculator.quantization_bytes_unknown")
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, o := range []float64{overheadLowGB, overheadHighGB} {
		base := r.VRAMGB*r.GPUMemoryUtilization - weights - o
		next := vram*util - weights - o
		if base <= 0 {
			return vramScaling{}, refuse(supported, "calculator.kv_pool_not_positive", r.VRAMGB, r.GPUMemoryUtilization, weights)
		}
		if next <= 0 {
			return vramScaling{}, noRoom{NewRefusal(msg.New("calculator.vram_no_room", vram, util, vram*util, weights, o),
				msg.New("calculator.supported_vram_room", (weights+o)/util, util))}
		}
		ratio := next / base
		lo, hi = math.Min(lo, ratio), math.Max(hi, ratio)
	}
	s := vramScaling{lo: lo, hi: hi, scaled: true}
	s.warnings = append(s.warnings, msg.New("calculator.kv_scaled_vram",
		r.VRAMGB, r.GPUMemoryUtilization, vram, util, lo, hi))
	if lo < poolConfidentLow || hi > poolConfidentHigh {
		s.warnings = append(s.warnings, msg.New("calculator.kv_scaled_low_confidence", poolConfidentLow, poolConfidentHigh))
	}
	return s, nil
}

// WeightBytesPerParam is the weights' memory per parameter implied by the
// run's quantization: ≈ 0.52 for 4-bit linear layers with bf16 embeddings,
// about 1.05 for 8-bit, 2 for 16-bit; 0 when it cannot tell.
func (r Run) WeightBytesPerParam() float64 {
	q := strings.ToLower(r.Quantization)
	switch {
	case q == "":
		return 0
	case strings.Contains(q, "4-bit") || strings.Contains(q, "w4") || strings.Contains(q, "int4") ||
		strings.Contains(q, "awq") || strings.Contains(q, "4bit") || strings.Contains(q, "nf4") || strings.Contains(q, "q4") || strings.Contains(q, "fp4"):
		return 0.52
	case strings.Contains(q, "fp8") || strings.Contains(q, "int8") || strings.Contains(q, "w8") || strings.Contains(q, "8-bit") || strings.Contains(q, "q8"):
		return 1.05
	case strings.Contains(q, "bf16") || strings.Contains(q, "fp16") || strings.Contains(q, "16-bit"):
		return 2
	}
	return 0
}

var paramsRe = regexp.MustCompile(`(?i)(?:^|[^a-z0-9.])(\d+(?:\.\d+)?)b(?:$|[^a-z0-9])`)

// ParamsFromName reads a parameter count in billions from a model name such
// as "NVIDIA-Nemotron-Nano-12B-v2" or "Qwen3-30B-A3B" (the first count, the
// total); 0 when there is none.
func ParamsFromName(name string) float64 {
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	m := paramsRe.FindStringSubmatch(name)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0
	}
	return v
}
