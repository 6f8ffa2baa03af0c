package store

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits on a run, the same for every way in. openapi.yaml states them in
// the RunInput schema; a test holds the two together.
const (
	MaxTextLen        = 200      // names and short texts, in characters
	MaxURLLen         = 2048     // source_url, engine.repository
	MaxLicenseLen     = 64       // an SPDX identifier or LicenseRef-…
	MaxNotesLen       = 4096     // the run's free-text notes
	MaxCommandLen     = 16 << 10 // the launch command
	MaxLaunchNotes    = 64       // comment lines of the launch command
	MaxLaunchNoteLen  = 1000
	MaxFlags          = 256
	MaxFlagValueLen   = 4096
	MaxContexts       = 64 // distinct decode contexts (grid rows)
	MaxConcurrencies  = 64 // distinct decode concurrencies (grid columns)
	MaxDecodeCells    = MaxContexts * MaxConcurrencies
	MaxPrefillCells   = 200
	MaxContextTokens  = 16 << 20
	MaxConcurrency    = 1 << 16
	MaxTokS           = 1e9
	MaxMs             = 1e9
	MaxDurationS      = 1e7
	MaxRequests       = 1_000_000_000
	MaxOutputTokens   = 1_000_000_000_000
	MaxVRAMGB         = 4096
	MaxGPUCount       = 4096
	MaxCPUCores       = 1 << 16
	MaxRAMGB          = 1 << 20
	MaxPowerLimitW    = 100_000
	MaxSecondsPerCell = 1e6
	MaxNumSeqs        = 1 << 20
)

// Problem is one reason a run cannot be stored: where, as a JSON Pointer
// into the run object (/decode/3/context_tokens), and what is wrong there.
// File and Line (1-based) locate it in the submitted file where the caller
// knows them.
type Problem struct {
	Pointer string
	File    string
	Line    int
	Message string
}

func (p Problem) String() string {
	s := p.Message
	if p.Pointer != "" {
		s = p.Pointer + ": " + s
	}
	if p.Line > 0 {
		s = fmt.Sprintf("line %d: %s", p.Line, s)
	}
	if p.File != "" {
		s = p.File + ": " + s
	}
	return s
}

// ValidationError lists every problem found in a run. It matches
// ErrInvalid.
type ValidationError struct {
	Problems []Problem
}

