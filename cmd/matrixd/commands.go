package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/matrixd/matrixd/assess"
	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/data"
	"github.com/matrixd/matrixd/ingest"
	"github.com/matrixd/matrixd/predict"
	"github.com/matrixd/matrixd/server"
	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storegen"
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

// openDataset is the dataset a fresh database is seeded with: every file
// of data/ and the published grids ingest holds, each read as matrixd
// import reads it, only the runs whose META states a licence.
func openDataset() ([]ingest.DatasetBatch, error) {
	a, _, err := ingest.ReadDataset(data.FS, ".", true)
	if err != nil {
		return nil, fmt.Errorf("open dataset: %w", err)
	}
	b, _, err := ingest.ReadDataset(ingest.PublishedGrids(), "testdata", true)
	if err != nil {
		return nil, fmt.Errorf("published grids: %w", err)
	}
	return append(a, b...), nil
}

// seedDataset stores the open dataset, a file's runs at a time (so that
// other writers wait no longer than one file), and returns how many runs
// it stored. Runs already stored (the same content) are left as they are:
// seeding again stores nothing.
func seedDataset(ctx context.Context, st *store.Store) (int, error) {
	batches, err := openDataset()
	if err != nil {
		return 0, err
	}
	w, err := assess.New(st)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, b := range batches {
		_, created, err := w.CreateRuns(ctx, b.Runs)
		if err != nil {
			return n, fmt.Errorf("seed %s: %w", b.Name, err)
		}
		for _, c := range created {
			if c {
				n++
			}
		}
	}
	return n, nil
}

// importFormats is the help's list of the formats import reads.
func importFormats() string {
	return `formats (--format NAME; those marked * are recognised without --format):
  llama-batched-bench    llama.cpp llama-batched-bench: markdown table or jsonl; all FILEs make one run
  vllm-bench             vllm bench serve / SGLang bench_serving JSON(L) or result blocks; all FILEs one run
  grid-csv               context_tokens,concurrency,total_tok_s,… CSV of any engine; all FILEs one run
  inferencex             SemiAnalysis InferenceX agg_*.json results, a file per cell; one run per
                         configuration among the FILEs
  ds4-bench *            antirez/ds4 speed-bench CSV (ctx_tokens,…,gen_tps,…): one run a file
  llama-bench *          llama.cpp llama-bench: markdown (pp512, tg128 @ d4096 …), -o json or jsonl;
                         one run per model and settings
  llmfit *               an llmfit community submission (llmfit bench --share): one run per result
  localmaxxing *         LocalMaxxing /api/benchmarks rows (array, "rows" or a "presets" scrape):
                         one run per row
A tool's output takes the rest of its runs (title, model, hardware, engine …) from META: --meta,
else FILE's name with .META.json for its extension, else the nearest META.json in its folder or above.`
}

func importCmd(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	c := newCLI("import", "[--db PATH] [--meta META.json] FILE…\n       matrixd import --format FORMAT [--meta META.json] [--tg N] FILE…\n       matrixd import --dir DIR",
		"Store runs from published matrix-run pages, run JSON or benchmark tools' output, each\nfile all-or-nothing; a tool's output of a format below is recognised without --format.\n\n"+importFormats(),
		[2]string{"FILE…", "a published matrix-run page, run JSON or a tool's output (one or more runs a file);\n        with --format llama-batched-bench, vllm-bench, grid-csv or inferencex, the files\n        read together. - reads stdin"})
	fs := c.fs
	db := dbFlag(fs, getenv, true)
	format := fs.String("format", "", "a benchmark tool's output format: "+strings.Join(ingest.Formats(), ", ")+" (see formats above; default: recognised from each FILE)")
	meta := fs.String("meta", "", "run JSON without cells (title, model, hardware, engine …) for the rest of a tool's runs (default: the META beside FILE)")
	tg := fs.Int("tg", 0, "with --format llama-batched-bench: the text-generation length to import when the table measured several")
	dir := fs.String("dir", "", "a folder of published files, each with its META, read as a fresh database is seeded: a subfolder's manifest.json lists its runs, other files are recognised, files no format recognises are read together as InferenceX results (e.g. data/)")
	if err := c.parse(args, stdout); err != nil {
		return err
	}
	if *dir != "" {
		if fs.NArg() > 0 || *format != "" || *meta != "" || *tg != 0 {
			return c.usageErr("--dir reads every file of the folder with the META beside it: give no FILE, --format, --meta or --tg with it")
		}
		return importDir(ctx, *db, *dir, stdout)
	}
	if fs.NArg() == 0 {
		return c.usageErr("name at least one file (- for stdin): a published matrix-run page, run JSON, or a tool's output")
	}
	if *format != "" && !slices.Contains(ingest.Formats(), *format) {
		return c.usageErr("--format takes a tool's output format: %s; published pages and run JSON are read without --format", strings.Join(ingest.Formats(), ", "))
	}
	if *format != "" && !ingest.ReadsEachFile(*format) {
		return importTool(ctx, c, *db, *format, *meta, *tg, fs.Args(), stdin, stdout)
	}
	if *tg != 0 {
		return c.usageErr("--tg goes with --format llama-batched-bench")
	}
	// Parse every file before opening the store: a file that does not parse
	// is reported with the others, and stores nothing.
	type parsed struct {
		name string
		runs []store.Run
	}
	var (
		ok   []parsed
		errs []error
	)
	for _, name := range fs.Args() {
		runs, err := importFile(name, *format, *meta, stdin)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		ok = append(ok, parsed{name, runs})
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
		stored, created, err := w.CreateRuns(ctx, p.runs)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.name, err))
			continue
		}
		for i, r := range stored {
			printStored(stdout, r, created[i], p.name)
		}
	}
	for _, e := range errs {
		fmt.Fprintf(stderr, "import: %s\n", describeError(e))
	}
	if len(errs) > 0 {
		return fmt.Errorf("import: %d of %d files not imported", len(errs), fs.NArg())
	}
	return nil
}

