package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/msg"
	"github.com/matrixd/matrixd/predict"
	"github.com/matrixd/matrixd/server"
	"github.com/matrixd/matrixd/store"
)

const calcUsage = `usage: matrixd calc SUBCOMMAND [flags]

The calculator over the stored runs, as a table (or the API's JSON with --json).
Token counts take K = 1024: 48K = 49152.

subcommands:
  decode    one cell: speed, TTFT and status at --context × --concurrency
  capacity  how many requests fit at a context, and the longest context at a concurrency
  grid      predicted total tok/s over contexts × concurrencies (default: the run's axes)
  prefill   cold time to first token at a context
  plan      which runs serve a target, at what concurrency, best first

Run "matrixd calc SUBCOMMAND --help" for its flags.`

// calcFlags are the calculator's flags; each subcommand defines the ones
// it uses.
type calcFlags struct {
	db                      *string
	sel                     predict.Selection
	q                       calculator.Query
	context                 string
	contexts, concurrencies string
	asJSON                  bool
	minTokS, maxTTFT        float64
	users, limit            int
	engine                  string
	methodClass             string
	includeScaled           bool
	includeScaledModel      bool
	price                   calculator.Price
	sort                    string
}

// priceFlags defines the flags that price an answer (as the API's
// gpu_hour_usd, hardware_usd, amortization_years, electricity_usd_per_kwh).
func (f *calcFlags) priceFlags(fs *flag.FlagSet) {
	for _, p := range []struct {
		name, usage string
		v           **float64
	}{
		{"gpu-hour-usd", "rental price of one GPU for an hour, `USD`: adds what the answer costs", &f.price.GPUHourUSD},
		{"hardware-usd", "price of one owned GPU, `USD`, with --amortization-years and --electricity-usd-per-kwh", &f.price.HardwareUSD},
		{"amortization-years", "`years` an owned GPU is paid off over", &f.price.AmortizationYears},
		{"electricity-usd-per-kwh", "electricity price, `USD` per kWh, for owned GPUs", &f.price.ElectricityUSDPerKWh},
	} {
		fs.Var(optFloat{p.v}, p.name, p.usage)
	}
}

// optFloat is a float flag that is nil until given.
type optFloat struct{ v **float64 }

func (o optFloat) String() string {
	if o.v == nil || *o.v == nil {
		return ""
	}
	return strconv.FormatFloat(**o.v, 'f', -1, 64)
}

func (o optFloat) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if errors.Is(err, strconv.ErrRange) {
		return fmt.Errorf("%q is out of range", s) // a number no float holds
	}
	if err != nil {
		return fmt.Errorf("%q is not a number", s)
	}
	*o.v = &v
	return nil
}

// selection defines the flags that pick the run to model.
func (f *calcFlags) selection(fs *flag.FlagSet) {
	fs.StringVar(&f.sel.RunID, "run", "", "the run's `ID` (or --model and --gpu)")
	fs.StringVar(&f.sel.Model, "model", "", "a model name substring, with --gpu")
	fs.StringVar(&f.sel.GPU, "gpu", "", "a GPU name or catalog alias, with --model")
	fs.StringVar(&f.sel.EngineVersion, "engine-version", "", "narrow --model/--gpu to an engine version")
	fs.StringVar(&f.sel.KVCacheDtype, "kv-cache-dtype", "", "narrow --model/--gpu to a KV-cache dtype")
	fs.BoolVar(&f.sel.IncludeFlagged, "include-flagged", false, "let --model/--gpu choose runs a plausibility check flagged (left out by default)")
}

