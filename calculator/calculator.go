// Package calculator predicts decode speed, TTFT and KV-capacity limits for
// unmeasured context / concurrency / VRAM combinations from a run's measured
// cells. It is pure: no I/O, no clocks, no HTTP.
//
// Speed is modelled as two step times per cell: T = time between tokens and
// S = B·1000/total tok/s (ms), both close to bilinear in concurrency B and
// context L. Inside the measured region they are interpolated piecewise
// bilinearly; outside (within limits) S is extrapolated linearly from the
// nearest rows or columns and T by a physical model
// T = a + b·B + c·B·L + d·L + e·B²·L anchored at the nearest measured cells.
// Where a run's rows share one shape along B, a row's missing concurrency
// is also read from the rows around it; how much each estimate counts is
// chosen per run by its own held-out error.
package calculator

import (
	"errors"
	"math"

	"github.com/matrixd/matrixd/msg"
)

// Cell statuses as stored (published) and answer statuses.
const (
	CellValid          = "valid"
	CellRequestsQueued = "requests_queued"
	CellOverCapacity   = "over_capacity"
)

// Status is the calculator's call for a query.
type Status string

// Statuses of an answer.
const (
	Fits               Status = "fits"
	OverCapacity       Status = "over_capacity"
	BoundaryUncertain  Status = "boundary_uncertain"
	RequestsQueued     Status = "requests_queued"
	ExceedsMaxModelLen Status = "exceeds_max_model_len"
	TTFTExceedsWindow  Status = "ttft_exceeds_window"
	// CapacityUnknown is a speed answered for a run that does not say
	// what each request reserved for output, asked without a reservation:
	// whether the requests fit is not judged (Capacity.Unknown).
	CapacityUnknown Status = "capacity_unknown"
)

// Basis says how an answer was obtained.
type Basis string

// Bases of an answer.
const (
	Measured     Basis = "measured"
	Interpolated Basis = "interpolated"
	Extrapolated Basis = "extrapolated"
	ScaledVRAM   Basis = "scaled_vram"
	ScaledGPU    Basis = "scaled_gpu"
	ScaledModel  Basis = "scaled_model"
	NoSpeed      Basis = "none"
)

// Cell is one measured decode cell. Nil values were not published.
type Cell struct {
	ContextTokens     int
	Concurrency       int
	Status            string
	TotalTokS         *float64
	PerRequestTokS    *float64
	TTFTMs            *float64
	TBTMs             *float64
	AvgActiveRequests *float64
	OutputTokens      *int
	DurationS         *float64
}

// PrefillPoint is one cold-prefill measurement.
type PrefillPoint struct {
	ContextTokens int
	TTFTMs        float64
}

// Run is what the calculator needs of a stored run.
type Run struct {
	ID string
	// GPU is the measured GPU's name (for scaling to another GPU).
	GPU string
	// Engine is the inference engine's name as published; its family
	// and its method class (how the cells were measured) pick the
	// calibration of the run's error bands (BandFamily).
	Engine, Method string
	Decode         []Cell
	Prefill        []PrefillPoint
	// Launch limits; zero when unknown.
	MaxModelLen          int
	MaxNumSeqs           int
	MaxOutputTokens      int
	GPUMemoryUtilization float64
	VRAMGB               float64
	// Quantization is the model's, as published (it sets the weights'
	// bytes per parameter).
	Quantization string
	// ParamsB is the model's size in billions of parameters; zero when
	// unknown (VRAM scaling then refuses).
	ParamsB float64
	// WindowS is the measurement window in seconds; zero when unknown.
	WindowS float64
	// SharedSpeed are valid cells of other runs of the same model, GPU and
	// engine that differ only in capacity settings (max_model_len,
	// gpu_memory_utilization): they inform the speed surface where this run
	// has no cell of their context and concurrency, never its capacity.
	SharedSpeed []Cell
}

// Refusal is a query the data does not support. Reason and Supported are
// client-facing text; Message and SupportedMessage are the same with their
// codes and parameters.
type Refusal struct {
	Reason           string
	Supported        string
	Message          msg.Message
	SupportedMessage msg.Message
}

