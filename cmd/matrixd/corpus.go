package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
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
		return nil, fmt.Errorf("no */manifest.json under %s", dir)
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

// familyRow is one line of the per-family accuracy table.
type familyRow struct {
	Family   string                   `json:"family"`
	Split    string                   `json:"split"`
	Grids    int                      `json:"grids"`
	Report   calculator.HoldoutReport `json:"report"`
	Coverage float64                  `json:"coverage"`
	Refusals float64                  `json:"refusal_rate"`
}

// evalCorpus holds every cell of every corpus grid out in turn and reports
// per family and split, then over all families.
func evalCorpus(ctx context.Context, dir string, asJSON, verbose bool, stdout io.Writer) error {
	runs, err := loadCorpus(dir)
	if err != nil {
		return err
	}
	type key struct{ family, split string }
	reports := map[key][]calculator.HoldoutReport{}
	var keys []key
	var all []calculator.HoldoutReport
	for _, cr := range runs {
		rep, err := calculator.LeaveOneOut(ctx, predict.Run(cr.Run))
		if err != nil {
			return err
		}
		for _, k := range []key{{cr.Family, cr.Entry.Split}, {cr.Family, "all"}, {"all families", cr.Entry.Split}} {
			if _, ok := reports[k]; !ok {
				keys = append(keys, k)
			}
			reports[k] = append(reports[k], rep)
		}
		all = append(all, rep)
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
		rows = append(rows, familyRow{Family: k.family, Split: k.split, Grids: len(reports[k]), Report: p, Coverage: p.Coverage(), Refusals: p.RefusalRate()})
	}
	total := calculator.PoolHoldouts("all", all)
	rows = append(rows, familyRow{Family: "all families", Split: "all", Grids: len(all), Report: total, Coverage: total.Coverage(), Refusals: total.RefusalRate()})
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "family\tsplit\tgrids\tcells\ttotal tok/s mean\tp90\tmax\tinterval coverage\trefused\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t\n", r.Family, r.Split, r.Grids, r.Report.Cells,
			pct(r.Report.Total.Mean), pct(r.Report.Total.P90), pct(r.Report.Total.Max), pct(r.Coverage), pct(r.Refusals))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "\nleave-one-cell-out: each valid cell removed, the grid refitted (bands included) and the cell asked for; the total's interval is the one the API returns")
	if verbose && len(total.Outside) > 0 {
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

func splitOrder(s string) string {
	return map[string]string{"tune": "0", "holdout": "1", "all": "2"}[s]
}
