package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/ingest"
	"github.com/matrixd/matrixd/predict"
	"github.com/matrixd/matrixd/store"
)

// corpusEntry is one grid of the evaluation corpus, as its family's
// manifest.json lists it.
type corpusEntry struct {
	Name   string   `json:"name"`
	Format string   `json:"format"`
	Files  []string `json:"files"`
	Meta   string   `json:"meta"`
	TG     int      `json:"tg"`
	Split  string   `json:"split"`
	Source string   `json:"source"`
}

// corpusRun is a corpus grid read through the tool formats.
type corpusRun struct {
	Family string
	Entry  corpusEntry
	Run    store.Run
}

// loadCorpus reads every DIR/<family>/manifest.json and imports each grid
// with the same parser as matrixd import --format.
func loadCorpus(dir string) ([]corpusRun, error) {
	manifests, err := filepath.Glob(filepath.Join(dir, "*", "manifest.json"))
	if err != nil {
		return nil, err
	}
	if len(manifests) == 0 {
		runs, _, err := loadDataset(dir)
		if err != nil {
			return nil, fmt.Errorf("no */manifest.json under %s, and as a dataset: %w", dir, err)
		}
		return runs, nil
	}
	slices.Sort(manifests)
	var out []corpusRun
	for _, mf := range manifests {
		famDir := filepath.Dir(mf)
		b, err := os.ReadFile(mf)
		if err != nil {
			return nil, err
		}
		var entries []corpusEntry
		if err := json.Unmarshal(b, &entries); err != nil {
			return nil, fmt.Errorf("%s: %w", mf, err)
		}
		for _, e := range entries {
			if e.Split != "tune" && e.Split != "holdout" {
				return nil, fmt.Errorf("%s: %s: split is %q, want tune or holdout", mf, e.Name, e.Split)
			}
			meta, err := os.ReadFile(filepath.Join(famDir, e.Meta))
			if err != nil {
				return nil, err
			}
			var files []ingest.ToolFile
			for _, f := range e.Files {
				data, err := os.ReadFile(filepath.Join(famDir, f))
				if err != nil {
					return nil, err
				}
				files = append(files, ingest.ToolFile{Name: f, Data: data})
			}
			r, err := ingest.ParseToolRun(e.Format, e.Meta, meta, files, ingest.ToolOptions{TG: e.TG})
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", mf, e.Name, err)
			}
			r.ID = e.Name
			out = append(out, corpusRun{Family: filepath.Base(famDir), Entry: e, Run: r})
		}
	}
	return out, nil
}

// loadDataset reads a folder without manifests (the open dataset, data/)
// as import --dir does. Each run is a grid held out of all tuning, its
// family the top folder and its method class; one_shot runs (a single
// averaged speed, no grid) are left out, and counted.
func loadDataset(dir string) (runs []corpusRun, oneShot int, err error) {
	batches, _, err := ingest.ReadDataset(os.DirFS(dir), ".", false)
	if err != nil {
		return nil, 0, err
	}
	if len(batches) == 0 {
		return nil, 0, fmt.Errorf("no measurement file under %s", dir)
	}
	for _, b := range batches {
		family, _, _ := strings.Cut(b.Name, "/")
		for i, r := range b.Runs {
			class := r.MethodOf().Class
			if class == store.MethodOneShot {
				oneShot++
				continue
			}
			name := strings.TrimSuffix(path.Base(strings.Fields(b.Name)[0]), path.Ext(b.Name))
			if len(b.Runs) > 1 {
				name = fmt.Sprintf("%s#%d", name, i+1)
			}
			r.ID = name
			runs = append(runs, corpusRun{Family: family + " " + class, Entry: corpusEntry{Name: name, Split: "holdout", Source: r.SourceURL}, Run: r})
		}
	}
	return runs, oneShot, nil
}

