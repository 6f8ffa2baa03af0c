package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/matrixd/matrixd/assess"
	"github.com/matrixd/matrixd/ingest"
)

// trustRuns are the real runs the checks are evaluated on: the corpus's
// grids and the bundled pages.
func trustRuns(dir string) ([]assess.Named, error) {
	corpus, err := loadCorpus(dir)
	if err != nil {
		return nil, err
	}
	var runs []assess.Named
	for _, s := range ingest.Seeds() {
		r, err := ingest.Parse(s.Data)
		if err != nil {
			return nil, fmt.Errorf("seed %s: %w", s.Name, err)
		}
		runs = append(runs, assess.Named{Family: "seed pages", Name: strings.TrimSuffix(s.Name, ".txt"), Run: r})
	}
	for _, c := range corpus {
		runs = append(runs, assess.Named{Family: c.Family, Name: c.Family + "/" + c.Entry.Name, Run: c.Run})
	}
	return runs, nil
}

// evalTrust prints how the plausibility checks fare on the real runs of
// dir and the seeds (false flags) and on falsified copies (caught).
func evalTrust(dir string, verbose bool, stdout io.Writer) error {
	runs, err := trustRuns(dir)
	if err != nil {
		return err
	}
	w, err := assess.New(nil)
	if err != nil {
		return err
	}
	ev := w.EvalTrust(runs)
	fmt.Fprint(stdout, "Real runs:\n\n")
	fmt.Fprintln(stdout, "| family | runs | flagged | bandwidth checked | closest to its bound | totals checked | closest to its bound |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|---|---|")
	real, flagged := 0, 0
	for _, f := range ev.Families {
		real, flagged = real+f.Runs, flagged+f.Flagged
		fmt.Fprintf(stdout, "| %s | %d | %d | %d | %s | %d | %s |\n", f.Family, f.Runs, f.Flagged, f.BandwidthChecked, boundPct(f.WorstBandwidthPct, f.BandwidthChecked), f.TotalsChecked, boundPct(f.WorstTotalsPct, f.TotalsChecked))
	}
	fmt.Fprintf(stdout, "| all | %d | %d | | | | |\n\n", real, flagged)
	fmt.Fprintln(stdout, "Falsified copies of those runs:")
	fmt.Fprintln(stdout)
	fmt.Fprintln(stdout, "| doctoring | copies | caught | runs it cannot apply to (check not run) |")
	fmt.Fprintln(stdout, "|---|---|---|---|")
	for _, d := range ev.Doctored {
		fmt.Fprintf(stdout, "| %s | %d | %d | %d |\n", d.Name, d.Copies, d.Caught, d.NotApplicableTo)
	}
	if verbose || len(ev.FalseFlags) > 0 || len(ev.Missed) > 0 {
		for _, f := range ev.FalseFlags {
			fmt.Fprintln(stdout, "false flag:", f)
		}
		for _, m := range ev.Missed {
			fmt.Fprintln(stdout, "missed:", m)
		}
	}
	return nil
}

func boundPct(v float64, n int) string {
	if n == 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f %%", v)
}
