// Package trust checks a run's numbers against physics and against
// themselves: pure functions of a run plus the hardware and model
// catalogs, with no I/O. A run that fails a check is flagged, never
// refused: a rule must never shut a real result out.
package trust

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/matrixd/matrixd/msg"
)

// RulesVersion changes whenever a rule or a catalog changes what the
// checks would say: runs checked by other rules are checked again.
const RulesVersion = 5

// Check codes and statuses.
const (
	CodeBandwidth         = "bandwidth"
	CodeTotalVsPerRequest = "total_vs_per_request"
	CodeTBTVsPerRequest   = "tbt_vs_per_request"
	CodeMethodShape       = "method_shape"
	StatusPassed          = "passed"
	StatusFlagged         = "flagged"
	StatusNotChecked      = "not_checked"
	maxFlagsPerCheck      = 5
	bytesPerGB            = 1e9
	kvBytesWhenUnstated   = 0.5 // the fewest any engine stores (4-bit KV)
	// ollamaDefaultBits is what a weight of an Ollama tag naming no
	// quantization (nor MLX) takes: the library's default tags are Q4_K_M,
	// 4.5 bits with its scales; 4 keeps the bound generous.
	ollamaDefaultBits = 4
)

// Run is what the checks read of a run.
type Run struct {
	Model        string
	Quantization string // the model's or the engine's, as stated
	KVCacheDtype string
	Engine       string
	GPU          string
	GPUCount     int // 0: not stated
	// TensorParallel is the GPUs one copy of the weights is split over
	// (the launch's tensor-parallel size); 0: not stated.
	TensorParallel int
	// PipelineParallel is the stages the layers are split into (the
	// launch's pipeline-parallel size); 0: not stated.
	PipelineParallel int
	SpecDecode       bool // speculative decoding is on: several tokens per weight read
	// Class is the run's method class (store's MethodClasses); Measurement
	// its stated seconds per cell and OutputTokensPerRequest its stated
	// output length, where stated.
	Class                  string
	MeasurementS           *float64
	OutputTokensPerRequest *int
	Cells                  []Cell
}

// Cell is one valid decode cell; absent values are nil.
type Cell struct {
	ContextTokens, Concurrency int
	TotalTokS, PerRequestTokS  *float64
	TBTMs, AvgActiveRequests   *float64
	OutputTokens               *int
	CompletedRequests          *int
	DurationS                  *float64
}

// tokensPerRequest is what a cell's requests produced each, when it says.
func tokensPerRequest(c Cell) (float64, bool) {
	if c.OutputTokens == nil || c.CompletedRequests == nil || *c.CompletedRequests <= 0 {
		return 0, false
	}
	return float64(*c.OutputTokens) / float64(*c.CompletedRequests), true
}

// GPU is what the checks need of the hardware catalog's entry.
type GPU struct {
	Name         string
	BandwidthGBs float64
}

// Report is the outcome of every check of a run.
type Report struct {
	Flagged bool
	Flags   []Flag
	Checks  []Check
}

// Flag is one cell that failed a check, with the numbers compared.
type Flag struct {
	Code    string
	Message string
	// Notice is Message with its code and parameters.
	Notice                     msg.Message
	ContextTokens, Concurrency int
	Measured, Limit            float64
	Unit                       string
}

// Check is one check's outcome for the whole run.
type Check struct {
	Code, Status, Detail string
	// Notice is Detail with its code and parameters.
	Notice msg.Message
}

// says sets c's detail to m.
func (c *Check) says(m msg.Message) { c.Detail, c.Notice = m.Text, m }

// saying is f with its message m.
func (f Flag) saying(m msg.Message) Flag {
	f.Message, f.Notice = m.Text, m
	return f
}