// familyRow is one line of the per-family accuracy table.
type familyRow struct {
	Family   string                   `json:"family"`
	Split    string                   `json:"split"`
	Grids    int                      `json:"grids"`
	Report   calculator.HoldoutReport `json:"report"`
	Coverage float64                  `json:"coverage"`
	Refusals float64                  `json:"refusal_rate"`
	// Hindsight is the mean error over the rows' grids of each grid's best
	// fixed choice picked with hindsight (with --hindsight).
	Hindsight *float64 `json:"hindsight_total_mean,omitempty"`
	// Bands are the intervals' coverage and width, over all answers and
	// per speed basis.
	Bands []bandRow `json:"bands"`
}

// bandRow is the coverage and width of the total tok/s intervals of some
// held-out answers.
type bandRow struct {
	Basis   string `json:"basis"`
	Answers int    `json:"answers"`
	// Coverage is the share whose interval held the measurement.
	Coverage float64 `json:"coverage"`
	// HalfWidth is the mean relative half-width of the intervals.
	HalfWidth float64 `json:"mean_half_width"`
	// Mean and P90 are the answers' absolute relative errors.
	Mean float64 `json:"error_mean"`
	P90  float64 `json:"error_p90"`
	// TBTAnswers, TBTCoverage and TBTHalfWidth are the same of the time
	// between tokens, over the answers whose cell publishes it.
	TBTAnswers   int     `json:"tbt_answers"`
	TBTCoverage  float64 `json:"tbt_coverage"`
	TBTHalfWidth float64 `json:"tbt_mean_half_width"`
}

// bandRows summarises answers' intervals: all, then per basis present.
func bandRows(hs []calculator.HeldOut) []bandRow {
	one := func(basis string, keep func(calculator.HeldOut) bool) (bandRow, bool) {
		r := bandRow{Basis: basis}
		var errs []float64
		covered, width := 0, 0.0
		tCovered := 0
		for _, h := range hs {
			if !keep(h) {
				continue
			}
			errs = append(errs, h.Err)
			width += h.Band
			if h.Covered() {
				covered++
			}
			if !math.IsNaN(h.TBTNeed) {
				r.TBTAnswers++
				r.TBTHalfWidth += h.TBTBand
				if h.TBTNeed <= h.TBTBand {
					tCovered++
				}
			}
		}
		if r.TBTAnswers > 0 {
			r.TBTCoverage, r.TBTHalfWidth = float64(tCovered)/float64(r.TBTAnswers), r.TBTHalfWidth/float64(r.TBTAnswers)
		}
		if len(errs) == 0 {
			return r, false
		}
		n := float64(len(errs))
		r.Answers, r.Coverage, r.HalfWidth = len(errs), float64(covered)/n, width/n
		r.Mean, r.P90 = meanP90(errs)
		return r, true
	}
	var out []bandRow
	if r, ok := one("all", func(calculator.HeldOut) bool { return true }); ok {
		out = append(out, r)
	}
	for _, b := range []calculator.Basis{calculator.Interpolated, calculator.Extrapolated} {
		if r, ok := one(string(b), func(h calculator.HeldOut) bool { return h.Basis == b }); ok {
			out = append(out, r)
		}
	}
	return out
}

// meanP90 is the mean and the 90th percentile (interpolated between order
// statistics) of xs.
func meanP90(xs []float64) (float64, float64) {
	s := slices.Clone(xs)
	slices.Sort(s)
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	pos := 0.9 * float64(len(s)-1)
	i := int(pos)
	p90 := s[len(s)-1]
	if i < len(s)-1 {
		p90 = s[i] + (s[i+1]-s[i])*(pos-float64(i))
	}
	return sum / float64(len(s)), p90
}

// corpusReport is evalCorpus's JSON: the leave-one-cell-out rows per
// family and split, and the leave-one-GPU-out pairs and their summary.
type corpusReport struct {
	Families   []familyRow  `json:"families"`
	GPU        []gpuRow     `json:"cross_gpu"`
	GPUSummary []gpuSummary `json:"cross_gpu_summary"`
	// Model and ModelSummary are the leave-one-model-out pairs; the
	// summary's bandwidth_ratio is the physical (uncalibrated) move.
	Model        []modelRow   `json:"cross_model"`
	ModelSummary []gpuSummary `json:"cross_model_summary"`
	// ModelPrefill is cold prefill predicted across the same pairs.
	ModelPrefill prefillScore `json:"cross_model_prefill"`
}

