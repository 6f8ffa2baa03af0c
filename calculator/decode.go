package calculator

import (
	"errors"

	"github.com/matrixd/matrixd/msg"
)

// move is the kind of move a question asks of a run's measurements. The
// kinds are ordered: a question that moves both the GPU and, with it, the
// VRAM is the GPU's move, and the answer's basis says the furthest.
type move int

const (
	// moveNone is the run as measured: its GPU, VRAM, memory utilization
	// and model (another output reservation changes none of them).
	moveNone move = iota
	// moveVRAM is another VRAM size or memory utilization of the run's
	// GPU: the KV pool moves, the speed stays the measured GPU's.
	moveVRAM
	// moveGPU is another GPU: the speed moves by memory bandwidth, and the
	// KV pool to that GPU's VRAM where the run allows it.
	moveGPU
	// moveModel is another model on the run's GPU and engine.
	moveModel
)

// moveOf is the move of a question whose GPU moves by gpu and KV pool by
// scale, to another model when other.
func moveOf(gpu gpuScaling, scale vramScaling, other bool) move {
	switch {
	case other:
		return moveModel
	case gpu.scaled:
		return moveGPU
	case scale.scaled:
		return moveVRAM
	}
	return moveNone
}

// sameRun reports the run as measured: its levels and measured cells
// answer as they are.
func (mv move) sameRun() bool { return mv == moveNone }

// keepsSpeed reports a move that keeps the measured GPU's and model's
// speed: the run's measured and queued cells still say it.
func (mv move) keepsSpeed() bool { return mv <= moveVRAM }

// movesSpeed reports a move of the speed itself (another GPU or model),
// measured across published grids with a band of its own.
func (mv move) movesSpeed() bool { return mv >= moveGPU }

// basis is the basis of an answer under the move whose speed was
// obtained as speed says.
func (mv move) basis(speed Basis) Basis {
	switch mv {
	case moveVRAM:
		return ScaledVRAM
	case moveGPU:
		return ScaledGPU
	case moveModel:
		return ScaledModel
	}
	return speed
}

// asked is a decode question with its moves read: the kind of move, how
// the GPU, KV pool and model move, and the output reservation and
// capacity it is answered with.
type asked struct {
	q       Query
	move    move
	maxOut  int
	gpu     gpuScaling
	scale   vramScaling
	model   ModelMove // with moveModel
	cap     capacity
	capWarn []msg.Message // what moving the KV pool to the other model says
	// capUnknown is a run that does not say its output reservation,
	// asked without one: the speed is answered, the capacity is not.
	capUnknown bool
}

// Decode predicts one cell.
func (m *Model) Decode(q Query) (Prediction, error) { return m.decode(q, m.gpuMove()) }

// decode is Decode moving speed to another GPU by gm.
func (m *Model) decode(q Query, gm GPUMove) (Prediction, error) {
	a, err := m.ask(q, gm)
	if err != nil {
		return Prediction{}, err
	}
	p := m.capacityAnswer(a)
	if measured, ok := m.measuredStands(a, p); ok {
		return measured, nil
	}
	var queuedAt *Cell
	if c, ok := m.queuedShorterAt(a, &p); ok {
		queuedAt = &c
	}
	switch p.Status {
	case OverCapacity, ExceedsMaxModelLen, TTFTExceedsWindow:
		p.Basis, p.SpeedBasis = a.move.basis(NoSpeed), NoSpeed
		return p, nil
	}
	d, err := m.readSpeed(a, &p, queuedAt)
	if err != nil {
		return Prediction{}, err
	}
	total := m.speedEstimates(a, &p, d, queuedAt)
	m.decodeTTFTAnswer(a, &p, d)
	if !finite(d.t, d.s, total) || !finiteEstimates(p.TotalTokS, p.PerRequestTokS, p.TBTMs, p.TTFTMs) {
		return Prediction{}, refuse(m.supportedRange("calculator.supported_range"), "calculator.no_finite_speed")
	}
	return p, nil
}

// modelAndGPU refuses another model on another GPU.
func modelAndGPU() error {
	return refuse(msg.New("calculator.supported_one_move"), "calculator.model_and_gpu")
}