// whatIfs defines the flags that change the run's setup: VRAM, memory
// utilization, output reservation and (with target) another GPU.
func (f *calcFlags) whatIfs(fs *flag.FlagSet, target, rough bool) {
	fs.Float64Var(&f.q.VRAMGB, "vram", 0, "another VRAM size, in `GB`")
	fs.Float64Var(&f.q.GPUMemoryUtilization, "util", 0, "another --gpu-memory-utilization, 0–1")
	fs.Var(tokenFlag{&f.q.MaxOutputTokens}, "max-output", "`tokens` reserved per request for output (K = 1024)")
	if target {
		fs.StringVar(&f.q.TargetGPU, "target-gpu", "", "move the answer to another `GPU` of the hardware catalog")
	}
	if rough {
		fs.BoolVar(&f.q.Rough, "rough", false, "allow --target-gpu of another GPU generation (a rough estimate)")
	}
}

// calcCLI is subcommand what's flags and help.
func calcCLI(what string, getenv func(string) string) (*cli, *calcFlags) {
	const pick = "(--run ID | --model M --gpu G)"
	const other = "\nBy --model and --gpu, a model with no run on the GPU is answered from another\nmodel's run there (basis scaled_model)."
	const priced = "\nWith a price (--gpu-hour-usd, or --hardware-usd, --amortization-years and\n--electricity-usd-per-kwh), also what it costs an hour and per million output\ntokens, and the energy of a token."
	var c *cli
	f := &calcFlags{}
	contextFlag := func(usage string) { c.fs.StringVar(&f.context, "context", "", usage) }
	switch what {
	case "decode":
		c = newCLI("calc decode", pick+" --context N --concurrency N [flags]",
			"Predict one decode cell of a run: total and per-request tok/s, time between tokens,\nwarm TTFT and whether it fits, with the error band."+other+priced)
		f.selection(c.fs)
		contextFlag("the cell's context length in `tokens` (48K = 49152); required")
		c.fs.IntVar(&f.q.Concurrency, "concurrency", 0, "simultaneous `requests`; required")
		f.whatIfs(c.fs, true, true)
		f.priceFlags(c.fs)
	case "capacity":
		c = newCLI("calc capacity", pick+" --context N [--concurrency N] [flags]",
			"How many requests fit in a run's KV cache at a context and, with --concurrency, the\nlongest context that fits at that many requests."+other)
		f.selection(c.fs)
		contextFlag("context length in `tokens` (48K = 49152); required")
		c.fs.IntVar(&f.q.Concurrency, "concurrency", 0, "also the longest context that fits at this many `requests`")
		f.whatIfs(c.fs, true, false)
	case "grid":
		c = newCLI("calc grid", pick+" [--contexts L,…] [--concurrencies B,…] [flags]",
			"Predict total tok/s over a grid of contexts × concurrencies, each cell marked by how\nit was obtained (at most 16 × 16)."+other+priced)
		f.selection(c.fs)
		c.fs.StringVar(&f.contexts, "contexts", "", "context lengths in tokens, comma-separated (default: the run's)")
		c.fs.StringVar(&f.concurrencies, "concurrencies", "", "concurrency levels, comma-separated (default: the run's)")
		f.whatIfs(c.fs, true, true)
		f.priceFlags(c.fs)
	case "prefill":
		c = newCLI("calc prefill", pick+" --context N [flags]",
			"Predict cold prefill at a context: time to first token and prompt tok/s."+other)
		f.selection(c.fs)
		contextFlag("prompt length in `tokens` (48K = 49152); required")
	case "plan":
		c = newCLI("calc plan", "--context N --min-tok-s S [flags]",
			"Which stored runs serve a target (each request's context and decode speed, a TTFT\nbound, a number of users), at what concurrency and how many instances, best first.")
		contextFlag("each request's prompt length in `tokens` (48K = 49152); required")
		c.fs.Float64Var(&f.minTokS, "min-tok-s", 0, "the decode speed each request needs, `tok/s`; required")
		c.fs.Float64Var(&f.maxTTFT, "max-ttft", 0, "the longest acceptable time to first token, `ms`")
		c.fs.IntVar(&f.users, "users", 0, "concurrent users to serve")
		c.fs.StringVar(&f.sel.Model, "model", "", "only runs of models whose name contains this")
		c.fs.StringVar(&f.sel.GPU, "gpu", "", "only runs on this GPU (a name or catalog alias)")
		c.fs.StringVar(&f.engine, "engine", "", "only runs of this engine")
		c.fs.StringVar(&f.sel.KVCacheDtype, "kv-cache-dtype", "", "only runs of this KV-cache dtype")
		c.fs.BoolVar(&f.sel.IncludeFlagged, "include-flagged", false, "also plan runs a plausibility check flagged (left out by default)")
		c.fs.StringVar(&f.methodClass, "method-class", store.MethodSustainedDecode, "the method class planned from (runs of others are never ranked beside it): "+strings.Join(store.MethodClasses(), ", "))
		c.fs.Float64Var(&f.q.VRAMGB, "vram", 0, "another VRAM size, in `GB`")
		c.fs.Var(tokenFlag{&f.q.MaxOutputTokens}, "max-output", "`tokens` reserved per request for output (K = 1024)")
		c.fs.BoolVar(&f.includeScaled, "include-scaled", false, "add catalog GPUs without a run, scaled from the nearest measured one")
		c.fs.BoolVar(&f.includeScaledModel, "include-scaled-model", false, "with --model: add GPUs with runs of other models but none of it, answered from another model's run there")
		c.fs.IntVar(&f.limit, "limit", predict.DefaultPlanOptions, "how many options to show, best first")
		f.priceFlags(c.fs)
		c.fs.StringVar(&f.sort, "sort", "throughput", "order of the options meeting the target: throughput, or cost (cheapest first; needs a price)")
	default:
		return nil, nil
	}
	c.fs.BoolVar(&f.asJSON, "json", false, "print the API's JSON instead of a table")
	f.db = dbFlag(c.fs, getenv, false)
	return c, f
}

