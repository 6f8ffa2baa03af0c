package calculator

import (
	"math"
	"strconv"
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
func (c capacity) status(l, b int) (Status, []string) {
	maxOut, cLo, cHi := c.maxOut, c.cLo, c.cHi
	var warn []string
	if c.pastModelLen(l) {
		return ExceedsMaxModelLen, nil
	}
	res := b * (l + maxOut)
	switch {
	case cHi > 0 && res >= cHi:
		return OverCapacity, nil
	case res > cLo:
		if cHi == 0 {
			warn = append(warn, "no cell of this run was refused for capacity, so the KV capacity above the largest reservation that ran is unknown")
		}
		return BoundaryUncertain, warn
	}
	if c.noOutputL >= 0 && l >= c.noOutputL {
		return TTFTExceedsWindow, []string{"cells at this context ran a full measurement window without a first token: prefill takes longer than the window"}
	}
	if c.seqLimit > 0 && b > c.seqLimit {
		return RequestsQueued, []string{"this run admitted only about " + strconv.Itoa(c.seqLimit) + " requests at once (a per-request state limit): the rest wait in a queue"}
	}
	if c.maxNumSeqs > 0 && b > c.maxNumSeqs {
		return RequestsQueued, []string{"the engine runs at most --max-num-seqs " + strconv.Itoa(c.maxNumSeqs) + " requests at once: the rest wait in a queue"}
	}
	if c.maxActive > 0 && b > c.maxActive {
		return BoundaryUncertain, []string{"no cell of this run had more than " + strconv.Itoa(c.maxActive) + " requests running at once, so whether " + strconv.Itoa(b) + " are admitted together is unknown"}
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