// ask reads q's moves, refusing those the run cannot make.
func (m *Model) ask(q Query, gm GPUMove) (asked, error) {
	if q.ContextTokens < 0 || q.Concurrency < 1 {
		return asked{}, refuse(msg.New("calculator.supported_cell"), "calculator.not_a_cell", q.ContextTokens, q.Concurrency)
	}
	maxOut, err := m.maxOutput(q)
	capUnknown := errors.Is(err, ErrRefused)
	if err != nil && !capUnknown {
		return asked{}, err
	}
	other := q.OtherModel.other()
	if other && q.TargetGPU != "" && gpuKey(q.TargetGPU) != gpuKey(m.run.GPU) {
		// Said before anything about the GPU move: no flag makes both
		// moves at once (rough=true included).
		if g, ok := LookupGPU(q.TargetGPU); !ok || !g.sameAs(m.run) {
			return asked{}, modelAndGPU()
		}
	}
	gpu, err := m.gpuScale(q, gm)
	if err != nil {
		return asked{}, err
	}
	if other {
		if err := q.OtherModel.check(); err != nil {
			return asked{}, err
		}
		if gpu.scaled {
			return asked{}, modelAndGPU()
		}
		if err := otherModelVRAM(q); err != nil {
			return asked{}, err
		}
	}
	if err := m.targetVRAM(&q, &gpu); err != nil {
		return asked{}, err
	}
	scale, err := m.vramScale(q)
	if err != nil {
		return asked{}, err
	}
	a := asked{q: q, move: moveOf(gpu, scale, other), maxOut: maxOut, gpu: gpu, scale: scale, cap: m.capacityFor(maxOut, scale), capUnknown: capUnknown}
	if a.move == moveModel {
		if !capUnknown {
			if a.cap, a.capWarn, err = a.cap.toModel(q.OtherModel); err != nil {
				return asked{}, err
			}
		}
		a.model = m.modelMove()
	}
	return a, nil
}

// capacityAnswer is the answer's capacity and status, with what its moves
// say.
func (m *Model) capacityAnswer(a asked) Prediction {
	var p Prediction
	q := a.q
	p.Capacity = Capacity{
		ReservedTokens: q.Concurrency * (q.ContextTokens + a.maxOut),
		KVTokensLow:    a.cap.cLo, KVTokensHigh: a.cap.cHi,
		MaxConcurrencyAtContext: a.cap.maxConcurrency(q.ContextTokens),
		SequenceLimit:           a.cap.seqLimit,
	}
	p.Status, p.Warnings = a.cap.status(q.ContextTokens, q.Concurrency)
	if a.capUnknown {
		// What the launch limits say of running at once stands (see
		// runningAtOnce); what the KV cache holds is not read.
		p.Capacity = Capacity{SequenceLimit: a.cap.seqLimit, Unknown: true}
		p.Status, p.Warnings = CapacityUnknown, []msg.Message{capacityUnknownWarning()}
	}
	p.Warnings = append(p.Warnings, a.gpu.warnings...)
	p.Warnings = append(p.Warnings, a.scale.warnings...)
	switch a.move {
	case moveVRAM:
		p.Warnings = append(p.Warnings, sameSpeed())
	case moveModel:
		p.Warnings = append(append(p.Warnings, a.capWarn...), otherModelSpeed(q.OtherModel, a.model))
	}
	if !m.bands.Calibrated {
		p.Warnings = append(p.Warnings, msg.New("calculator.bands_default"))
	}
	return p
}

// measuredStands is the answer at a measured cell whose measurement
// stands under the move; ok false where the cell must be predicted.
func (m *Model) measuredStands(a asked, p Prediction) (Prediction, bool) {
	q := a.q
	measured, ok := m.cells[CellRef{q.ContextTokens, q.Concurrency}]
	switch {
	case !ok:
		return p, false
	case a.move.sameRun() && a.maxOut == m.maxOut:
		p = m.measuredAnswer(p, measured)
		// A measured cell past the knee of a level stretch is on the level
		// as much as the concurrencies between its cells are: the planner
		// reads both alike.
		if _, _, from, _, ok := m.sf.saturated(m.sf.snap(float64(q.ContextTokens)/tokensPerK), float64(q.Concurrency)); ok && p.Status == Fits && from < float64(q.Concurrency) {
			p.LevelFrom = from
		}
		return p, true
	case !a.move.keepsSpeed() || measured.Status != CellRequestsQueued:
		return p, false
	case m.windowQueued(measured) && (p.Status == Fits || p.Status == RequestsQueued):
		// Queued by its long prefill, not by a limit: another VRAM
		// size or output reservation leaves it as measured.
		p = m.measuredAnswer(p, measured)
		if a.move == moveVRAM {
			p.Basis = a.move.basis(p.Basis) // the speed stays the measured one
			// Its bands are the published values' rounding.
			p.BandTotal = roundingBand(*measured.TotalTokS, 0.05)
			if measured.TBTMs != nil {
				p.BandTBT = roundingBand(*measured.TBTMs, 0.05)
			}
		}
		return p, true
	case a.move.sameRun() && p.Status == RequestsQueued && a.cap.running(q.Concurrency) == m.cap.running(q.Concurrency):
		// Another output reservation under which the same requests
		// run at once (a hybrid's sequence limit, not the KV cache,
		// holds them back): the measured cell stands, as a valid one
		// does.
		return m.measuredAnswer(p, measured), true
	}
	return p, false
}

