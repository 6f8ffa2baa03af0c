package trust

import (
	"strings"

	"github.com/matrixd/matrixd/msg"
)

// Calibration is how close to its physical bandwidth bound a run of one
// engine family at one weight width may come: the highest share the real
// runs of the repository reach, times CalibrationMargin, but never below
// PhysicalCeiling; families with no real run keep UncalibratedCap.
type Calibration struct {
	Family, Bits string
	// Runs is how many real runs the highest share was read from; Highest
	// that share (of the bound at × 1).
	Runs    int
	Highest float64
	Cap     float64
}

const (
	// CalibrationMargin is how far above the highest real share a run of
	// the family may go: another engine version or GPU does better.
	CalibrationMargin = 1.25
	// PhysicalCeiling is the lowest cap any family gets: the GPU's peak
	// bandwidth, plus 10 % for what the bound counts and a step does not
	// read (the input embedding's other rows). No engine reads faster than
	// the memory can deliver, so a run above it is not a better engine.
	PhysicalCeiling = 1.1
	// UncalibratedCap is the cap of a family the real runs do not cover:
	// the rule before calibration (× 1.5 the physical bound).
	UncalibratedCap = 1.5
)

// observed are the highest shares of the physical bound the real runs
// reach per engine family and weight width: every run matrixd ships (the
// bundled pages, the open dataset, the published grids and the corpus)
// and the sparse grids, as matrixd eval --trust measures them
// (cmd/matrixd's TestTrustCalibration holds this table to the runs: a new
// real run above a figure here fails it). "other engines" are Ollama,
// LM Studio, MLX and ds4 runs of the open dataset.
func observed() []Calibration {
	return []Calibration{
		{Family: "llama.cpp", Bits: "≤ 4.5 bits", Runs: 365, Highest: 0.85},
		{Family: "llama.cpp", Bits: "5–8.5 bits", Runs: 13, Highest: 0.90},
		{Family: "other engines", Bits: "≤ 4.5 bits", Runs: 81, Highest: 0.87},
		{Family: "other engines", Bits: "5–8.5 bits", Runs: 3, Highest: 0.55},
		{Family: "LMDeploy", Bits: "16 bits", Runs: 6, Highest: 0.76},
		{Family: "TensorRT-LLM", Bits: "16 bits", Runs: 9, Highest: 0.71},
		{Family: "vLLM", Bits: "≤ 4.5 bits", Runs: 11, Highest: 0.62},
		{Family: "vLLM", Bits: "5–8.5 bits", Runs: 2, Highest: 0.02},
		{Family: "vLLM", Bits: "16 bits", Runs: 13, Highest: 0.88},
		{Family: "SGLang", Bits: "≤ 4.5 bits", Runs: 1, Highest: 0.05},
		{Family: "SGLang", Bits: "5–8.5 bits", Runs: 3, Highest: 0.07},
		{Family: "SGLang", Bits: "16 bits", Runs: 5, Highest: 0.47},
	}
}

// Calibrations is the calibration table with each row's cap.
func Calibrations() []Calibration {
	out := observed()
	for i := range out {
		out[i].Cap = max(out[i].Highest*CalibrationMargin, PhysicalCeiling)
	}
	return out
}

// Calibrated is the calibration of a run of engine at bits a weight.
func Calibrated(engine string, bits float64) Calibration {
	fam, width := EngineFamily(engine), BitsClass(bits)
	for _, c := range Calibrations() {
		if c.Family == fam && c.Bits == width {
			return c
		}
	}
	return Calibration{Family: fam, Bits: width, Cap: UncalibratedCap}
}

// EngineFamily is the family an engine name belongs to.
func EngineFamily(engine string) string {
	s := strings.ToLower(engine)
	switch {
	case strings.Contains(s, "llama.cpp"), strings.Contains(s, "llama-cpp"), strings.Contains(s, "llamacpp"), strings.Contains(s, "ggml"):
		return "llama.cpp"
	case strings.Contains(s, "vllm"):
		return "vLLM"
	case strings.Contains(s, "sglang"):
		return "SGLang"
	case strings.Contains(s, "tensorrt"), strings.Contains(s, "trt-llm"), strings.Contains(s, "trtllm"):
		return "TensorRT-LLM"
	case strings.Contains(s, "lmdeploy"):
		return "LMDeploy"
	}
	if engine == "" {
		return "unstated engine"
	}
	return "other engines"
}

// BitsClass is the weight width class of bits a weight.
func BitsClass(bits float64) string {
	switch {
	case bits <= 4.5:
		return "≤ 4.5 bits"
	case bits <= 8.5:
		return "5–8.5 bits"
	}
	return "16 bits"
}

func (c Calibration) describe() msg.Message {
	if c.Runs == 0 {
		return msg.New("trust.calibration_none", c.Family, c.Bits, UncalibratedCap)
	}
	return msg.New("trust.calibration", c.Family, c.Bits, 100*c.Highest, CalibrationMargin, 100*PhysicalCeiling)
}
