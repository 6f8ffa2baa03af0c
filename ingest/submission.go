package ingest

import (
	"errors"

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