// Assess runs every check of r; gpu and model are nil when the catalogs do
// not know them (those checks then say not checked). model may be one
// ModelFromName made from the run's model name.
func Assess(r Run, gpu *GPU, model *Model) Report {
	var rep Report
	for _, check := range []func(Run, *GPU, *Model) (Check, []Flag){bandwidth, totalVsPerRequest, tbtVsPerRequest, methodShape} {
		c, flags := check(r, gpu, model)
		rep.Checks = append(rep.Checks, c)
		if len(flags) > 0 {
			rep.Flagged = true
			rep.Flags = append(rep.Flags, flags...)
		}
	}
	return rep
}

// perRequest is the cell's per-request speed: the faster of what it
// states and 1000 / TBT (a doctored TBT must not hide behind the other).
func perRequest(c Cell) (float64, bool) {
	v, ok := 0.0, false
	if c.PerRequestTokS != nil {
		v, ok = *c.PerRequestTokS, true
	}
	if c.TBTMs != nil && *c.TBTMs > 0 {
		v, ok = math.Max(v, 1000 / *c.TBTMs), true
	}
	return v, ok
}

// WeightBits is the bits a weight of r takes: its stated quantization,
// else what its model name says (…-FP8, …-AWQ), else the model's own
// published checkpoint (the model facts table) unless the name is an
// Ollama tag, whose weights are the tag's; else the fewest its source
// could have used (an Ollama tag's default, an engine that runs only its
// own files). from says which.
func WeightBits(r Run, model *Model) (bits float64, from msg.Message, ok bool) {
	if b, from, ok := StatedBits(r, model); ok {
		return b, from, true
	}
	switch e, own := ownWeights(r.Engine); {
	case r.Quantization != "":
	case OllamaTag(r.Model) && !strings.Contains(strings.ToLower(r.Model), "mlx"):
		// Its MLX tags ("…:31b-mlx") state no width, and some run faster
		// than 4-bit weights could be read: their width is not known.
		return ollamaDefaultBits, msg.New("trust.bits_from_ollama_default"), true
	case own:
		return e.bits, msg.New("trust.bits_from_own_weights", e.name, e.bits, e.source), true
	}
	return 0, msg.Message{}, false
}

// StatedBits is WeightBits where the run or its model's checkpoint says
// the width, not the fewest its source could have used: what a
// configuration is compared by.
func StatedBits(r Run, model *Model) (bits float64, from msg.Message, ok bool) {
	if b, ok := Bits(r.Quantization); ok {
		return b, msg.New("trust.bits_from_quantization", clip(r.Quantization)), true
	}
	if b, ok := Bits(r.Model); ok {
		return b, msg.New("trust.bits_from_model_name"), true
	}
	if r.Quantization == "" && model != nil && model.WeightsBits > 0 && !OllamaTag(r.Model) && loadsCheckpoint(r.Engine) {
		return model.WeightsBits, msg.New("trust.bits_from_checkpoint"), true
	}
	return 0, msg.Message{}, false
}

// Split is how many GPUs' bandwidth one request's decode step reads its
// weights with (see split).
func Split(r Run) int {
	n, _ := split(r)
	return n
}

// loadsCheckpoint reports whether engine serves a model's published
// checkpoint as it is when named by it and told no quantization: the
// serving engines that read Hugging Face checkpoints (vLLM, SGLang,
// TensorRT-LLM, LMDeploy, Transformers, Text Generation Inference). Not
// llama.cpp, Ollama, LM Studio, ONNX Runtime or MLX, which run files
// converted from it (GGUF, ONNX, MLX) under the same model names, often
// at 4 bits.
func loadsCheckpoint(engine string) bool {
	switch EngineFamily(engine) {
	case "vLLM", "SGLang", "TensorRT-LLM", "LMDeploy":
		return true
	}
	s := strings.ToLower(engine)
	return strings.Contains(s, "transformers") || strings.Contains(s, "text-generation-inference") || strings.Contains(s, "tgi")
}

