package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/store"
)

// The trust endpoints: a run's source bytes, signing keys, flags, hiding,
// history and submitter profiles.

func toAPIProvenance(r store.Run) api.Provenance {
	p := r.Provenance
	out := api.Provenance{SignedBy: opt(p.SignedBy)}
	if p.Signature != "" {
		sig := "ed25519=" + p.Signature
		out.Signature = &sig
	}
	if p.SourceSHA256 == "" {
		note := "the bytes this run was made from were not kept: it was stored before matrixd kept sources, or made on the server (matrixd generate)"
		out.Note = &note
		return out
	}
	f := api.ProvenanceSourceFormat(p.SourceFormat)
	size := p.SourceSize
	src := "/v1/runs/" + r.ID + "/source"
	out.SourceSha256, out.SourceMediaType, out.SourceFormat, out.SourceSize, out.SourceURL = &p.SourceSHA256, &p.SourceMediaType, &f, &size, &src
	return out
}

func toAPIModeration(m store.Moderation) api.Moderation {
	return api.Moderation{OpenFlags: m.OpenFlags, Hidden: m.HiddenAt != nil, HiddenAt: m.HiddenAt, HiddenBy: opt(m.HiddenBy), HiddenReason: opt(m.HiddenReason)}
}

// sourceOf is the exact request body, as the source a run is kept with.
func sourceOf(contentType, format string, body []byte) *store.Source {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt, params = "application/octet-stream", nil
	}
	if strings.HasPrefix(mt, "text/") {
		params = map[string]string{"charset": "utf-8"} // bodies are read as UTF-8
	}
	if mt == "application/json" {
		params = nil
	}
	return &store.Source{MediaType: mime.FormatMediaType(mt, params), Format: format, Data: body}
}

// signature checks a submission's Body-Signature over its exact bytes, and
// returns what the run keeps of it (nothing for an unsigned one).
func (s *Server) signature(ctx context.Context, sigHeader, keyHeader *string, body []byte) (store.Provenance, error) {
	if sigHeader == nil && keyHeader == nil {
		return store.Provenance{}, nil
	}
	if sigHeader == nil {
		return store.Provenance{}, invalidParam("Body-Signature", "Body-Signature-Key was sent without it: sign the body's exact bytes and send ed25519=BASE64")
	}
	if keyHeader == nil {
		return store.Provenance{}, invalidParam("Body-Signature-Key", "required with Body-Signature: the fingerprint of your registered signing key (POST /v1/signing-keys)")
	}
	sig, err := store.DecodeSignature(*sigHeader)
	if err != nil {
		return store.Provenance{}, invalidParam("Body-Signature", err.Error())
	}
	if err := s.store.VerifySignature(ctx, keyOf(ctx).Name, *keyHeader, body, sig); err != nil {
		return store.Provenance{}, err
	}
	return store.Provenance{SignedBy: *keyHeader, Signature: base64.StdEncoding.EncodeToString(sig)}, nil
}

// sourceResponse sends a run's source bytes as they came.
type sourceResponse struct{ src store.Source }

func (r sourceResponse) VisitGetRunSourceResponse(w http.ResponseWriter) error {
	sum := sha256.Sum256(r.src.Data)
	digest := "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"
	return api.GetRunSource200AsteriskResponse{Body: bytes.NewReader(r.src.Data), ContentType: r.src.MediaType,
		ContentLength: int64(len(r.src.Data)), Headers: api.GetRunSource200ResponseHeaders{ReprDigest: &digest}}.VisitGetRunSourceResponse(w)
}

// GetRunSource implements GET /v1/runs/{run_id}/source.
func (s *Server) GetRunSource(ctx context.Context, req api.GetRunSourceRequestObject) (api.GetRunSourceResponseObject, error) {
	src, _, err := s.store.RunSource(ctx, req.RunID)
	if err != nil {
		return nil, err
	}
	return sourceResponse{src: src}, nil
}

func toAPIFlag(f store.Flag) api.Flag {
	return api.Flag{ID: f.ID, RunID: f.RunID, KeyName: f.KeyName, Reason: api.FlagReason(f.Reason), Text: f.Text,
		CreatedAt: f.CreatedAt, ResolvedAt: f.ResolvedAt, ResolvedBy: opt(f.ResolvedBy), Resolution: opt(f.Resolution)}
}

// ListRunFlags implements GET /v1/runs/{run_id}/flags.
func (s *Server) ListRunFlags(ctx context.Context, req api.ListRunFlagsRequestObject) (api.ListRunFlagsResponseObject, error) {
	flags, err := s.store.Flags(ctx, req.RunID)
	if err != nil {
		return nil, err
	}
	out := api.ListRunFlags200JSONResponse{RunID: req.RunID, Items: make([]api.Flag, len(flags))}
	for i, f := range flags {
		out.Items[i] = toAPIFlag(f)
	}
	return out, nil
}

// FlagRun implements POST /v1/runs/{run_id}/flags.
func (s *Server) FlagRun(ctx context.Context, req api.FlagRunRequestObject) (api.FlagRunResponseObject, error) {
	f, err := s.store.FlagRun(ctx, req.RunID, keyOf(ctx), string(req.Body.Reason), req.Body.Text)
	if err != nil {
		return nil, err
	}
	return api.FlagRun201JSONResponse(toAPIFlag(f)), nil
}

// ResolveFlag implements POST /v1/runs/{run_id}/flags/{flag_id}/resolution.
func (s *Server) ResolveFlag(ctx context.Context, req api.ResolveFlagRequestObject) (api.ResolveFlagResponseObject, error) {
	f, err := s.store.ResolveFlag(ctx, req.RunID, req.FlagID, keyOf(ctx), req.Body.Note)
	if err != nil {
		return nil, err
	}
	return api.ResolveFlag200JSONResponse(toAPIFlag(f)), nil
}

