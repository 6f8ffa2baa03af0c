package assess

import (
	"fmt"
	"math"
	"strings"

	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/trust"
)

// Named is a run with the name and family an evaluation reports it by.
type Named struct {
	Family, Name string
	Run          store.Run
}

// Doctoring is a way to falsify a run that the checks must catch; Apply
// reports false when it does not apply (the check it targets cannot run
// on the run: an unknown model, GPU or quantization).
type Doctoring struct {
	Name  string
	Apply func(w *Writer, r store.Run) (store.Run, bool)
}

// Doctorings are the falsified copies an evaluation makes of each real run:
// speeds scaled with the cells kept consistent, a move to a GPU 2× and 5×
// slower, a per-request speed ×20 with the totals unchanged, totals over
// per-request × active, and a run relabelled sustained_decode. A copy is
// caught when the checks flag it or the run's validation refuses it.
func Doctorings() []Doctoring {
	speed := func(f float64) func(w *Writer, r store.Run) (store.Run, bool) {
		return func(w *Writer, r store.Run) (store.Run, bool) {
			if !checked(w, r, trust.CodeBandwidth) {
				return r, false
			}
			return scaleSpeed(r, f), true
		}
	}
	return []Doctoring{
		{"10× speed", speed(10)},
		{"2× speed", speed(2)},
		{"1.3× speed", speed(1.3)},
		{"moved to a GPU 2× slower", slowerGPU(2)},
		{"moved to a GPU 5× slower", slowerGPU(5)},
		{"per-request speed × 20, totals unchanged (TBT ÷ 20)", func(w *Writer, r store.Run) (store.Run, bool) {
			if !statesTBT(r) {
				return r, false
			}
			r = cloneCells(r)
			for i := range r.Decode {
				c := &r.Decode[i]
				if c.TBTMs != nil {
					c.TBTMs = ptr(*c.TBTMs / 20)
				}
				if c.PerRequestTokS != nil {
					c.PerRequestTokS = ptr(*c.PerRequestTokS * 20)
				}
			}
			return r, true
		}},
		{"totals over per-request × active (2×)", func(w *Writer, r store.Run) (store.Run, bool) {
			if !checked(w, r, trust.CodeTotalVsPerRequest) {
				return r, false
			}
			r = cloneCells(r)
			for i := range r.Decode {
				c := &r.Decode[i]
				v := 0.0
				if c.PerRequestTokS != nil {
					v = *c.PerRequestTokS
				} else if c.TBTMs != nil && *c.TBTMs > 0 {
					v = 1000 / *c.TBTMs
				}
				if c.TotalTokS == nil || v == 0 {
					continue
				}
				active := float64(c.Concurrency)
				if c.AvgActiveRequests != nil && *c.AvgActiveRequests > 0 {
					active = *c.AvgActiveRequests
				}
				c.TotalTokS = ptr(2 * v * active)
				if c.OutputTokens != nil && c.DurationS != nil {
					c.OutputTokens = ptr(int(math.Round(*c.TotalTokS * *c.DurationS)))
				}
			}
			return r, true
		}},
		{"renamed to another model (same cells)", renamed},
		{"relabelled sustained_decode", func(w *Writer, r store.Run) (store.Run, bool) {
			if r.MethodOf().Class == store.MethodSustainedDecode {
				return r, false
			}
			r.Method = &store.Method{Class: store.MethodSustainedDecode, MeasurementS: r.Benchmark.SecondsPerMeasurement, Prefill: store.PrefillExcluded}
			return r, true
		}},
	}
}

// renamed moves r's cells to the model of the facts table closest in size
// to its own (the copy physics finds hardest to tell): the same cells
// under another model's name.
func renamed(w *Writer, r store.Run) (store.Run, bool) {
	_, _, model := w.Inputs(r)
	size := 8.0
	if model != nil {
		size = model.ParamsB
	}
	var best trust.Model
	for _, m := range w.models.All() {
		if (model != nil && m.Name == model.Name) || strings.EqualFold(m.Name, r.Model.Name) {
			continue
		}
		if best.Name == "" || math.Abs(math.Log(m.ParamsB/size)) < math.Abs(math.Log(best.ParamsB/size)) {
			best = m
		}
	}
	if best.Name == "" {
		return r, false
	}
	r.Model.Name = best.Name
	return r, true
}