// split is how many GPUs' bandwidth one request's decode step reads its
// weights with: the tensor-parallel size where the launch states it (data
// parallel copies do not speed one request); where it states only a
// pipeline-parallel size, the GPUs over that many stages (a token passes
// the stages in turn, each reading its share of the layers); else every
// GPU of the run (the most generous reading).
func split(r Run) (n int, how msg.Message) {
	if r.TensorParallel > 0 && r.TensorParallel <= r.GPUCount {
		if r.TensorParallel == 1 {
			return 1, msg.New("trust.split_tensor_parallel_one")
		}
		return r.TensorParallel, msg.New("trust.split_tensor_parallel", r.TensorParallel)
	}
	if r.TensorParallel == 0 && r.PipelineParallel > 1 && r.PipelineParallel <= r.GPUCount {
		n := r.GPUCount / r.PipelineParallel
		return n, msg.New("trust.split_pipeline_parallel", r.GPUCount, r.PipelineParallel, n)
	}
	if r.GPUCount == 1 {
		return 1, msg.New("trust.split_one_gpu")
	}
	return r.GPUCount, msg.New("trust.split_not_stated", r.GPUCount)
}

// bandwidth holds each cell to memory bandwidth: a decode step reads the
// model's active weights once for the whole batch and each sequence's KV
// cache, so per-request speed ≤ bandwidth ÷ (weights + B·KV(L)), and
// total ÷ B the same. The share of that bound a run may reach is
// calibrated per engine family and weight bits (calibration.go).
func bandwidth(r Run, gpu *GPU, model *Model) (Check, []Flag) {
	c := Check{Code: CodeBandwidth}
	notChecked := func(m msg.Message) (Check, []Flag) {
		c.Status = StatusNotChecked
		c.says(m)
		return c, nil
	}
	switch {
	case gpu == nil:
		return notChecked(msg.New("trust.bandwidth_gpu_unknown", clip(r.GPU)))
	case r.GPUCount < 1:
		return notChecked(msg.New("trust.bandwidth_gpu_count_unknown"))
	case model == nil:
		return notChecked(msg.New("trust.bandwidth_model_unknown", clip(r.Model)))
	case r.SpecDecode:
		return notChecked(msg.New("trust.bandwidth_spec_decode"))
	case model.DenseByName:
		// Fine-tunes and merges of mixtures of experts are often named by
		// their total only ("…-35B-…" of a 35B-A3B base): a dense reading
		// would hold them to a bound ten times too low, and real runs must
		// never be flagged.
		return notChecked(msg.New("trust.bandwidth_total_size_only", clip(r.Model)))
	}
	bits, bitsFrom, ok := WeightBits(r, model)
	if !ok {
		return notChecked(msg.New("trust.bandwidth_bits_unknown", clip(r.Quantization)))
	}
	gpus, splitNote := split(r)
	bw := gpu.BandwidthGBs * float64(gpus) * bytesPerGB
	weights := model.ActiveParams() * 1e9 * bits / 8
	kvPerToken := model.KVBytesPerToken(KVBytes(r.KVCacheDtype))
	cal := Calibrated(r.Engine, bits)
	var flags []Flag
	worst, worstCell, worstLimit := 0.0, Cell{}, 0.0
	for _, cell := range r.Cells {
		step := weights + float64(cell.Concurrency)*kvPerToken*float64(cell.ContextTokens)
		limit := cal.Cap * bw / step
		v, ok := perRequest(cell)
		if cell.TotalTokS != nil {
			v, ok = math.Max(v, *cell.TotalTokS/float64(cell.Concurrency)), true
		}
		if !ok {
			continue
		}
		if v/limit > worst {
			worst, worstCell, worstLimit = v/limit, cell, limit
		}
		if v > limit && len(flags) < maxFlagsPerCheck {
			flags = append(flags, Flag{Code: CodeBandwidth, ContextTokens: cell.ContextTokens, Concurrency: cell.Concurrency, Measured: round(v), Limit: round(limit), Unit: "tok/s per request"}.saying(msg.New("trust.bandwidth_flag",
				v, cell.ContextTokens, cell.Concurrency, gpu.Name, gpu.BandwidthGBs, splitNote, limit, weights/bytesPerGB, model.Name, bits, kvNote(kvPerToken), cal.Cap, cal.describe())))
		}
	}
	if worst == 0 {
		return notChecked(msg.New("trust.bandwidth_no_speed"))
	}
	c.Status = StatusPassed
	if len(flags) > 0 {
		c.Status = StatusFlagged
	}
	sizeNote := msg.Message{}
	if model.FromName {
		sizeNote = msg.New("trust.size_from_name")
	}
	c.says(msg.New("trust.bandwidth_detail",
		worstCell.ContextTokens, worstCell.Concurrency, 100*worst, worstLimit, gpu.Name, gpu.BandwidthGBs, splitNote, weights/bytesPerGB, model.Name, sizeNote, bits, bitsFrom, kvNote(kvPerToken), cal.Cap, cal.describe()))
	return c, flags
}

