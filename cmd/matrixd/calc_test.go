package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// seededDB is a database holding the bundled example runs.
func seededDB(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	db := filepath.Join(dir, "c.db")
	if err := run(context.Background(), append([]string{"import", "--db", db}, seedPages(t, dir)...), env(nil), nil, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	return db
}

// calc runs matrixd calc with args on db, returning what it printed.
func calc(t *testing.T, db string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := run(context.Background(), append(append([]string{"calc"}, args[0], "--db", db), args[1:]...), env(nil), nil, &out, io.Discard)
	return out.String(), err
}

// TestCalcGridAxesAreTheAPIs: calc grid refuses the axes the API refuses,
// saying what was asked: more values than a grid has, or a value out of
// the parameter's range.
func TestCalcGridAxesAreTheAPIs(t *testing.T) {
	db := seededDB(t)
	var many []string
	for i := range 18 {
		many = append(many, label(1024*i))
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--contexts", strings.Join(many, ","), "--concurrencies", "1"}, "--contexts takes at most 16 values, not 18"},
		{[]string{"--concurrencies", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17"}, "--concurrencies takes at most 16 values, not 17"},
		{[]string{"--concurrencies", "0,1"}, "--concurrencies takes 1 to 65536, not 0"},
		{[]string{"--contexts", "0,17000000"}, "--contexts takes 0 to 16777216, not 17000000"},
	} {
		_, err := calc(t, db, append([]string{"grid", "--model", "nemotron", "--gpu", "RTX 3090"}, tc.args...)...)
		var usage *usageError
		if !errors.As(err, &usage) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "measured") {
			t.Errorf("calc grid %s: %v, want a usage error saying %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}

// TestInFlags: the API's parameter names in the calculator's messages
// become the CLI's flags, values included; a one-word name in prose and a
// run's own setting stay as they are.
func TestInFlags(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"more than 64 runs match: with vram_gb or max_output_tokens only the newest 64 are planned; narrow with model, gpu or engine",
			"more than 64 runs match: with --vram or --max-output only the newest 64 are planned; narrow with --model, --gpu or --engine"},
		{"2 runs a plausibility check flagged are included (include_flagged=true)", "2 runs a plausibility check flagged are included (--include-flagged)"},
		{"include_scaled_model=true plans one model on the GPUs that have runs of other models but none of its: give model too",
			"--include-scaled-model plans one model on the GPUs that have runs of other models but none of its: give --model too"},
		{"include_scaled=true adds GPUs, include_scaled=false does not", "--include-scaled adds GPUs, --include-scaled=false does not"},
		{"sort=cost needs a price: give gpu_hour_usd (renting), or hardware_usd with amortization_years and electricity_usd_per_kwh (owning)",
			"--sort cost needs a price: give --gpu-hour-usd (renting), or --hardware-usd with --amortization-years and --electricity-usd-per-kwh (owning)"},
		{"a GPU of the measured one's generation (ampere), or rough=true for a labelled rough estimate", "a GPU of the measured one's generation (ampere), or --rough for a labelled rough estimate"},
		{"give run_id, or model and gpu, not both", "give --run, or --model and --gpu, not both"},
		{"ask with model set to one of those names", "ask with --model set to one of those names"},
		{"context_tokens, target_gpu, min_per_request_tok_s, max_ttft_ms", "--context, --target-gpu, --min-tok-s, --max-ttft"},
		{"the run does not say its gpu_memory_utilization, so its KV pool is unknown", "the run does not say its gpu_memory_utilization, so its KV pool is unknown"},
		{"a grid has at most 16 contexts; 200 users need 13 instances, the model's limit", "a grid has at most 16 contexts; 200 users need 13 instances, the model's limit"},
		{"max_model_len 4096 and engine_versions", "max_model_len 4096 and engine_versions"},
	} {
		if got := inFlags(tc.in); got != tc.want {
			t.Errorf("inFlags(%q)\n= %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

// TestCalcSelectsFlaggedRunsByFlag: every calc subcommand takes
// --include-flagged, as its API operation takes include_flagged; an error
// that says which filter left the runs out names the flag, and one with no
// flagged run to bring back does not offer --include-flagged.
func TestCalcSelectsFlaggedRunsByFlag(t *testing.T) {
	db := seededDB(t)
	_, err := calc(t, db, "decode", "--model", "fara", "--gpu", "RTX 3099", "--context", "16K", "--concurrency", "1")
	if err == nil || !strings.Contains(err.Error(), "did you mean RTX 3090") || strings.Contains(err.Error(), "flagged") {
		t.Errorf("calc decode on a mistyped GPU: %v, want the names near it and nothing of flagged runs", err)
	}
	_, err = calc(t, db, "decode", "--model", "fara", "--gpu", "RTX 3060", "--engine-version", "9.9", "--context", "16K", "--concurrency", "1")
	if err == nil || !strings.Contains(err.Error(), "none with --engine-version 9.9; they have 0.32.0") || strings.Contains(err.Error(), "flagged") {
		t.Errorf("calc decode with an engine version no run has: %v, want the flag that left the runs out", err)
	}
	for _, args := range [][]string{
		{"decode", "--context", "16K", "--concurrency", "8"},
		{"capacity", "--context", "16K"},
		{"grid", "--contexts", "16K", "--concurrencies", "8"},
		{"prefill", "--context", "16K"},
	} {
		if _, err := calc(t, db, append(args, "--model", "fara", "--gpu", "RTX 3060", "--include-flagged")...); err != nil {
			t.Errorf("calc %s --include-flagged: %v", args[0], err)
		}
	}
	if _, err := calc(t, db, "plan", "--context", "16K", "--min-tok-s", "30", "--include-flagged"); err != nil {
		t.Errorf("calc plan --include-flagged: %v", err)
	}
}

// TestCalcPlanTablePrintsEveryWarning: the plan's table says, as notes,
// every warning its JSON carries: the plan's and each option's.
func TestCalcPlanTablePrintsEveryWarning(t *testing.T) {
	db := seededDB(t)
	for _, args := range [][]string{
		{"--gpu", "RTX 3099"},
		{"--max-ttft", "4000", "--include-scaled", "--limit", "4"},
	} {
		args = append([]string{"plan", "--context", "16K", "--min-tok-s", "30"}, args...)
		js, err := calc(t, db, append(args, "--json")...)
		if err != nil {
			t.Fatal(err)
		}
		var plan struct {
			Warnings []string `json:"warnings"`
			Options  []struct {
				Warnings []string `json:"warnings"`
			} `json:"options"`
		}
		if err := json.Unmarshal([]byte(js), &plan); err != nil {
			t.Fatal(err)
		}
		all := plan.Warnings
		for _, o := range plan.Options {
			all = append(all, o.Warnings...)
		}
		if len(all) == 0 {
			t.Fatalf("calc %s: no warnings to print: %s", strings.Join(args, " "), js)
		}
		table, err := calc(t, db, args...)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range all {
			if !strings.Contains(table, inFlags(w)) {
				t.Errorf("calc %s: the table lacks the warning %q:\n%s", strings.Join(args, " "), w, table)
			}
		}
	}
	table, _ := calc(t, db, "plan", "--context", "16K", "--min-tok-s", "30", "--max-ttft", "4000", "--include-scaled", "--limit", "4")
	if !strings.Contains(table, "note #3, #4") {
		t.Errorf("a warning of options 3 and 4 is not said once for both:\n%s", table)
	}
}

// TestCalcFlagsAreTheAPIsParameters: each calc subcommand takes a flag
// for every query parameter of its API operation, named as paramFlags
// names it, and no flag that stands for none (but --db and --json).
func TestCalcFlagsAreTheAPIsParameters(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromFile(filepath.Join("..", "..", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for what, path := range calcPaths() {
		item := doc.Paths.Find(path)
		c, _ := calcCLI(what, env(nil))
		flags := map[string]bool{"--db": true, "--json": true}
		for _, ref := range append(item.Parameters, item.Get.Parameters...) {
			if p := ref.Value; p.In == "query" {
				flag, ok := flagFor(p.Name)
				if !ok || c.fs.Lookup(strings.TrimPrefix(flag, "--")) == nil {
					t.Errorf("calc %s has no flag for GET %s %s", what, path, p.Name)
					continue
				}
				flags[flag] = true
			}
		}
		c.fs.VisitAll(func(f *flag.Flag) {
			if !flags["--"+f.Name] {
				t.Errorf("calc %s --%s stands for no parameter of GET %s", what, f.Name, path)
			}
		})
	}
}

// TestCalcDecodeAndGridArePriced: calc decode and grid take the API's
// prices, print what the answer costs and give the API's cost in --json.
func TestCalcDecodeAndGridArePriced(t *testing.T) {
	db := seededDB(t)
	nemo := []string{"--model", "nemotron", "--gpu", "RTX 3090"}
	js, err := calc(t, db, append([]string{"decode", "--context", "16K", "--concurrency", "8", "--gpu-hour-usd", "0.22", "--json"}, nemo...)...)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Cost *struct {
			USDPerHour    float64 `json:"usd_per_hour"`
			USDPerMillion struct {
				Value float64 `json:"value"`
			} `json:"usd_per_million_output_tokens"`
			PowerW float64 `json:"power_w"`
		} `json:"cost"`
	}
	if err := json.Unmarshal([]byte(js), &d); err != nil || d.Cost == nil || d.Cost.USDPerHour != 0.22 || d.Cost.PowerW != 350 {
		t.Fatalf("%v: %s; want the API's cost at $0.22 a GPU-hour and the 3090's 350 W limit", err, js)
	}
	table, err := calc(t, db, append([]string{"decode", "--context", "16K", "--concurrency", "8", "--gpu-hour-usd", "0.22"}, nemo...)...)
	if err != nil {
		t.Fatal(err)
	}
	perM := fmt.Sprintf("%.3g", d.Cost.USDPerMillion.Value)
	for _, want := range []string{"$0.22/h an instance (1 GPU, rented)", "$ per million output tokens", perM, "J per output token", "350 W a GPU (power_limit)"} {
		if !strings.Contains(table, want) {
			t.Errorf("calc decode --gpu-hour-usd: the table lacks %q:\n%s", want, table)
		}
	}
	owned := []string{"--hardware-usd", "1500", "--amortization-years", "3", "--electricity-usd-per-kwh", "0.3"}
	js, err = calc(t, db, append(append([]string{"grid", "--contexts", "0,16K", "--concurrencies", "1,8", "--json"}, nemo...), owned...)...)
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Rows []struct {
			Cells []struct {
				Cost *struct {
					Pricing string `json:"pricing"`
				} `json:"cost"`
			} `json:"cells"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(js), &g); err != nil || len(g.Rows) != 2 {
		t.Fatalf("%v: %s", err, js)
	}
	for _, r := range g.Rows {
		for _, c := range r.Cells {
			if c.Cost == nil || c.Cost.Pricing != "owned" {
				t.Errorf("grid cell without the owned GPU's cost: %s", js)
			}
		}
	}
	table, err = calc(t, db, append(append([]string{"grid", "--contexts", "0,16K", "--concurrencies", "1,8"}, nemo...), owned...)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"$ per million output tokens", "an instance (1 GPU, owned)", "350 W a GPU (power_limit)"} {
		if !strings.Contains(table, want) {
			t.Errorf("calc grid priced: the table lacks %q:\n%s", want, table)
		}
	}
	// Prices the API refuses are refused, naming the flags.
	for _, bad := range [][]string{
		{"decode", "--context", "16K", "--concurrency", "8", "--gpu-hour-usd", "0.22", "--hardware-usd", "1500"},
		{"grid", "--gpu-hour-usd", "2000"},
	} {
		_, err := calc(t, db, append(bad, nemo...)...)
		var usage *usageError
		if !errors.As(err, &usage) || !strings.Contains(err.Error(), "--hardware-usd") && !strings.Contains(err.Error(), "--gpu-hour-usd takes") || strings.Contains(err.Error(), "_usd") {
			t.Errorf("calc %s: %v, want a usage error naming the price flags", strings.Join(bad, " "), err)
		}
	}
}

// TestCalcPlanPlansOneMethodClass: like the API, calc plan plans the
// sustained-decode runs unless told another class, and never ranks runs
// of two classes together.
func TestCalcPlanPlansOneMethodClass(t *testing.T) {
	db := seededDB(t)
	ctx := context.Background()
	var exported bytes.Buffer
	if err := run(ctx, []string{"export", "--db", db, "ry2kyqdzrktuq2yh"}, env(nil), nil, &exported, io.Discard); err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	if err := json.Unmarshal(exported.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	r["method"], r["title"] = map[string]any{"class": "serving_sweep"}, "the Fara run, as a serving sweep"
	sweep := filepath.Join(t.TempDir(), "sweep.json")
	b, _ := json.Marshal(r)
	if err := os.WriteFile(sweep, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var imported bytes.Buffer
	if err := run(ctx, []string{"import", "--db", db, sweep}, env(nil), nil, &imported, io.Discard); err != nil {
		t.Fatal(err)
	}
	id := strings.Fields(imported.String())[0]
	table, err := calc(t, db, "plan", "--context", "16K", "--min-tok-s", "30")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table, "2 runs matched") || strings.Contains(table, id) {
		t.Errorf("calc plan ranks the serving sweep %s beside the sustained-decode runs:\n%s", id, table)
	}
	table, err = calc(t, db, "plan", "--context", "16K", "--min-tok-s", "30", "--method-class", "serving_sweep")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table, "1 run matched") || !strings.Contains(table, id) {
		t.Errorf("calc plan --method-class serving_sweep does not plan the sweep %s alone:\n%s", id, table)
	}
	if _, err := calc(t, db, "plan", "--context", "16K", "--min-tok-s", "30", "--method-class", "sweep"); err == nil || !strings.Contains(err.Error(), "--method-class takes sustained_decode") {
		t.Errorf("calc plan --method-class sweep: %v, want the classes it takes", err)
	}
}

// TestCalcMaxOutputTakesK: --max-output is a token count like --context:
// 2K is 2048 (it was refused, though the help says token counts take K).
func TestCalcMaxOutputTakesK(t *testing.T) {
	db := seededDB(t)
	args := []string{"decode", "--model", "nemotron", "--gpu", "RTX 3090", "--context", "16K", "--concurrency", "8", "--json", "--max-output"}
	k, err := calc(t, db, append(args, "2K")...)
	if err != nil {
		t.Fatal(err)
	}
	n, err := calc(t, db, append(args, "2048")...)
	if err != nil || k != n {
		t.Errorf("--max-output 2K answers\n%s\nand 2048\n%s(%v)", k, n, err)
	}
}

// TestCalcSaysAFlagOnce: a message that names its flag first is not
// prefixed with it again ("--sort: --sort cost needs a price").
func TestCalcSaysAFlagOnce(t *testing.T) {
	db := seededDB(t)
	_, err := calc(t, db, "plan", "--context", "16K", "--min-tok-s", "30", "--sort", "cost")
	if err == nil || !strings.Contains(err.Error(), "--sort cost needs a price") || strings.Contains(err.Error(), "--sort: --sort") {
		t.Errorf("%v; want --sort named once", err)
	}
}