// TrustEval is how the checks fare on real runs and falsified copies.
type TrustEval struct {
	Families []FamilyTrust
	// FalseFlags names the real runs flagged; Missed the falsified copies
	// not flagged.
	FalseFlags, Missed []string
	Doctored           []DoctoredCount
	// Observed is the highest share of its physical bandwidth bound the
	// runs of each engine family and weight width reach (the calibration
	// trust.Calibrations holds, measured again).
	Observed []trust.Calibration
}

// FamilyTrust counts one family's real runs and what the checks said.
type FamilyTrust struct {
	Family                            string
	Runs, Flagged                     int
	BandwidthChecked, TotalsChecked   int
	WorstBandwidthPct, WorstTotalsPct float64
}

// DoctoredCount counts one doctoring's copies and how many were caught.
type DoctoredCount struct {
	Name            string
	Copies, Caught  int
	NotApplicableTo int
}

// EvalTrust checks every run of runs and each falsified copy of it.
func (w *Writer) EvalTrust(runs []Named) TrustEval {
	var out TrustEval
	fams := map[string]*FamilyTrust{}
	var order []string
	for _, n := range runs {
		f := fams[n.Family]
		if f == nil {
			f = &FamilyTrust{Family: n.Family}
			fams[n.Family], order = f, append(order, n.Family)
		}
		f.Runs++
		in, gpu, model := w.Inputs(n.Run)
		if u, ok := trust.Utilisation(in, gpu, model); ok {
			bits, _, _ := trust.WeightBits(in, model)
			out.observe(trust.EngineFamily(in.Engine), trust.BitsClass(bits), u)
		}
		t := w.Check(n.Run)
		if t.Flagged {
			f.Flagged++
			out.FalseFlags = append(out.FalseFlags, fmt.Sprintf("%s: %s", n.Name, t.Flags[0].Message))
		}
		for _, c := range t.Checks {
			if c.Status == store.CheckNotChecked {
				continue
			}
			switch c.Code {
			case trust.CodeBandwidth:
				f.BandwidthChecked++
				f.WorstBandwidthPct = math.Max(f.WorstBandwidthPct, worstPct(w, n.Run, trust.CodeBandwidth))
			case trust.CodeTotalVsPerRequest:
				f.TotalsChecked++
				f.WorstTotalsPct = math.Max(f.WorstTotalsPct, worstPct(w, n.Run, trust.CodeTotalVsPerRequest))
			}
		}
	}
	for _, name := range order {
		out.Families = append(out.Families, *fams[name])
	}
	for _, d := range Doctorings() {
		dc := DoctoredCount{Name: d.Name}
		for _, n := range runs {
			bad, ok := d.Apply(w, n.Run)
			if !ok {
				dc.NotApplicableTo++
				continue
			}
			dc.Copies++
			if bad.Validate() != nil || w.Check(bad).Flagged {
				dc.Caught++
			} else {
				out.Missed = append(out.Missed, n.Name+" with "+d.Name)
			}
		}
		out.Doctored = append(out.Doctored, dc)
	}
	return out
}

func (ev *TrustEval) observe(family, bits string, u float64) {
	ev.Observed = observe(ev.Observed, family, bits, u)
}

func (c *Coverage) observe(family, bits string, u float64) {
	c.Observed = observe(c.Observed, family, bits, u)
}

// observe is obs with a run of family at bits reaching u of its bound.
func observe(obs []trust.Calibration, family, bits string, u float64) []trust.Calibration {
	for i := range obs {
		if o := &obs[i]; o.Family == family && o.Bits == bits {
			o.Runs++
			o.Highest = math.Max(o.Highest, u)
			return obs
		}
	}
	return append(obs, trust.Calibration{Family: family, Bits: bits, Runs: 1, Highest: u})
}

func statesTBT(r store.Run) bool {
	for _, c := range r.Decode {
		if c.TBTMs != nil || c.PerRequestTokS != nil {
			return true
		}
	}
	return false
}

// checked reports whether check code runs on r (its inputs are known).
func checked(w *Writer, r store.Run, code string) bool {
	for _, c := range w.Check(r).Checks {
		if c.Code == code {
			return c.Status != store.CheckNotChecked
		}
	}
	return false
}

// worstPct is how close r's worst cell comes to the check's limit, in
// percent of it: the headroom a real run leaves.
func worstPct(w *Writer, r store.Run, code string) float64 {
	worst := 0.0
	for f := 1.0; f < 1000; f *= 1.01 {
		// The smallest factor that makes the run fail is 1 / (share of the limit).
		var bad store.Run
		if code == trust.CodeBandwidth {
			bad = scaleSpeed(r, f)
		} else {
			bad = scaleTotals(r, f)
		}
		if hasFlag(w.Check(bad), code) {
			worst = 100 / f
			break
		}
	}
	return worst
}

