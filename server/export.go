package server

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/msg"
	"github.com/matrixd/matrixd/server/httpcache"
	"github.com/matrixd/matrixd/store"
)

const (
	// exportPath is the bulk export: streamed, so never held by the
	// response cache, which keeps whole bodies.
	exportPath = "/v1/runs.ndjson"
	// exportPage is how many whole runs the export reads at once: its
	// memory, whatever the number of runs.
	exportPage = 100
	// exportPageWrite is the time a page of the export may take to be
	// written; the server's write timeout would cut a long export short.
	exportPageWrite = 30 * time.Second
)

// ExportRuns implements GET /v1/runs.ndjson.
func (s *Server) ExportRuns(ctx context.Context, req api.ExportRunsRequestObject) (api.ExportRunsResponseObject, error) {
	p := req.Params
	if p.VRAMGBMin != nil && p.VRAMGBMax != nil && *p.VRAMGBMin > *p.VRAMGBMax {
		return nil, invalidParamSays("vram_gb_min", msg.New("problem.vram_min_over_max"))
	}
	f, err := s.calc.WithGPU(ctx, runFilter(nil, p.Model, p.Quantization, p.Engine, p.EngineVersion, p.KVCacheDtype, p.Submitter, p.SubmittedBy, p.VRAMGBMin, p.VRAMGBMax), deref(p.GPU))
	if err != nil {
		return nil, err
	}
	version, err := s.store.DataVersion(ctx)
	if err != nil {
		return nil, err
	}
	etag, err := exportETag(version, f, deref(p.After))
	if err != nil {
		return nil, err
	}
	if p.IfNoneMatch != nil && httpcache.ETagListed(*p.IfNoneMatch, etag) {
		return exportNotModified{etag}, nil
	}
	return exportStream{ctx: ctx, st: s.store, filter: f, after: deref(p.After), etag: etag}, nil
}

// exportETag names an export by the data version and what it selects:
// the same ETag while no run is written.
func exportETag(version int64, f store.RunFilter, after string) (string, error) {
	b, err := json.Marshal(struct {
		Version int64
		Filter  store.RunFilter
		After   string
	}{version, f, after})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return `"x` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`, nil
}

type exportNotModified struct{ etag string }

func (n exportNotModified) VisitExportRunsResponse(w http.ResponseWriter) error {
	w.Header().Set("ETag", n.etag)
	w.Header().Set(echo.HeaderCacheControl, "no-cache")
	w.WriteHeader(http.StatusNotModified)
	return nil
}

// exportStream writes the export page by page as the store reads it, so
// that its memory is one page's, however many runs there are.
type exportStream struct {
	ctx    context.Context
	st     *store.Store
	filter store.RunFilter
	after  string
	etag   string
}

func (e exportStream) VisitExportRunsResponse(w http.ResponseWriter) error {
	// The first page is read before the status is sent: an export that
	// cannot start is still a problem+json answer.
	runs, err := e.st.ExportRuns(e.ctx, e.filter, e.after, exportPage)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set(echo.HeaderContentType, "application/x-ndjson")
	h.Set("ETag", e.etag)
	h.Set(echo.HeaderCacheControl, "no-cache")
	rc := http.NewResponseController(w)
	w.WriteHeader(http.StatusOK)
	return writeExport(e.ctx, e.st, e.filter, runs, w, func() error {
		if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
		if err := rc.SetWriteDeadline(time.Now().Add(exportPageWrite)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
		return nil
	})
}

// WriteExport writes every visible run to w as the lines of
// GET /v1/runs.ndjson: one whole run a line, in id order, read a page at a
// time (matrixd export --all).
func WriteExport(ctx context.Context, st *store.Store, w io.Writer) error {
	runs, err := st.ExportRuns(ctx, store.RunFilter{}, "", exportPage)
	if err != nil {
		return err
	}
	return writeExport(ctx, st, store.RunFilter{}, runs, w, func() error { return nil })
}

// writeExport writes runs, the first page, and then the pages after it;
// between pages it calls next (to flush, and to give the next page its
// time to be written).
func writeExport(ctx context.Context, st *store.Store, f store.RunFilter, runs []store.Run, w io.Writer, next func() error) error {
	enc := json.NewEncoder(w)
	for {
		for _, r := range runs {
			if err := enc.Encode(toAPIRun(r)); err != nil {
				return fmt.Errorf("export: %w", err)
			}
		}
		if len(runs) < exportPage {
			return nil
		}
		if err := next(); err != nil {
			return fmt.Errorf("export: %w", err)
		}
		var err error
		if runs, err = st.ExportRuns(ctx, f, runs[len(runs)-1].ID, exportPage); err != nil {
			return err
		}
	}
}
