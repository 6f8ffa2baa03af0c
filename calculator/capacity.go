package calculator

import (
	"math"

	"github.com/matrixd/matrixd/msg"
)

// capacity is what a run's grid says about its KV cache: a cell is over
// capacity exactly when B·(L + max_output) exceeds C.
type capacity struct {
	maxOut int
	// cLo is the largest reservation that ran, cHi the smallest that was not
	// run (0: none refused, so C is unknown above cLo).
	cLo, cHi int
	// seqLimit caps simultaneous requests (hybrid models' per-request
	// state), seen as a queued cell that fit the KV cache; 0 when none.
	seqLimit int
	// maxActive is the most requests ever seen running at once.
	maxActive int
	// noOutputL is the smallest context whose cells ran a full window but
	// produced no token (the first token takes longer than the window);
	// -1 when none.
	noOutputL   int
	maxModelLen int
	maxNumSeqs  int
	// servedL is the longest context whose cells produced output, with
	// each request reserving servedOut output tokens; -1 when none. The
	// engine admitted those requests, whatever max_model_len says of them.
	servedL, servedOut int
}

// pastModelLen reports a context whose requests the engine rejects: the
// context plus the output reservation exceed max_model_len, and the run
// never served that context with that reservation or more.
func (c capacity) pastModelLen(l int) bool {
	if c.maxModelLen <= 0 || l+c.maxOut <= c.maxModelLen {
		return false
	}
	return l > c.servedL || c.maxOut > c.servedOut
}

// ran reports whether a published cell was actually run, and produced
// output. Over-capacity cells that carry a measured duration were run.
func ran(c Cell) (wasRun, output bool) {
	output = (c.OutputTokens != nil && *c.OutputTokens > 0) || (c.OutputTokens == nil && c.TotalTokS != nil && *c.TotalTokS > 0)
	switch c.Status {
	case CellValid, CellRequestsQueued:
		return true, output
	}
	return c.DurationS != nil || c.AvgActiveRequests != nil, output
}

// queuedBySequences reports a queued cell whose active requests stayed well
// under B: the engine would not admit more sequences, rather than requests
// merely waiting out a slow first token.
func queuedBySequences(c Cell) bool {
	return c.Status == CellRequestsQueued && c.AvgActiveRequests != nil && *c.AvgActiveRequests < 0.75*float64(c.Concurrency)
}

func newCapacity(r Run, maxOut int) capacity {
	c := capacity{maxOut: maxOut, noOutputL: -1, maxModelLen: r.MaxModelLen, maxNumSeqs: r.MaxNumSeqs, servedL: -1, servedOut: maxOut}
	for _, cell := range r.Decode {
		wasRun, output := ran(cell)
		if wasRun && output {
			c.servedL = max(c.servedL, cell.ContextTokens)
		}
		b := cell.Concurrency
		if queuedBySequences(cell) {
			b = int(math.Round(*cell.AvgActiveRequests))
		}
		res := b * (cell.ContextTokens + maxOut)
		switch {
		case wasRun && !output && cell.Status == CellOverCapacity:
			if c.noOutputL < 0 || cell.ContextTokens < c.noOutputL {
				c.noOutputL = cell.ContextTokens
			}
			c.cLo = max(c.cLo, res)
		case wasRun:
			c.cLo = max(c.cLo, res)
			if output {
				c.maxActive = max(c.maxActive, b)
			}
		default:
			if c.cHi == 0 || res < c.cHi {
				c.cHi = res
			}
		}
	}
	for _, cell := range r.Decode {
		if queuedBySequences(cell) && cell.Concurrency*(cell.ContextTokens+maxOut) <= c.cLo {
			lim := int(math.Floor(*cell.AvgActiveRequests))
			if c.seqLimit == 0 || lim < c.seqLimit {
				c.seqLimit = lim
			}
		}
	}
	if c.cHi != 0 && c.cHi <= c.cLo {
		c.cHi = 0 // the grid contradicts itself; treat C as unknown above cLo
	}
	return c
}

// scale returns the capacity after scaling the KV pool by a factor known
// to lie in [lo, hi]: the surely-fits bound shrinks with lo, the surely-not
// bound grows with hi, and a sequence limit scales with the pool too.
func (c capacity) scale(lo, hi float64) capacity {
	c.cLo = int(math.Floor(float64(c.cLo) * lo))
	if c.cHi > 0 {
		c.cHi = int(math.Ceil(float64(c.cHi) * hi))
	}
	if c.seqLimit > 0 {
		c.seqLimit = max(1, int(math.Floor(float64(c.seqLimit)*lo)))
	}
	if lo != 1 || hi != 1 {
		c.maxActive = 0 // admission was observed on another pool
	}
	return c
}

// status calls a query given the (scaled) capacity interval.
func (c capacity) status(l, b int) (Status, []msg.Message) {
	maxOut, cLo, cHi := c.maxOut, c.cLo, c.cHi
	var warn []msg.Message
	if c.pastModelLen(l) {
		return ExceedsMaxModelLen, nil
	}
	res := b * (l + maxOut)
	switch {
	case cHi > 0 && res >= cHi:
		return OverCapacity, nil
	case res > cLo:
		if cHi == 0 {
			warn = append(warn, msg.New("calculator.capacity_above_unknown"))
		}
		return BoundaryUncertain, warn
	}
	if c.noOutputL >= 0 && l >= c.noOutputL {
		return TTFTExceedsWindow, []msg.Message{msg.New("calculator.ttft_exceeds_window")}
	}
	if c.seqLimit > 0 && b > c.seqLimit {
		return RequestsQueued, []msg.Message{msg.New("calculator.sequence_limit_queue", c.seqLimit)}
	}
	if c.maxNumSeqs > 0 && b > c.maxNumSeqs {
		return RequestsQueued, []msg.Message{msg.New("calculator.max_num_seqs_queue", c.maxNumSeqs)}
	}
	if c.maxActive > 0 && b > c.maxActive {
		return BoundaryUncertain, []msg.Message{msg.New("calculator.admission_unknown", c.maxActive, b)}
	}
	return Fits, nil
}

