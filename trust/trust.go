// Package trust checks a run's numbers against physics and against
// themselves: pure functions of a run plus the hardware and model
// catalogs, with no I/O. A run that fails a check is flagged, never
// refused: a rule must never shut a real result out.
package trust

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
)

// RulesVersion changes whenever a rule or a catalog changes what the
// checks would say: runs checked by other rules are checked again.
const RulesVersion = 1

// Margin is how far above each bound a measurement may go before it is
// flagged: the bounds are already physical limits (peak bandwidth, the
// fewest bytes a step can read), and the margin covers what they leave
// out (caches, rounding, a model's few un-read embedding rows).
const Margin = 1.5

// Check codes and statuses.
const (
	CodeBandwidth          = "bandwidth"
	CodeTotalVsPerRequest  = "total_vs_per_request"
	StatusPassed           = "passed"
	StatusFlagged          = "flagged"
	StatusNotChecked       = "not_checked"
	maxFlagsPerCheck       = 5
	bytesPerGB             = 1e9
	kvBytesWhenUnstated    = 0.5 // the fewest any engine stores (4-bit KV)
	minCommonCellsForCheck = 1
)

// Run is what the checks read of a run.
type Run struct {
	Model        string
	Quantization string // the model's or the engine's, as stated
	KVCacheDtype string
	GPU          string
	GPUCount     int  // 0: not stated
	SpecDecode   bool // speculative decoding is on: several tokens per weight read
	Cells        []Cell
}

// Cell is one valid decode cell; absent values are nil.
type Cell struct {
	ContextTokens, Concurrency int
	TotalTokS, PerRequestTokS  *float64
	TBTMs, AvgActiveRequests   *float64
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
	Code                       string
	Message                    string
	ContextTokens, Concurrency int
	Measured, Limit            float64
	Unit                       string
}

// Check is one check's outcome for the whole run.
type Check struct {
	Code, Status, Detail string
}