// Utilisation is the highest share of r's physical bandwidth bound (×1,
// no margin) any cell reaches; ok is false when the bandwidth check cannot
// run. The calibration reads it of the real runs.
func Utilisation(r Run, gpu *GPU, model *Model) (float64, bool) {
	if gpu == nil || model == nil || r.GPUCount < 1 || r.SpecDecode || model.DenseByName {
		return 0, false
	}
	bits, _, ok := WeightBits(r, model)
	if !ok {
		return 0, false
	}
	gpus, _ := split(r)
	bw := gpu.BandwidthGBs * float64(gpus) * bytesPerGB
	weights := model.ActiveParams() * 1e9 * bits / 8
	kvPerToken := model.KVBytesPerToken(KVBytes(r.KVCacheDtype))
	worst := 0.0
	for _, cell := range r.Cells {
		v, ok := perRequest(cell)
		if cell.TotalTokS != nil {
			v, ok = math.Max(v, *cell.TotalTokS/float64(cell.Concurrency)), true
		}
		if ok {
			worst = math.Max(worst, v*(weights+float64(cell.Concurrency)*kvPerToken*float64(cell.ContextTokens))/bw)
		}
	}
	return worst, worst > 0
}

func kvNote(perToken float64) msg.Message {
	if perToken == 0 {
		return msg.New("trust.kv_not_counted")
	}
	return msg.New("trust.kv_per_token", perToken/1024)
}

// Tolerances of the consistency checks, measured on the real runs of the
// repository (docs/trust.md gives the figures).
const (
	// TotalsHigh: total tok/s above per-request × active × this is flagged
	// (B requests at v tok/s produce at most B·v; the real cells reach
	// 1.43 of it, where the median TBT understates the mean speed).
	TotalsHigh = 1.75
	// TotalsLow: total tok/s below per-request × active × this is flagged:
	// per-request speed far above what the total allows. The real cells
	// reach 0.118 (serving sweeps: requests ramp up and drain, so fewer
	// than the concurrency are active on average); half of that is allowed.
	TotalsLow = 0.06
	// lowSideMinTokens: cells whose requests produce fewer tokens than this
	// are not held to TotalsLow: their TBT is the median of a few dozen
	// gaps, which an engine streaming tokens in bunches makes near zero (a
	// real 32-token SGLang cell has a median TPOT of 0.27 ms).
	lowSideMinTokens = 64
	// TBTHigh and TBTLow bound per-request tok/s × TBT ÷ 1000: a
	// per-request speed over a whole request (its TTFT included) is at
	// most 1000 / TBT, so never far above, and far below only when TTFT
	// dwarfs the decode. Real cells span 0.997–1.003 (their importers
	// derive one from the other).
	TBTHigh = 1.5
	TBTLow  = 0.1
	// MinSustainedS is the fewest seconds a sustained_decode cell may
	// measure: a sustained measurement runs for tens of seconds (the real
	// ones 30 s); a burst's 32 or 128 tokens take a second or two. A
	// cell's seconds are its duration_s, else the tokens a request
	// produced ÷ its per-request speed.
	MinSustainedS = 5
)