func hasFlag(t store.Trust, code string) bool {
	for _, f := range t.Flags {
		if f.Code == code {
			return true
		}
	}
	return false
}

// slowerGPU moves the run to the catalog GPU with the most bandwidth at
// most 1/f of its own: its numbers cannot come from there.
func slowerGPU(f float64) func(w *Writer, r store.Run) (store.Run, bool) {
	return func(w *Writer, r store.Run) (store.Run, bool) {
		if !checked(w, r, trust.CodeBandwidth) {
			return r, false
		}
		g, ok := calculator.LookupGPU(r.Hardware.GPU)
		if !ok {
			return r, false
		}
		var best calculator.GPUSpec
		for _, c := range calculator.Hardware().GPUs() {
			if c.BandwidthGBs > 0 && c.BandwidthGBs <= g.BandwidthGBs/f && c.BandwidthGBs > best.BandwidthGBs {
				best = c
			}
		}
		if best.Name == "" {
			return r, false
		}
		r.Hardware.GPU = best.Name
		return r, true
	}
}

// scaleSpeed multiplies every speed by f, keeping the cells consistent.
func scaleSpeed(r store.Run, f float64) store.Run {
	r = cloneCells(r)
	for i := range r.Decode {
		c := &r.Decode[i]
		if c.TotalTokS != nil {
			c.TotalTokS = ptr(*c.TotalTokS * f)
		}
		if c.PerRequestTokS != nil {
			c.PerRequestTokS = ptr(*c.PerRequestTokS * f)
		}
		if c.TBTMs != nil {
			c.TBTMs = ptr(*c.TBTMs / f)
		}
		if c.OutputTokens != nil {
			c.OutputTokens = ptr(int(math.Round(float64(*c.OutputTokens) * f)))
		}
	}
	return r
}

// scaleTotals multiplies every total by f, leaving per-request speeds.
func scaleTotals(r store.Run, f float64) store.Run {
	r = cloneCells(r)
	for i := range r.Decode {
		if c := &r.Decode[i]; c.TotalTokS != nil {
			c.TotalTokS = ptr(*c.TotalTokS * f)
		}
	}
	return r
}

func cloneCells(r store.Run) store.Run {
	r.Decode = append([]store.DecodeCell(nil), r.Decode...)
	return r
}

func ptr[T any](v T) *T { return &v }

// Coverage is how many runs the bandwidth (physics) check judges, and why
// it cannot judge the others.
type Coverage struct {
	Runs, Judged int
	// Reasons counts the runs not judged by the bandwidth check's message
	// code (trust.bandwidth_gpu_unknown, …); Examples holds, per code, the
	// first run's name and the check's detail.
	Reasons  map[string]int
	Examples map[string]string
	// Unjudged names every run not judged, with the check's detail;
	// Flagged every run the bandwidth check flags, with its first flag.
	Unjudged, Flagged []string
	// Observed is the highest share of its physical bandwidth bound the
	// runs of each engine family and weight width reach.
	Observed []trust.Calibration
}

// PhysicsCoverage checks every run of runs and counts those the bandwidth
// check judges, and the reasons it gives for the rest.
func (w *Writer) PhysicsCoverage(runs []Named) Coverage {
	out := Coverage{Runs: len(runs), Reasons: map[string]int{}, Examples: map[string]string{}}
	for _, n := range runs {
		in, gpu, model := w.Inputs(n.Run)
		if u, ok := trust.Utilisation(in, gpu, model); ok {
			bits, _, _ := trust.WeightBits(in, model)
			out.observe(trust.EngineFamily(in.Engine), trust.BitsClass(bits), u)
		}
		rep := trust.Assess(in, gpu, model)
		for _, c := range rep.Checks {
			if c.Code != trust.CodeBandwidth {
				continue
			}
			if c.Status != trust.StatusNotChecked {
				out.Judged++
				if c.Status == trust.StatusFlagged {
					out.Flagged = append(out.Flagged, n.Name+": "+rep.Flags[0].Message)
				}
				continue
			}
			if out.Reasons[c.Notice.Code] == 0 {
				out.Examples[c.Notice.Code] = n.Name + ": " + c.Detail
			}
			out.Reasons[c.Notice.Code]++
			out.Unjudged = append(out.Unjudged, fmt.Sprintf("%s (%s, %s): %s", n.Name, n.Run.Model.Name, n.Run.Hardware.GPU, c.Detail))
		}
	}
	return out
}
