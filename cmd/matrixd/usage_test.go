package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/ingest"
	"github.com/matrixd/matrixd/predict"
	"github.com/matrixd/matrixd/store"
)

// cliRun runs matrixd with args and returns its stdout, stderr and error.
func cliRun(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), args, env(nil), strings.NewReader(""), &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

// TestHelpListsEveryCommand: help, --help and -h list every command, one
// a line, say how to get a command's help, and succeed.
func TestHelpListsEveryCommand(t *testing.T) {
	commands := []string{"serve", "import", "export", "generate", "calc", "eval", "keys", "copy", "mcp", "healthcheck", "help"}
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}, {"-help"}, {"help", "help"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out, errOut, err := cliRun(t, args...)
			if err != nil || exitCode(err) != 0 {
				t.Fatalf("matrixd %s: %v (exit %d), want success", strings.Join(args, " "), err, exitCode(err))
			}
			if errOut != "" {
				t.Errorf("help wrote to stderr: %s", errOut)
			}
			for _, c := range commands {
				if !regexp.MustCompile(`(?m)^  ` + c + ` +\S`).MatchString(out) {
					t.Errorf("no line for command %s in:\n%s", c, out)
				}
			}
			if !strings.Contains(out, "matrixd COMMAND --help") {
				t.Errorf("help does not say how to get a command's help:\n%s", out)
			}
		})
	}
}

// helpFlags returns the flags a command's help lists.
func helpFlags(help string) []string {
	var flags []string
	for _, m := range regexp.MustCompile(`(?m)^  --([a-z0-9-]+)`).FindAllStringSubmatch(help, -1) {
		flags = append(flags, m[1])
	}
	slices.Sort(flags)
	return flags
}

// TestCommandHelpShowsOnlyItsOwnFlags: "CMD --help", "CMD -h" and "help
// CMD" succeed and print the command's usage line, its arguments and
// exactly the flags it takes.
func TestCommandHelpShowsOnlyItsOwnFlags(t *testing.T) {
	selection := []string{"run", "model", "gpu", "engine-version", "kv-cache-dtype", "include-flagged"}
	prices := []string{"gpu-hour-usd", "hardware-usd", "amortization-years", "electricity-usd-per-kwh"}
	tests := []struct {
		cmd   string
		flags []string
		want  []string // also in the help: positional arguments
	}{
		{"serve", []string{"addr", "db", "no-seed", "log-level", "synchronous", "rate-limit", "write-rate-limit", "cors-write-origins", "trusted-proxies", "cache-mb", "fit-cache-mb", "cost-limit", "cost-burst", "public-url"}, nil},
		{"import", []string{"db", "dir", "format", "meta", "tg"}, []string{"FILE…", "- reads stdin"}},
		{"export", []string{"all", "db"}, []string{"RUN_ID"}},
		{"mcp", []string{"db"}, []string{"stdin"}},
		{"generate", []string{"db", "runs", "seed"}, nil},
		{"eval", []string{"db", "json", "corpus", "v", "hindsight", "trust", "calibrate"}, nil},
		{"copy", []string{"from", "to"}, nil},
		{"healthcheck", []string{"addr"}, nil},
		{"keys create", []string{"db", "name", "admin"}, nil},
		{"keys list", []string{"db"}, nil},
		{"keys revoke", []string{"db"}, []string{"NAME"}},
		{"keys proof", []string{"name", "key"}, []string{"matrixd signing key v1"}},
		{"calc decode", append([]string{"db", "json", "context", "concurrency", "vram", "util", "max-output", "target-gpu", "rough"}, append(selection, prices...)...), nil},
		{"calc capacity", append([]string{"db", "json", "context", "concurrency", "vram", "util", "max-output", "target-gpu"}, selection...), nil},
		{"calc grid", append([]string{"db", "json", "contexts", "concurrencies", "vram", "util", "max-output", "target-gpu", "rough"}, append(selection, prices...)...), nil},
		{"calc prefill", append([]string{"db", "json", "context"}, selection...), nil},
		{"calc plan", append([]string{"db", "json", "context", "min-tok-s", "max-ttft", "users", "model", "gpu", "engine", "kv-cache-dtype", "include-flagged", "method-class", "vram", "max-output", "include-scaled", "include-scaled-model", "limit", "sort"}, prices...), nil},
	}
	for _, tt := range tests {
		words := strings.Fields(tt.cmd)
		for _, args := range [][]string{append(words, "--help"), append(words, "-h"), append([]string{"help"}, words...)} {
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				out, errOut, err := cliRun(t, args...)
				if err != nil || exitCode(err) != 0 {
					t.Fatalf("%v (exit %d), want success", err, exitCode(err))
				}
				if errOut != "" {
					t.Errorf("help wrote to stderr: %s", errOut)
				}
				if !strings.HasPrefix(out, "usage: matrixd "+tt.cmd+" ") {
					t.Errorf("help does not start with the usage line of %s:\n%s", tt.cmd, out)
				}
				want := slices.Sorted(slices.Values(tt.flags))
				if got := helpFlags(out); !slices.Equal(got, want) {
					t.Errorf("help lists flags %v, want exactly %v:\n%s", got, want, out)
				}
				for _, w := range tt.want {
					if !strings.Contains(out, w) {
						t.Errorf("help lacks %q:\n%s", w, out)
					}
				}
			})
		}
	}
}

