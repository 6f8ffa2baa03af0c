package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/predict"
	"github.com/matrixd/matrixd/server"
	"github.com/matrixd/matrixd/store"
)

const calcUsage = `usage: matrixd calc decode|capacity|grid|prefill|plan [flags]
  --run ID | --model M --gpu G [--engine-version V] [--kv-cache-dtype D]   which run
  plan --context 16K --min-tok-s 30 [--max-ttft 2000] [--users 200]
       [--model M] [--gpu G] [--engine E] [--include-scaled] [--limit 20]
                                       which runs serve a target, at what concurrency
  --context 48K --concurrency 8        the cell (K = 1024 tokens)
  --contexts 0,16K,48K --concurrencies 1,4,8   grid axes (default: the run's)
  --vram 16 --util 0.9 --max-output 8192       what-ifs
  --target-gpu 'RTX 3090' [--rough]            on another GPU (by memory bandwidth)
  --json                               the API's JSON instead of a table`

// tokens reads a token count: "49152", "48K" or "48k" (K = 1024).
func tokens(s string) (int, error) {
	s = strings.TrimSpace(s)
	mult := 1
	if n := len(s); n > 0 && (s[n-1] == 'K' || s[n-1] == 'k') {
		s, mult = s[:n-1], 1024
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is not a token count (e.g. 49152 or 48K)", s)
	}
	return v * mult, nil
}

