package assess

import (
	"math"
	"slices"
	"strings"

	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/trust"
)

// Spread is the measured factor (≥ 1) between independent real runs and
// one kind of reference: what the kind's Bound is derived from.
type Spread struct {
	Kind string
	// Comparisons counts run-to-reference comparisons (each pair of runs
	// twice, once from each side); Sources the sources they involve.
	Comparisons, Sources int
	P50, P90, P99, Max   float64
	// InUse is trust.Bounds' bound of the kind.
	InUse trust.Bound
	// HeldOut counts the comparisons beyond the dispute bound derived
	// (as Bounds documents) without their run's source: leave one source
	// out, the false disputes an unseen source would meet.
	HeldOut, HeldOutOf int
	agree, dispute     float64
}

// P90Bound is the agree bound the comparisons give (AgreeBound).
func (s Spread) P90Bound() float64 { return s.agree }

// P99Bound is the dispute bound the comparisons give (DisputeBound).
func (s Spread) P99Bound() float64 { return s.dispute }

// CorroborationEval is how corroboration fares on real runs stored
// together and on falsified copies of them submitted from a second key.
type CorroborationEval struct {
	Spreads []Spread
	// OtherLayout is the spread between runs of the same model on the
	// same GPUs and engine in another parallel layout (tensor parallel 4
	// with two data-parallel copies against tensor parallel 8, pipeline
	// against tensor parallel): not references of each other (trust.Peer
	// Split), measured to show why.
	OtherLayout Spread
	// Statuses counts the real runs' statuses; Disputed names those
	// disputed (false disputes).
	Statuses map[string]int
	Disputed []string
	Doctored []CorroboratedCount
	Missed   []string
}

// CorroboratedCount is one doctoring's copies that have an independent
// reference in the store, and those caught by the checks or by
// corroboration.
type CorroboratedCount struct {
	Name                   string
	Copies, WithReference  int
	CaughtByChecks, Caught int
	CaughtWithRef          int
}

// simulated are the real runs as a store holding them all sees them.
type simulated struct {
	runs  []store.Run
	peers []trust.Peer
}

func (w *Writer) simulate(runs []Named) simulated {
	var s simulated
	for i, n := range runs {
		r := n.Run
		r.ID = n.Name
		p := w.Peer(r)
		p.Order = int64(i)
		if w.Check(r).Flagged {
			p.ID = "" // flagged runs are no one's reference
		}
		s.runs, s.peers = append(s.runs, r), append(s.peers, p)
	}
	return s
}

// related are the peers the store's CorroborationPeers would give r: of
// its model or on its GPU (names ignoring case), not flagged.
func (s simulated) related(r store.Run) []trust.Peer {
	var out []trust.Peer
	for i, p := range s.peers {
		o := s.runs[i]
		if p.ID != "" && (strings.EqualFold(o.Model.Name, r.Model.Name) || strings.EqualFold(o.Hardware.GPU, r.Hardware.GPU)) {
			out = append(out, p)
		}
	}
	return out
}

// otherLayout keys the spread of runs differing only in parallel layout.
const otherLayout = "other_layout"