// TestGroupHelpListsSubcommands: calc and keys list their subcommands.
func TestGroupHelpListsSubcommands(t *testing.T) {
	groups := map[string][]string{
		"calc": {"decode", "capacity", "grid", "prefill", "plan"},
		"keys": {"create", "list", "revoke", "proof"},
	}
	for group, subs := range groups {
		for _, args := range [][]string{{group, "--help"}, {group, "-h"}, {group, "help"}, {"help", group}} {
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				out, _, err := cliRun(t, args...)
				if err != nil {
					t.Fatalf("%v, want success", err)
				}
				for _, s := range subs {
					if !regexp.MustCompile(`(?m)^  ` + s + ` +\S`).MatchString(out) {
						t.Errorf("no line for %s %s in:\n%s", group, s, out)
					}
				}
				if !strings.Contains(out, "matrixd "+group+" SUBCOMMAND --help") {
					t.Errorf("help does not say how to get a subcommand's flags:\n%s", out)
				}
			})
		}
	}
}

// TestUsageErrorsExitTwo: a command line that cannot be run as written
// is a usage error (exit 2) with a message saying what is wrong and where
// the help is; a failure of a well-formed command exits 1.
func TestUsageErrorsExitTwo(t *testing.T) {
	db := filepath.Join(t.TempDir(), "u.db")
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"frobnicate"}, []string{`unknown command "frobnicate"`, `"matrixd help"`}},
		{[]string{"help", "frobnicate"}, []string{`unknown command "frobnicate"`}},
		{[]string{"calc", "prefill", "--concurrency", "3"}, []string{"calc prefill: unknown flag --concurrency", `"matrixd calc prefill --help"`}},
		{[]string{"calc", "decode", "--context"}, []string{"flag --context needs a value"}},
		{[]string{"calc", "decode", "--concurrency", "many"}, []string{`--concurrency takes a whole number of requests, not "many"`}},
		{[]string{"calc"}, []string{"name a subcommand"}},
		{[]string{"calc", "frob"}, []string{`unknown subcommand "frob"`}},
		{[]string{"calc", "--context", "1K"}, []string{"name a subcommand before flags"}},
		{[]string{"calc", "decode", "--db", db, "--run", "x", "--context", "1K"}, []string{"--concurrency (at least 1) is required"}},
		{[]string{"calc", "prefill", "--db", db, "--run", "x"}, []string{"--context is required"}},
		{[]string{"calc", "plan", "--db", db, "--context", "1K"}, []string{"--min-tok-s"}},
		{[]string{"import", "--db", db}, []string{"import: name at least one file"}},
		{[]string{"export", "--db", db}, []string{"export: name one run id"}},
		{[]string{"export", "--all", "--db", db, "rx"}, []string{"export: --all takes no run id"}},
		{[]string{"keys"}, []string{"name a subcommand"}},
		{[]string{"keys", "revoke", "--db", db}, []string{"keys revoke: name the key"}},
		{[]string{"keys", "create", "--db", db}, []string{"--name is required"}},
		{[]string{"eval", "--db", db, "--hindsight"}, []string{"eval: --hindsight needs --corpus"}},
		{[]string{"eval", "--db", db, "--calibrate"}, []string{"eval: --calibrate needs --corpus"}},
		{[]string{"eval", "--db", db, "-v"}, []string{"eval: --v needs --corpus"}},
		{[]string{"serve", "extra"}, []string{"serve: takes no arguments"}},
		{[]string{"--no-such-flag"}, []string{"serve: unknown flag --no-such-flag"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, _, err := cliRun(t, tt.args...)
			if code := exitCode(err); code != 2 {
				t.Fatalf("err = %v, exit %d; want a usage error, exit 2", err, code)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	_, _, err := cliRun(t, "export", "--db", db, "no-such-run")
	if code := exitCode(err); err == nil || code != 1 {
		t.Errorf("export of a missing run: %v, exit %d; want exit 1", err, code)
	}
}

// TestCalcErrorsNameFlags: the calculator's errors name the CLI's flags,
// never the API's parameters.
func TestCalcErrorsNameFlags(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "c.db")
	seed := ingest.Seeds()[0]
	page := filepath.Join(dir, "seed.txt")
	if err := os.WriteFile(page, seed.Data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err := cliRun(t, "import", "--db", db, page)
	if err != nil {
		t.Fatal(err)
	}
	id := strings.Fields(out)[0]
	var contexts []string
	for i := range predict.MaxGridSide + 1 {
		contexts = append(contexts, fmt.Sprintf("%dK", i))
	}
	tests := []struct {
		args      []string
		want, not []string
	}{
		{[]string{"calc", "decode", "--run", id, "--model", "fara", "--context", "16K", "--concurrency", "1"},
			[]string{"calc decode: --run: give --run, or --model and --gpu"}, []string{"run_id", " model and gpu"}},
		{[]string{"calc", "prefill", "--model", "fara", "--context", "16K"},
			[]string{"calc prefill: --gpu: select a run with --run, or with both --model and --gpu"}, []string{"run_id"}},
		{[]string{"calc", "capacity", "--context", "16K"},
			[]string{"calc capacity: --model:", "--run"}, []string{"run_id"}},
		{[]string{"calc", "grid", "--run", id, "--contexts", strings.Join(contexts, ",")},
			[]string{"calc grid: --contexts takes at most 16 values, not 17"}, []string{" contexts: a grid", "measured"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args[:2], " "), func(t *testing.T) {
			_, _, err := cliRun(t, append(tt.args, "--db", db)...)
			if code := exitCode(err); code != 2 {
				t.Fatalf("err = %v, exit %d; want a usage error", err, code)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(err.Error(), n) {
					t.Errorf("error %q names the API's %q", err, n)
				}
			}
		})
	}
}

// TestCLIError maps each kind of calculator error to the CLI's words.
func TestCLIError(t *testing.T) {
	amb := &predict.Ambiguous{Selection: predict.Selection{Model: "fara", GPU: "RTX 3060"}, Differ: []string{"engine_version"},
		Candidates: []store.RunConfig{{ID: "r1", ModelName: "Fara-7B", EngineName: "vllm", EngineVersion: "0.9"}, {ID: "r2", ModelName: "Fara-7B", EngineName: "vllm", EngineVersion: "0.10"}}}
	tests := []struct {
		name  string
		err   error
		want  string
		usage bool
	}{
		{"run_id", &store.FieldError{Field: "run_id", Message: "give run_id, or model and gpu, not both"}, "calc decode: --run: give --run, or --model and --gpu, not both", true},
		{"concurrency", &store.FieldError{Field: "concurrency", Message: "must be at least 1"}, "calc decode: --concurrency: must be at least 1", true},
		{"context_tokens", &store.FieldError{Field: "context_tokens", Message: "must be at least 0"}, "calc decode: --context: must be at least 0", true},
		{"max_output_tokens", &store.FieldError{Field: "max_output_tokens", Message: "too large"}, "calc decode: --max-output: too large", true},
		{"wrapped", fmt.Errorf("select: %w", &store.FieldError{Field: "contexts", Message: "too many"}), "calc decode: select: --contexts: too many", true},
		{"ambiguous", amb, "calc decode: 2 runs match --model \"fara\" on --gpu \"RTX 3060\" but differ in engine_version, which changes the answer; pick one with --run, or narrow with --engine-version or --kv-cache-dtype:\n  --run r1", true},
		{"refusal", &calculator.Refusal{Reason: "the run does not say how many output tokens it reserves per request; give max_output_tokens", Supported: "max_output_tokens ≥ 1"},
			"calc decode: the run does not say how many output tokens it reserves per request; give --max-output; supported: --max-output ≥ 1", false},
		{"price", &store.FieldError{Field: "hardware_usd", Message: "gpu_hour_usd prices a rented GPU and hardware_usd an owned one: give one or the other"},
			"calc decode: --hardware-usd: --gpu-hour-usd prices a rented GPU and --hardware-usd an owned one", true},
		{"no run", &store.Error{Kind: store.ErrNotFound, Msg: "no run of a model matching \"fara\" on GPU \"RTX 3099\" (runs a plausibility check flagged are left out; include_flagged=true brings them back)"},
			"calc decode: no run of a model matching \"fara\" on GPU \"RTX 3099\" (runs a plausibility check flagged are left out; --include-flagged brings them back)", false},
		{"refusal of a run's setting", &calculator.Refusal{Reason: "the run does not say its gpu_memory_utilization"}, "calc decode: the run does not say its gpu_memory_utilization", false},
		{"other", store.ErrNotFound, "calc decode: not found", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := cliError("calc decode", tt.err)
			got := err.Error()
			if tt.usage {
				got = strings.TrimSuffix(got, "\nrun \"matrixd calc decode --help\" for its usage")
			}
			if !strings.HasPrefix(got, tt.want) {
				t.Errorf("got %q\nwant %q", got, tt.want)
			}
			if wantCode := map[bool]int{true: 2, false: 1}[tt.usage]; exitCode(err) != wantCode {
				t.Errorf("exit %d, want %d", exitCode(err), wantCode)
			}
			if !errors.Is(err, tt.err) {
				t.Errorf("%v does not wrap %v", err, tt.err)
			}
		})
	}
}

// TestHelpDoesNotServe: a bare matrixd still serves (the README's set-up
// command), but "matrixd --help" answers without binding a port or
// touching the database.
func TestHelpDoesNotServe(t *testing.T) {
	db := filepath.Join(t.TempDir(), "h.db")
	var out bytes.Buffer
	err := run(context.Background(), []string{"--help"}, env(map[string]string{"MATRIXD_DB": db}), nil, &out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("--help created %s", db)
	}
	err = run(context.Background(), []string{"serve", "--help"}, env(map[string]string{"MATRIXD_DB": db, "MATRIXD_NO_SEED": "yes"}), nil, &out, io.Discard)
	if err != nil {
		t.Errorf("serve --help with a bad MATRIXD_NO_SEED: %v, want the help", err)
	}
}

// TestDBHelpSaysWhetherItCreates: --db's help says a command that needs an
// existing database does not create one.
func TestDBHelpSaysWhetherItCreates(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"eval", "--help"}, "an existing SQLite file"},
		{[]string{"calc", "decode", "--help"}, "an existing SQLite file"},
		{[]string{"import", "--help"}, "created if missing"},
		{[]string{"keys", "create", "--help"}, "created if missing"},
		{[]string{"keys", "list", "--help"}, "an existing SQLite file"},
		{[]string{"keys", "revoke", "--help"}, "an existing SQLite file"},
	} {
		out, _, err := cliRun(t, tt.args...)
		if err != nil || !strings.Contains(out, tt.want) {
			t.Errorf("%v: %v, help lacks %q:\n%s", tt.args, err, tt.want, out)
		}
	}
}