// queuedShorterAt is the run's cell queued at a shorter context that
// makes a cell that fits queue too (see queuedBelow), said in p; ok false
// where none does.
func (m *Model) queuedShorterAt(a asked, p *Prediction) (Cell, bool) {
	c, ok := m.queuedBelow(a.q.ContextTokens, a.q.Concurrency)
	if !ok || p.Status != Fits || !a.move.keepsSpeed() {
		return Cell{}, false
	}
	// What queued at a shorter context (a long prefill keeping requests
	// out of the decode batch for part of the window) queues at a longer
	// one too, and runs no faster.
	p.Status, p.queuedShorter = RequestsQueued, true
	if c.AvgActiveRequests != nil {
		p.Warnings = append(p.Warnings, msg.New(plural(c.Concurrency, "calculator.queued_shorter_one_avg", "calculator.queued_shorter_avg"),
			c.ContextTokens, c.Concurrency, concurrencyText(*c.AvgActiveRequests)))
	} else {
		p.Warnings = append(p.Warnings, msg.New(plural(c.Concurrency, "calculator.queued_shorter_one", "calculator.queued_shorter"), c.ContextTokens, c.Concurrency))
	}
	return c, true
}

// decodeSpeed is an answer's step times, moved as asked: read from the
// run for the b requests that run at once, with the cost of the run's
// queue where a limit holds the rest back (queueCost; queueCell is the
// cell that measured it).
type decodeSpeed struct {
	speedRead
	b         float64
	queueCell Cell
	queueCost bool
}

// readSpeed reads the answer's step times and moves them as asked,
// saying in p what they were read from.
func (m *Model) readSpeed(a asked, p *Prediction, queuedAt *Cell) (decodeSpeed, error) {
	q := a.q
	b, limited := m.runningAtOnce(a, p, queuedAt)
	sp, err := m.speed(q.ContextTokens, b, a.move.sameRun())
	if err != nil {
		return decodeSpeed{}, err
	}
	d := decodeSpeed{speedRead: sp, b: b}
	if limited && a.move.keepsSpeed() {
		if c, kT, kS, ok := m.limitQueuedFactor(q.ContextTokens, a.move.sameRun()); ok {
			d.queueCell, d.queueCost = c, true
			// A queue costs what the run measured it to cost: requests
			// finishing and others admitted slow the steps of those that
			// run (Nemotron's empty prompt: 1,214.7 tok/s measured with
			// 128 asked and 67 running, where 67 running alone would be
			// read 1,482).
			d.t, d.s = d.t*kT, d.s*kS
			p.Warnings = append(p.Warnings, msg.New("calculator.queue_cost", c.ContextTokens, c.Concurrency, 1/kS))
		}
	}
	p.LevelFrom = d.levelFrom
	if d.levelFrom > 0 {
		p.Warnings = append(p.Warnings, msg.New("calculator.level_from", concurrencyText(d.levelFrom)))
	}
	d.t, d.s = a.gpu.apply(m, d.t, d.s)
	if queuedAt != nil {
		d.s = max(d.s, b*1000 / *queuedAt.TotalTokS)
		if pr := queuedAt.PerRequestTokS; pr != nil && *pr > 0 {
			d.t = max(d.t, 1000 / *pr)
		}
	}
	if a.move == moveModel {
		d.t, d.s = m.moveToModel(float64(q.ContextTokens)/tokensPerK, b, d.t, d.s, q.OtherModel, a.model)
	}
	return d, nil
}

// runningAtOnce is how many of the asked requests run at once, said in
// p; limited where the run's request limit holds the rest in a queue.
func (m *Model) runningAtOnce(a asked, p *Prediction, queuedAt *Cell) (b float64, limited bool) {
	n := a.q.Concurrency
	if queuedAt != nil || a.cap.running(n) >= n {
		return float64(n), false
	}
	// A request limit holds the rest in a queue whatever the KV cache
	// says: where the reservations may not fit, those that run are still
	// at most the limit.
	b = float64(a.cap.running(n))
	if p.Status == RequestsQueued {
		p.Warnings = append(p.Warnings, msg.New("calculator.speed_for_running", int(b)))
	} else {
		p.Warnings = append(p.Warnings, msg.New("calculator.request_limit", int(b)))
	}
	return b, true
}