// active is the requests a cell has on average: the stated average, else
// its concurrency.
func active(c Cell) float64 {
	if c.AvgActiveRequests != nil && *c.AvgActiveRequests > 0 {
		return *c.AvgActiveRequests
	}
	return float64(c.Concurrency)
}

func shortRequests(c Cell) bool {
	t, ok := tokensPerRequest(c)
	return ok && t < lowSideMinTokens
}

// totalVsPerRequest holds total tok/s to per-request tok/s × the requests
// active, both ways: B requests at v tok/s produce at most B·v, and a
// per-request speed far above total ÷ B is as impossible.
func totalVsPerRequest(r Run, _ *GPU, _ *Model) (Check, []Flag) {
	c := Check{Code: CodeTotalVsPerRequest}
	var flags []Flag
	n, hi, lo, limitOnly := 0, 0.0, math.Inf(1), 0
	for _, cell := range r.Cells {
		v, ok := perRequest(cell)
		if !ok || cell.TotalTokS == nil || v == 0 || *cell.TotalTokS == 0 {
			continue
		}
		a := active(cell)
		n++
		ratio := *cell.TotalTokS / (v * a)
		hi = math.Max(hi, ratio)
		known := activeKnown(r, cell)
		if known {
			lo = math.Min(lo, ratio)
		} else {
			limitOnly++
		}
		if len(flags) >= maxFlagsPerCheck {
			continue
		}
		switch {
		case ratio > TotalsHigh:
			flags = append(flags, Flag{Code: CodeTotalVsPerRequest, ContextTokens: cell.ContextTokens, Concurrency: cell.Concurrency, Measured: round(*cell.TotalTokS), Limit: round(TotalsHigh * v * a), Unit: "tok/s"}.saying(msg.New("trust.total_above_flag",
				*cell.TotalTokS, cell.ContextTokens, cell.Concurrency, v, a, TotalsHigh*v*a, TotalsHigh)))
		case ratio < TotalsLow && known && !shortRequests(cell):
			flags = append(flags, Flag{Code: CodeTotalVsPerRequest, ContextTokens: cell.ContextTokens, Concurrency: cell.Concurrency, Measured: round(v), Limit: round(*cell.TotalTokS / (TotalsLow * a)), Unit: "tok/s per request"}.saying(msg.New("trust.per_request_above_flag",
				v, cell.ContextTokens, cell.Concurrency, *cell.TotalTokS, a, *cell.TotalTokS/(TotalsLow*a), TotalsLow)))
		}
	}
	if n == 0 {
		c.Status = StatusNotChecked
		c.says(msg.New("trust.totals_not_checked"))
		return c, nil
	}
	c.Status = StatusPassed
	if len(flags) > 0 {
		c.Status = StatusFlagged
	}
	switch {
	case limitOnly == n:
		c.says(msg.New("trust.totals_detail_high_only", n, hi, TotalsHigh))
	case limitOnly > 0:
		c.says(msg.New("trust.totals_detail_partly", n, lo, hi, TotalsLow, TotalsHigh, limitOnly))
	default:
		c.says(msg.New("trust.totals_detail", n, lo, hi, TotalsLow, TotalsHigh))
	}
	return c, flags
}

// activeKnown reports whether cell's requests in flight are known, as the
// low side of totalVsPerRequest needs: stated (avg_active_requests), or
// held by the method (a sustained decode holds its concurrency, a batch
// decodes its requests together). A serving sweep's concurrency is a
// limit its client may not reach (too few requests, a paced client), so
// a per-request speed far above its total ÷ concurrency proves nothing.
func activeKnown(r Run, cell Cell) bool {
	return (cell.AvgActiveRequests != nil && *cell.AvgActiveRequests > 0) || r.Class != classServingSweep
}