// TestDBHelpIsTrue: what --db's help says of a missing database is what
// the command does with one.
func TestDBHelpIsTrue(t *testing.T) {
	for _, tt := range []struct{ cmd, args []string }{
		{[]string{"keys", "create"}, []string{"--name", "alice"}},
		{[]string{"keys", "list"}, nil},
		{[]string{"keys", "revoke"}, []string{"alice"}},
		{[]string{"export"}, []string{"rnope"}},
		{[]string{"eval"}, nil},
		{[]string{"calc", "prefill"}, []string{"--run", "rnope", "--context", "1000"}},
	} {
		help, _, err := cliRun(t, append(slices.Clone(tt.cmd), "--help")...)
		if err != nil {
			t.Fatalf("%v --help: %v", tt.cmd, err)
		}
		says := strings.Contains(help, "created if missing")
		db := filepath.Join(t.TempDir(), "missing.db")
		cliRun(t, append(append(slices.Clone(tt.cmd), "--db", db), tt.args...)...)
		_, statErr := os.Stat(db)
		if created := statErr == nil; created != says {
			t.Errorf("%v: the help says created if missing: %t; created: %t", tt.cmd, says, created)
		}
	}
}

// TestCalcPlanNamesFlags: calc plan's table says what a run needs in the
// CLI's flags: a run that does not publish its output reservation needs
// --max-output, not the API's max_output_tokens.
func TestCalcPlanNamesFlags(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "plan.db")
	st, err := store.Open(ctx, db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ingest.Seeds() {
		r, err := ingest.Parse(s.Data)
		if err != nil {
			t.Fatal(err)
		}
		r.Benchmark.MaxOutputTokens = nil
		if _, _, err := st.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	out, _, err := cliRun(t, "calc", "plan", "--db", db, "--context", "16K", "--min-tok-s", "1", "--max-ttft", "60000")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "--max-output") {
		t.Errorf("the plan does not say to give --max-output:\n%s", out)
	}
	for _, param := range []string{"max_output_tokens", "max_ttft_ms", "min_per_request_tok_s", "run_id"} {
		if strings.Contains(out, param) {
			t.Errorf("the plan names the API's %s:\n%s", param, out)
		}
	}
}