// NewRefusal is the refusal saying m, with what is supported instead (no
// message: nothing to say).
func NewRefusal(m, supported msg.Message) *Refusal {
	return &Refusal{Reason: m.Text, Supported: supported.Text, Message: m, SupportedMessage: supported}
}

func (r *Refusal) Error() string {
	if r.Supported == "" {
		return r.Reason
	}
	return r.Reason + "; supported: " + r.Supported
}

// ErrRefused matches every *Refusal with errors.Is.
var ErrRefused = errors.New("refused")

// Is makes errors.Is(err, ErrRefused) true for refusals.
func (r *Refusal) Is(target error) bool { return target == ErrRefused }

func refuse(supported msg.Message, code string, args ...any) error {
	return NewRefusal(msg.New(code, args...), supported)
}

// Estimate is a predicted value with its interval.
type Estimate struct {
	Value float64
	Low   float64
	High  float64
}

func band(v, relErr float64) *Estimate {
	return &Estimate{Value: v, Low: math.Max(v*(1-relErr), 0), High: v * (1 + relErr)}
}

// finiteEstimates reports whether every value and bound is a number JSON
// can carry.
func finiteEstimates(es ...*Estimate) bool {
	for _, e := range es {
		if e != nil && !finite(e.Value, e.Low, e.High) {
			return false
		}
	}
	return true
}

// CellRef names a measured cell an answer used.
type CellRef struct {
	ContextTokens int
	Concurrency   int
}

// Capacity is the KV-cache picture at a query.
type Capacity struct {
	// ReservedTokens is B·(L + max_output): what the engine must reserve.
	ReservedTokens int
	// KVTokensLow is the largest reservation that ran; KVTokensHigh the
	// smallest that did not (0 when none was refused).
	KVTokensLow  int
	KVTokensHigh int
	// MaxConcurrencyAtContext is the largest B that surely fits at L.
	MaxConcurrencyAtContext int
	// SequenceLimit is the observed cap on simultaneous requests (hybrid
	// models), 0 when none was seen.
	SequenceLimit int
	// Unknown is a capacity that cannot be read: the run does not say
	// what each request reserved for output and the query gave none.
	// Reservations and KV figures are then zero, meaning unknown.
	Unknown bool
}

// Query asks for one cell.
type Query struct {
	ContextTokens int
	Concurrency   int
	// Optional overrides; zero keeps the run's.
	VRAMGB               float64
	GPUMemoryUtilization float64
	MaxOutputTokens      int
	// TargetGPU moves the speed to another GPU by its memory bandwidth;
	// VRAM defaults to that GPU's. Rough allows crossing GPU generations.
	TargetGPU string
	Rough     bool
	// OtherModel, when its ratios are set, asks for another model on the
	// run's GPU and engine: its weight and KV bytes per token over the run's
	// model's (see ModelRatios; basis scaled_model).
	OtherModel ModelRatios
}

// Prediction answers a Query.
type Prediction struct {
	Status         Status
	TotalTokS      *Estimate
	PerRequestTokS *Estimate
	TBTMs          *Estimate
	TTFTMs         *Estimate
	Capacity       Capacity
	Basis          Basis
	// SpeedBasis is how the speed was obtained when Basis is scaled_vram.
	SpeedBasis Basis
	Cells      []CellRef
	Warnings   []msg.Message
	// BandTotal and BandTBT are the relative half-widths behind the total
	// and TBT intervals (for TBT, the band on the step time).
	BandTotal, BandTBT float64
	// LevelFrom is set when the speed was read from a level stretch, or
	// the measured cell asked lies on one: the concurrency from which
	// measured throughput stops rising in the rows around the asked
	// context (0 otherwise).
	LevelFrom float64
	// queuedShorter marks a status of requests_queued read from a cell
	// queued at a shorter context (Model.queuedBelow): like a measured
	// queued cell, a verdict on this concurrency alone.
	queuedShorter bool
}

func finite(vs ...float64) bool {
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}