// speedEstimates sets p's speeds, their intervals, basis and cells from
// d, and returns the total tok/s.
func (m *Model) speedEstimates(a asked, p *Prediction, d decodeSpeed, queuedAt *Cell) float64 {
	p.Cells = d.used
	p.Basis, p.SpeedBasis = a.move.basis(d.basis), d.basis
	tb, sb := m.bands.InterpolatedTBT, m.bands.InterpolatedTotal
	switch d.basis {
	case Extrapolated:
		tb, sb = m.bands.ExtrapolatedTBT, m.bands.ExtrapolatedTotal
	case Measured:
		tb, sb = roundingBand(d.t, 0.05), roundingBand(d.b*1000/d.s, 0.05)
	}
	switch a.move {
	case moveGPU:
		tb, sb = max(tb, a.gpu.band), max(sb, a.gpu.band)
	case moveModel:
		tb, sb = max(tb, a.model.Band), max(sb, a.model.Band)
	}
	total := d.b * 1000 / d.s
	p.TBTMs = band(d.t, tb)
	p.PerRequestTokS = invBand(1000/d.t, tb)
	if a.move.movesSpeed() {
		// A move's band was measured on speed (total tok/s moved between
		// published grids): per-request speed takes it as the total does,
		// and the time between tokens its inverse, so that requests at
		// their fastest never add up past the total's high end.
		p.PerRequestTokS = band(1000/d.t, tb)
		p.TBTMs = invBand(d.t, tb)
	}
	p.TotalTokS = band(total, sb) // sb is total tok/s's own held-out error
	if queuedAt != nil {
		// At most the queued cell's, interval included.
		p.TotalTokS.High = min(p.TotalTokS.High, max(*queuedAt.TotalTokS, p.TotalTokS.Value))
		if pr := queuedAt.PerRequestTokS; pr != nil {
			p.PerRequestTokS.High = min(p.PerRequestTokS.High, max(*pr, p.PerRequestTokS.Value))
		}
	}
	p.BandTotal, p.BandTBT = sb, tb
	return total
}

// decodeTTFTAnswer sets p's TTFT where the move predicts it, and keeps a
// measured cell's published per-request speed and TTFT where they stand.
func (m *Model) decodeTTFTAnswer(a asked, p *Prediction, d decodeSpeed) {
	q := a.q
	switch a.move {
	case moveGPU:
		p.Warnings = append(p.Warnings, msg.New("calculator.ttft_not_on_gpu"))
	case moveModel:
	default:
		p.TTFTMs = m.ttft.at(q.ContextTokens, q.Concurrency, m.bands.TTFT)
		if d.queueCost && p.TTFTMs != nil && d.queueCell.TTFTMs != nil {
			m.queuedTTFT(q, p.TTFTMs, d.queueCell)
		}
	}
	if c, ok := m.cells[CellRef{q.ContextTokens, q.Concurrency}]; ok && d.basis == Measured && a.move.keepsSpeed() && (p.Status == Fits || p.Status == BoundaryUncertain) && c.Status == CellValid {
		// Another VRAM size or output reservation under which the measured
		// cell still fits (or may: then, where it runs, it runs so): the
		// speed is the measured GPU's, and its published per-request speed
		// and TTFT stand (not refitted ones).
		if c.PerRequestTokS != nil {
			p.PerRequestTokS = exact(c.PerRequestTokS, 0.05)
		}
		if c.TTFTMs != nil {
			p.TTFTMs = exact(c.TTFTMs, 0.5)
		}
	}
}

// queuedTTFT scales ttft, predicted at q, by what the run's queue
// measured at queueCell cost the first token.
func (m *Model) queuedTTFT(q Query, ttft *Estimate, queueCell Cell) {
	// The first token waits in the queue as the run measured it to (the
	// queue model alone put 127 requests at 2,216 ms beside the 1,024 ms
	// measured with 128).
	at := m.ttft.at(queueCell.ContextTokens, queueCell.Concurrency, m.bands.TTFT)
	if at == nil || !(at.Value > 0) {
		return
	}
	k := *queueCell.TTFTMs / at.Value
	ttft.Value, ttft.Low, ttft.High = ttft.Value*k, ttft.Low*k, ttft.High*k
	// Still no sooner than fewer requests got it where they all ran.
	v := m.ttft.atLeastRow(q.ContextTokens, q.Concurrency, ttft.Value)
	ttft.Low, ttft.High = ttft.Low+v-ttft.Value, ttft.High+v-ttft.Value
	ttft.Value = v
}
