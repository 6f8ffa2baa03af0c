package ingest

import (
	"errors"
	"fmt"
	"slices"

	"github.com/matrixd/matrixd/store"
)

// ParseToolRun builds one run from a benchmark tool's output files and the
// run's metadata: meta is run JSON without cells (the rest of the run:
// title, model, hardware, engine …), named metaName in errors. A file that
// cannot be read is a *ParseError naming it and the line; everything wrong
// with the resulting run is a *store.ValidationError, problems in meta with
// their line in it.
func ParseToolRun(format string, metaName string, meta []byte, files []ToolFile, opts ToolOptions) (store.Run, error) {
	d, err := decodeRunJSON(meta)
	if err != nil {
		var pe *ParseError
		if errors.As(err, &pe) {
			pe.File = metaName
		}
		return store.Run{}, err
	}
	for i := range d.bad {
		d.bad[i].File = metaName
	}
	r, err := FromTool(format, d.run, files, opts)
	if err != nil {
		return store.Run{}, err
	}
	if err := d.check(r); err != nil {
		var ve *store.ValidationError
		if errors.As(err, &ve) {
			for i, p := range ve.Problems {
				if _, inMeta := d.lines[p.Pointer]; inMeta && p.File == "" {
					ve.Problems[i].File = metaName
				} else if !inMeta {
					ve.Problems[i].Line = 0 // a cell the tool output gave, not a line of meta
				}
			}
		}
		return store.Run{}, err
	}
	return r, nil
}

// ParseToolRuns builds every run a tool's output files hold (FromToolRuns)
// from the run's metadata, as ParseToolRun does for one; a run that cannot
// be stored is named by its place among them and its title.
func ParseToolRuns(format string, metaName string, meta []byte, files []ToolFile, opts ToolOptions) ([]store.Run, error) {
	d, err := decodeRunJSON(meta)
	if err != nil {
		var pe *ParseError
		if errors.As(err, &pe) {
			pe.File = metaName
		}
		return nil, err
	}
	for i := range d.bad {
		d.bad[i].File = metaName
	}
	if ReadsEachFile(format) || format == FormatInferenceX {
		// These files state the model, machine or engine of each run they
		// hold, so meta may leave them out: what is still missing once the
		// file is read is reported by the run's validation.
		d.bad = slices.DeleteFunc(d.bad, func(p store.Problem) bool { return p.Message == "is required" })
	}
	runs, err := FromToolRuns(format, d.run, files, opts)
	if err != nil {
		return nil, err
	}
	for i, r := range runs {
		if err := d.check(r); err != nil {
			var ve *store.ValidationError
			if errors.As(err, &ve) {
				for j, p := range ve.Problems {
					if _, inMeta := d.lines[p.Pointer]; inMeta && p.File == "" {
						ve.Problems[j].File = metaName
					} else if !inMeta {
						ve.Problems[j].Line = 0
					}
				}
			}
			if len(runs) > 1 {
				return nil, fmt.Errorf("run %d of %d (%s): %w", i+1, len(runs), r.Title, err)
			}
			return nil, err
		}
	}
	return runs, nil
}
