package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/matrixd/matrixd/assess"
	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/ingest"
	"github.com/matrixd/matrixd/predict"
	"github.com/matrixd/matrixd/server"
	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

// seedIfEmpty stores the bundled example runs when the database has no run,
// and returns how many it stored.
func seedIfEmpty(ctx context.Context, st *store.Store) (int, error) {
	n, err := st.CountRuns(ctx)
	if err != nil {
		return 0, err
	}
	runs, err := ingest.SeedRuns()
	if err != nil {
		return 0, err
	}
	// A database is seeded once: runs deleted later stay deleted.
	if n > 0 {
		// Seeds stored before sources (and where they came from) were
		// kept get them now.
		for _, r := range runs {
			if _, err := st.AttachSource(ctx, r); err != nil {
				return 0, err
			}
			if _, err := st.AttachOrigin(ctx, r); err != nil {
				return 0, err
			}
		}
		return 0, st.MarkSeeded(ctx)
	}
	if seeded, err := st.Seeded(ctx); err != nil || seeded {
		return 0, err
	}
	w, err := assess.New(st)
	if err != nil {
		return 0, err
	}
	_, created, err := w.CreateRuns(ctx, runs)
	if errors.Is(err, store.ErrConflict) {
		return 0, st.MarkSeeded(ctx) // another instance on the same database seeded it at the same moment
	}
	if err != nil {
		return 0, fmt.Errorf("seed: %w", err)
	}
	n = 0
	for _, c := range created {
		if c {
			n++
		}
	}
	return n, st.MarkSeeded(ctx)
}

func importCmd(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	c := newCLI("import", "[--db PATH] FILE…\n       matrixd import --format FORMAT --meta META.json [--tg N] FILE…",
		"Store runs from published matrix-run pages or run JSON, each file all-or-nothing;\nwith --format, build one run from a benchmark tool's output files.",
		[2]string{"FILE…", "a published matrix-run page or run JSON, one run a file; with --format, the tool's\n        output files that together make one run. - reads stdin"})
	fs := c.fs
	db := dbFlag(fs, getenv, true)
	format := fs.String("format", "", "a benchmark tool's output: "+strings.Join(ingest.Formats(), " or ")+" (vllm-bench also reads SGLang's bench_serving JSONL and the result blocks either tool prints); all FILEs then make one run (default: each FILE is a published page or run JSON)")
	meta := fs.String("meta", "", "with --format: run JSON without cells (title, model, hardware, engine …) for the rest of the run")
	tg := fs.Int("tg", 0, "with --format llama-batched-bench: the text-generation length to import when the table measured several")
	if err := c.parse(args, stdout); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return c.usageErr("name at least one file (- for stdin): a published matrix-run page or run JSON, or with --format a tool's output")
	}
	if *format != "" {
		return importTool(ctx, c, *db, *format, *meta, *tg, fs.Args(), stdin, stdout)
	}
	if *meta != "" || *tg != 0 {
		return c.usageErr("--meta and --tg go with --format")
	}
	// Parse every file before opening the store: a file that does not parse
	// is reported with the others, and stores nothing.
	type parsed struct {
		name string
		run  store.Run
	}
	var (
		ok   []parsed
		errs []error
	)
	for _, name := range fs.Args() {
		b, err := readInput(name, stdin)
		if err == nil {
			var r store.Run
			if r, err = ingest.Parse(b); err == nil {
				r.Source = ingest.Source(b)
				ok = append(ok, parsed{name, r})
				continue
			}
		}
		errs = append(errs, fmt.Errorf("%s: %w", name, err))
	}
	st, err := store.Open(ctx, *db, store.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	w, err := assess.New(st)
	if err != nil {
		return err
	}
	for _, p := range ok {
		r, created, err := w.CreateRun(ctx, p.run)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.name, err))
			continue
		}
		printStored(stdout, r, created, p.name)
	}
	for _, e := range errs {
		fmt.Fprintf(stderr, "import: %s\n", describeError(e))
	}
	if len(errs) > 0 {
		return fmt.Errorf("import: %d of %d files not imported", len(errs), fs.NArg())
	}
	return nil
}

