package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/predict"
	"github.com/matrixd/matrixd/store"
)

const usage = `matrixd serves the public API of LLM inference matrix runs from an SQLite
file or a PostgreSQL database, and imports, exports and models the runs it holds.

usage: matrixd [COMMAND] [flags] [arguments]

commands:
  serve        run the API server (what matrixd with no command does)
  import       store runs from published pages, run JSON or a benchmark tool's output
  export       print a stored run as importable run JSON; --all: every run as NDJSON
  generate     add synthetic runs, for load tests
  calc         the calculator: decode, capacity, grid, prefill, plan
  eval         the calculator's held-out accuracy over every stored run
  fit          fit and store the runs the calculator's current method has not fitted
  keys         API keys for submissions over HTTP: create, list, revoke, proof
  copy         copy everything one database stores into another
  mcp          serve the API's read operations to an AI agent over stdio (Model Context Protocol)
  healthcheck  exit 0 when the local server answers /healthz (container health checks)
  help         this list, or a command's help: matrixd help COMMAND

Run "matrixd COMMAND --help" (or "matrixd help COMMAND") for a command's
arguments and flags.`

// isHelp reports whether arg asks for help rather than naming a command.
func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help"
}

// usageError is a command line that cannot be run as written: main exits 2
// for it, as the flag package does.
type usageError struct {
	cmd string // "calc prefill"; "" for matrixd itself
	err error
}

func (e *usageError) Error() string {
	if e.cmd == "" {
		return fmt.Sprintf("%v\nrun \"matrixd help\" for the commands", e.err)
	}
	return fmt.Sprintf("%s: %v\nrun \"matrixd %s --help\" for its usage", e.cmd, e.err, e.cmd)
}

func (e *usageError) Unwrap() error { return e.err }

// exitCode is the process's exit status for what run returned.
func exitCode(err error) int {
	var ue *usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		return 2
	}
	return 1
}

// cli is one command's flags and the help that describes them.
type cli struct {
	fs       *flag.FlagSet
	name     string      // as typed after matrixd: "calc prefill"
	synopsis string      // what follows the name on the usage line
	summary  string      // what the command does
	args     [][2]string // positional arguments and what each is
}

func newCLI(name, synopsis, summary string, args ...[2]string) *cli {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// parse reports errors and prints help itself: help to stdout, errors
	// once, through run's caller.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &cli{fs: fs, name: name, synopsis: synopsis, summary: summary, args: args}
}

// parse reads args into the flags. On -h or --help it prints the help to
// stdout and returns flag.ErrHelp, which run turns into success.
func (c *cli) parse(args []string, stdout io.Writer) error {
	err := c.fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		c.help(stdout)
		return flag.ErrHelp
	}
	if err != nil {
		return &usageError{c.name, errors.New(flagMessage(c.fs, err.Error()))}
	}
	return nil
}

// usageErr is a usage error of this command.
func (c *cli) usageErr(format string, args ...any) error {
	return &usageError{c.name, fmt.Errorf(format, args...)}
}

// help prints the usage line, the arguments and this command's flags.
func (c *cli) help(w io.Writer) {
	fmt.Fprintf(w, "usage: matrixd %s %s\n\n%s\n", c.name, c.synopsis, c.summary)
	if len(c.args) > 0 {
		fmt.Fprint(w, "\narguments:\n")
		for _, a := range c.args {
			fmt.Fprintf(w, "  %s\n        %s\n", a[0], a[1])
		}
	}
	printFlags(w, c.fs)
}

// printFlags lists a flag set as the docs write flags: --name.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	first := true
	fs.VisitAll(func(f *flag.Flag) {
		if first {
			fmt.Fprint(w, "\nflags:\n")
			first = false
		}
		kind, text := flag.UnquoteUsage(f)
		fmt.Fprintf(w, "  --%s", f.Name)
		if kind != "" {
			fmt.Fprintf(w, " %s", kind)
		}
		fmt.Fprintf(w, "\n        %s", text)
		if def := f.DefValue; def != "" && def != "0" && def != "false" {
			if g, ok := f.Value.(flag.Getter); ok {
				if _, ok := g.Get().(string); ok {
					def = fmt.Sprintf("%q", def)
				}
			}
			fmt.Fprintf(w, " (default %s)", def)
		}
		fmt.Fprintln(w)
	})
}

// badValue is the flag package's refusal of a value its number flags
// cannot read, which says only "parse error".
var badValue = regexp.MustCompile(`^invalid value (".*") for flag -(\S+): parse error$`)

// valueError is the flag package's refusal of a value a flag of ours
// could not read, with the flag's own reason.
var valueError = regexp.MustCompile(`^invalid value ".*" for flag -(\S+): (.+)$`)

// flagMessage writes the flag package's errors with the flags spelled as
// the docs and the help spell them, and a number flag's refusal with the
// value as given and what the flag takes.
func flagMessage(fs *flag.FlagSet, msg string) string {
	if m := badValue.FindStringSubmatch(msg); m != nil {
		if f := fs.Lookup(m[2]); f != nil {
			if g, ok := f.Value.(flag.Getter); ok {
				unit, _ := flag.UnquoteUsage(f)
				takes := "a number"
				switch g.Get().(type) {
				case int, int64, uint, uint64:
					takes = "a whole number"
					if unit != "int" && unit != "uint" {
						takes += " of " + unit
					}
				default:
					if unit != "float" && unit != "value" {
						takes += " of " + unit
					}
				}
				return fmt.Sprintf("--%s takes %s, not %s", f.Name, takes, m[1])
			}
		}
	}
	if m := valueError.FindStringSubmatch(msg); m != nil {
		return "--" + m[1] + ": " + m[2] // a flag that reads its own values says why
	}
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return "unknown flag --" + strings.TrimPrefix(name, "-")
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return "flag --" + strings.TrimPrefix(name, "-") + " needs a value"
	}
	return strings.Replace(msg, " flag -", " flag --", 1)
}

