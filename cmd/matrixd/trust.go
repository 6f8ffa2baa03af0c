package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/matrixd/matrixd/assess"
	"github.com/matrixd/matrixd/data"
	"github.com/matrixd/matrixd/ingest"
	"github.com/matrixd/matrixd/trust"
)

// trustRuns are the real runs the checks are evaluated on: the bundled
// pages and the grids of dirs (comma-separated), each a corpus
// (DIR/<family>/manifest.json) or one family (DIR/manifest.json, as the
// series are).
func trustRuns(dirs string) ([]assess.Named, error) {
	var runs []assess.Named
	for _, s := range ingest.Seeds() {
		r, err := ingest.Parse(s.Data)
		if err != nil {
			return nil, fmt.Errorf("seed %s: %w", s.Name, err)
		}
		runs = append(runs, assess.Named{Family: "seed pages", Name: strings.TrimSuffix(s.Name, ".txt"), Run: r})
	}
	for _, dir := range strings.Split(dirs, ",") {
		if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err == nil {
			family, err := loadFamily(dir)
			if err != nil {
				return nil, err
			}
			runs = append(runs, family...)
			continue
		}
		corpus, err := loadCorpus(dir)
		if err != nil {
			return nil, err
		}
		for _, c := range corpus {
			runs = append(runs, assess.Named{Family: c.Family, Name: c.Family + "/" + c.Entry.Name, Run: c.Run})
		}
	}
	return runs, nil
}

// shippedRuns are every real run matrixd ships, read as a fresh database
// is seeded with them: the bundled pages, the open dataset (all of it, as
// import --dir data/ reads it) and the published grids ingest holds; and
// the grids of dirs (folders on disk: the corpus) that are not among those.
func shippedRuns(dirs ...string) ([]assess.Named, error) {
	var runs []assess.Named
	seen := map[string]bool{}
	for _, s := range ingest.Seeds() {
		r, err := ingest.Parse(s.Data)
		if err != nil {
			return nil, fmt.Errorf("seed %s: %w", s.Name, err)
		}
		runs = append(runs, assess.Named{Family: "seed pages", Name: strings.TrimSuffix(s.Name, ".txt"), Run: r})
	}
	add := func(what string, fsys fs.FS, root string, licensed bool) error {
		batches, _, err := ingest.ReadDataset(fsys, root, licensed)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		for _, b := range batches {
			for i, r := range b.Runs {
				key := r.ContentHash()
				if seen[key] {
					continue
				}
				seen[key] = true
				family, _, _ := strings.Cut(strings.TrimPrefix(b.Name, root+"/"), "/")
				runs = append(runs, assess.Named{Family: what + " " + family, Name: fmt.Sprintf("%s#%d", b.Name, i+1), Run: r})
			}
		}
		return nil
	}
	if err := add("data", data.FS, ".", false); err != nil {
		return nil, err
	}
	if err := add("published", ingest.PublishedGrids(), "testdata", true); err != nil {
		return nil, err
	}
	for _, dir := range dirs {
		if err := add(filepath.Base(dir), os.DirFS(dir), ".", false); err != nil {
			return nil, err
		}
	}
	return runs, nil
}