// corpusOptions are evalCorpus's output switches.
type corpusOptions struct {
	json, verbose, hindsight, calibrate bool
}

// pooledHindsight is the mean error over all the cells of hs.
func pooledHindsight(hs []calculator.Hindsight) *float64 {
	sum, n := 0.0, 0
	for _, h := range hs {
		sum += h.Total.Mean * float64(h.Total.N)
		n += h.Total.N
	}
	if n == 0 {
		return nil
	}
	mean := sum / float64(n)
	return &mean
}

// evalCorpus holds every cell of every corpus grid out in turn and reports
// per family and split, then over all families.
func evalCorpus(ctx context.Context, dir string, opt corpusOptions, stdout io.Writer) error {
	runs, err := loadCorpus(dir)
	if err != nil {
		return err
	}
	type key struct{ family, split string }
	reports := map[key][]calculator.HoldoutReport{}
	hindsights := map[key][]calculator.Hindsight{}
	var keys []key
	var all []calculator.HoldoutReport
	tune := map[string][]calculator.HeldOut{} // per calculator.BandFamily of the run
	var allHindsight []calculator.Hindsight
	for _, cr := range runs {
		r := predict.Run(cr.Run)
		rep, err := calculator.LeaveOneOut(ctx, r)
		if err != nil {
			return err
		}
		var h calculator.Hindsight
		if opt.hindsight {
			if h, err = calculator.BestInHindsight(ctx, r); err != nil {
				return err
			}
			allHindsight = append(allHindsight, h)
		}
		for _, k := range []key{{cr.Family, cr.Entry.Split}, {cr.Family, "all"}, {"all families", cr.Entry.Split}} {
			if _, ok := reports[k]; !ok {
				keys = append(keys, k)
			}
			reports[k] = append(reports[k], rep)
			hindsights[k] = append(hindsights[k], h)
		}
		all = append(all, rep)
		if cr.Entry.Split == "tune" {
			f := calculator.BandFamily(cr.Run.Engine.Name, cr.Run.MethodOf().Class)
			tune[f] = append(tune[f], rep.Answers...)
		}
	}
	pairs, gpuRows, err := gpuPairs(ctx, runs)
	if err != nil {
		return err
	}
	mPairs, modelRows, err := modelPairs(ctx, runs)
	if err != nil {
		return err
	}
	if opt.calibrate {
		cal := calculator.Calibrate(tune, bandCoverage)
		if cal.GPU, err = calculator.CalibrateGPU(ctx, pairs, bandCoverage); err != nil {
			return err
		}
		if cal.Model, err = calculator.CalibrateModelMoves(ctx, mPairs, bandCoverage); err != nil {
			return err
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(cal)
	}
	if err := crossGPU(ctx, pairs, gpuRows); err != nil {
		return err
	}
	gpuSums := summariseGPU(gpuRows)
	if err := crossModel(ctx, mPairs, modelRows); err != nil {
		return err
	}
	modelSums := summariseModels(modelRows)
	modelPrefill, err := crossModelPrefill(mPairs)
	if err != nil {
		return err
	}
	slices.SortStableFunc(keys, func(a, b key) int {
		if (a.family == "all families") != (b.family == "all families") {
			if a.family == "all families" {
				return 1
			}
			return -1
		}
		if a.family != b.family {
			return cmp.Compare(a.family, b.family)
		}
		return cmp.Compare(splitOrder(a.split), splitOrder(b.split))
	})
	var rows []familyRow
	for _, k := range keys {
		p := calculator.PoolHoldouts(k.family+" "+k.split, reports[k])
		row := familyRow{Family: k.family, Split: k.split, Grids: len(reports[k]), Report: p, Coverage: p.Coverage(), Refusals: p.RefusalRate(), Bands: bandRows(p.Answers)}
		if opt.hindsight {
			row.Hindsight = pooledHindsight(hindsights[k])
		}
		rows = append(rows, row)
	}
	total := calculator.PoolHoldouts("all", all)
	totalRow := familyRow{Family: "all families", Split: "all", Grids: len(all), Report: total, Coverage: total.Coverage(), Refusals: total.RefusalRate(), Bands: bandRows(total.Answers)}
	if opt.hindsight {
		totalRow.Hindsight = pooledHindsight(allHindsight)
	}
	rows = append(rows, totalRow)
	if opt.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(corpusReport{Families: rows, GPU: gpuRows, GPUSummary: gpuSums, Model: modelRows, ModelSummary: modelSums, ModelPrefill: modelPrefill})
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	head := "family\tsplit\tgrids\tcells\ttotal tok/s mean\tp90\tmax\tinterval coverage\tmean half-width\trefused\t"
	if opt.hindsight {
		head += "best fixed, in hindsight\t"
	}
	fmt.Fprintln(tw, head)
	for _, r := range rows {
		width := 0.0
		if len(r.Bands) > 0 {
			width = r.Bands[0].HalfWidth
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t", r.Family, r.Split, r.Grids, r.Report.Cells,
			pct(r.Report.Total.Mean), pct(r.Report.Total.P90), pct(r.Report.Total.Max), pct(r.Coverage), pct(width), pct(r.Refusals))
		if r.Hindsight != nil {
			fmt.Fprintf(tw, "%s\t", pct(*r.Hindsight))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "\nintervals per speed basis (total tok/s, held out):")
	tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "family\tsplit\tbasis\tanswers\tcoverage\tmean half-width\terror mean\tp90\twidth / p90\tTBT answers\tTBT coverage\tTBT half-width\t")
	for _, r := range rows {
		for _, b := range r.Bands[min(1, len(r.Bands)):] {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%.2f\t%d\t%s\t%s\t\n", r.Family, r.Split, b.Basis, b.Answers, pct(b.Coverage), pct(b.HalfWidth), pct(b.Mean), pct(b.P90), b.HalfWidth/b.P90,
				b.TBTAnswers, pct(b.TBTCoverage), pct(b.TBTHalfWidth))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := printGPU(stdout, gpuRows, gpuSums); err != nil {
		return err
	}
	if err := printModels(stdout, modelRows, modelSums); err != nil {
		return err
	}
	printModelPrefill(stdout, modelPrefill)
	if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err != nil {
		if ms, _ := filepath.Glob(filepath.Join(dir, "*", "manifest.json")); len(ms) == 0 {
			if _, oneShot, err := loadDataset(dir); err == nil && oneShot > 0 {
				fmt.Fprintf(stdout, "\n%d one_shot runs left out: each is one averaged speed, not a grid, so no cell can be held out of it\n", oneShot)
			}
		}
	}
	fmt.Fprintln(stdout, "\nleave-one-cell-out: each valid cell removed, the grid refitted (bands included) and the cell asked for; the total's interval is the one the API returns")
	if opt.hindsight {
		fmt.Fprintln(stdout, "best fixed, in hindsight: each grid's one fixed choice (kind × row, shape and smoothing weights × levels read as limits or not, T and S weighed alike) with the least error over its own held-out cells, without bands; a choice made from the other cells cannot be expected to beat it")
	}
	if opt.verbose && len(total.Outside) > 0 {
		fmt.Fprintln(stdout, "intervals that missed:")
		for _, r := range total.Outside {
			fmt.Fprintln(stdout, "  "+r)
		}
	}
	if len(total.Refusals) > 0 {
		fmt.Fprintln(stdout, "refused:")
		for _, r := range total.Refusals {
			fmt.Fprintln(stdout, "  "+r)
		}
	}
	return nil
}

// bandCoverage is the share of held-out answers the calibrated intervals
// are to hold.
const bandCoverage = 0.90

func splitOrder(s string) string {
	return map[string]string{"tune": "0", "holdout": "1", "all": "2"}[s]
}