func tokenList(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for part := range strings.SplitSeq(s, ",") {
		v, err := tokens(part)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func calcCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return errors.New(calcUsage)
	}
	what, args := args[0], args[1:]
	fs := newFlags("calc "+what, stderr)
	db := dbFlag(fs, getenv)
	var sel predict.Selection
	fs.StringVar(&sel.RunID, "run", "", "run id")
	fs.StringVar(&sel.Model, "model", "", "model name substring (with --gpu)")
	fs.StringVar(&sel.GPU, "gpu", "", "GPU name (with --model)")
	fs.StringVar(&sel.EngineVersion, "engine-version", "", "narrow --model/--gpu to an engine version")
	fs.StringVar(&sel.KVCacheDtype, "kv-cache-dtype", "", "narrow --model/--gpu to a KV-cache dtype")
	contextS := fs.String("context", "", "context length in tokens (48K = 49152)")
	concurrency := fs.Int("concurrency", 0, "simultaneous requests")
	contextsS := fs.String("contexts", "", "grid contexts, comma-separated")
	concurrenciesS := fs.String("concurrencies", "", "grid concurrencies, comma-separated")
	vram := fs.Float64("vram", 0, "another VRAM size in GB")
	util := fs.Float64("util", 0, "another --gpu-memory-utilization")
	maxOut := fs.Int("max-output", 0, "tokens reserved per request for output")
	targetGPU := fs.String("target-gpu", "", "move the speed to another GPU by memory bandwidth")
	rough := fs.Bool("rough", false, "allow --target-gpu of another GPU generation (rough estimate)")
	asJSON := fs.Bool("json", false, "print the API's JSON")
	minTokS := fs.Float64("min-tok-s", 0, "plan: the decode speed each request needs, tok/s")
	maxTTFT := fs.Float64("max-ttft", 0, "plan: the longest acceptable TTFT, ms")
	users := fs.Int("users", 0, "plan: concurrent users to serve")
	engine := fs.String("engine", "", "plan: only runs of this engine")
	includeScaled := fs.Bool("include-scaled", false, "plan: add catalog GPUs without a run, scaled from the nearest measured one")
	limit := fs.Int("limit", predict.DefaultPlanOptions, "plan: options to show, best first")
	if err := fs.Parse(args); err != nil {
		return err
	}
	q := calculator.Query{Concurrency: *concurrency, VRAMGB: *vram, GPUMemoryUtilization: *util, MaxOutputTokens: *maxOut,
		TargetGPU: *targetGPU, Rough: *rough}
	if *contextS != "" {
		l, err := tokens(*contextS)
		if err != nil {
			return fmt.Errorf("--context: %w", err)
		}
		q.ContextTokens = l
	} else if what != "grid" {
		return errors.New("--context is required")
	}
	st, err := store.Open(ctx, *db, store.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	calc := predict.New(st, 1, nil)

	var out any
	var table func(io.Writer)
	switch what {
	case "decode":
		if q.Concurrency < 1 {
			return errors.New("--concurrency (at least 1) is required")
		}
		a, err := calc.Decode(ctx, sel, q)
		if err != nil {
			return err
		}
		out, table = server.ToAPIDecode(q, a), func(w io.Writer) { printDecode(w, q, a) }
	case "capacity":
		a, err := calc.Capacity(ctx, sel, q)
		if err != nil {
			return err
		}
		out, table = server.ToAPICapacity(q, a), func(w io.Writer) { printCapacity(w, q, a) }
	case "grid":
		ls, err := tokenList(*contextsS)
		if err != nil {
			return fmt.Errorf("--contexts: %w", err)
		}
		bs, err := tokenList(*concurrenciesS)
		if err != nil {
			return fmt.Errorf("--concurrencies: %w", err)
		}
		q.ContextTokens, q.Concurrency = 0, 1
		g, err := calc.Grid(ctx, sel, ls, bs, q)
		if err != nil {
			return err
		}
		out, table = server.ToAPIGrid(g), func(w io.Writer) { printGrid(w, g) }
	case "plan":
		if *minTokS <= 0 {
			return errors.New("--min-tok-s (the per-request decode speed needed) is required")
		}
		if *limit < 1 || *limit > predict.MaxPlanOptions {
			return fmt.Errorf("--limit takes 1 to %d", predict.MaxPlanOptions)
		}
		calc = predict.New(st, 64, nil)
		pq := predict.PlanQuery{Model: sel.Model, GPU: sel.GPU, Engine: *engine, KVCacheDtype: sel.KVCacheDtype,
			Target:        calculator.Target{ContextTokens: q.ContextTokens, MinPerRequestTokS: *minTokS, MaxTTFTMs: *maxTTFT, Users: *users, Base: q},
			IncludeScaled: *includeScaled, Limit: *limit}
		pl, err := calc.Plan(ctx, pq)
		if err != nil {
			return err
		}
		out, table = server.ToAPIPlan(pq.Target, pl), func(w io.Writer) { printPlan(w, pq.Target, pl) }
	case "prefill":
		p, err := calc.Prefill(ctx, sel, q.ContextTokens)
		if err != nil {
			return err
		}
		out, table = server.ToAPIPrefill(q.ContextTokens, p), func(w io.Writer) { printPrefill(w, q.ContextTokens, p) }
	default:
		return fmt.Errorf("unknown calc command %q\n%s", what, calcUsage)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	table(tw)
	return tw.Flush()
}

func est(e *calculator.Estimate, digits int) string {
	if e == nil {
		return "—"
	}
	return fmt.Sprintf("%.*f\t(%.*f – %.*f)", digits, e.Value, digits, e.Low, digits, e.High)
}

// printBasis says how an answer was obtained: method (and the speed's,
// when VRAM or GPU scaling sits on top), runs, error band, notes.
func printBasis(w io.Writer, method, speed calculator.Basis, runIDs []string, band *[2]float64, warnings ...[]string) {
	fmt.Fprintf(w, "basis\t%s", method)
	if speed != "" && speed != calculator.NoSpeed && speed != calculator.ScaledVRAM && speed != calculator.ScaledGPU && speed != method {
		fmt.Fprintf(w, " (speed %s)", speed)
	}
	fmt.Fprintf(w, "\trun %s\n", strings.Join(runIDs, ", "))
	if band != nil {
		source := "the run's held-out p90"
		if method == calculator.ScaledGPU {
			source = "scaling to another GPU"
		}
		fmt.Fprintf(w, "error band\t±%.1f%% total, ±%.1f%% TBT\t(%s)\n", 100*band[0], 100*band[1], source)
	}
	for _, ws := range warnings {
		for _, warn := range ws {
			fmt.Fprintf(w, "note\t%s\n", warn)
		}
	}
}

func printDecode(w io.Writer, q calculator.Query, a predict.Answer[calculator.Prediction]) {
	p := a.Result
	fmt.Fprintf(w, "cell\t%s context × %d requests\n", label(q.ContextTokens), q.Concurrency)
	fmt.Fprintf(w, "status\t%s\n", p.Status)
	fmt.Fprintf(w, "total tok/s\t%s\n", est(p.TotalTokS, 1))
	fmt.Fprintf(w, "per-request tok/s\t%s\n", est(p.PerRequestTokS, 1))
	fmt.Fprintf(w, "time between tokens ms\t%s\n", est(p.TBTMs, 1))
	fmt.Fprintf(w, "TTFT ms (warm cache)\t%s\n", est(p.TTFTMs, 0))
	c := p.Capacity
	fmt.Fprintf(w, "KV reservation\t%d tokens\tcapacity %d – %s tokens\n", c.ReservedTokens, c.KVTokensLow, orUnknown(nonZero(c.KVTokensHigh)))
	fmt.Fprintf(w, "max concurrency here\t%d\n", c.MaxConcurrencyAtContext)
	var band *[2]float64
	if p.TotalTokS != nil && (p.SpeedBasis != calculator.Measured || p.Basis == calculator.ScaledGPU) {
		band = &[2]float64{p.BandTotal, p.BandTBT}
	}
	printBasis(w, p.Basis, p.SpeedBasis, a.RunIDs, band, a.Warnings, p.Warnings)
}

func printCapacity(w io.Writer, q calculator.Query, ans predict.Answer[calculator.CapacityAnswer]) {
	a := ans.Result
	fmt.Fprintf(w, "context\t%s (+%d output tokens reserved)\n", label(a.ContextTokens), a.MaxOutputTokens)
	fmt.Fprintf(w, "max concurrency\t%d surely fits\tup to %s may\n", a.MaxConcurrency, orUnknown(a.MaxConcurrencyPossible))
	if q.Concurrency > 0 {
		fmt.Fprintf(w, "max context at %d requests\t%s tokens\n", a.Concurrency, orUnknown(a.MaxContextTokens))
	}
	fmt.Fprintf(w, "KV capacity\t%d – %s tokens\n", a.KVTokensLow, orUnknown(nonZero(a.KVTokensHigh)))
	if a.SequenceLimit > 0 {
		fmt.Fprintf(w, "sequence limit\t%d requests at once\n", a.SequenceLimit)
	}
	printBasis(w, a.Basis, calculator.NoSpeed, ans.RunIDs, nil, ans.Warnings, a.Warnings)
}

func printPrefill(w io.Writer, l int, a predict.Answer[calculator.PrefillPrediction]) {
	p := a.Result
	fmt.Fprintf(w, "context\t%s\n", label(l))
	fmt.Fprintf(w, "cold TTFT ms\t%s\n", est(&p.TTFTMs, 0))
	fmt.Fprintf(w, "prompt tok/s\t%s\n", est(&p.PromptTokS, 1))
	printBasis(w, p.Basis, calculator.NoSpeed, a.RunIDs, nil, a.Warnings, p.Warnings)
}

// printGrid draws total tok/s per cell, marked by how it was obtained.
func printGrid(w io.Writer, a predict.Answer[predict.Grid]) {
	g := a.Result
	fmt.Fprintf(w, "total tok/s\t")
	for _, b := range g.Concurrencies {
		fmt.Fprintf(w, "%d\t", b)
	}
	fmt.Fprintln(w)
	marks := map[calculator.Basis]string{calculator.Measured: "", calculator.Interpolated: "~", calculator.Extrapolated: "^", calculator.ScaledVRAM: "v", calculator.ScaledGPU: "g"}
	short := map[calculator.Status]string{calculator.OverCapacity: "over", calculator.ExceedsMaxModelLen: "too long", calculator.TTFTExceedsWindow: "no token"}
	row := -1
	for _, c := range g.Cells {
		if row < 0 || c.ContextTokens != g.Contexts[row] {
			if row >= 0 {
				fmt.Fprintln(w)
			}
			row++
			fmt.Fprintf(w, "%s\t", label(c.ContextTokens))
		}
		switch p := c.Prediction; {
		case c.Refusal != nil:
			fmt.Fprintf(w, "refused\t")
		case p.TotalTokS != nil:
			q := ""
			if p.Status == calculator.RequestsQueued {
				q = " q"
			} else if p.Status == calculator.BoundaryUncertain {
				q = " ?"
			}
			fmt.Fprintf(w, "%s%.1f%s\t", marks[p.Basis], p.TotalTokS.Value, q)
		default:
			fmt.Fprintf(w, "%s\t", short[p.Status])
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "\n~ interpolated, ^ extrapolated, v scaled VRAM, g scaled to another GPU, unmarked measured; q requests queued, ? capacity boundary uncertain")
	fmt.Fprintf(w, "run\t%s\n", strings.Join(a.RunIDs, ", "))
	for _, warn := range a.Warnings {
		fmt.Fprintf(w, "note\t%s\n", warn)
	}
}

// printPlan lists the planner's options, best first.
func printPlan(w io.Writer, t calculator.Target, pl predict.Plan) {
	fmt.Fprintf(w, "target	%s context, ≥ %.4g tok/s per request", label(t.ContextTokens), t.MinPerRequestTokS)
	if t.MaxTTFTMs > 0 {
		fmt.Fprintf(w, ", TTFT ≤ %.4g ms", t.MaxTTFTMs)
	}
	if t.Users > 0 {
		fmt.Fprintf(w, ", %d users", t.Users)
	}
	fmt.Fprintf(w, "\n%d runs matched\n\n", pl.Matched)
	fmt.Fprint(w, "#\tGPU\tmodel\trun\tconcurrency\ttotal tok/s\tper request\tTTFT ms\tbasis\tlimit\n")
	for i, o := range pl.Options {
		gpu := o.GPU
		if o.Scaled {
			gpu += " (from " + o.Run.GPU + ")"
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t", i+1, gpu, o.Run.ModelName, o.Run.ID)
		p := o.Plan
		switch {
		case o.Err != "":
			fmt.Fprintf(w, "—\t\t\t\t\t%s\n", o.Err)
			continue
		case !p.Meets:
			fmt.Fprintf(w, "misses\t\t\t\t\t%s\n", p.Shortfall.Reason)
			continue
		}
		at := p.At
		value := func(e *calculator.Estimate, digits int) string {
			if e == nil {
				return "—"
			}
			return fmt.Sprintf("%.*f ±%.0f%%", digits, e.Value, 100*(e.High-e.Low)/2/max(e.Value, 1e-9))
		}
		conc := strconv.Itoa(p.Concurrency)
		if p.Instances > 0 {
			conc += fmt.Sprintf(" (×%d = %d GPUs)", p.Instances, p.Instances*o.GPUCount)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s: %s\n", conc, value(at.TotalTokS, 0), value(at.PerRequestTokS, 1), value(at.TTFTMs, 0), at.Basis, p.Binding, p.BindingDetail)
	}
	if pl.Omitted > 0 {
		fmt.Fprintf(w, "\n%d more options (--limit)\n", pl.Omitted)
	}
	for _, warn := range pl.Warnings {
		fmt.Fprintf(w, "note\t%s\n", warn)
	}
}

func nonZero(n int) *int {
	if n == 0 {
		return nil
	}
	return &n
}

func label(tokens int) string {
	if tokens > 0 && tokens%1024 == 0 {
		return strconv.Itoa(tokens/1024) + "K"
	}
	return strconv.Itoa(tokens)
}

func orUnknown(p *int) string {
	if p == nil {
		return "unknown"
	}
	return strconv.Itoa(*p)
}