// loadFamily reads the grids DIR/manifest.json lists, as one family named
// for DIR.
func loadFamily(dir string) ([]assess.Named, error) {
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, err
	}
	var entries []corpusEntry
	if err := json.Unmarshal(b, &entries); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	fam := filepath.Base(dir)
	var out []assess.Named
	for _, e := range entries {
		meta, err := os.ReadFile(filepath.Join(dir, e.Meta))
		if err != nil {
			return nil, err
		}
		var files []ingest.ToolFile
		for _, f := range e.Files {
			data, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				return nil, err
			}
			files = append(files, ingest.ToolFile{Name: f, Data: data})
		}
		r, err := ingest.ParseToolRun(e.Format, e.Meta, meta, files, ingest.ToolOptions{TG: e.TG})
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", dir, e.Name, err)
		}
		out = append(out, assess.Named{Family: fam, Name: fam + "/" + e.Name, Run: r})
	}
	return out, nil
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
	real, flagged, judged := 0, 0, 0
	for _, f := range ev.Families {
		real, flagged, judged = real+f.Runs, flagged+f.Flagged, judged+f.BandwidthChecked
		fmt.Fprintf(stdout, "| %s | %d | %d | %d | %s | %d | %s |\n", f.Family, f.Runs, f.Flagged, f.BandwidthChecked, boundPct(f.WorstBandwidthPct, f.BandwidthChecked), f.TotalsChecked, boundPct(f.WorstTotalsPct, f.TotalsChecked))
	}
	fmt.Fprintf(stdout, "| all | %d | %d | %d | | | |\n\n", real, flagged, judged)
	fmt.Fprintf(stdout, "The physics (bandwidth) check judges %d of %d real runs (%.0f %%); false flags: %d.\n\n", judged, real, 100*float64(judged)/float64(real), flagged)
	printCalibration(stdout, "Calibration: the highest share of the physical bound (× 1) the real runs reach, and the cap it gives:", ev.Observed)
	fmt.Fprintln(stdout)
	fmt.Fprintln(stdout, "Falsified copies of those runs (caught: flagged by a check or refused by validation):")
	fmt.Fprintln(stdout)
	fmt.Fprintln(stdout, "| doctoring | copies | caught | share caught | runs it cannot apply to |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|")
	for _, d := range ev.Doctored {
		fmt.Fprintf(stdout, "| %s | %d | %d | %s | %d |\n", d.Name, d.Copies, d.Caught, share(d.Caught, d.Copies), d.NotApplicableTo)
	}
	for _, f := range ev.FalseFlags {
		fmt.Fprintln(stdout, "false flag:", f)
	}
	if verbose {
		for _, m := range ev.Missed {
			fmt.Fprintln(stdout, "missed:", m)
		}
	}
	printCorroboration(w.EvalCorroboration(runs), verbose, stdout)
	return printCoverage(w, verbose, stdout)
}

// corpusDir is the corpus the shipped runs' coverage adds to the
// embedded ones, where the repository is at hand.
const corpusDir = "ingest/testdata/corpus"

// printCoverage prints the share of every shipped run the bandwidth check
// judges, and why it cannot judge the rest.
func printCoverage(w *assess.Writer, verbose bool, stdout io.Writer) error {
	var dirs []string
	if _, err := os.Stat(corpusDir); err == nil {
		dirs = append(dirs, corpusDir)
	}
	runs, err := shippedRuns(dirs...)
	if err != nil {
		return err
	}
	cov := w.PhysicsCoverage(runs)
	fmt.Fprintf(stdout, "\nPhysics coverage of every shipped run (bundled pages, data/ as imported, the published grids%s): the bandwidth check judges %d of %d (%.0f %%).\n",
		map[bool]string{true: ", " + corpusDir}[len(dirs) > 0], cov.Judged, cov.Runs, 100*float64(cov.Judged)/float64(max(cov.Runs, 1)))
	corr := w.CorroborationStatuses(runs)
	fmt.Fprintf(stdout, "Flagged by the bandwidth check: %d. Stored together and corroborated: %d corroborated, %d uncorroborated, %d disputed.\n",
		len(cov.Flagged), corr.Statuses[trust.StatusCorroborated], corr.Statuses[trust.StatusUncorroborated], corr.Statuses[trust.StatusDisputed])
	for _, d := range corr.Disputed {
		fmt.Fprintln(stdout, "false dispute (shipped run):", d)
	}
	for _, f := range cov.Flagged {
		fmt.Fprintln(stdout, "false flag (shipped run):", f)
	}
	if len(cov.Reasons) > 0 {
		fmt.Fprintln(stdout)
		fmt.Fprintln(stdout, "| not judged because | runs | for example |")
		fmt.Fprintln(stdout, "|---|---|---|")
		codes := make([]string, 0, len(cov.Reasons))
		for c := range cov.Reasons {
			codes = append(codes, c)
		}
		slices.SortFunc(codes, func(a, b string) int { return cmp.Or(cov.Reasons[b]-cov.Reasons[a], strings.Compare(a, b)) })
		for _, c := range codes {
			fmt.Fprintf(stdout, "| %s | %d | %s |\n", c, cov.Reasons[c], strings.ReplaceAll(cov.Examples[c], "|", "/"))
		}
	}
	fmt.Fprintln(stdout)
	printCalibration(stdout, "The shipped runs' highest share of the physical bound (× 1), and the cap in use:", cov.Observed)
	if verbose {
		for _, u := range cov.Unjudged {
			fmt.Fprintln(stdout, "not judged:", u)
		}
	}
	return nil
}