// EvalCorroboration stores runs together (in memory, as the store would
// hand them to the rule), measures each reference kind's spread, judges
// every real run, and judges each doctored copy of each run submitted
// from a second key.
func (w *Writer) EvalCorroboration(runs []Named) CorroborationEval {
	sim := w.simulate(runs)
	ev := CorroborationEval{Statuses: map[string]int{}}
	type cmpn struct {
		source string
		f      float64
	}
	byKind := map[string][]cmpn{}
	for i, p := range sim.peers {
		if p.ID == "" {
			continue
		}
		related := sim.related(sim.runs[i])
		for _, ref := range trust.Comparisons(p, related) {
			byKind[ref.Kind] = append(byKind[ref.Kind], cmpn{p.Source, trust.Factor(ref.Ratio)})
		}
		var relaid []trust.Peer
		for _, o := range related {
			if o.Split != p.Split {
				o.Split = p.Split
				relaid = append(relaid, o)
			}
		}
		for _, ref := range trust.Comparisons(p, relaid) {
			if ref.Kind == trust.RefSameConfig {
				byKind[otherLayout] = append(byKind[otherLayout], cmpn{p.Source, trust.Factor(ref.Ratio)})
			}
		}
		c := trust.Corroborate(p, related, trust.Bounds())
		ev.Statuses[c.Status]++
		if c.Status == trust.StatusDisputed {
			ev.Disputed = append(ev.Disputed, p.ID+": "+c.Detail)
		}
	}
	for _, b := range append(trust.Bounds(), trust.Bound{Kind: otherLayout}) {
		cs := byKind[b.Kind]
		sp := Spread{Kind: b.Kind, Comparisons: len(cs), InUse: b}
		var all []float64
		sources := map[string]bool{}
		for _, c := range cs {
			all, sources[c.source] = append(all, c.f), true
		}
		sp.Sources = len(sources)
		if len(all) > 0 {
			sp.P50, sp.P90, sp.P99, sp.Max = quantile(all, 0.5), quantile(all, 0.9), quantile(all, 0.99), slices.Max(all)
			sp.agree, sp.dispute = AgreeBound(all), DisputeBound(all)
		}
		for src := range sources {
			var rest []float64
			for _, c := range cs {
				if c.source != src {
					rest = append(rest, c.f)
				}
			}
			bound := DisputeBound(rest)
			for _, c := range cs {
				if c.source == src {
					sp.HeldOutOf++
					if bound > 0 && c.f > bound {
						sp.HeldOut++
					}
				}
			}
		}
		if b.Kind == otherLayout {
			ev.OtherLayout = sp
			continue
		}
		ev.Spreads = append(ev.Spreads, sp)
	}
	last := int64(len(runs))
	for _, d := range Doctorings() {
		dc := CorroboratedCount{Name: d.Name}
		for i, n := range runs {
			bad, ok := d.Apply(w, sim.runs[i])
			if !ok {
				continue
			}
			dc.Copies++
			bad.ID, bad.SubmittedBy = "doctored copy of "+n.Name, "second-key"
			byChecks := bad.Validate() != nil || w.Check(bad).Flagged
			p := w.Peer(bad)
			p.Order = last
			related := sim.related(bad)
			_, isCopy := trust.CopyOf(p, related)
			hasRef := isCopy || len(trust.References(p, related)) > 0
			disputed := trust.Corroborate(p, related, trust.Bounds()).Status == trust.StatusDisputed
			if byChecks {
				dc.CaughtByChecks++
			}
			if byChecks || disputed {
				dc.Caught++
			}
			if hasRef {
				dc.WithReference++
				if byChecks || disputed {
					dc.CaughtWithRef++
				} else {
					ev.Missed = append(ev.Missed, n.Name+" with "+d.Name)
				}
			}
		}
		ev.Doctored = append(ev.Doctored, dc)
	}
	return ev
}

// CorroborationStatuses stores runs together, as EvalCorroboration does,
// and counts each run's corroboration status, naming the disputed: what
// EvalCorroboration reports of them without measuring spreads or making
// falsified copies.
func (w *Writer) CorroborationStatuses(runs []Named) CorroborationEval {
	sim := w.simulate(runs)
	ev := CorroborationEval{Statuses: map[string]int{}}
	for i, p := range sim.peers {
		if p.ID == "" {
			continue
		}
		c := trust.Corroborate(p, sim.related(sim.runs[i]), trust.Bounds())
		ev.Statuses[c.Status]++
		if c.Status == trust.StatusDisputed {
			ev.Disputed = append(ev.Disputed, p.ID+": "+c.Detail)
		}
	}
	return ev
}

// DisputeBound is the dispute bound factors give, as trust.Bounds derives
// it: their 99th percentile, no lower than the largest, rounded up to
// 0.05 (0: no factors).
func DisputeBound(factors []float64) float64 {
	if len(factors) == 0 {
		return 0
	}
	return math.Ceil(math.Max(quantile(factors, 0.99), slices.Max(factors))*20) / 20
}

// AgreeBound is the agree bound factors give: their 90th percentile
// rounded up to 0.05.
func AgreeBound(factors []float64) float64 {
	if len(factors) == 0 {
		return 0
	}
	return math.Ceil(quantile(factors, 0.9)*20) / 20
}

// quantile is the q-quantile of v, interpolated linearly.
func quantile(v []float64, q float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	pos := q * float64(len(s)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(s)-1)
	return s[lo] + (s[hi]-s[lo])*(pos-float64(lo))
}