func (e *ValidationError) Error() string {
	const show = 5
	parts := make([]string, 0, show+1)
	for i, p := range e.Problems {
		if i == show {
			parts = append(parts, fmt.Sprintf("and %d more", len(e.Problems)-show))
			break
		}
		parts = append(parts, p.String())
	}
	n := "1 problem"
	if len(e.Problems) != 1 {
		n = fmt.Sprintf("%d problems", len(e.Problems))
	}
	return "the run has " + n + ": " + strings.Join(parts, "; ")
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// Validate checks everything a run must satisfy to be stored and reports
// every problem at once as a *ValidationError. Pointers index the cells in
// the order given, so call it before Normalize.
func (r *Run) Validate() error {
	v := &validator{}
	v.text("/title", r.Title, MaxTextLen, true)
	v.name("/submitter", r.Submitter, false)
	v.url("/source_url", r.SourceURL)
	v.text("/publisher", r.Publisher, MaxTextLen, false)
	v.license("/license", r.License)
	v.date("/retrieved_at", r.RetrievedAt)
	v.multiline("/notes", r.Notes, MaxNotesLen)

	v.name("/model/name", r.Model.Name, true)
	v.name("/model/quantization", r.Model.Quantization, false)

	h := r.Hardware
	v.name("/hardware/type", h.Type, false)
	v.name("/hardware/gpu", h.GPU, true)
	v.intRange("/hardware/gpu_count", h.GPUCount, 1, MaxGPUCount)
	v.positive("/hardware/vram_gb", h.VRAMGB, MaxVRAMGB)
	v.name("/hardware/cpu", h.CPU, false)
	v.intRange("/hardware/cpu_cores", h.CPUCores, 1, MaxCPUCores)
	v.positive("/hardware/ram_gb", h.RAMGB, MaxRAMGB)
	v.text("/hardware/os", h.OS, MaxTextLen, false)
	v.text("/hardware/driver_version", h.DriverVersion, MaxTextLen, false)
	v.positive("/hardware/power_limit_w", h.PowerLimitW, MaxPowerLimitW)
	v.positive("/hardware/avg_power_w", h.AvgPowerW, MaxPowerLimitW)
	v.text("/hardware/pcie", h.PCIe, MaxTextLen, false)

	e := r.Engine
	v.name("/engine/name", e.Name, true)
	v.name("/engine/version", e.Version, false)
	v.name("/engine/quantization", e.Quantization, false)
	v.name("/engine/backend", e.Backend, false)
	v.text("/engine/repository", e.Repository, MaxURLLen, false)
	v.text("/engine/build", e.Build, MaxTextLen, false)

	b := r.Benchmark
	v.name("/benchmark/tool", b.Tool, false)
	v.text("/benchmark/tool_version", b.ToolVersion, MaxTextLen, false)
	v.name("/benchmark/served_model", b.ServedModel, false)
	v.text("/benchmark/revision", b.Revision, MaxTextLen, false)
	v.text("/benchmark/decode_test", b.DecodeTest, MaxTextLen, false)
	v.text("/benchmark/prefill_mode", b.PrefillMode, MaxTextLen, false)
	v.positive("/benchmark/seconds_per_measurement", b.SecondsPerMeasurement, MaxSecondsPerCell)
	v.intRange("/benchmark/max_output_tokens", b.MaxOutputTokens, 1, MaxContextTokens)

	v.method(*r)
	v.launch(r.Launch)

	if len(r.Decode) == 0 && len(r.Prefill) == 0 {
		v.add("", "a run needs at least one decode or prefill cell")
	}
	v.prefill(r.Prefill)
	v.decode(r.Decode, b.SecondsPerMeasurement)
	if len(v.problems) == 0 {
		return nil
	}
	return &ValidationError{Problems: v.problems}
}

type validator struct{ problems []Problem }

func (v *validator) add(ptr, format string, args ...any) {
	v.problems = append(v.problems, Problem{Pointer: ptr, Message: fmt.Sprintf(format, args...)})
}

// text checks a one-line text: length, and no control or bidirectional
// formatting characters (they can make a value read as something else).
func (v *validator) text(ptr, s string, maxLen int, required bool) {
	if required && strings.TrimSpace(s) == "" {
		v.add(ptr, "is required and must not be blank")
		return
	}
	v.chars(ptr, s, maxLen, false)
}

// name checks a name that identifies a part of the run (NameProblem).
func (v *validator) name(ptr, s string, required bool) {
	n := len(v.problems)
	v.text(ptr, s, MaxTextLen, required)
	if len(v.problems) > n {
		return
	}
	if msg := NameProblem(s); msg != "" {
		v.add(ptr, "%s", msg)
	}
}

func (v *validator) multiline(ptr, s string, maxLen int) { v.chars(ptr, s, maxLen, true) }

func (v *validator) url(ptr, s string) {
	v.text(ptr, s, MaxURLLen, false)
	if s != "" && !strings.HasPrefix(s, "https://") && !strings.HasPrefix(s, "http://") {
		v.add(ptr, "must be an http:// or https:// URL")
	}
}

// license checks an SPDX-like licence identifier: a short token of
// letters, digits, '.', '+' and '-' (CC-BY-4.0, LicenseRef-my-terms).
func (v *validator) license(ptr, s string) {
	if s == "" {
		return
	}
	if !ValidLicense(s) {
		v.add(ptr, "is %q; it must be an SPDX licence identifier such as CC0-1.0, CC-BY-4.0 or MIT, or LicenseRef- and a name: letters, digits, '.', '+' and '-', at most %d characters", truncate(s, MaxLicenseLen+1), MaxLicenseLen)
	}
}

// ValidLicense reports whether s is an SPDX-like licence identifier as a
// run may state it.
func ValidLicense(s string) bool {
	if s == "" || len(s) > MaxLicenseLen {
		return false
	}
	for i, c := range s {
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '+' && c != '-') {
			return false
		}
	}
	return true
}

// date checks a day written YYYY-MM-DD; whether it is in the future is
// checked when the run is stored (checkRetrieved), against the store's clock.
func (v *validator) date(ptr, s string) {
	if s == "" {
		return
	}
	if _, err := time.Parse(time.DateOnly, s); err != nil {
		v.add(ptr, "is %q; it must be a day written YYYY-MM-DD, e.g. 2026-11-30", truncate(s, 40))
	}
}

