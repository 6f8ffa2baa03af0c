// Package store keeps matrix runs in SQLite: the domain types, all SQL and
// the embedded migrations.
package store

import (
	"cmp"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Domain errors. Callers test them with errors.Is; they arrive wrapped with
// context.
var (
	ErrNotFound = errors.New("not found")
	ErrInvalid  = errors.New("invalid")
	ErrConflict = errors.New("conflict")
	// ErrGone is a run a moderator has hidden.
	ErrGone = errors.New("gone")
)

// Error is a domain error whose text is fit for the client: it says what
// is wrong in the client's terms and holds no internal detail. Kind is one
// of the Err sentinels, for errors.Is.
type Error struct {
	Kind error
	Msg  string
	Err  error // the database's error behind it, if any
	// Code and Params are Msg's message code and parameters, where it has
	// one (the caller's message catalog keys on it).
	Code   string
	Params map[string]string
}

func (e *Error) Error() string { return e.Msg }

// Unwrap makes errors.Is(err, e.Kind) true, and errors.As reach Err.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

func newError(kind error, format string, args ...any) error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// runNotFound is the error of a run id no run has.
func runNotFound(id string) error {
	return &Error{Kind: ErrNotFound, Msg: fmt.Sprintf("run %s does not exist", id), Code: "problem.run_not_found", Params: map[string]string{"run_id": id}}
}

// FieldError is an invalid value of one named input (a parameter, a
// field). It matches ErrInvalid.
type FieldError struct {
	Field   string
	Message string
	// Code and Params are Message's code and parameters, where it has a
	// code (the caller's message catalog keys on it).
	Code   string
	Params map[string]string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// Is makes errors.Is(err, ErrInvalid) true.
func (e *FieldError) Is(target error) bool { return target == ErrInvalid }

// Cell statuses as published on matrix-run pages.
const (
	StatusValid          = "valid"
	StatusRequestsQueued = "requests_queued"
	StatusOverCapacity   = "over_capacity"
)

// Run is one matrix run: one model served by one engine on one machine.
// Optional values are pointers (or empty strings, for text): a value the
// source does not give is absent, never zero.
//
// The JSON form is run JSON (openapi.yaml's RunInput) plus what the server
// assigns: id, created_at and submitted_by. A field whose tag has neither
// omitempty nor omitzero is required in run JSON.
type Run struct {
	ID          string    `json:"id,omitempty"`
	CreatedAt   time.Time `json:"created_at,omitzero"`
	SubmittedBy string    `json:"submitted_by,omitempty"` // the API key's name
	Title       string    `json:"title"`
	Notes       string    `json:"notes,omitempty"`
	Submitter   string    `json:"submitter,omitempty"` // as the source names its author
	// Where the run came from, and on what terms: the source's address and
	// publisher, the licence of its data (an SPDX identifier) and the day
	// it was retrieved (YYYY-MM-DD); empty when not stated.
	SourceURL   string `json:"source_url,omitempty"`
	Publisher   string `json:"publisher,omitempty"`
	License     string `json:"license,omitempty"`
	RetrievedAt string `json:"retrieved_at,omitempty"`

	Model     Model         `json:"model"`
	Hardware  Hardware      `json:"hardware"`
	Engine    Engine        `json:"engine"`
	Benchmark Benchmark     `json:"benchmark,omitzero"`
	Method    *Method       `json:"method,omitempty"`
	Launch    Launch        `json:"launch,omitzero"`
	Prefill   []PrefillCell `json:"prefill,omitempty"`
	Decode    []DecodeCell  `json:"decode,omitempty"`
	// Trust is assigned by the server: the outcome of the plausibility
	// checks when the run was written.
	Trust *Trust `json:"trust,omitempty"`
	// Corroboration is assigned by the server: the run's status against
	// the independent runs of the database, made again as related runs
	// arrive or leave.
	Corroboration *Corroboration `json:"corroboration,omitempty"`

	// Source, on a run to store, is the exact bytes it was made from.
	Source *Source `json:"-"`
	// Provenance and Moderation are what the store knows of a stored run;
	// on a run to store, Provenance's SignedBy and Signature are kept.
	Provenance Provenance `json:"-"`
	Moderation Moderation `json:"-"`
}

// Model is the model a run served.
type Model struct {
	Name         string `json:"name"`
	Quantization string `json:"quantization,omitempty"`
}

// Hardware is the machine a run was measured on.
type Hardware struct {
	Type          string   `json:"type,omitempty"`
	GPU           string   `json:"gpu"`
	GPUCount      *int     `json:"gpu_count,omitempty"`
	VRAMGB        *float64 `json:"vram_gb,omitempty"`
	CPU           string   `json:"cpu,omitempty"`
	CPUCores      *int     `json:"cpu_cores,omitempty"`
	RAMGB         *float64 `json:"ram_gb,omitempty"`
	OS            string   `json:"os,omitempty"`
	DriverVersion string   `json:"driver_version,omitempty"`
	PowerLimitW   *float64 `json:"power_limit_w,omitempty"`
	// AvgPowerW is the measured average draw of one GPU over the run, W.
	AvgPowerW *float64 `json:"avg_power_w,omitempty"`
	PCIe      string   `json:"pcie,omitempty"`
}

// Engine is the inference engine that served the model.
type Engine struct {
	Name         string `json:"name"`
	Version      string `json:"version,omitempty"`
	Quantization string `json:"quantization,omitempty"`
	Backend      string `json:"backend,omitempty"`
	Repository   string `json:"repository,omitempty"`
	Build        string `json:"build,omitempty"`
}

// Benchmark describes how the run was measured.
type Benchmark struct {
	Tool                  string   `json:"tool,omitempty"`
	ToolVersion           string   `json:"tool_version,omitempty"`
	ServedModel           string   `json:"served_model,omitempty"`
	Revision              string   `json:"revision,omitempty"`
	DecodeTest            string   `json:"decode_test,omitempty"`
	PrefillMode           string   `json:"prefill_mode,omitempty"`
	SecondsPerMeasurement *float64 `json:"seconds_per_measurement,omitempty"`
	MaxOutputTokens       *int     `json:"max_output_tokens,omitempty"`
}

// Launch is the engine's launch command, verbatim, with the settings parsed
// from it.
type Launch struct {
	Command              string            `json:"command,omitempty"`
	Notes                []string          `json:"notes,omitempty"`
	MaxModelLen          *int              `json:"max_model_len,omitempty"`
	GPUMemoryUtilization *float64          `json:"gpu_memory_utilization,omitempty"`
	MaxNumSeqs           *int              `json:"max_num_seqs,omitempty"`
	KVCacheDtype         string            `json:"kv_cache_dtype,omitempty"`
	AttentionBackend     string            `json:"attention_backend,omitempty"`
	EnablePrefixCaching  *bool             `json:"enable_prefix_caching,omitempty"`
	Flags                map[string]string `json:"flags,omitempty"`
}

// PrefillCell is one row of the prefill table.
type PrefillCell struct {
	ContextTokens int      `json:"context_tokens"`
	Status        string   `json:"status"`
	PromptTokS    *float64 `json:"prompt_tok_s,omitempty"`
	TTFTMs        *float64 `json:"ttft_ms,omitempty"`
}

// DecodeCell is one cell of the sustained-decode grid.
type DecodeCell struct {
	ContextTokens     int      `json:"context_tokens"`
	Concurrency       int      `json:"concurrency"`
	Status            string   `json:"status"`
	TotalTokS         *float64 `json:"total_tok_s,omitempty"`
	PerRequestTokS    *float64 `json:"per_request_tok_s,omitempty"`
	TTFTMs            *float64 `json:"ttft_ms,omitempty"`
	TBTMs             *float64 `json:"tbt_ms,omitempty"`
	AvgActiveRequests *float64 `json:"avg_active_requests,omitempty"`
	CompletedRequests *int     `json:"completed_requests,omitempty"`
	OutputTokens      *int     `json:"output_tokens,omitempty"`
	DurationS         *float64 `json:"duration_s,omitempty"`
	// AvgPowerW is the measured average draw of one GPU in this cell, W.
	AvgPowerW *float64 `json:"avg_power_w,omitempty"`
}

// Normalize puts the run in its canonical form: its names in Unicode
// normalization form C (NFC), its cells in order of context, then
// concurrency.
func (r *Run) Normalize() {
	for _, name := range []*string{&r.Submitter, &r.Model.Name, &r.Model.Quantization, &r.Hardware.Type, &r.Hardware.GPU, &r.Hardware.CPU,
		&r.Engine.Name, &r.Engine.Version, &r.Engine.Quantization, &r.Engine.Backend, &r.Benchmark.Tool, &r.Benchmark.ServedModel} {
		*name = NFC(*name)
	}
	slices.SortFunc(r.Prefill, func(a, b PrefillCell) int { return cmp.Compare(a.ContextTokens, b.ContextTokens) })
	slices.SortFunc(r.Decode, func(a, b DecodeCell) int {
		return cmp.Or(cmp.Compare(a.ContextTokens, b.ContextTokens), cmp.Compare(a.Concurrency, b.Concurrency))
	})
}

// uncommented is a command without its "#" comment lines.
func uncommented(cmd string) string {
	if !strings.HasPrefix(cmd, "#") {
		return cmd
	}
	var keep []string
	for l := range strings.SplitSeq(cmd, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

func validStatus(s string) bool {
	return s == StatusValid || s == StatusRequestsQueued || s == StatusOverCapacity
}

// ContentHash identifies a run by what was measured and how: everything
// but what the server assigns and the metadata its owner may edit (title,
// notes, source_url), where it came from (publisher, licence, retrieval
// date) and the checks the server makes. Importing the same
// content twice yields the same hash, and editing the metadata keeps the
// run's identity. A method that is the run's default (the one its
// benchmark text names) adds nothing to the hash, so runs stored before
// methods were stated keep their ids, and stating the default changes none.
// The launch command's comment lines are notes (kept in launch.notes too):
// a run imported before they were kept in the command keeps its id.
func (r *Run) ContentHash() string {
	c := *r
	c.ID, c.CreatedAt, c.SubmittedBy = "", time.Time{}, ""
	c.Title, c.Notes, c.SourceURL = "", "", ""
	c.Publisher, c.License, c.RetrievedAt = "", "", ""
	c.Launch.Command = uncommented(c.Launch.Command)
	c.Trust, c.Corroboration = nil, nil
	if c.Method != nil && c.Method.equal(defaultMethod(c)) {
		c.Method = nil
	}
	c.Prefill, c.Decode = slices.Clone(c.Prefill), slices.Clone(c.Decode)
	c.Normalize()
	b, _ := json.Marshal(c) // cannot fail: Validate rejects NaN and Inf
	sum := sha256.Sum256(b)
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:]))
}

// IDFromHash is the run id derived from its content hash: stable, opaque and
// URL-safe.
func IDFromHash(hash string) string { return "r" + hash[:15] }