// running is how many of b requests run at once.
func (c capacity) running(b int) int {
	if c.seqLimit > 0 {
		b = min(b, c.seqLimit)
	}
	if c.maxNumSeqs > 0 {
		b = min(b, c.maxNumSeqs)
	}
	return b
}

// maxConcurrency is the largest B that surely fits at l: its reservation
// within cLo, within the sequence and max-num-seqs limits, and no more
// requests than were ever seen running together.
func (c capacity) maxConcurrency(l int) int {
	if l+c.maxOut <= 0 || c.pastModelLen(l) {
		return 0 // nothing fits past max_model_len
	}
	b := c.running(c.cLo / (l + c.maxOut))
	if c.maxActive > 0 {
		b = min(b, c.maxActive)
	}
	return b
}

// capNotes says what holds the requests that surely fit at l, b of them,
// below what the KV cache alone holds: the engine's --max-num-seqs, the
// most requests a hybrid model's engine ran at once, or the most this run
// was seen running together.
func (c capacity) capNotes(l, b int) []msg.Message {
	if l+c.maxOut <= 0 {
		return nil
	}
	kv := c.cLo / (l + c.maxOut)
	if b <= 0 || kv <= b {
		return nil
	}
	switch {
	case c.maxNumSeqs > 0 && b == c.maxNumSeqs:
		return []msg.Message{msg.New("calculator.cap_note_max_num_seqs", kv, l+c.maxOut, c.maxNumSeqs)}
	case c.seqLimit > 0 && b == c.seqLimit:
		return []msg.Message{msg.New("calculator.cap_note_sequence_limit", kv, l+c.maxOut, c.seqLimit)}
	case c.maxActive > 0 && b == c.maxActive:
		return []msg.Message{msg.New("calculator.cap_note_max_active", kv, l+c.maxOut, c.maxActive)}
	}
	return nil
}

// otherModelOverheadGB is how much the memory outside the weights and the
// KV cache (activations, CUDA graphs, the runtime; overheadLowGB to
// overheadHighGB each, not published) may differ between two models
// served alike.
const otherModelOverheadGB = overheadHighGB - overheadLowGB

// bytesPerKiB converts the model facts' KV bytes per token to the KiB
// the warnings say.
const bytesPerKiB = 1024

// sized reports whether r gives both models' weights and KV bytes per
// token, which moving a KV pool to the other model needs.
func (r ModelRatios) sized() bool {
	return r.From.WeightsGB > 0 && r.To.WeightsGB > 0 && r.From.KVBytesPerToken > 0 && r.To.KVBytesPerToken > 0 &&
		finite(r.From.WeightsGB, r.To.WeightsGB, r.From.KVBytesPerToken, r.To.KVBytesPerToken)
}

// toModel is c for another model (r) in the same memory: the KV pool the
// run's cells showed (C tokens × its model's KV bytes per token), plus the
// memory its model's weights take less the other's, over the other's KV
// bytes per token, widened by otherModelOverheadGB either way. What the
// cells showed of admission (a sequence limit, the most requests seen
// running, contexts that gave no token in the window) was its model's
// and is dropped; the launch's limits (max_model_len, --max-num-seqs)
// stay. Without both models' sizes, the pool is scaled by the KV ratio
// alone (the weights' difference not counted) and the answer says so.
func (c capacity) toModel(r ModelRatios) (capacity, []msg.Message, error) {
	if !r.sized() {
		out := c.scale(1/r.KV, 1/r.KV)
		return out, []msg.Message{msg.New("calculator.kv_scaled_other_model", r.KV)}, nil
	}
	supported := msg.New("calculator.supported_other_model_memory")
	if c.cLo <= 0 {
		return capacity{}, nil, refuse(supported, "calculator.kv_pool_unknown")
	}
	kvF, kvT := r.From.KVBytesPerToken/1e9, r.To.KVBytesPerToken/1e9 // GB a token
	delta := r.From.WeightsGB - r.To.WeightsGB
	pool := float64(c.cLo)*kvF + delta // GB, at the overhead's middle
	if pool <= 0 {
		return capacity{}, nil, refuse(supported, "calculator.other_model_weights_do_not_fit",
			r.To.WeightsGB, r.From.WeightsGB, float64(c.cLo)*kvF, pool)
	}
	out := c
	out.cLo = max(0, int(math.Floor((pool-otherModelOverheadGB)/kvT)))
	args := []any{c.cLo, r.From.KVBytesPerToken / bytesPerKiB, float64(c.cLo) * kvF, r.From.WeightsGB, r.To.WeightsGB, r.To.KVBytesPerToken / bytesPerKiB, otherModelOverheadGB, out.cLo}
	code := "calculator.kv_other_model_open"
	if c.cHi > 0 {
		out.cHi = int(math.Ceil((float64(c.cHi)*kvF + delta + otherModelOverheadGB) / kvT))
		code, args = "calculator.kv_other_model", append(args, out.cHi)
	}
	out.seqLimit, out.maxActive, out.noOutputL = 0, 0, -1
	warn := []msg.Message{msg.New(code, args...)}
	if out.cLo == 0 {
		warn = append(warn, msg.New("calculator.kv_other_model_none_surely"))
	}
	if c.seqLimit > 0 || r.From.Hybrid || r.To.Hybrid {
		warn = append(warn, msg.New("calculator.other_model_sequence_limit_unknown"))
	}
	return out, warn, nil
}