// checkRetrieved refuses a retrieval date after today (UTC) at now.
func (r *Run) checkRetrieved(now time.Time) error {
	d, err := time.Parse(time.DateOnly, r.RetrievedAt)
	if err != nil || !d.After(now.UTC()) {
		return nil // absent, or already reported by Validate
	}
	return &ValidationError{Problems: []Problem{{Pointer: "/retrieved_at",
		Message: fmt.Sprintf("is %s, after today (%s UTC): give the day the source was retrieved", r.RetrievedAt, now.UTC().Format(time.DateOnly))}}}
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

func (v *validator) chars(ptr, s string, maxLen int, lines bool) {
	if !utf8.ValidString(s) {
		v.add(ptr, "is not valid UTF-8")
		return
	}
	if n := utf8.RuneCountInString(s); n > maxLen {
		v.add(ptr, "is %d characters long; the limit is %d", n, maxLen)
		return
	}
	if msg := TextProblem(s, lines); msg != "" {
		v.add(ptr, "%s", msg)
	}
}

func (v *validator) intRange(ptr string, n *int, lo, hi int) {
	if n != nil && (*n < lo || *n > hi) {
		v.add(ptr, "is %d; it must be %d to %d", *n, lo, hi)
	}
}

// number checks a measured value: finite, not negative, at most hi.
func (v *validator) number(ptr string, f *float64, hi float64) bool {
	if f == nil {
		return true
	}
	if math.IsNaN(*f) || math.IsInf(*f, 0) || *f < 0 || *f > hi {
		v.add(ptr, "is %s; it must be a finite number from 0 to %s", fnum(*f), fnum(hi))
		return false
	}
	return true
}

// positive checks a setting that must be above 0: finite, at most hi.
func (v *validator) positive(ptr string, f *float64, hi float64) {
	if f != nil && (math.IsNaN(*f) || *f <= 0 || *f > hi) {
		v.add(ptr, "is %s; it must be above 0 and at most %s", fnum(*f), fnum(hi))
	}
}

func fnum(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func (v *validator) launch(l Launch) {
	v.multiline("/launch/command", l.Command, MaxCommandLen)
	if len(l.Notes) > MaxLaunchNotes {
		v.add("/launch/notes", "has %d lines; the limit is %d", len(l.Notes), MaxLaunchNotes)
	} else {
		for i, n := range l.Notes {
			v.text(fmt.Sprintf("/launch/notes/%d", i), n, MaxLaunchNoteLen, false)
		}
	}
	v.intRange("/launch/max_model_len", l.MaxModelLen, 1, MaxContextTokens)
	v.positive("/launch/gpu_memory_utilization", l.GPUMemoryUtilization, 1)
	v.intRange("/launch/max_num_seqs", l.MaxNumSeqs, 1, MaxNumSeqs)
	v.text("/launch/kv_cache_dtype", l.KVCacheDtype, MaxTextLen, false)
	v.text("/launch/attention_backend", l.AttentionBackend, MaxTextLen, false)
	if len(l.Flags) > MaxFlags {
		v.add("/launch/flags", "has %d flags; the limit is %d", len(l.Flags), MaxFlags)
		return
	}
	for _, k := range sortedKeys(l.Flags) {
		ptr := "/launch/flags/" + escapePointer(k)
		if strings.TrimSpace(k) == "" {
			v.add(ptr, "a flag needs a name")
		}
		v.text(ptr, k, MaxTextLen, false)
		v.multiline(ptr, l.Flags[k], MaxFlagValueLen)
	}
	v.flagsAgree(l)
}

// flagsAgree holds the parsed launch settings to the flags they come from.
func (v *validator) flagsAgree(l Launch) {
	intFlag := func(field, flag string, n *int) {
		s, ok := l.Flags[flag]
		if !ok || n == nil {
			return
		}
		if got, err := strconv.Atoi(s); err == nil && got != *n {
			v.add("/launch/"+field, "is %d but the launch flags say --%s %s", *n, flag, s)
		}
	}
	intFlag("max_model_len", "max-model-len", l.MaxModelLen)
	intFlag("max_num_seqs", "max-num-seqs", l.MaxNumSeqs)
	if s, ok := l.Flags["gpu-memory-utilization"]; ok && l.GPUMemoryUtilization != nil {
		if got, err := strconv.ParseFloat(s, 64); err == nil && math.Abs(got-*l.GPUMemoryUtilization) > 1e-9 {
			v.add("/launch/gpu_memory_utilization", "is %s but the launch flags say --gpu-memory-utilization %s", fnum(*l.GPUMemoryUtilization), s)
		}
	}
	textFlag := func(field, flag, val string) {
		if s, ok := l.Flags[flag]; ok && val != "" && s != val {
			v.add("/launch/"+field, "is %q but the launch flags say --%s %s", val, flag, s)
		}
	}
	textFlag("kv_cache_dtype", "kv-cache-dtype", l.KVCacheDtype)
	textFlag("attention_backend", "attention-backend", l.AttentionBackend)
	if l.EnablePrefixCaching != nil {
		on, onSet := l.Flags["enable-prefix-caching"]
		_, offSet := l.Flags["no-enable-prefix-caching"]
		switch {
		case onSet && *l.EnablePrefixCaching != (on != "false"):
			v.add("/launch/enable_prefix_caching", "is %t but the launch flags say --enable-prefix-caching %s", *l.EnablePrefixCaching, on)
		case offSet && *l.EnablePrefixCaching:
			v.add("/launch/enable_prefix_caching", "is true but the launch flags say --no-enable-prefix-caching")
		}
	}
}

func (v *validator) prefill(cells []PrefillCell) {
	if len(cells) > MaxPrefillCells {
		v.add("/prefill", "has %d rows; the limit is %d", len(cells), MaxPrefillCells)
		return
	}
	seen := map[int]int{}
	for i, c := range cells {
		ptr := fmt.Sprintf("/prefill/%d", i)
		if c.ContextTokens < 0 || c.ContextTokens > MaxContextTokens {
			v.add(ptr+"/context_tokens", "is %d; it must be 0 to %d", c.ContextTokens, MaxContextTokens)
		} else if j, dup := seen[c.ContextTokens]; dup {
			v.add(ptr+"/context_tokens", "repeats /prefill/%d (context %d)", j, c.ContextTokens)
		} else {
			seen[c.ContextTokens] = i
		}
		if !validStatus(c.Status) {
			v.add(ptr+"/status", "is %q; it must be valid, requests_queued or over_capacity", c.Status)
		}
		okTok := v.number(ptr+"/prompt_tok_s", c.PromptTokS, MaxTokS)
		okTTFT := v.number(ptr+"/ttft_ms", c.TTFTMs, MaxMs)
		if okTok && okTTFT && c.PromptTokS != nil && c.TTFTMs != nil && *c.PromptTokS > 0 && c.ContextTokens > 0 {
			want := float64(c.ContextTokens) / *c.PromptTokS * 1000
			if math.Abs(*c.TTFTMs-want) > 0.15*want {
				v.add(ptr+"/ttft_ms", "is %s ms but context / prompt tok/s is %.0f ms (%d / %s)", fnum(*c.TTFTMs), want, c.ContextTokens, fnum(*c.PromptTokS))
			}
		}
	}
}

func (v *validator) decode(cells []DecodeCell, secsPer *float64) {
	type key struct{ l, b int }
	seen := map[key]int{}
	contexts, concurrencies := map[int]bool{}, map[int]bool{}
	for i, c := range cells {
		contexts[c.ContextTokens], concurrencies[c.Concurrency] = true, true
		if len(contexts) > MaxContexts || len(concurrencies) > MaxConcurrencies {
			v.add("/decode", "has more than %d contexts or %d concurrency levels (at /decode/%d); the limit is a %d × %d grid",
				MaxContexts, MaxConcurrencies, i, MaxContexts, MaxConcurrencies)
			return
		}
	}
	for i, c := range cells {
		ptr := fmt.Sprintf("/decode/%d", i)
		okAxes := true
		if c.ContextTokens < 0 || c.ContextTokens > MaxContextTokens {
			v.add(ptr+"/context_tokens", "is %d; it must be 0 to %d", c.ContextTokens, MaxContextTokens)
			okAxes = false
		}
		if c.Concurrency < 1 || c.Concurrency > MaxConcurrency {
			v.add(ptr+"/concurrency", "is %d; it must be 1 to %d", c.Concurrency, MaxConcurrency)
			okAxes = false
		}
		if okAxes {
			k := key{c.ContextTokens, c.Concurrency}
			if j, dup := seen[k]; dup {
				v.add(ptr, "repeats /decode/%d (context %d, concurrency %d)", j, c.ContextTokens, c.Concurrency)
			} else {
				seen[k] = i
			}
		}
		if !validStatus(c.Status) {
			v.add(ptr+"/status", "is %q; it must be valid, requests_queued or over_capacity", c.Status)
		}
		ok := v.number(ptr+"/total_tok_s", c.TotalTokS, MaxTokS)
		ok = v.number(ptr+"/per_request_tok_s", c.PerRequestTokS, MaxTokS) && ok
		ok = v.number(ptr+"/ttft_ms", c.TTFTMs, MaxMs) && ok
		ok = v.number(ptr+"/tbt_ms", c.TBTMs, MaxMs) && ok
		ok = v.number(ptr+"/avg_active_requests", c.AvgActiveRequests, MaxConcurrency) && ok
		ok = v.number(ptr+"/duration_s", c.DurationS, MaxDurationS) && ok
		v.positive(ptr+"/avg_power_w", c.AvgPowerW, MaxPowerLimitW)
		if c.CompletedRequests != nil && (*c.CompletedRequests < 0 || *c.CompletedRequests > MaxRequests) {
			v.add(ptr+"/completed_requests", "is %d; it must be 0 to %d", *c.CompletedRequests, MaxRequests)
			ok = false
		}
		if c.OutputTokens != nil && (*c.OutputTokens < 0 || *c.OutputTokens > MaxOutputTokens) {
			v.add(ptr+"/output_tokens", "is %d; it must be 0 to %d", *c.OutputTokens, MaxOutputTokens)
			ok = false
		}
		if ok && okAxes {
			v.decodeRedundancy(ptr, c, secsPer)
		}
	}
}

// decodeRedundancy applies the checks a published page's own redundancy
// allows (the page importer applies the same): the tolerances cover
// one-decimal rounding and medians.
func (v *validator) decodeRedundancy(ptr string, c DecodeCell, secsPer *float64) {
	if c.AvgActiveRequests != nil && *c.AvgActiveRequests > float64(c.Concurrency) {
		v.add(ptr+"/avg_active_requests", "is %s, more than the concurrency %d", fnum(*c.AvgActiveRequests), c.Concurrency)
	}
	produced := (c.OutputTokens != nil && *c.OutputTokens > 0) || (c.TotalTokS != nil && *c.TotalTokS > 0)
	if produced && c.DurationS != nil && *c.DurationS == 0 {
		v.add(ptr+"/duration_s", "is 0 but the cell produced output; it must be above 0")
	}
	if c.OutputTokens != nil && c.TotalTokS != nil && c.DurationS != nil {
		want := *c.TotalTokS * *c.DurationS
		if math.Abs(float64(*c.OutputTokens)-want) > 0.02*want+5 {
			v.add(ptr+"/output_tokens", "is %d but total_tok_s × duration_s is %.0f (%s × %s s)", *c.OutputTokens, want, fnum(*c.TotalTokS), fnum(*c.DurationS))
		}
	}
	if c.DurationS != nil && secsPer != nil && math.Abs(*c.DurationS-*secsPer) > 0.1**secsPer+0.1 {
		v.add(ptr+"/duration_s", "is %s s but benchmark.seconds_per_measurement is %s s", fnum(*c.DurationS), fnum(*secsPer))
	}
	if c.PerRequestTokS != nil && c.TBTMs != nil && *c.TBTMs > 0 {
		// Pages round TBT to 0.1 ms: below a few ms that alone moves
		// 1000 / TBT by more than 5 % (1000 · 0.05 / TBT²).
		want := 1000 / *c.TBTMs
		if math.Abs(*c.PerRequestTokS-want) > 0.05*want+0.1+50/(*c.TBTMs**c.TBTMs) {
			v.add(ptr+"/per_request_tok_s", "is %s but 1000 / tbt_ms is %.1f (1000 / %s ms)", fnum(*c.PerRequestTokS), want, fnum(*c.TBTMs))
		}
	}
}

// escapePointer escapes a JSON Pointer reference token (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