// importTool builds one run from a tool's output files and the run's
// metadata.
func importTool(ctx context.Context, c *cli, db, format, metaPath string, tg int, names []string, stdin io.Reader, stdout io.Writer) error {
	if !slices.Contains(ingest.Formats(), format) {
		return c.usageErr("--format takes a tool's output format: %s; published pages and run JSON are read without --format", strings.Join(ingest.Formats(), " or "))
	}
	if metaPath == "" {
		return c.usageErr("--format %s needs --meta META.json: run JSON without cells giving the title, model, hardware and engine", format)
	}
	meta, err := readInput(metaPath, stdin)
	if err != nil {
		return fmt.Errorf("import: --meta %s: %w", metaPath, err)
	}
	files := make([]ingest.ToolFile, 0, len(names))
	for _, name := range names {
		b, err := readInput(name, stdin)
		if err != nil {
			return fmt.Errorf("import: %s: %w", name, err)
		}
		files = append(files, ingest.ToolFile{Name: name, Data: b})
	}
	run, err := ingest.ParseToolRun(format, metaPath, meta, files, ingest.ToolOptions{TG: tg})
	if err != nil {
		return fmt.Errorf("import: %s", describeError(err))
	}
	if run.Source, err = ingest.ToolSource(format, meta, files); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	st, err := store.Open(ctx, db, store.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	w, err := assess.New(st)
	if err != nil {
		return err
	}
	r, created, err := w.CreateRun(ctx, run)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	printStored(stdout, r, created, strings.Join(names, " "))
	return nil
}

func printStored(w io.Writer, r store.Run, created bool, from string) {
	verb := "stored"
	if !created {
		verb = "already stored"
	}
	fmt.Fprintf(w, "%s\t%s\t%s (%d decode, %d prefill cells)\n", r.ID, verb, from, len(r.Decode), len(r.Prefill))
}

// describeError spells out every problem of a run that cannot be stored,
// one a line.
func describeError(err error) string {
	var ve *store.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s", strings.TrimSuffix(err.Error(), ve.Error()))
	noun := "problems"
	if len(ve.Problems) == 1 {
		noun = "problem"
	}
	fmt.Fprintf(&b, "the run cannot be stored (%d %s):", len(ve.Problems), noun)
	for _, p := range ve.Problems {
		b.WriteString("\n  " + p.String())
	}
	return b.String()
}

func readInput(name string, stdin io.Reader) ([]byte, error) {
	const maxInput = 16 << 20
	var r io.Reader = stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxInput {
		return nil, fmt.Errorf("larger than %d MiB", maxInput>>20)
	}
	return b, nil
}

func exportCmd(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	c := newCLI("export", "[--db PATH] RUN_ID\n       matrixd export --all [--db PATH]",
		"Print a stored run as run JSON, without what the server assigns: what import and\nPOST /v1/runs take, and an example to edit. With --all, every visible run in full,\none a line, as GET /v1/runs.ndjson answers (NDJSON).",
		[2]string{"RUN_ID", "the run's id, as import and GET /v1/runs show it"})
	fs := c.fs
	db := dbFlag(fs, getenv, false)
	all := fs.Bool("all", false, "every run, as the lines of GET /v1/runs.ndjson (the whole Run, id and all)")
	if err := c.parse(args, stdout); err != nil {
		return err
	}
	if *all && fs.NArg() > 0 {
		return c.usageErr("--all takes no run id")
	}
	if !*all && fs.NArg() != 1 {
		return c.usageErr("name one run id, or --all for every run")
	}
	st, err := openExisting(ctx, *db)
	if err != nil {
		return err
	}
	defer st.Close()
	if *all {
		w := bufio.NewWriterSize(stdout, 64<<10)
		if err := server.WriteExport(ctx, st, w); err != nil {
			return err
		}
		return w.Flush()
	}
	r, err := st.Run(ctx, fs.Arg(0))
	if err != nil {
		return err
	}
	// Run JSON is the run without what the server assigns.
	r.ID, r.CreatedAt, r.SubmittedBy, r.Trust = "", time.Time{}, "", nil
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func generateCmd(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	c := newCLI("generate", "[--db PATH] [--runs N] [--seed S]",
		"Add synthetic runs, for load tests and benchmarks. Give it a database of its own:\nits runs look like real ones in listings.")
	fs := c.fs
	db := dbFlag(fs, getenv, true)
	n := fs.Int("runs", 10000, "how many synthetic runs to add")
	seed := fs.Uint64("seed", 1, "random seed: the same seed gives the same runs")
	if err := c.parse(args, stdout); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return c.usageErr("takes no arguments, got %q", fs.Args())
	}
	if *n < 1 || *n > 1_000_000 {
		return c.usageErr("--runs must be 1…1000000")
	}
	st, err := store.Open(ctx, *db, store.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	w, err := assess.New(st)
	if err != nil {
		return err
	}
	runs := storetest.Runs(*seed, *n)
	const batch = 500
	added := 0
	for i := 0; i < len(runs); i += batch {
		_, created, err := w.CreateRuns(ctx, runs[i:min(i+batch, len(runs))])
		if err != nil {
			return err
		}
		for _, c := range created {
			if c {
				added++
			}
		}
	}
	fmt.Fprintf(stdout, "added %d synthetic runs (%d already stored) to %s\n", added, *n-added, store.Redact(*db))
	return nil
}

func fitCmd(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	c := newCLI("fit", "[--db PATH] [--workers N]",
		"Fit and store every stored run the calculator's current method has not fitted (after an\nupgrade, or on a database copied or generated offline), so that a server started on it\nanswers without fitting. The server does the same in the background, one at a time.")
	fs := c.fs
	db := dbFlag(fs, getenv, false)
	workers := fs.Int("workers", runtime.GOMAXPROCS(0), "fits made at once (1 to 256)")
	if err := c.parse(args, stdout); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return c.usageErr("takes no arguments, got %q", fs.Args())
	}
	if *workers < 1 || *workers > 256 {
		return c.usageErr("--workers takes 1 to 256, not %d", *workers)
	}
	st, err := openExisting(ctx, *db)
	if err != nil {
		return err
	}
	defer st.Close()
	start := time.Now()
	calc := predict.New(st, 0, nil) // keeps no model: each is stored and dropped
	defer calc.Close()
	var failed []error
	calc.SetErrorLog(func(err error) { failed = append(failed, err) })
	n, err := calc.Backfill(ctx, *workers)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "fitted and stored %d runs in %s (method %s)\n", n, time.Since(start).Round(time.Millisecond), calculator.MethodVersion)
	if len(failed) > 0 {
		return fmt.Errorf("%d fits could not be made or stored; the first: %w", len(failed), failed[0])
	}
	return nil
}
