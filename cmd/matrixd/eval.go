package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/predict"
	"github.com/matrixd/matrixd/store"
)

// evalCmd recomputes the calculator's held-out accuracy over every stored
// run: leave-one-out over valid cells, each context row and each
// concurrency column held out in turn.
func evalCmd(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	c := newCLI("eval", "[--db PATH] [--json]\n       matrixd eval --corpus DIR [--json] [--v] [--hindsight] [--calibrate]\n       matrixd eval --corpus DIR --trust [--v]",
		"Recompute the calculator's held-out accuracy over every stored run: each valid cell,\neach context row and each concurrency column left out in turn.")
	fs := c.fs
	db := dbFlag(fs, getenv, false)
	asJSON := fs.Bool("json", false, "print the reports as JSON")
	corpus := fs.String("corpus", "", "evaluate the grids of a corpus directory (DIR/<family>/manifest.json, e.g. ingest/testdata/corpus) instead of the stored runs, leaving one cell out at a time, per family")
	verbose := fs.Bool("v", false, "with --corpus: also list each answer whose interval missed the measurement")
	trustFlag := fs.Bool("trust", false, "with --corpus (one or more directories, comma-separated: a corpus DIR/<family>/manifest.json or one family DIR/manifest.json): check the plausibility rules instead: how many real runs (those and the bundled pages) the bandwidth check judges and flags, the calibration they give, and how many falsified copies of each kind are caught")
	calibrate := fs.Bool("calibrate", false, "with --corpus: print the band calibration (per engine family and basis) derived from the tune split, as calculator/bands.json holds it")
	hindsight := fs.Bool("hindsight", false, "with --corpus: also score every fixed choice of the fit (kind, weights, levels read as limits) on each grid and report the best one's error, picked with hindsight (a reference for the per-run choice; 180 fits per cell, 360 where rows level off)")
	if err := c.parse(args, stdout); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return c.usageErr("takes no arguments, got %q", fs.Args())
	}
	if *hindsight && *corpus == "" {
		return c.usageErr("--hindsight needs --corpus")
	}
	if *calibrate && *corpus == "" {
		return c.usageErr("--calibrate needs --corpus")
	}
	if *trustFlag && *corpus == "" {
		return c.usageErr("--trust needs --corpus")
	}
	if *verbose && *corpus == "" {
		return c.usageErr("--v needs --corpus")
	}
	if *trustFlag {
		return evalTrust(*corpus, *verbose, stdout)
	}
	if *corpus != "" {
		return evalCorpus(ctx, *corpus, corpusOptions{json: *asJSON, verbose: *verbose, hindsight: *hindsight, calibrate: *calibrate}, stdout)
	}
	st, err := openExisting(ctx, *db)
	if err != nil {
		return err
	}
	defer st.Close()
	var reports []calculator.Report
	var runs []calculator.Run
	titles := map[string]string{}
	families := map[string]string{} // run → the calibration its bands take
	cursor := ""
	for {
		page, next, err := st.ListRuns(ctx, store.RunFilter{}, store.SortCreated, 200, cursor)
		if err != nil {
			return err
		}
		for _, s := range page {
			r, err := st.Run(ctx, s.ID)
			if err != nil {
				return err
			}
			cr := predict.Run(r)
			runs = append(runs, cr)
			reports = append(reports, calculator.Evaluate(cr))
			titles[r.ID] = r.Title
			families[r.ID] = calculator.BandFamily(cr.Engine, cr.Method)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if len(reports) == 0 {
		return fmt.Errorf("eval: no runs in %s", store.Redact(*db))
	}
	pooled := calculator.Pool(reports)
	var loo []calculator.HoldoutReport
	for _, r := range runs {
		rep, err := calculator.LeaveOneOut(ctx, r)
		if err != nil {
			return err
		}
		loo = append(loo, rep)
	}
	l := calculator.PoolHoldouts("stored runs", loo)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Runs       []calculator.Report      `json:"runs"`
			Pooled     calculator.Report        `json:"pooled"`
			LeaveOut   calculator.HoldoutReport `json:"leave_one_cell_out"`
			Coverage   float64                  `json:"leave_one_cell_out_coverage"`
			Bands      []bandRow                `json:"leave_one_cell_out_bands"`
			BandFamily map[string]string        `json:"band_family"`
		}{reports, pooled, l, l.Coverage(), bandRows(l.Answers), families})
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "run\tinterpolant\tregime\tcells\ttotal tok/s MAPE\tp90\tmax\tTBT MAPE\tp90\tmax\trefused\tstatus right/boundary/wrong\t")
	for _, r := range append(reports, pooled) {
		name := r.RunID
		if t := titles[r.RunID]; t != "" {
			name += " " + t
		}
		for i, reg := range []struct {
			name string
			e    calculator.RegimeErrors
		}{{"interpolated", r.Interpolated}, {"extrapolated", r.Extrapolated}} {
			interp := r.Interpolant
			if i > 0 {
				interp = ""
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t", name, interp, reg.name, reg.e.Total.N,
				pct(reg.e.Total.Mean), pct(reg.e.Total.P90), pct(reg.e.Total.Max), pct(reg.e.TBT.Mean), pct(reg.e.TBT.P90), pct(reg.e.TBT.Max))
			if i == 0 {
				fmt.Fprintf(tw, "%d\t%d/%d/%d\t\n", r.Refused, r.Status.Right, r.Status.Boundary, r.Status.Wrong)
			} else {
				fmt.Fprint(tw, "\t\t\n")
			}
			name = ""
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nTTFT (decode table, held out): MAPE %s, p90 %s over %d cells\n", pct(pooled.TTFT.Mean), pct(pooled.TTFT.P90), pooled.TTFT.N)
	fmt.Fprintf(stdout, "cold prefill TTFT (held out): MAPE %s, p90 %s over %d points\n", pct(pooled.Prefill.Mean), pct(pooled.Prefill.P90), pooled.Prefill.N)
	fmt.Fprintf(stdout, "leave-one-cell-out, refitted with bands: total tok/s mean %s, p90 %s over %d cells; TBT mean %s, p90 %s over %d cells; interval coverage %s; refused %d of %d\n",
		pct(l.Total.Mean), pct(l.Total.P90), l.Total.N, pct(l.TBT.Mean), pct(l.TBT.P90), l.TBT.N, pct(l.Coverage()), l.Refused, l.Cells)
	for _, b := range bandRows(l.Answers) {
		fmt.Fprintf(stdout, "  %s: %d answers, coverage %s, mean half-width %s, error mean %s, p90 %s\n", b.Basis, b.Answers, pct(b.Coverage), pct(b.HalfWidth), pct(b.Mean), pct(b.P90))
	}
	for _, r := range runs {
		f := families[r.ID]
		switch {
		case f == "":
			f = "pooled (engine or method not known)"
		case !calculator.Calibration().Calibrated(f):
			f += ": pooled (the corpus has no such grids)"
		}
		fmt.Fprintf(stdout, "  bands of %s calibrated as %s\n", r.ID, f)
	}
	if len(pooled.Status.Misses) > 0 {
		fmt.Fprintf(stdout, "status calls not right (held out one cell at a time):\n  %s\n", strings.Join(pooled.Status.Misses, "\n  "))
	}
	return nil
}

func pct(f float64) string { return fmt.Sprintf("%.2f%%", 100*f) }