// HideRun implements PUT /v1/runs/{run_id}/hidden.
func (s *Server) HideRun(ctx context.Context, req api.HideRunRequestObject) (api.HideRunResponseObject, error) {
	was, wasErr := s.store.Run(ctx, req.RunID)
	m, err := s.store.HideRun(ctx, req.RunID, keyOf(ctx), req.Body.Reason)
	if err != nil {
		return nil, err
	}
	s.calc.Forget(req.RunID)
	if wasErr == nil {
		// The runs it corroborated or disputed are judged without it.
		if _, err := s.runs.Uncorroborate(ctx, was); err != nil {
			return nil, err
		}
	}
	return api.HideRun200JSONResponse(toAPIModeration(m)), nil
}

// RestoreRun implements DELETE /v1/runs/{run_id}/hidden.
func (s *Server) RestoreRun(ctx context.Context, req api.RestoreRunRequestObject) (api.RestoreRunResponseObject, error) {
	m, err := s.store.RestoreRun(ctx, req.RunID, keyOf(ctx))
	if err != nil {
		return nil, err
	}
	if _, err := s.runs.Corroborate(ctx, req.RunID); err != nil {
		return nil, err
	}
	return api.RestoreRun200JSONResponse(toAPIModeration(m)), nil
}

// GetRunHistory implements GET /v1/runs/{run_id}/history.
func (s *Server) GetRunHistory(ctx context.Context, req api.GetRunHistoryRequestObject) (api.GetRunHistoryResponseObject, error) {
	p := req.Params
	events, next, err := s.store.History(ctx, req.RunID, limitOr(p.Limit), deref(p.Cursor))
	if err != nil {
		return nil, err
	}
	out := api.GetRunHistory200JSONResponse{RunID: req.RunID, Items: make([]api.RunEvent, len(events)), NextCursor: opt(next)}
	for i, e := range events {
		var detail map[string]any
		if err := json.Unmarshal(e.Detail, &detail); err != nil {
			return nil, fmt.Errorf("event %d of run %s: %w", e.ID, req.RunID, err)
		}
		out.Items[i] = api.RunEvent{ID: e.ID, At: e.At, KeyName: opt(e.KeyName), Action: api.RunEventAction(e.Action), Detail: detail}
	}
	return out, nil
}

// strictJSON decodes a small JSON request body, refusing members the
// schema does not have (the generated binder would ignore a misspelt one)
// and bytes that are not UTF-8 (the decoder would store them as U+FFFD).
func strictJSON(c echo.Context, v any) error {
	b, err := readBody(c)
	if err != nil {
		return err
	}
	if !utf8.Valid(b) {
		return malformed{errors.New("the body is not valid UTF-8: send JSON text as UTF-8")}
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return malformed{fmt.Errorf("the body must be one JSON object of the fields openapi.yaml names: %v", err)}
	}
	if d.More() {
		return malformed{errors.New("the body must be one JSON object, and nothing after it")}
	}
	return nil
}

// FlagRun implements POST /v1/runs/{run_id}/flags.
func (r rawBodies) FlagRun(c echo.Context, runID api.ParamRunID) error {
	var body api.FlagRunJSONRequestBody
	if err := strictJSON(c, &body); err != nil {
		return err
	}
	resp, err := r.ssi.FlagRun(c.Request().Context(), api.FlagRunRequestObject{RunID: runID, Body: &body})
	if err != nil {
		return err
	}
	return resp.VisitFlagRunResponse(c.Response())
}

// ResolveFlag implements POST /v1/runs/{run_id}/flags/{flag_id}/resolution.
func (r rawBodies) ResolveFlag(c echo.Context, runID api.ParamRunID, flagID api.ParamFlagID) error {
	var body api.ResolveFlagJSONRequestBody
	if err := strictJSON(c, &body); err != nil {
		return err
	}
	resp, err := r.ssi.ResolveFlag(c.Request().Context(), api.ResolveFlagRequestObject{RunID: runID, FlagID: flagID, Body: &body})
	if err != nil {
		return err
	}
	return resp.VisitResolveFlagResponse(c.Response())
}

// HideRun implements PUT /v1/runs/{run_id}/hidden.
func (r rawBodies) HideRun(c echo.Context, runID api.ParamRunID) error {
	var body api.HideRunJSONRequestBody
	if err := strictJSON(c, &body); err != nil {
		return err
	}
	resp, err := r.ssi.HideRun(c.Request().Context(), api.HideRunRequestObject{RunID: runID, Body: &body})
	if err != nil {
		return err
	}
	return resp.VisitHideRunResponse(c.Response())
}

type rawBodyKey struct{}

// ImportRun implements POST /v1/runs/import, keeping the exact body (a
// multipart body's framing too) as the run's source.
func (r rawBodies) ImportRun(c echo.Context, params api.ImportRunParams) error {
	b, err := readBody(c)
	if err != nil {
		return err
	}
	req := c.Request()
	req.Body = io.NopCloser(bytes.NewReader(b))
	c.SetRequest(req.WithContext(context.WithValue(req.Context(), rawBodyKey{}, rawBody{b, req.Header.Get(echo.HeaderContentType)})))
	return r.ServerInterface.ImportRun(c, params)
}

// rawBody is a request's exact body and Content-Type.
type rawBody struct {
	data        []byte
	contentType string
}

func rawBodyOf(ctx context.Context) rawBody {
	b, _ := ctx.Value(rawBodyKey{}).(rawBody)
	return b
}