// flagRange is the range of values a flag takes: that of the API parameter
// it stands for (TestFlagRangesAreTheAPIs checks them against openapi.yaml),
// so that the CLI refuses what the API would.
type flagRange struct {
	flag, param string
	lo, hi      float64 // of the value, or of each value of a list
	maxItems    int     // a list's most values; 0 for a flag of one value
}

// calcPaths are the API operations the calc subcommands stand for.
func calcPaths() map[string]string {
	return map[string]string{
		"decode": "/v1/calculator/decode", "capacity": "/v1/calculator/capacity", "grid": "/v1/calculator/grid",
		"prefill": "/v1/calculator/prefill", "plan": "/v1/planner",
	}
}

// flagRanges are the ranges of subcommand what's flags (those it has).
func flagRanges(what string) []flagRange {
	minContext := 0.0
	if what == "prefill" {
		minContext = 1 // a prompt of at least a token
	}
	return []flagRange{
		{"context", "context_tokens", minContext, 16777216, 0},
		{"concurrency", "concurrency", 1, 65536, 0},
		{"contexts", "contexts", 0, 16777216, predict.MaxGridSide},
		{"concurrencies", "concurrencies", 1, 65536, predict.MaxGridSide},
		{"vram", "vram_gb", 1, 4096, 0},
		{"util", "gpu_memory_utilization", 0.05, 1, 0},
		{"max-output", "max_output_tokens", 1, 16777216, 0},
		{"min-tok-s", "min_per_request_tok_s", 0, 1e6, 0},
		{"max-ttft", "max_ttft_ms", 1, 86400000, 0},
		{"users", "users", 1, 1e7, 0},
		{"limit", "limit", 1, predict.MaxPlanOptions, 0},
		{"gpu-hour-usd", "gpu_hour_usd", 0, 1000, 0},
		{"hardware-usd", "hardware_usd", 0, 10000000, 0},
		{"amortization-years", "amortization_years", 0, 50, 0},
		{"electricity-usd-per-kwh", "electricity_usd_per_kwh", 0, 100, 0},
	}
}