// importDir stores every run of the files under dir, a file (or the files
// a manifest or format reads together) at a time, as seeding does.
func importDir(ctx context.Context, db, dir string, stdout io.Writer) error {
	batches, _, err := ingest.ReadDataset(os.DirFS(dir), ".", false)
	if err != nil {
		return fmt.Errorf("import: %s: %s", dir, describeError(err))
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
	for _, b := range batches {
		stored, created, err := w.CreateRuns(ctx, b.Runs)
		if err != nil {
			return fmt.Errorf("import: %s: %w", filepath.Join(dir, b.Name), err)
		}
		for i, r := range stored {
			printStored(stdout, r, created[i], b.Name)
		}
	}
	return nil
}

// importFile reads the runs of one file: a tool's output of format (or
// of the format recognised from it) with its META, else a published page
// or run JSON.
func importFile(name, format, metaPath string, stdin io.Reader) ([]store.Run, error) {
	b, err := readInput(name, stdin)
	if err != nil {
		return nil, err
	}
	if format == "" {
		if format, err = ingest.Detect(b); err != nil {
			return nil, err
		}
	}
	if format == "" {
		r, err := ingest.Parse(b)
		if err != nil {
			return nil, err
		}
		r.Source = ingest.Source(b)
		return []store.Run{r}, nil
	}
	if metaPath == "" {
		if metaPath, err = findMeta(name); err != nil {
			return nil, err
		}
	}
	meta, err := readInput(metaPath, stdin)
	if err != nil {
		return nil, fmt.Errorf("meta %s: %w", metaPath, err)
	}
	files := []ingest.ToolFile{{Name: name, Data: b}}
	runs, err := ingest.ParseToolRuns(format, metaPath, meta, files, ingest.ToolOptions{})
	if err != nil {
		return nil, errors.New(describeError(err))
	}
	src, err := ingest.ToolSource(format, meta, files)
	if err != nil {
		return nil, err
	}
	for i := range runs {
		runs[i].Source = src
	}
	return runs, nil
}

// findMeta is the META of a tool's output file: NAME.META.json for its
// extension, NAME.META.json after it, or the nearest META.json in its
// folder or a folder above.
func findMeta(name string) (string, error) {
	if name == "-" {
		return "", errors.New("a tool's output read from stdin needs --meta META.json")
	}
	candidates := []string{strings.TrimSuffix(name, filepath.Ext(name)) + ".META.json", name + ".META.json"}
	for dir := filepath.Dir(name); ; dir = filepath.Dir(dir) {
		candidates = append(candidates, filepath.Join(dir, "META.json"))
		if up := filepath.Dir(dir); up == dir || dir == "." {
			break
		}
	}
	for _, c := range candidates {
		if _, err := os.Stat(c); err == nil {
			return c, nil
		}
	}
	return "", fmt.Errorf("a tool's output needs its META (run JSON without cells: title, model, hardware, engine): give --meta, or put %s beside it, or a META.json in its folder", candidates[0])
}

// importTool builds the runs of a tool's output files that are read
// together (one run, or one per configuration for inferencex) and the
// runs' metadata.
func importTool(ctx context.Context, c *cli, db, format, metaPath string, tg int, names []string, stdin io.Reader, stdout io.Writer) error {
	if metaPath == "" {
		var err error
		if metaPath, err = findMeta(names[0]); err != nil {
			return c.usageErr("--format %s needs --meta META.json: run JSON without cells giving the title, model, hardware and engine", format)
		}
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
	runs, err := ingest.ParseToolRuns(format, metaPath, meta, files, ingest.ToolOptions{TG: tg})
	if err != nil {
		return fmt.Errorf("import: %s", describeError(err))
	}
	src, err := ingest.ToolSource(format, meta, files)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	for i := range runs {
		runs[i].Source = src
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
	stored, created, err := w.CreateRuns(ctx, runs)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	for i, r := range stored {
		printStored(stdout, r, created[i], strings.Join(names, " "))
	}
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
	w = w.WithoutCorroboration() // synthetic numbers corroborate nothing
	runs := storegen.Runs(*seed, *n)
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
