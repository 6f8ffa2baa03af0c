package calculator

import "unsafe"

// Bytes estimates the memory m keeps live: its run's cells (and what they
// point to), the cell index and the fitted surface, laid out as Go lays
// them out on a 64-bit machine. What a fit allocates and drops is not
// counted. A cache of fits bounds itself by it.
func (m *Model) Bytes() int64 {
	n := int64(unsafe.Sizeof(*m))
	n += int64(len(m.run.ID) + len(m.run.GPU) + len(m.run.Quantization) + len(m.run.Engine) + len(m.run.Method) + len(m.bands.Family))
	n += cellsBytes(m.run.Decode) + cellsBytes(m.run.SharedSpeed) + sliceBytes(m.run.Prefill)
	// fitCore sizes the index for every cell, own and shared; its values
	// point where the run's cells do.
	n += mapBytes(len(m.run.Decode)+len(m.run.SharedSpeed), int64(unsafe.Sizeof(CellRef{})+unsafe.Sizeof(Cell{})))
	n += sliceBytes(m.ttft.rows) + sliceBytes(m.ttft.t1) + sliceBytes(m.ttft.alpha) + sliceBytes(m.prefill.points)
	n += sliceBytes(m.ttft.cells)
	for _, row := range m.ttft.cells {
		n += sliceBytes(row)
	}
	n += sliceBytes(m.kv.rowL) + sliceBytes(m.kv.rowOut) + sliceBytes(m.kv.rowMaxB)
	n += sliceBytes(m.byB)
	if m.queued != nil {
		n += mapBytes(len(m.queued), int64(unsafe.Sizeof(0)+unsafe.Sizeof([]Cell(nil))))
		for _, cs := range m.queued {
			n += sliceBytes(cs) // the values point where the run's cells do
		}
		n += mapBytes(len(m.longestValid), int64(2*unsafe.Sizeof(0)))
	}
	surfaces := []*surface{m.sf}
	if m.unlevelled != nil {
		// Counted as built: it is, once an answer moves the KV pool.
		n += int64(unsafe.Sizeof(*m.unlevelled)) + sliceBytes(m.unlevelled.samples)
		surfaces = append(surfaces, m.unlevelled.get())
	}
	for _, sf := range surfaces {
		n += int64(unsafe.Sizeof(*sf)) + sliceBytes(sf.samples) + sliceBytes(sf.rowKeys)
		n += linesBytes(sf.rows) + linesBytes(sf.cols) + linesBytes(sf.resRows) + linesBytes(sf.resCols)
		n += sliceBytes(sf.ratioRows)
		for _, r := range sf.ratioRows {
			n += sliceBytes(r.t) // xs are the rows'
		}
		if !sameBacking(sf.levelRows, sf.rows) {
			n += linesBytes(sf.levelRows)
		}
	}
	return n
}

// cellsBytes is cells' array, the values its pointers hold (one 8-byte
// word each) and its statuses' text.
func cellsBytes(cells []Cell) int64 {
	n := sliceBytes(cells)
	for _, c := range cells {
		n += int64(len(c.Status))
		for _, set := range []bool{c.TotalTokS != nil, c.PerRequestTokS != nil, c.TTFTMs != nil, c.TBTMs != nil,
			c.AvgActiveRequests != nil, c.OutputTokens != nil, c.DurationS != nil} {
			if set {
				n += 8
			}
		}
	}
	return n
}

func linesBytes(lines []line) int64 {
	n := sliceBytes(lines)
	for _, ln := range lines {
		n += sliceBytes(ln.xs) + sliceBytes(ln.t) + sliceBytes(ln.s) + sliceBytes(ln.dt) + sliceBytes(ln.ds)
	}
	return n
}

// sliceBytes is the array behind s, to its capacity: append grows a
// slice to fill the allocator's size class, so this is what it holds.
func sliceBytes[T any](s []T) int64 {
	var zero T
	return int64(cap(s)) * int64(unsafe.Sizeof(zero))
}

func sameBacking[T any](a, b []T) bool {
	return cap(a) > 0 && cap(b) > 0 && &a[:1][0] == &b[:1][0]
}

// mapBytes is a map made with room for hint entries of slot bytes (key
// and value), as Go lays it out: a header, then tables of 8-slot groups
// (each with an 8-byte control word) at most 7/8 full, a table holding at
// most 1024 slots and its own header.
func mapBytes(hint int, slot int64) int64 {
	const groupSlots, maxTable, header = 8, 1024, 48
	if hint == 0 {
		return header
	}
	if hint <= groupSlots {
		return header + 8 + groupSlots*slot
	}
	target := int64(hint) * groupSlots / 7
	tables := pow2((target + maxTable - 1) / maxTable)
	slots := tables * pow2(max(target/tables, groupSlots))
	return header + tables*(8+header) + slots/groupSlots*(8+groupSlots*slot)
}

// pow2 is the least power of two not below n (n ≥ 1).
func pow2(n int64) int64 {
	p := int64(1)
	for p < n {
		p <<= 1
	}
	return p
}