// checkRanges refuses, naming the flag, a value given on the command line
// that is outside the API's range (NaN and infinities included), or a list
// longer than the API takes; read holds the flags of token counts already
// read (--context, --contexts, --concurrencies).
func checkRanges(c *cli, what string, read map[string][]int) error {
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	for _, r := range flagRanges(what) {
		fl := c.fs.Lookup(r.flag)
		if fl == nil || !flagSet(c.fs, r.flag) {
			continue
		}
		vs, ok := read[r.flag]
		if !ok {
			v, err := strconv.ParseFloat(fl.Value.String(), 64)
			if err != nil || !(v >= r.lo && v <= r.hi) {
				return c.usageErr("--%s takes %s to %s, not %s", r.flag, num(r.lo), num(r.hi), fl.Value.String())
			}
			continue
		}
		if r.maxItems > 0 && len(vs) > r.maxItems {
			return c.usageErr("--%s takes at most %d values, not %d", r.flag, r.maxItems, len(vs))
		}
		for _, v := range vs {
			if !(float64(v) >= r.lo && float64(v) <= r.hi) {
				return c.usageErr("--%s takes %s to %s, not %d", r.flag, num(r.lo), num(r.hi), v)
			}
		}
	}
	return nil
}

// flagSet reports whether the command line gave flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// tokens reads a token count: "49152", "48K" or "48k" (K = 1024).
func tokens(s string) (int, error) {
	return count(s, "a token count: give a whole number of tokens, or of K (1024 tokens), e.g. 49152 or 48K")
}

// count reads a whole number, or a whole number of K (1024); a value it
// cannot read is quoted as given, with what accepts says is accepted.
func count(given, accepts string) (int, error) { return countK(given, accepts, true) }