// Assess runs every check of r; gpu and model are nil when the catalogs do
// not know them (those checks then say not checked).
func Assess(r Run, gpu *GPU, model *Model) Report {
	var rep Report
	for _, check := range []func(Run, *GPU, *Model) (Check, []Flag){bandwidth, totalVsPerRequest} {
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

// bandwidth holds each cell to memory bandwidth: a decode step reads the
// model's active weights once for the whole batch and each sequence's KV
// cache, so per-request speed ≤ bandwidth ÷ (weights + B·KV(L)), and
// total ÷ B the same.
func bandwidth(r Run, gpu *GPU, model *Model) (Check, []Flag) {
	c := Check{Code: CodeBandwidth}
	notChecked := func(why string) (Check, []Flag) {
		c.Status, c.Detail = StatusNotChecked, "not checked: "+why
		return c, nil
	}
	switch {
	case gpu == nil:
		return notChecked(fmt.Sprintf("GPU %q is not in the hardware catalog", clip(r.GPU)))
	case r.GPUCount < 1:
		return notChecked("the run does not state its GPU count")
	case model == nil:
		return notChecked(fmt.Sprintf("model %q is not in the model facts table", clip(r.Model)))
	case r.SpecDecode:
		return notChecked("speculative decoding is on (several tokens per weight read)")
	}
	bits, ok := Bits(r.Quantization)
	if !ok {
		return notChecked(fmt.Sprintf("the quantization %q does not say how many bits a weight takes", clip(r.Quantization)))
	}
	bw := gpu.BandwidthGBs * float64(r.GPUCount) * bytesPerGB
	weights := model.ActiveParams() * 1e9 * bits / 8
	kvPerToken := model.KVBytesPerToken(KVBytes(r.KVCacheDtype))
	var flags []Flag
	worst, worstCell, worstLimit := 0.0, Cell{}, 0.0
	for _, cell := range r.Cells {
		step := weights + float64(cell.Concurrency)*kvPerToken*float64(cell.ContextTokens)
		limit := Margin * bw / step
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
			flags = append(flags, Flag{Code: CodeBandwidth, ContextTokens: cell.ContextTokens, Concurrency: cell.Concurrency, Measured: round(v), Limit: round(limit), Unit: "tok/s per request",
				Message: fmt.Sprintf("%.1f tok/s per request at context %d × %d is more than %s's %.0f GB/s × %d can feed: at most %.1f tok/s (%.2f GB of %s weights at %g bits%s, × %.1f)",
					v, cell.ContextTokens, cell.Concurrency, gpu.Name, gpu.BandwidthGBs, r.GPUCount, limit, weights/bytesPerGB, model.Name, bits, kvNote(kvPerToken), Margin)})
		}
	}
	if worst == 0 {
		return notChecked("no cell states a speed")
	}
	c.Status = StatusPassed
	if len(flags) > 0 {
		c.Status = StatusFlagged
	}
	c.Detail = fmt.Sprintf("the fastest cell for its bound (context %d × %d) runs at %.0f %% of %.1f tok/s per request: %s's %.0f GB/s × %d over %.2f GB of %s weights at %g bits%s, × %.1f",
		worstCell.ContextTokens, worstCell.Concurrency, 100*worst, worstLimit, gpu.Name, gpu.BandwidthGBs, r.GPUCount, weights/bytesPerGB, model.Name, bits, kvNote(kvPerToken), Margin)
	return c, flags
}

func kvNote(perToken float64) string {
	if perToken == 0 {
		return " (KV not counted: the model's attention geometry is not in the table)"
	}
	return fmt.Sprintf(" plus %.0f KiB of KV per token of context", perToken/1024)
}

// totalVsPerRequest holds total tok/s to per-request tok/s × the requests
// active: B requests at v tok/s each produce at most B·v.
func totalVsPerRequest(r Run, _ *GPU, _ *Model) (Check, []Flag) {
	c := Check{Code: CodeTotalVsPerRequest}
	var flags []Flag
	n, worst := 0, 0.0
	for _, cell := range r.Cells {
		v, ok := perRequest(cell)
		if !ok || cell.TotalTokS == nil || v == 0 {
			continue
		}
		active := float64(cell.Concurrency)
		if cell.AvgActiveRequests != nil && *cell.AvgActiveRequests > 0 {
			active = *cell.AvgActiveRequests
		}
		n++
		limit := Margin * v * active
		worst = math.Max(worst, *cell.TotalTokS/limit)
		if *cell.TotalTokS > limit && len(flags) < maxFlagsPerCheck {
			flags = append(flags, Flag{Code: CodeTotalVsPerRequest, ContextTokens: cell.ContextTokens, Concurrency: cell.Concurrency, Measured: round(*cell.TotalTokS), Limit: round(limit), Unit: "tok/s",
				Message: fmt.Sprintf("total %.1f tok/s at context %d × %d is more than %.1f tok/s per request × %g active requests allow: at most %.1f tok/s (× %.1f)",
					*cell.TotalTokS, cell.ContextTokens, cell.Concurrency, v, active, limit, Margin)})
		}
	}
	if n < minCommonCellsForCheck {
		c.Status, c.Detail = StatusNotChecked, "not checked: no cell states both a total and a per-request speed (or TBT)"
		return c, nil
	}
	c.Status = StatusPassed
	if len(flags) > 0 {
		c.Status = StatusFlagged
	}
	c.Detail = fmt.Sprintf("%d cells compared; the highest total is %.0f %% of per-request speed × active requests × %.1f", n, 100*worst, Margin)
	return c, flags
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

// Bits is the fewest bits a weight of quantization q takes, read from its
// name (GGUF types Q4_K…, MXFP4, AWQ 4-bit, W4A16, FP8, BF16 …); ok is
// false when the name does not say (GPTQ alone, a name we do not know).
// Mixed formats count their smallest part: the bound stays generous.
func Bits(q string) (float64, bool) {
	s := strings.ToLower(q)
	if m := ggufBits.FindStringSubmatch(s); m != nil {
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
