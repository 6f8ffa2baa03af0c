package calculator

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// randomSummary is a summary whose rows end in tails of unknown or no-fit
// points of random length, with random codes before them (some of them
// blank too, so a tail is only what follows the last point that is not).
func randomSummary(r *rand.Rand) Summary {
	var s Summary
	nb := len(summaryConcurrencies)
	for i := range summaryContexts {
		tail := uint16(r.IntN(2))
		n := r.IntN(nb + 1)
		for j := range nb {
			k := i*nb + j
			if j >= n {
				s.total[k], s.perReq[k], s.ttft[k] = tail, tail, tail
				continue
			}
			for _, a := range []*[summaryPoints]uint16{&s.total, &s.perReq, &s.ttft} {
				a[k] = uint16(r.IntN(4)) // often 0 or 1: blank points inside a row
				if r.IntN(2) == 0 {
					a[k] = uint16(r.IntN(1 << 16))
				}
			}
		}
	}
	for i := range s.level {
		s.level[i] = byte(r.IntN(256))
	}
	s.level[len(s.level)-1] &= 1<<(summaryPoints%8) - 1 // bits past the last point are never set
	return s
}

// TestSummaryEncodingRoundTrips: what Encode writes reads back exactly,
// within SummaryBytes, and shorter than the fixed layout when rows end
// in a tail.
func TestSummaryEncodingRoundTrips(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	fixed := 2 + 3*2*summaryPoints + (summaryPoints+7)/8
	for i := range 2000 {
		s := randomSummary(r)
		if i == 0 {
			s = Summary{} // every point unknown
		}
		b := s.Encode()
		if len(b) > SummaryBytes {
			t.Fatalf("summary %d: %d bytes, over SummaryBytes %d", i, len(b), SummaryBytes)
		}
		got, err := DecodeSummary(b)
		if err != nil {
			t.Fatalf("summary %d: %v", i, err)
		}
		if got != s {
			t.Fatalf("summary %d reads back changed", i)
		}
		if i == 0 && len(b) >= fixed/10 {
			t.Errorf("a summary of nothing takes %d bytes (the fixed layout %d)", len(b), fixed)
		}
	}
}

// TestSummaryFirstVersionReads: summaries stored by the first version
// (every point, figure by figure, then the level bits) still read, so a
// database fitted before the compact encoding needs no refit.
func TestSummaryFirstVersionReads(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 50 {
		s := randomSummary(r)
		b := []byte{1, byte(len(summaryContexts))}
		for _, a := range [][summaryPoints]uint16{s.total, s.perReq, s.ttft} {
			for _, c := range a {
				b = binary.LittleEndian.AppendUint16(b, c)
			}
		}
		b = append(b, s.level[:]...)
		got, err := DecodeSummary(b)
		if err != nil {
			t.Fatal(err)
		}
		if got != s {
			t.Fatal("a first-version summary reads back changed")
		}
	}
}

// TestSummaryDecodeRefusesDamage: a truncated, padded or foreign encoding
// is an error, never a summary made up of what was there.
func TestSummaryDecodeRefusesDamage(t *testing.T) {
	b := randomSummary(rand.New(rand.NewPCG(5, 6))).Encode()
	bad := map[string][]byte{
		"empty":         nil,
		"truncated":     b[:len(b)-1],
		"padded":        append(append([]byte{}, b...), 0),
		"other version": append([]byte{9}, b[1:]...),
		"other ladder":  append([]byte{b[0], b[1] + 1}, b[2:]...),
	}
	tail := append([]byte{}, b...)
	tail[2+len(Summary{}.level)+1] = codeFirst // a row's tail code must be unknown or no fit
	bad["tail code"] = tail
	for name, x := range bad {
		if _, err := DecodeSummary(x); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}
