package store_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

// validRun is a generated run; its first decode cell is valid with every
// value present.
func validRun(t *testing.T) store.Run {
	t.Helper()
	r := storetest.Runs(7, 1)[0]
	if err := r.Validate(); err != nil {
		t.Fatalf("the generated run is not valid: %v", err)
	}
	if r.Decode[0].Status != store.StatusValid || r.Decode[0].OutputTokens == nil {
		t.Fatalf("want the first generated cell valid with values, got %+v", r.Decode[0])
	}
	return r
}

func problemsOf(t *testing.T, r store.Run) []store.Problem {
	t.Helper()
	err := r.Validate()
	if err == nil {
		return nil
	}
	var ve *store.ValidationError
	if !errors.As(err, &ve) || !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("Validate returned %T %v, want a *ValidationError matching ErrInvalid", err, err)
	}
	return ve.Problems
}

func TestValidateRejects(t *testing.T) {
	long := strings.Repeat("x", store.MaxTextLen+1)
	tests := []struct {
		name    string
		break_  func(*store.Run)
		pointer string
		message string
	}{
		{"blank title", func(r *store.Run) { r.Title = "  " }, "/title", "required"},
		{"long model name", func(r *store.Run) { r.Model.Name = long }, "/model/name", "201 characters"},
		{"model name at the limit is fine, gpu missing", func(r *store.Run) { r.Model.Name = long[1:]; r.Hardware.GPU = "" }, "/hardware/gpu", "required"},
		{"control character", func(r *store.Run) { r.Engine.Version = "0.1\x1b[31m" }, "/engine/version", "control character"},
		{"bidi override", func(r *store.Run) { r.Title = "run \u202Egpj.exe" }, "/title", "bidirectional"},
		{"newline in a name", func(r *store.Run) { r.Hardware.CPU = "a\nb" }, "/hardware/cpu", "control character"},
		{"launch command too long", func(r *store.Run) { r.Launch.Command = strings.Repeat("a", store.MaxCommandLen+1) }, "/launch/command", "limit is 16384"},
		{"source url not http", func(r *store.Run) { r.SourceURL = "javascript:alert(1)" }, "/source_url", "http"},
		{"vram zero", func(r *store.Run) { r.Hardware.VRAMGB = ptr(0.0) }, "/hardware/vram_gb", "above 0"},
		{"vram too large", func(r *store.Run) { r.Hardware.VRAMGB = ptr(4097.0) }, "/hardware/vram_gb", "at most 4096"},
		{"utilization above 1", func(r *store.Run) {
			r.Launch.GPUMemoryUtilization = ptr(1.5)
			delete(r.Launch.Flags, "gpu-memory-utilization")
		}, "/launch/gpu_memory_utilization", "at most 1"},
		{"gpu count 0", func(r *store.Run) { r.Hardware.GPUCount = ptr(0) }, "/hardware/gpu_count", "1 to 4096"},
		{"context too large", func(r *store.Run) { r.Decode[0].ContextTokens = store.MaxContextTokens + 1 }, "/decode/0/context_tokens", "0 to 16777216"},
		{"negative context", func(r *store.Run) { r.Prefill[0].ContextTokens = -1 }, "/prefill/0/context_tokens", "0 to"},
		{"concurrency too large", func(r *store.Run) { r.Decode[0].Concurrency = store.MaxConcurrency + 1 }, "/decode/0/concurrency", "1 to 65536"},
		{"NaN", func(r *store.Run) { r.Decode[0].TTFTMs = ptr(math.NaN()) }, "/decode/0/ttft_ms", "finite"},
		{"Inf", func(r *store.Run) { r.Prefill[0].PromptTokS = ptr(math.Inf(1)) }, "/prefill/0/prompt_tok_s", "finite"},
		{"1e308 tok/s", func(r *store.Run) { r.Decode[0].TotalTokS = ptr(1e308) }, "/decode/0/total_tok_s", "from 0 to 1e+09"},
		{"avg active above concurrency", func(r *store.Run) {
			r.Decode[0].AvgActiveRequests = ptr(float64(r.Decode[0].Concurrency) + 1)
		}, "/decode/0/avg_active_requests", "more than the concurrency"},
		{"no duration with output", func(r *store.Run) { r.Decode[0].DurationS = ptr(0.0); r.Benchmark.SecondsPerMeasurement = nil }, "/decode/0/duration_s", "above 0"},
		{"per request not 1000/tbt", func(r *store.Run) { r.Decode[0].PerRequestTokS = ptr(*r.Decode[0].PerRequestTokS * 2) }, "/decode/0/per_request_tok_s", "1000 / tbt_ms"},
		{"output not total × duration", func(r *store.Run) { r.Decode[0].OutputTokens = ptr(*r.Decode[0].OutputTokens * 2) }, "/decode/0/output_tokens", "total_tok_s × duration_s"},
		{"duration not the time per measurement", func(r *store.Run) { r.Benchmark.SecondsPerMeasurement = ptr(60.0) }, "/decode/0/duration_s", "seconds_per_measurement"},
		{"prefill ttft not context / tok/s", func(r *store.Run) { r.Prefill[0].TTFTMs = ptr(*r.Prefill[0].TTFTMs * 3) }, "/prefill/0/ttft_ms", "context / prompt tok/s"},
		{"repeated cell", func(r *store.Run) { r.Decode = append(r.Decode, r.Decode[2]) }, "", "repeats /decode/2"},
		{"repeated prefill row", func(r *store.Run) { r.Prefill = append(r.Prefill, r.Prefill[1]) }, "", "repeats /prefill/1"},
		{"unknown status", func(r *store.Run) { r.Decode[1].Status = "great" }, "/decode/1/status", "must be valid"},
		{"max model len disagrees with flag", func(r *store.Run) { r.Launch.MaxModelLen = ptr(4096) }, "/launch/max_model_len", "--max-model-len 131072"},
		{"kv dtype disagrees with flag", func(r *store.Run) { r.Launch.KVCacheDtype = "fp8_e5m2" }, "/launch/kv_cache_dtype", "--kv-cache-dtype"},
		{"prefix caching disagrees with flag", func(r *store.Run) {
			r.Launch.Flags["no-enable-prefix-caching"] = "true"
			r.Launch.EnablePrefixCaching = ptr(true)
		}, "/launch/enable_prefix_caching", "--no-enable-prefix-caching"},
		{"flag name with a slash is escaped", func(r *store.Run) { r.Launch.Flags["a/b~c"] = "x\u2066" }, "/launch/flags/a~1b~0c", "bidirectional"},
		{"no cells", func(r *store.Run) { r.Decode, r.Prefill = nil, nil }, "", "at least one"},
		{"too many prefill rows", func(r *store.Run) {
			r.Prefill = nil
			for i := range store.MaxPrefillCells + 1 {
				r.Prefill = append(r.Prefill, store.PrefillCell{ContextTokens: i, Status: store.StatusValid})
			}
		}, "/prefill", "limit is 200"},
		{"grid wider than 64 levels", func(r *store.Run) {
			for b := 1; b <= store.MaxConcurrencies+1; b++ {
				r.Decode = append(r.Decode, store.DecodeCell{ContextTokens: 999, Concurrency: 1000 + b, Status: store.StatusOverCapacity})
			}
		}, "/decode", "64 × 64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := validRun(t)
			tt.break_(&r)
			probs := problemsOf(t, r)
			for _, p := range probs {
				if (tt.pointer == "" || p.Pointer == tt.pointer) && strings.Contains(p.Message, tt.message) {
					return
				}
			}
			t.Fatalf("problems %v; want one at %q saying %q", probs, tt.pointer, tt.message)
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	r := validRun(t)
	r.Title = ""
	r.Decode[0].Concurrency = 0
	r.Decode[3].TBTMs = ptr(math.Inf(1))
	r.Hardware.VRAMGB = ptr(-4.0)
	probs := problemsOf(t, r)
	want := []string{"/title", "/hardware/vram_gb", "/decode/0/concurrency", "/decode/3/tbt_ms"}
	got := map[string]bool{}
	for _, p := range probs {
		got[p.Pointer] = true
	}
	for _, w := range want {
		if !got[w] {
			t.Errorf("no problem at %s; got %v", w, probs)
		}
	}
	if len(probs) != len(want) {
		t.Errorf("got %d problems %v, want exactly %d", len(probs), probs, len(want))
	}
}

func TestContentHashIgnoresEditableMetadata(t *testing.T) {
	a := validRun(t)
	b := validRun(t)
	b.Title, b.Notes, b.SourceURL, b.SubmittedBy = "another title", "notes", "https://example.com/r", "someone"
	if a.ContentHash() != b.ContentHash() {
		t.Error("title, notes, source_url or submitted_by changed the content hash")
	}
	b.Decode[0].TotalTokS = ptr(*b.Decode[0].TotalTokS + 1)
	if a.ContentHash() == b.ContentHash() {
		t.Error("a changed measurement kept the content hash")
	}
}

// TestContentHashIgnoresCommandComments: a run imported before the launch
// command kept its "#" comment lines keeps its id when imported again with
// them; the command itself still counts.
func TestContentHashIgnoresCommandComments(t *testing.T) {
	a := validRun(t)
	a.Launch.Command = "vllm serve org/model --max-num-seqs 8"
	b := validRun(t)
	b.Launch.Command = "# untuned baseline\n# 1x RTX 3090, 350 W\n" + a.Launch.Command
	if a.ContentHash() != b.ContentHash() {
		t.Error("the command's comment lines changed the content hash")
	}
	b.Launch.Command = "# untuned baseline\nvllm serve org/model --max-num-seqs 16"
	if a.ContentHash() == b.ContentHash() {
		t.Error("a changed command kept the content hash")
	}
}

// TestGeneratedRunsAreValid: matrixd generate and the benchmarks store
// storetest's runs, so every one must pass the checks.
func TestGeneratedRunsAreValid(t *testing.T) {
	for i, r := range storetest.Runs(1, 10000) {
		if err := r.Validate(); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
	}
}