// classServingSweep is store's method class of a client's sweep of
// concurrency limits.
const classServingSweep = "serving_sweep"

// tbtVsPerRequest holds a cell's stated per-request speed to its time
// between tokens: 1000 / TBT is the speed while a request decodes, and a
// per-request speed over a whole request (its TTFT included) is at most
// that, never far above or far below.
func tbtVsPerRequest(r Run, _ *GPU, _ *Model) (Check, []Flag) {
	c := Check{Code: CodeTBTVsPerRequest}
	var flags []Flag
	n, hi, lo := 0, 0.0, math.Inf(1)
	for _, cell := range r.Cells {
		if cell.TBTMs == nil || cell.PerRequestTokS == nil || *cell.TBTMs <= 0 || *cell.PerRequestTokS <= 0 {
			continue
		}
		n++
		fromTBT := 1000 / *cell.TBTMs
		ratio := *cell.PerRequestTokS / fromTBT
		hi, lo = math.Max(hi, ratio), math.Min(lo, ratio)
		if (ratio > TBTHigh || ratio < TBTLow) && len(flags) < maxFlagsPerCheck {
			flags = append(flags, Flag{Code: CodeTBTVsPerRequest, ContextTokens: cell.ContextTokens, Concurrency: cell.Concurrency, Measured: round(*cell.PerRequestTokS), Limit: round(fromTBT), Unit: "tok/s per request"}.saying(msg.New("trust.tbt_flag",
				*cell.PerRequestTokS, cell.ContextTokens, cell.Concurrency, *cell.TBTMs, fromTBT, TBTLow, TBTHigh)))
		}
	}
	if n == 0 {
		c.Status = StatusNotChecked
		c.says(msg.New("trust.tbt_not_checked"))
		return c, nil
	}
	c.Status = StatusPassed
	if len(flags) > 0 {
		c.Status = StatusFlagged
	}
	c.says(msg.New("trust.tbt_detail", n, lo, hi, TBTLow, TBTHigh))
	return c, flags
}

// methodShape holds a run's cells to the shape its class implies: a
// sustained_decode cell measures decode for tens of seconds; one whose
// requests produce a burst's few dozen tokens in a second is another class
// under this label.
func methodShape(r Run, _ *GPU, _ *Model) (Check, []Flag) {
	c := Check{Code: CodeMethodShape}
	if r.Class != "sustained_decode" {
		c.Status = StatusNotChecked
		c.says(msg.New("trust.shape_not_sustained", orNone(r.Class)))
		return c, nil
	}
	var flags []Flag
	n, shortest := 0, math.Inf(1)
	for _, cell := range r.Cells {
		v, ok := perRequest(cell)
		tokens, haveTokens := tokensPerRequest(cell)
		if !haveTokens && cell.OutputTokens != nil && cell.Concurrency > 0 {
			tokens, haveTokens = float64(*cell.OutputTokens)/float64(cell.Concurrency), true
		}
		if !haveTokens && r.OutputTokensPerRequest != nil {
			tokens, haveTokens = float64(*r.OutputTokensPerRequest), true
		}
		var secs float64
		switch {
		case cell.DurationS != nil:
			secs = *cell.DurationS
		case haveTokens && ok && v > 0:
			secs = tokens / v
		default:
			continue
		}
		n++
		shortest = math.Min(shortest, secs)
		if secs < MinSustainedS && len(flags) < maxFlagsPerCheck {
			m := msg.New("trust.burst_flag", cell.ContextTokens, cell.Concurrency, secs, MinSustainedS)
			if haveTokens {
				m = msg.New("trust.burst_tokens_flag", cell.ContextTokens, cell.Concurrency, tokens, secs, MinSustainedS)
			}
			flags = append(flags, Flag{Code: CodeMethodShape, ContextTokens: cell.ContextTokens, Concurrency: cell.Concurrency, Measured: round(secs), Limit: MinSustainedS, Unit: "seconds measured"}.saying(m))
		}
	}
	if n == 0 {
		c.Status = StatusNotChecked
		c.says(msg.New("trust.shape_not_checked"))
		return c, nil
	}
	c.Status = StatusPassed
	if len(flags) > 0 {
		c.Status = StatusFlagged
	}
	c.says(msg.New("trust.shape_detail", n, shortest, MinSustainedS))
	return c, flags
}

