// Package ingest turns outside formats into store runs: published
// matrix-run pages (markdown, or text copied from the web page with its
// table cells run together) and the run object of the API.
package ingest

import (
	"bytes"
	"embed"
	"fmt"
	"path"
	"strings"

	"github.com/matrixd/matrixd/store"
)

// ParseError is a problem in the input and the 1-based line it is on; Line
// is 0 when no single line applies. File names the input when a run is
// built from several.
type ParseError struct {
	File string
	Line int
	Msg  string
}

// Error formats the error as "file: line N: message", leaving out what is
// not known.
func (e *ParseError) Error() string {
	s := e.Msg
	if e.Line > 0 {
		s = fmt.Sprintf("line %d: %s", e.Line, s)
	}
	if e.File != "" {
		s = e.File + ": " + s
	}
	return s
}

func errorf(line int, format string, args ...any) *ParseError {
	return &ParseError{Line: line, Msg: fmt.Sprintf(format, args...)}
}

const bom = "\uFEFF"

// Parse reads a run in either format: JSON when the first non-space byte is
// '{', else a published page.
func Parse(b []byte) (store.Run, error) {
	t := bytes.TrimLeft(bytes.TrimPrefix(b, []byte(bom)), " \t\r\n")
	if len(t) > 0 && t[0] == '{' {
		return ParseRunJSON(b)
	}
	return ParsePage(b)
}

// finish checks a parsed run can be stored (a *store.ValidationError
// listing every problem if not) and puts it in canonical order.
func finish(r store.Run) (store.Run, error) {
	if err := r.Validate(); err != nil {
		return store.Run{}, err
	}
	r.Normalize()
	return r, nil
}

//go:embed seeds/*.txt
var seedFS embed.FS

// Seed is one bundled example page.
type Seed struct {
	Name string // file name without ".txt"
	Data []byte
}

// Seeds returns the bundled example pages in name order, for the service to
// load into an empty database. Each call returns fresh copies.
func Seeds() []Seed {
	entries, err := seedFS.ReadDir("seeds")
	if err != nil {
		panic("ingest: embedded seeds unreadable: " + err.Error()) // fixed at build time
	}
	seeds := make([]Seed, 0, len(entries))
	for _, e := range entries {
		data, err := seedFS.ReadFile(path.Join("seeds", e.Name()))
		if err != nil {
			panic("ingest: embedded seeds unreadable: " + err.Error())
		}
		seeds = append(seeds, Seed{Name: strings.TrimSuffix(e.Name(), ".txt"), Data: data})
	}
	return seeds
}
