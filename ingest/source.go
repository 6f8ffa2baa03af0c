package ingest

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"path/filepath"

	"github.com/matrixd/matrixd/store"
)

// Source is b, read by Parse, as the source its run is kept with.
func Source(b []byte) *store.Source {
	t := bytes.TrimLeft(bytes.TrimPrefix(b, []byte(bom)), " \t\r\n")
	if len(t) > 0 && t[0] == '{' {
		return &store.Source{MediaType: "application/json", Format: store.FormatRunJSON, Data: b}
	}
	return &store.Source{MediaType: "text/plain; charset=utf-8", Format: store.FormatPage, Data: b}
}

// ToolSource is a tool's output and its META.json as the multipart/form-data
// body an HTTP import sends (a meta part, then a file part per file, named
// by its base name), so that a run imported on the server keeps the same
// kind of source as one imported over HTTP. The boundary is derived from
// the content: the same files make the same bytes.
func ToolSource(format string, meta []byte, files []ToolFile) (*store.Source, error) {
	h := sha256.New()
	h.Write(meta)
	for _, f := range files {
		h.Write([]byte(f.Name))
		h.Write(f.Data)
	}
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	if err := w.SetBoundary("matrixd-" + hex.EncodeToString(h.Sum(nil))[:40]); err != nil {
		return nil, err
	}
	part, err := w.CreateFormField("meta")
	if err == nil {
		_, err = part.Write(meta)
	}
	for _, f := range files {
		if err != nil {
			break
		}
		if part, err = w.CreateFormFile("file", filepath.Base(f.Name)); err == nil {
			_, err = part.Write(f.Data)
		}
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("tool source: %w", err)
	}
	return &store.Source{MediaType: w.FormDataContentType(), Format: format, Data: buf.Bytes()}, nil
}

// SeedRuns parses the bundled example pages, each run with its page as its
// source.
func SeedRuns() ([]store.Run, error) {
	var runs []store.Run
	origins, err := seedOrigins()
	if err != nil {
		return nil, err
	}
	for _, s := range Seeds() {
		r, err := Parse(s.Data)
		if err != nil {
			return nil, fmt.Errorf("bundled example %s: %w", s.Name, err)
		}
		o, ok := origins[s.Name]
		if !ok {
			return nil, fmt.Errorf("bundled example %s: not described in seeds/sources.json", s.Name)
		}
		r.SourceURL, r.Publisher, r.License, r.RetrievedAt = deref(o.SourceURL), o.Publisher, o.License, o.RetrievedAt
		r.Source = Source(s.Data)
		runs = append(runs, r)
	}
	return runs, nil
}

// seedOrigin is where a bundled page came from, as seeds/sources.json
// says.
type seedOrigin struct {
	SourceURL   *string `json:"source_url"`
	Publisher   string  `json:"publisher"`
	License     string  `json:"license"`
	RetrievedAt string  `json:"retrieved_at"`
	Note        string  `json:"note"`
}

//go:embed seeds/sources.json
var seedSources []byte

func seedOrigins() (map[string]seedOrigin, error) {
	var m map[string]seedOrigin
	if err := json.Unmarshal(seedSources, &m); err != nil {
		return nil, fmt.Errorf("seeds/sources.json: %w", err)
	}
	return m, nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