func orNone(s string) string {
	if s == "" {
		return "of no class"
	}
	return s
}

// ownEngine is an engine that runs only the weights its project
// publishes: a run of it that states no quantization used one of them.
type ownEngine struct {
	name, source string
	bits         float64 // the fewest bits a weight of its files takes
}

// ownWeights is the engine of that kind engine names.
func ownWeights(engine string) (ownEngine, bool) {
	if strings.EqualFold(strings.TrimSpace(engine), "ds4") || strings.Contains(strings.ToLower(engine), "dwarfstar") {
		// "Not a general GGUF runner: you need to use the GGUF files the
		// project produces"; its DeepSeek V4 Flash files are Q2 and Q4.
		return ownEngine{name: "ds4", bits: 2, source: "https://github.com/antirez/ds4 README"}, true
	}
	return ownEngine{}, false
}

var (
	ggufBits = regexp.MustCompile(`(?:^|[^a-z0-9])i?q([1-8])(?:_|$|[^a-z0-9])`)
	bitWords = []struct {
		words []string
		bits  float64
	}{
		{[]string{"mxfp4", "nvfp4", "fp4", "int4", "w4a16", "w4a8", "4-bit", "4bit", "4 bit", "awq"}, 4},
		{[]string{"fp8", "int8", "w8a8", "w8a16", "8-bit", "8bit", "8 bit", "e4m3", "e5m2"}, 8},
		{[]string{"3-bit", "3bit"}, 3},
		{[]string{"2-bit", "2bit"}, 2},
		{[]string{"bf16", "fp16", "f16", "float16", "bfloat16", "16-bit"}, 16},
		{[]string{"fp32", "f32", "float32"}, 32},
	}
)

// ggufBlockBits are the bits a weight of a GGUF type takes with its
// block's scales (ggml's block layouts: Q4_0 is 16 bytes of 4-bit values
// and a 2-byte scale per 32 weights, 4.5 bits; the K types' 256-weight
// super-blocks likewise); a type not listed counts its nominal bits.
var ggufBlockBits = map[string]float64{
	"q2_k": 2.625, "q3_k": 3.4375, "q4_0": 4.5, "q4_1": 5, "q4_k": 4.5, "q5_0": 5.5, "q5_1": 6, "q5_k": 5.5, "q6_k": 6.5625, "q8_0": 8.5,
}

// Bits is the fewest bits a weight of quantization q takes, read from its
// name (GGUF types Q4_K… with their blocks' scales, MXFP4, AWQ 4-bit,
// W4A16, FP8, BF16 …); ok is false when the name does not say (GPTQ
// alone, a name we do not know). Mixed formats count their smallest part
// (Q4_K_M is Q4_K): the bound stays generous.
func Bits(q string) (float64, bool) {
	s := strings.ToLower(q)
	if m := ggufBits.FindStringSubmatch(s); m != nil {
		i := strings.Index(s, "q"+m[1])
		if b, ok := ggufBlockBits[strings.TrimRight(s[i:min(i+4, len(s))], "_-. ")]; ok && (i == 0 || s[i-1] != 'i') {
			return b, true
		}
		return float64(m[1][0] - '0'), true
	}
	for _, bw := range bitWords {
		for _, w := range bw.words {
			if strings.Contains(s, w) {
				return bw.bits, true
			}
		}
	}
	return 0, false
}