// printCalibration prints, under title, each engine family and weight
// width's highest share of the physical bound the runs reach and the cap
// the calibration table gives it.
func printCalibration(stdout io.Writer, title string, observed []trust.Calibration) {
	fmt.Fprintln(stdout, title)
	fmt.Fprintln(stdout)
	fmt.Fprintln(stdout, "| engine family | weights | runs | highest | cap |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|")
	for _, o := range observed {
		fmt.Fprintf(stdout, "| %s | %s | %d | %.0f %% | × %.2f |\n", o.Family, o.Bits, o.Runs, 100*o.Highest, trust.Calibrated(o.Family, bitsOf(o.Bits)).Cap)
	}
}

// printCorroboration prints the measured spread of each reference kind
// beside the bounds in use, the real runs' statuses, and the falsified
// copies caught by the checks or by corroboration.
func printCorroboration(ev assess.CorroborationEval, verbose bool, stdout io.Writer) {
	fmt.Fprint(stdout, "\nCorroboration: the factor between independent real runs and each kind of reference (both metrics, the one departing most), and the bounds in use (trust.Bounds):\n\n")
	fmt.Fprintln(stdout, "| reference | comparisons | sources | p50 | p90 | p99 | max | agree ≤ (p90 gives) | dispute > (p99 gives) | held-out source beyond its bound |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|---|---|---|---|---|")
	for _, s := range ev.Spreads {
		if s.Comparisons == 0 {
			fmt.Fprintf(stdout, "| %s | 0 | 0 | | | | | %.2f | %.2f | |\n", s.Kind, s.InUse.Agree, s.InUse.Dispute)
			continue
		}
		fmt.Fprintf(stdout, "| %s | %d | %d | %.2f | %.2f | %.2f | %.2f | %.2f (%.2f) | %.2f (%.2f) | %d of %d |\n", s.Kind, s.Comparisons, s.Sources,
			s.P50, s.P90, s.P99, s.Max, s.InUse.Agree, s.P90Bound(), s.InUse.Dispute, s.P99Bound(), s.HeldOut, s.HeldOutOf)
	}
	if o := ev.OtherLayout; o.Comparisons > 0 {
		fmt.Fprintf(stdout, "\nNot references of each other: the same model on the same GPUs and engine in another parallel layout (tensor parallel 4 with two data-parallel copies against tensor parallel 8, pipeline against tensor parallel): %d comparisons, %d sources, p50 %.2f, p90 %.2f, max %.2f.\n",
			o.Comparisons, o.Sources, o.P50, o.P90, o.Max)
	}
	n := 0
	for _, c := range ev.Statuses {
		n += c
	}
	fmt.Fprintf(stdout, "\nReal runs stored together (%d unflagged): %d corroborated, %d uncorroborated, %d disputed.\n\n", n,
		ev.Statuses[trust.StatusCorroborated], ev.Statuses[trust.StatusUncorroborated], ev.Statuses[trust.StatusDisputed])
	fmt.Fprintln(stdout, "Falsified copies submitted from a second key into a store holding the real runs (caught: flagged, refused, or disputed):")
	fmt.Fprintln(stdout)
	fmt.Fprintln(stdout, "| doctoring | copies | caught by the checks | caught by the checks or corroboration | with an independent reference | caught of those |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|---|")
	for _, d := range ev.Doctored {
		fmt.Fprintf(stdout, "| %s | %d | %s | %s | %d | %s |\n", d.Name, d.Copies, share(d.CaughtByChecks, d.Copies), share(d.Caught, d.Copies), d.WithReference, share(d.CaughtWithRef, d.WithReference))
	}
	for _, d := range ev.Disputed {
		fmt.Fprintln(stdout, "false dispute:", d)
	}
	if verbose {
		for _, m := range ev.Missed {
			fmt.Fprintln(stdout, "missed with a reference:", m)
		}
	}
}

// bitsOf is a weight width of each class of trust.BitsClass.
func bitsOf(class string) float64 {
	for _, b := range []float64{4, 8, 16} {
		if trust.BitsClass(b) == class {
			return b
		}
	}
	return 16
}

func share(n, of int) string {
	if of == 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f %%", 100*float64(n)/float64(of))
}

func boundPct(v float64, n int) string {
	if n == 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f %%", v)
}