// TestExamplesImport: the META.json files docs/submitting.md shows are shipped in
// examples/ and import with the files it names.
func TestExamplesImport(t *testing.T) {
	db := filepath.Join(t.TempDir(), "examples.db")
	files, err := filepath.Glob("../../ingest/testdata/corpus/vllm/vllm-h100-tp4dp2-qwen3-14b-i*.json")
	if err != nil || len(files) != 20 {
		t.Fatalf("%d result files (%v), want 20", len(files), err)
	}
	args := append([]string{"import", "--db", db, "--format", "vllm-bench", "--meta", "../../examples/vllm-h100-qwen3-14b.META.json"}, files...)
	out, errOut, err := cliRun(t, args...)
	if err != nil || !strings.Contains(out, "stored") {
		t.Fatalf("import: %v\n%s%s", err, out, errOut)
	}
}

// TestCalcQuotesValuesAsGiven: a size or count flag's value that does not
// read is quoted as typed ("1.5K", not "1.5") with what the flag takes.
func TestCalcQuotesValuesAsGiven(t *testing.T) {
	db := filepath.Join(t.TempDir(), "never-opened.db")
	sel := []string{"--run", "rnone", "--db", db}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"decode", "--context", "1.5K", "--concurrency", "1"}, `--context: "1.5K" is not a token count: give a whole number of tokens, or of K (1024 tokens), e.g. 49152 or 48K`},
		{[]string{"prefill", "--context", " 16 K"}, `--context: " 16 K" is not a token count`},
		{[]string{"grid", "--contexts", "0,1.5K"}, `--contexts: "1.5K" is not a token count: give whole numbers of tokens, or of K (1024 tokens), comma-separated`},
		{[]string{"grid", "--concurrencies", "1,2x"}, `--concurrencies: "2x" is not a concurrency: give whole numbers of requests, comma-separated, e.g. 1,4,16`},
		{[]string{"decode", "--context", "16K", "--concurrency", "8K"}, `--concurrency takes a whole number of requests, not "8K"`},
		{[]string{"decode", "--context", "16K", "--concurrency", "1", "--max-output", "1.5K"}, `--max-output: "1.5K" is not a token count: give a whole number of tokens, or of K (1024 tokens)`},
		{[]string{"grid", "--concurrencies", "1,8K"}, `--concurrencies: "8K" is not a concurrency: give whole numbers of requests`},
		{[]string{"decode", "--context", "16K", "--concurrency", "1", "--gpu-hour-usd", "1e400"}, `--gpu-hour-usd: "1e400" is out of range`},
		{[]string{"capacity", "--context", "16K", "--vram", "16GB"}, `--vram takes a number of GB, not "16GB"`},
		{[]string{"plan", "--context", "16K", "--min-tok-s", "30tok"}, `--min-tok-s takes a number of tok/s, not "30tok"`},
		{[]string{"plan", "--context", "16K", "--min-tok-s", "30", "--max-ttft", "5s"}, `--max-ttft takes a number of ms, not "5s"`},
		{[]string{"plan", "--context", "16K", "--min-tok-s", "30", "--users", "1e3"}, `--users takes a whole number, not "1e3"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args[:3], " "), func(t *testing.T) {
			args := append([]string{"calc"}, tt.args...)
			if tt.args[0] == "plan" {
				args = append(args, "--db", db)
			} else {
				args = append(args, sel...)
			}
			_, _, err := cliRun(t, args...)
			if code := exitCode(err); code != 2 {
				t.Fatalf("err = %v, exit %d; want a usage error", err, code)
			}
			if !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "parse error") {
				t.Errorf("error %q\nwant it to say %q", err, tt.want)
			}
		})
	}
}