// KVBytes is the bytes a KV element takes in the cache dtype named; a
// dtype not stated (or "auto") counts as the fewest any engine stores.
func KVBytes(dtype string) float64 {
	s := strings.ToLower(dtype)
	switch {
	case strings.Contains(s, "int4"), strings.Contains(s, "q4"), strings.Contains(s, "fp4"):
		return 0.5
	case strings.Contains(s, "fp8"), strings.Contains(s, "int8"), strings.Contains(s, "q8"):
		return 1
	case s == "f16", s == "fp16", s == "bf16", s == "float16", s == "bfloat16":
		return 2
	}
	return kvBytesWhenUnstated
}

var (
	tensorParallel   = regexp.MustCompile(`(?:^|\s)(?:--tensor-parallel-size|--tensor_parallel_size|--tp-size|--tp|-tp)(?:=|\s+)(\d+)`)
	pipelineParallel = regexp.MustCompile(`(?:^|\s)(?:--pipeline-parallel-size|--pipeline_parallel_size|--pp-size|--pp|-pp)(?:=|\s+)(\d+)`)
)

// TensorParallel is the tensor-parallel size the launch states
// (--tensor-parallel-size 8, --tp 8, a flag tp: 8); 0 when it states none.
func TensorParallel(command string, flags map[string]string) int {
	return parallel(command, flags, tensorParallel, "tensor-parallel-size", "tensor_parallel_size", "tp", "tp-size", "tp_size")
}

// PipelineParallel is the pipeline-parallel size the launch states
// (--pipeline-parallel-size 2, --pp 2, a flag pp: 2); 0 when it states
// none.
func PipelineParallel(command string, flags map[string]string) int {
	return parallel(command, flags, pipelineParallel, "pipeline-parallel-size", "pipeline_parallel_size", "pp", "pp-size", "pp_size")
}

func parallel(command string, flags map[string]string, re *regexp.Regexp, keys ...string) int {
	for _, k := range keys {
		if n, err := strconv.Atoi(strings.TrimSpace(flags[k])); err == nil && n > 0 {
			return n
		}
	}
	if m := re.FindStringSubmatch(command); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

var quantizationFlag = regexp.MustCompile(`(?:^|\s)--quantization(?:=|\s+)([A-Za-z0-9_]+)`)

// LaunchQuantization is the weight quantization the launch asks the engine
// for (vLLM's and SGLang's --quantization fp8), "" when none.
func LaunchQuantization(command string, flags map[string]string) string {
	if q := flags["quantization"]; q != "" {
		return q
	}
	if m := quantizationFlag.FindStringSubmatch(command); m != nil {
		return m[1]
	}
	return ""
}

var specDecode = regexp.MustCompile(`speculative|draft[-_ ]?model|model[-_ ]draft|(^|[^a-z])-md([^a-z]|$)|eagle|medusa|num[-_]spec|spec(ulative)?[-_ ]?decod(e|ing)\s*[:=]?\s*(on|yes|true|enabled|eagle|mtp|ngram)`)

// SpecDecode reports whether the launch text turns speculative decoding
// on: a draft model, EAGLE, Medusa, MTP or n-gram speculation. "Spec
// decode: none" is off.
func SpecDecode(command string, flags map[string]string, notes []string) bool {
	var b strings.Builder
	b.WriteString(command)
	for _, k := range sortedKeys(flags) {
		b.WriteString(" --" + k + " " + flags[k])
	}
	for _, n := range notes {
		b.WriteString(" " + n)
	}
	s := strings.ToLower(b.String())
	s = strings.NewReplacer("spec decode: none", "", "spec decode: off", "", "no speculative", "").Replace(s)
	return specDecode.MatchString(s)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func round(v float64) float64 { return math.Round(v*10) / 10 }

func clip(s string) string {
	if r := []rune(s); len(r) > 64 {
		return string(r[:64]) + "…"
	}
	return s
}