// paramFlag is an API parameter and the CLI flag that sets it.
type paramFlag struct{ param, flag string }

// paramFlags are the API's parameters the CLI takes, each with its flag:
// the one table the CLI's messages are translated by.
func paramFlags() []paramFlag {
	return []paramFlag{
		{"run_id", "--run"}, {"model", "--model"}, {"gpu", "--gpu"}, {"engine", "--engine"},
		{"engine_version", "--engine-version"}, {"kv_cache_dtype", "--kv-cache-dtype"}, {"include_flagged", "--include-flagged"},
		{"context_tokens", "--context"}, {"concurrency", "--concurrency"}, {"contexts", "--contexts"}, {"concurrencies", "--concurrencies"},
		{"vram_gb", "--vram"}, {"gpu_memory_utilization", "--util"}, {"max_output_tokens", "--max-output"},
		{"target_gpu", "--target-gpu"}, {"rough", "--rough"},
		{"min_per_request_tok_s", "--min-tok-s"}, {"max_ttft_ms", "--max-ttft"}, {"users", "--users"},
		{"method_class", "--method-class"}, {"include_scaled", "--include-scaled"}, {"include_scaled_model", "--include-scaled-model"}, {"limit", "--limit"}, {"sort", "--sort"},
		{"gpu_hour_usd", "--gpu-hour-usd"}, {"hardware_usd", "--hardware-usd"}, {"amortization_years", "--amortization-years"},
		{"electricity_usd_per_kwh", "--electricity-usd-per-kwh"},
		{"name", "--name"},
	}
}

// flagFor names the CLI flag for an API parameter, as the calculator and
// the store name parameters in their errors.
func flagFor(param string) (string, bool) {
	for _, p := range paramFlags() {
		if p.param == param {
			return p.flag, true
		}
	}
	return "", false
}

// inFlags rewrites the API's parameter names in the calculator's and the
// planner's messages (errors, reasons, notes) as the CLI's flags:
// include_flagged=true is --include-flagged, sort=cost is --sort cost,
// vram_gb is --vram. A one-word name (model, gpu, users) is a word of the
// prose, not a parameter, unless it is given a value or is in one of the
// phrases below. gpu_memory_utilization is left alone: in these messages
// it names what the run says, not what the caller gave.
func inFlags(msg string) string {
	flags := map[string]string{}
	var names []string
	for _, p := range paramFlags() {
		flags[p.param] = p.flag
		if p.param != "gpu_memory_utilization" {
			names = append(names, regexp.QuoteMeta(p.param))
		}
	}
	re := regexp.MustCompile(`\b(` + strings.Join(names, "|") + `)(=\w+)?\b`)
	msg = re.ReplaceAllStringFunc(msg, func(m string) string {
		param, value, given := strings.Cut(m, "=")
		switch {
		case given && value == "true":
			return flags[param]
		case given && value == "false":
			return flags[param] + "=false" // a boolean flag takes its value so
		case given:
			return flags[param] + " " + value
		case strings.Contains(param, "_"):
			return flags[param]
		}
		return m
	})
	return strings.NewReplacer(
		"model and gpu", "--model and --gpu",
		"model, gpu or engine", "--model, --gpu or --engine",
		"give model too", "give --model too",
		"with model set to", "with --model set to",
	).Replace(msg)
}

// renamed is an error with its text in the CLI's words.
type renamed struct {
	msg string
	err error
}

func (e *renamed) Error() string { return e.msg }
func (e *renamed) Unwrap() error { return e.err }

// cliError shows an error of command cmd's calculator or store in the
// CLI's terms, prefixed with cmd: a parameter becomes the flag that sets
// it, and an invalid parameter or an ambiguous selection is a usage error.
func cliError(cmd string, err error) error {
	var (
		fe  *store.FieldError
		amb *predict.Ambiguous
		ref *calculator.Refusal
		se  *store.Error
	)
	switch {
	case errors.As(err, &fe):
		field := fe.Field
		if f, ok := flagFor(field); ok {
			field = f
		}
		said := inFlags(fe.Message)
		if !strings.HasPrefix(said, field+" ") {
			said = field + ": " + said // a message that names its flag first says it once
		}
		msg := strings.Replace(err.Error(), fe.Error(), said, 1)
		return &usageError{cmd, &renamed{msg, err}}
	case errors.As(err, &amb):
		return &usageError{cmd, &renamed{ambiguous(amb), err}}
	case errors.As(err, &ref), errors.As(err, &se):
		// Both are written for the client ("no run of … on GPU …").
		return &renamed{cmd + ": " + inFlags(err.Error()), err}
	}
	return fmt.Errorf("%s: %w", cmd, err)
}

// ambiguous says which runs a --model/--gpu selection matched and how to
// pick one.
func ambiguous(e *predict.Ambiguous) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d runs match --model %q on --gpu %q but differ in %s, which changes the answer; pick one with --run, or narrow with --engine-version or --kv-cache-dtype:",
		len(e.Candidates), e.Selection.Model, e.Selection.GPU, strings.Join(e.Differ, ", "))
	for _, c := range e.Candidates {
		fmt.Fprintf(&b, "\n  --run %s  %s, %s %s, KV cache %s", c.ID, c.ModelName, c.EngineName, c.EngineVersion, orDash(c.KVCacheDtype))
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