// countK is count, taking K only when k is set (a concurrency is not a
// multiple of 1024).
func countK(given, accepts string, k bool) (int, error) {
	s := strings.TrimSpace(given)
	mult := 1
	if n := len(s); k && n > 0 && (s[n-1] == 'K' || s[n-1] == 'k') {
		s, mult = s[:n-1], 1024
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 || v > 1<<40 {
		return 0, fmt.Errorf("%q is not %s", given, accepts)
	}
	return v * mult, nil
}

// countList reads a comma-separated list of counts (countK).
func countList(s, accepts string, k bool) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for part := range strings.SplitSeq(s, ",") {
		v, err := countK(part, accepts, k)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func calcCmd(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) == 0 {
		return &usageError{"calc", errors.New("name a subcommand: decode, capacity, grid, prefill or plan")}
	}
	what, args := args[0], args[1:]
	if what == "help" && len(args) > 0 && !isHelp(args[0]) {
		what, args = args[0], []string{"--help"}
	} else if what == "help" || isHelp(what) {
		fmt.Fprintln(stdout, calcUsage)
		return nil
	}
	c, f := calcCLI(what, getenv)
	if c == nil {
		if strings.HasPrefix(what, "-") {
			return &usageError{"calc", errors.New("name a subcommand before flags: decode, capacity, grid, prefill or plan")}
		}
		return &usageError{"calc", fmt.Errorf("unknown subcommand %q: decode, capacity, grid, prefill or plan", what)}
	}
	if err := c.parse(args, stdout); err != nil {
		return err
	}
	if c.fs.NArg() > 0 {
		return c.usageErr("unexpected arguments %q: every value is a flag", c.fs.Args())
	}
	q := f.q
	var ls, bs []int
	if what != "grid" {
		if f.context == "" {
			return c.usageErr("--context is required")
		}
		l, err := tokens(f.context)
		if err != nil {
			return c.usageErr("--context: %w", err)
		}
		q.ContextTokens = l
	} else {
		var err error
		if ls, err = countList(f.contexts, "a token count: give whole numbers of tokens, or of K (1024 tokens), comma-separated, e.g. 0,24K,49152", true); err != nil {
			return c.usageErr("--contexts: %w", err)
		}
		if bs, err = countList(f.concurrencies, "a concurrency: give whole numbers of requests, comma-separated, e.g. 1,4,16", false); err != nil {
			return c.usageErr("--concurrencies: %w", err)
		}
		q.ContextTokens, q.Concurrency = 0, 1
	}
	if err := checkRanges(c, what, map[string][]int{"context": {q.ContextTokens}, "contexts": ls, "concurrencies": bs}); err != nil {
		return err
	}
	switch what {
	case "decode":
		if q.Concurrency < 1 {
			return c.usageErr("--concurrency (at least 1) is required")
		}
	case "plan":
		if c.fs.Lookup("min-tok-s") != nil && !flagSet(c.fs, "min-tok-s") {
			return c.usageErr("--min-tok-s (the per-request decode speed needed) is required")
		}
	}
	if err := predict.CheckPrice(f.price); err != nil {
		return cliError(c.name, err)
	}
	st, err := openExisting(ctx, *f.db)
	if err != nil {
		return err
	}
	defer st.Close()
	calc := predict.New(st, predict.DefaultCacheBytes, nil)
	calc.SetFitWait(-1) // a one-shot command waits for its fit

	var out any
	var table func(io.Writer)
	switch what {
	case "decode":
		a, err := calc.Decode(ctx, f.sel, q)
		if err != nil {
			return cliError(c.name, err)
		}
		cost, warn, err := calc.DecodeCost(ctx, a, q, f.price)
		if err != nil {
			return cliError(c.name, err)
		}
		out, table = server.ToAPIPricedDecode(q, a, cost, warn), func(w io.Writer) { printDecode(w, q, a, cost, warn) }
	case "capacity":
		a, err := calc.Capacity(ctx, f.sel, q)
		if err != nil {
			return cliError(c.name, err)
		}
		out, table = server.ToAPICapacity(q, a), func(w io.Writer) { printCapacity(w, q, a) }
	case "grid":
		g, err := calc.Grid(ctx, f.sel, ls, bs, q)
		if err != nil {
			return cliError(c.name, err)
		}
		costs, warn, err := calc.GridCosts(ctx, g, q, f.price)
		if err != nil {
			return cliError(c.name, err)
		}
		out, table = server.ToAPIPricedGrid(g, costs, warn), func(w io.Writer) { printGrid(w, g, costs, warn) }
	case "plan":
		calc = predict.New(st, predict.DefaultCacheBytes, nil)
		calc.SetFitWait(-1)
		calc.SetPlanFitBudget(-1) // nothing keeps fits between runs of a command: wait for them all
		pq := predict.PlanQuery{Model: f.sel.Model, GPU: f.sel.GPU, Engine: f.engine, KVCacheDtype: f.sel.KVCacheDtype,
			Target:        calculator.Target{ContextTokens: q.ContextTokens, MinPerRequestTokS: f.minTokS, MaxTTFTMs: f.maxTTFT, Users: f.users, Base: q},
			IncludeScaled: f.includeScaled, IncludeScaledModel: f.includeScaledModel, IncludeFlagged: f.sel.IncludeFlagged,
			MethodClass: f.methodClass, Limit: f.limit, Price: f.price, SortByCost: f.sort == "cost"}
		if f.sort != "throughput" && f.sort != "cost" {
			return c.usageErr("--sort takes throughput or cost, not %q", f.sort)
		}
		if !slices.Contains(store.MethodClasses(), f.methodClass) {
			return c.usageErr("--method-class takes %s, not %q", strings.Join(store.MethodClasses(), ", "), f.methodClass)
		}
		pl, err := calc.Plan(ctx, pq)
		if err != nil {
			return cliError(c.name, err)
		}
		ap := server.ToAPIPlan(pq.Target, pl)
		out, table = ap, func(w io.Writer) { printPlan(w, pq.Target, pl, ap) }
	case "prefill":
		p, err := calc.Prefill(ctx, f.sel, q.ContextTokens)
		if err != nil {
			return cliError(c.name, err)
		}
		out, table = server.ToAPIPrefill(q.ContextTokens, p), func(w io.Writer) { printPrefill(w, q.ContextTokens, p) }
	}
	if f.asJSON {
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
func printBasis(w io.Writer, method, speed calculator.Basis, runIDs []string, band *[2]float64, warnings ...[]msg.Message) {
	fmt.Fprintf(w, "basis\t%s", method)
	if speed != "" && speed != calculator.NoSpeed && speed != calculator.ScaledVRAM && speed != calculator.ScaledGPU && speed != method {
		fmt.Fprintf(w, " (speed %s)", speed)
	}
	fmt.Fprintf(w, "\trun %s\n", strings.Join(runIDs, ", "))
	if band != nil {
		source := "the run's held-out errors, calibrated for its engine family"
		switch method {
		case calculator.ScaledGPU:
			source = "scaling to another GPU"
		case calculator.ScaledModel:
			source = "scaling to another model, measured across models"
		}
		fmt.Fprintf(w, "error band\t±%.1f%% total, ±%.1f%% TBT\t(%s)\n", 100*band[0], 100*band[1], source)
	}
	for _, ws := range warnings {
		for _, warn := range ws {
			fmt.Fprintf(w, "note\t%s\n", inFlags(warn.Text))
		}
	}
}

// printDecode prints a decode answer and, priced, its cost; warn are the
// pricing's warnings.
func printDecode(w io.Writer, q calculator.Query, a predict.Answer[calculator.Prediction], cost *calculator.Cost, warn []msg.Message) {
	p := a.Result
	fmt.Fprintf(w, "cell\t%s context × %d requests\n", label(q.ContextTokens), q.Concurrency)
	fmt.Fprintf(w, "status\t%s\n", p.Status)
	fmt.Fprintf(w, "total tok/s\t%s\n", est(p.TotalTokS, 1))
	fmt.Fprintf(w, "per-request tok/s\t%s\n", est(p.PerRequestTokS, 1))
	fmt.Fprintf(w, "time between tokens ms\t%s\n", est(p.TBTMs, 1))
	fmt.Fprintf(w, "TTFT ms (warm cache)\t%s\n", est(p.TTFTMs, 0))
	if a.Sources > 1 {
		fmt.Fprintf(w, "independent sources\t%d (the mean of their answers; see the notes)\n", a.Sources)
	}
	c := p.Capacity
	if c.Unknown {
		fmt.Fprintf(w, "KV capacity\tunknown (the run states no output reservation; give --max-output)\n")
	} else {
		fmt.Fprintf(w, "KV reservation\t%d tokens\tcapacity %d – %s tokens\n", c.ReservedTokens, c.KVTokensLow, orUnknown(nonZero(c.KVTokensHigh)))
		fmt.Fprintf(w, "max concurrency here\t%d\n", c.MaxConcurrencyAtContext)
	}
	if cost != nil {
		fmt.Fprintf(w, "cost\t%s an instance (%s)\n", hourly(cost.USDPerHour, cost.USDPerHour), gpusPaid(cost))
		fmt.Fprintf(w, "$ per million output tokens\t%s\n", sig3(cost.USDPerMillion))
		fmt.Fprintf(w, "J per output token\t%s\t%s\n", sig3(cost.JoulesPerToken), powerOf(cost.Power))
	}
	var band *[2]float64
	if p.TotalTokS != nil && (p.SpeedBasis != calculator.Measured || p.Basis == calculator.ScaledGPU || p.Basis == calculator.ScaledModel) {
		band = &[2]float64{p.BandTotal, p.BandTBT}
	}
	printBasis(w, p.Basis, p.SpeedBasis, a.RunIDs, band, a.Warnings, p.Warnings, warn)
}

// sig3 is an estimate of a cost, to 3 significant digits.
func sig3(e *calculator.Estimate) string {
	if e == nil {
		return "—"
	}
	return fmt.Sprintf("%s\t(%s – %s)", sig(e.Value), sig(e.Low), sig(e.High))
}

// sig is a cost to 3 significant digits, in whole units from 1000 on
// (where %g would write 1.23e+03).
func sig(v float64) string {
	if math.Abs(v) >= 1000 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// hourly is the USD an hour from lo to hi ("—" when it cannot be priced).
func hourly(lo, hi *float64) string {
	switch {
	case lo == nil || hi == nil:
		return "—"
	case *lo == *hi:
		return "$" + sig(*lo) + "/h"
	}
	return "$" + sig(*lo) + "–" + sig(*hi) + "/h"
}

// gpusPaid says how many GPUs a cost is for and how they are paid.
func gpusPaid(c *calculator.Cost) string {
	how := "rented"
	if c.Owned {
		how = "owned"
	}
	return fmt.Sprintf("%d %s, %s", c.GPUs, plural(c.GPUs, "GPU", "GPUs"), how)
}

// powerOf says one GPU's power and where the figure comes from.
func powerOf(p *calculator.Power) string {
	if p == nil {
		return "no power figure"
	}
	return fmt.Sprintf("%s W a GPU (%s)", strconv.FormatFloat(p.WattsPerGPU, 'f', -1, 64), p.Source)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
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

// printGrid draws total tok/s per cell, marked by how it was obtained,
// and priced, each cell's $ per million output tokens; warn are the
// pricing's warnings.
func printGrid(w io.Writer, a predict.Answer[predict.Grid], costs []*calculator.Cost, warn []msg.Message) {
	g := a.Result
	fmt.Fprintf(w, "total tok/s\t")
	for _, b := range g.Concurrencies {
		fmt.Fprintf(w, "%d\t", b)
	}
	fmt.Fprintln(w)
	marks := map[calculator.Basis]string{calculator.Measured: "", calculator.Interpolated: "~", calculator.Extrapolated: "^", calculator.ScaledVRAM: "v", calculator.ScaledGPU: "g", calculator.ScaledModel: "m"}
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
	fmt.Fprintln(w, "\n~ interpolated, ^ extrapolated, v scaled VRAM, g scaled to another GPU, m from another model's run, unmarked measured; q requests queued, ? capacity boundary uncertain")
	printGridCosts(w, g, costs)
	fmt.Fprintf(w, "run\t%s\n", strings.Join(a.RunIDs, ", "))
	for _, ws := range [][]msg.Message{a.Warnings, warn} {
		for _, warn := range ws {
			fmt.Fprintf(w, "note\t%s\n", inFlags(warn.Text))
		}
	}
}

// printGridCosts draws each priced cell's $ per million output tokens
// (— where it has no cost), then what an instance costs an hour and the
// power per GPU, over the cells (measured cells may have their own power).
func printGridCosts(w io.Writer, g predict.Grid, costs []*calculator.Cost) {
	var lo, hi *float64
	var first *calculator.Cost
	powers := map[string]bool{}
	var power []string
	for _, c := range costs {
		if c == nil {
			continue
		}
		if first == nil {
			first = c
		}
		if u := c.USDPerHour; u != nil {
			if lo == nil || *u < *lo {
				lo = u
			}
			if hi == nil || *u > *hi {
				hi = u
			}
		}
		if p := powerOf(c.Power); !powers[p] {
			powers[p] = true
			power = append(power, p)
		}
	}
	if first == nil {
		return
	}
	fmt.Fprintf(w, "\n$ per million output tokens\t")
	for _, b := range g.Concurrencies {
		fmt.Fprintf(w, "%d\t", b)
	}
	for i, c := range g.Cells {
		if i == 0 || c.ContextTokens != g.Cells[i-1].ContextTokens {
			fmt.Fprintf(w, "\n%s\t", label(c.ContextTokens))
		}
		if cost := costs[i]; cost != nil && cost.USDPerMillion != nil {
			fmt.Fprintf(w, "%s\t", sig(cost.USDPerMillion.Value))
		} else {
			fmt.Fprint(w, "—\t")
		}
	}
	fmt.Fprintf(w, "\n\ncost\t%s an instance (%s)\n", hourly(lo, hi), gpusPaid(first))
	fmt.Fprintf(w, "power\t%s\n", strings.Join(power, "; "))
}

// printPlan lists the planner's options, best first, and as notes every
// warning the API's answer ap carries: each option's, numbered, then the
// plan's.
func printPlan(w io.Writer, t calculator.Target, pl predict.Plan, ap api.CapacityPlan) {
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	fmt.Fprintf(w, "target	%s context, ≥ %s tok/s per request", label(t.ContextTokens), num(t.MinPerRequestTokS))
	if t.MaxTTFTMs > 0 {
		fmt.Fprintf(w, ", TTFT ≤ %s ms", num(t.MaxTTFTMs))
	}
	if t.Users > 0 {
		fmt.Fprintf(w, ", %d users", t.Users)
	}
	runs := "runs"
	if pl.Matched == 1 {
		runs = "run"
	}
	fmt.Fprintf(w, "\n%d %s matched\n\n", pl.Matched, runs)
	fmt.Fprint(w, "#\tGPU\tmodel\trun\tconcurrency\ttotal tok/s\tper request\tTTFT ms\tbasis\tlimit\n")
	for i, o := range pl.Options {
		gpu, model := o.GPU, o.Run.ModelName
		if o.Scaled {
			gpu += " (from " + o.Run.GPU + ")"
		}
		if o.OtherModel != "" {
			model = o.OtherModel + " (from " + o.Run.ModelName + ")"
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t", i+1, gpu, model, o.Run.ID)
		p := o.Plan
		switch {
		case o.Err.Code != "":
			fmt.Fprintf(w, "—\t\t\t\t\t%s\n", inFlags(o.Err.Text))
			continue
		case !p.Meets:
			fmt.Fprintf(w, "misses\t\t\t\t\t%s\n", inFlags(p.Shortfall.Reason))
			continue
		}
		at := p.At
		value := func(e *calculator.Estimate, digits int) string {
			if e == nil {
				return "—"
			}
			return fmt.Sprintf("%.*f (%.*f–%.*f)", digits, e.Value, digits, e.Low, digits, e.High)
		}
		conc := strconv.Itoa(p.Concurrency)
		if p.Instances > 0 {
			conc += fmt.Sprintf(" (×%d = %d GPUs)", p.Instances, p.Instances*o.GPUCount)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s: %s", conc, value(at.TotalTokS, 0), value(at.PerRequestTokS, 1), value(at.TTFTMs, 0), at.Basis, p.Binding, inFlags(p.BindingDetail))
		if c := o.Cost; c != nil {
			if c.USDPerHour != nil {
				fmt.Fprintf(w, "; $%.2f/h an instance", *c.USDPerHour)
				if p.Instances > 0 {
					fmt.Fprintf(w, ", $%.2f/h for %d users", float64(p.Instances)**c.USDPerHour, t.Users)
				}
			}
			if c.USDPerMillion != nil {
				fmt.Fprintf(w, ", $%s per million output tokens", sig(c.USDPerMillion.Value))
			}
		}
		fmt.Fprintln(w)
	}
	if pl.Omitted > 0 {
		fmt.Fprintf(w, "\n%d more options (--limit)\n", pl.Omitted)
	}
	// A warning several options share is said once, with their numbers.
	var order []string
	about := map[string][]string{}
	for i, o := range ap.Options {
		for _, warn := range o.Warnings {
			if about[warn] == nil {
				order = append(order, warn)
			}
			about[warn] = append(about[warn], "#"+strconv.Itoa(i+1))
		}
	}
	if len(order) > 0 || len(ap.Warnings) > 0 {
		fmt.Fprintln(w)
	}
	for _, warn := range order {
		fmt.Fprintf(w, "note %s\t%s\n", strings.Join(about[warn], ", "), inFlags(warn))
	}
	for _, warn := range ap.Warnings {
		fmt.Fprintf(w, "note\t%s\n", inFlags(warn))
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

// tokenFlag is a flag holding a token count, read as tokens reads one.
type tokenFlag struct{ p *int }

func (t tokenFlag) String() string {
	if t.p == nil {
		return "0"
	}
	return strconv.Itoa(*t.p)
}

func (t tokenFlag) Set(s string) error {
	v, err := tokens(s)
	if err != nil {
		return err
	}
	*t.p = v
	return nil
}
