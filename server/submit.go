package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/ingest"
	"github.com/matrixd/matrixd/store"
)

type keyCtx struct{}

// keyOf is the API key the auth middleware accepted for this request.
func keyOf(ctx context.Context) store.Key {
	k, _ := ctx.Value(keyCtx{}).(store.Key)
	return k
}

// malformed is a body that is not well-formed: a 400 saying where.
type malformed struct{ err error }

func (m malformed) Error() string { return m.err.Error() }
func (m malformed) Unwrap() error { return m.err }

// CreateRun implements POST /v1/runs.
func (s *Server) CreateRun(ctx context.Context, req api.CreateRunRequestObject) (api.CreateRunResponseObject, error) {
	var raw []byte
	if req.Body != nil {
		raw = *req.Body
	}
	run, err := ingest.ParseRunJSON(raw)
	var pe *ingest.ParseError
	if errors.As(err, &pe) {
		return nil, malformed{err}
	}
	if err != nil {
		return nil, err
	}
	if run.Provenance, err = s.signature(ctx, req.Params.BodySignature, req.Params.BodySignatureKey, raw); err != nil {
		return nil, err
	}
	run.Source = sourceOf("application/json", store.FormatRunJSON, raw)
	stored, res, err := s.submit(ctx, run, req.Params.IdempotencyKey, "run", raw)
	if err != nil {
		return nil, err
	}
	if res.Created && !res.Replayed {
		s.calc.Warm(stored.ID)
	}
	if res.Created {
		return api.CreateRun201JSONResponse{RunCreatedJSONResponse: api.RunCreatedJSONResponse{Body: toAPIRun(stored), Headers: api.RunCreatedResponseHeaders(submitHeaders(stored, res))}}, nil
	}
	return api.CreateRun200JSONResponse{RunExistsJSONResponse: api.RunExistsJSONResponse{Body: toAPIRun(stored), Headers: api.RunExistsResponseHeaders(submitHeaders(stored, res))}}, nil
}

// ImportRun implements POST /v1/runs/import.
func (s *Server) ImportRun(ctx context.Context, req api.ImportRunRequestObject) (api.ImportRunResponseObject, error) {
	format := string(api.ImportRunParamsFormatPage)
	if req.Params.Format != nil {
		format = string(*req.Params.Format)
	}
	var (
		run   store.Run
		err   error
		parts [][]byte // what identifies the request, for Idempotency-Key
	)
	switch {
	case format == string(api.ImportRunParamsFormatPage) && req.TextBody != nil:
		page := []byte(*req.TextBody)
		parts = [][]byte{page}
		run, err = ingest.ParsePage(page)
	case format == string(api.ImportRunParamsFormatPage):
		return nil, unsupportedMedia("a published page is sent as Content-Type: text/plain; a multipart body carries a tool's output: name it with format=llama-batched-bench, format=vllm-bench or format=grid-csv")
	case req.MultipartBody == nil:
		return nil, unsupportedMedia("the output of " + format + " is sent as Content-Type: multipart/form-data, with a part named meta (run JSON without cells) and parts named file")
	default:
		meta, files, rerr := readToolParts(req.MultipartBody)
		if rerr != nil {
			return nil, rerr
		}
		parts = append(parts, meta)
		for _, f := range files {
			parts = append(parts, []byte(f.Name), f.Data)
		}
		tg := 0
		if req.Params.Tg != nil {
			tg = *req.Params.Tg
			parts = append(parts, []byte(strconv.Itoa(tg)))
		}
		run, err = ingest.ParseToolRun(format, "meta", meta, files, ingest.ToolOptions{TG: tg})
		var pe *ingest.ParseError
		if errors.As(err, &pe) && pe.File == "meta" {
			return nil, malformed{err} // meta is JSON that does not parse
		}
	}
	if err != nil {
		return nil, err
	}
	if l := req.Params.License; l != nil {
		if run.License != "" && run.License != *l {
			return nil, invalidParam("license", fmt.Sprintf("is %s, but meta's license is %s: give the licence once, or the same in both", *l, run.License))
		}
		run.License = *l
		parts = append(parts, []byte("license="+*l))
	}
	body := rawBodyOf(ctx)
	if run.Provenance, err = s.signature(ctx, req.Params.BodySignature, req.Params.BodySignatureKey, body.data); err != nil {
		return nil, err
	}
	run.Source = sourceOf(body.contentType, format, body.data)
	stored, res, err := s.submit(ctx, run, req.Params.IdempotencyKey, "import "+format, parts...)
	if err != nil {
		return nil, err
	}
	if res.Created && !res.Replayed {
		s.calc.Warm(stored.ID)
	}
	if res.Created {
		return api.ImportRun201JSONResponse{RunCreatedJSONResponse: api.RunCreatedJSONResponse{Body: toAPIRun(stored), Headers: api.RunCreatedResponseHeaders(submitHeaders(stored, res))}}, nil
	}
	return api.ImportRun200JSONResponse{RunExistsJSONResponse: api.RunExistsJSONResponse{Body: toAPIRun(stored), Headers: api.RunExistsResponseHeaders(submitHeaders(stored, res))}}, nil
}

// maxToolParts bounds the parts of an import; the body limit bounds their
// bytes.
const maxToolParts = 257

// readToolParts reads the meta part and the file parts of an import.
func readToolParts(mr *multipart.Reader) (meta []byte, files []ingest.ToolFile, err error) {
	seenMeta := false
	for n := 0; ; n++ {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if tooLarge(err) {
			return nil, nil, echo.ErrStatusRequestEntityTooLarge
		}
		if err != nil {
			return nil, nil, malformed{fmt.Errorf("the multipart body cannot be read: %v", err)}
		}
		if n == maxToolParts {
			return nil, nil, invalidParam("file", fmt.Sprintf("at most %d files make one run", maxToolParts-1))
		}
		b, err := io.ReadAll(p)
		if err != nil {
			if tooLarge(err) {
				return nil, nil, echo.ErrStatusRequestEntityTooLarge
			}
			return nil, nil, malformed{fmt.Errorf("part %q cannot be read: %v", p.FormName(), err)}
		}
		switch p.FormName() {
		case "meta":
			if seenMeta {
				return nil, nil, invalidParam("meta", "send one meta part")
			}
			meta, seenMeta = b, true
		case "file":
			name := p.FileName()
			if name == "" {
				name = fmt.Sprintf("file %d", len(files)+1)
			}
			files = append(files, ingest.ToolFile{Name: name, Data: b})
		default:
			return nil, nil, invalidParam(p.FormName(), "not a part of an import; send meta and file parts")
		}
	}
	if !seenMeta {
		return nil, nil, invalidParam("meta", "required: the run's title, model, hardware and engine as run JSON without cells")
	}
	if len(files) == 0 {
		return nil, nil, invalidParam("file", "required: at least one output file of the tool")
	}
	return meta, files, nil
}

// submit stores run for the request's key, under its Idempotency-Key when
// one was sent: parts identify the request (not its framing, so a retry
// with another multipart boundary is the same request).
func (s *Server) submit(ctx context.Context, run store.Run, idemKey *string, op string, parts ...[]byte) (store.Run, store.SubmitResult, error) {
	key := keyOf(ctx)
	run.SubmittedBy = key.Name
	var idem *store.Idempotency
	if idemKey != nil {
		h := sha256.New()
		h.Write([]byte(op))
		for _, p := range parts {
			// Length-prefixed, so that parts cannot run into each other.
			h.Write([]byte(strconv.Itoa(len(p)) + ":"))
			h.Write(p)
		}
		idem = &store.Idempotency{KeyName: key.Name, Key: *idemKey, RequestHash: hex.EncodeToString(h.Sum(nil))}
	}
	return s.runs.SubmitRun(ctx, run, idem)
}

type submitted struct {
	IdempotentReplayed *string
	Location           *string
}

func submitHeaders(r store.Run, res store.SubmitResult) submitted {
	loc := "/v1/runs/" + r.ID
	h := submitted{Location: &loc}
	if res.Replayed {
		t := "true"
		h.IdempotentReplayed = &t
	}
	return h
}

// UpdateRun implements PATCH /v1/runs/{run_id}.
func (s *Server) UpdateRun(ctx context.Context, req api.UpdateRunRequestObject) (api.UpdateRunResponseObject, error) {
	var raw []byte
	if req.Body != nil {
		raw = *req.Body
	}
	patch, err := parseMetaPatch(raw)
	if err != nil {
		return nil, err
	}
	r, err := s.store.UpdateRunMeta(ctx, req.RunID, patch, keyOf(ctx))
	if err != nil {
		return nil, err
	}
	return api.UpdateRun200JSONResponse(toAPIRun(r)), nil
}

// parseMetaPatch reads a JSON merge patch of title, notes and source_url,
// decoded as strictly as a submitted run.
func parseMetaPatch(raw []byte) (store.MetaPatch, error) {
	members, err := ingest.ParseObject(raw)
	if err != nil {
		return store.MetaPatch{}, malformed{fmt.Errorf("the body must be one JSON object, a merge patch of title, notes and source_url: %w", err)}
	}
	var p store.MetaPatch
	var probs []store.Problem
	seen := map[string]bool{}
	for _, m := range members {
		name, v := m.Name, m.Value
		if seen[name] {
			probs = append(probs, store.Problem{Pointer: "/" + clip(name), Line: m.Line, Message: "appears twice"})
			continue
		}
		seen[name] = true
		var dst **string
		switch name {
		case "title":
			dst = &p.Title
		case "notes":
			dst = &p.Notes
		case "source_url":
			dst = &p.SourceURL
		default:
			msg := "cannot be changed: only title, notes and source_url can"
			if name != "id" && name != "created_at" && name != "submitted_by" {
				msg += "; a corrected measurement is a new run"
			}
			probs = append(probs, store.Problem{Pointer: "/" + clip(name), Line: m.Line, Message: msg})
			continue
		}
		if string(v) == "null" {
			if name == "title" {
				probs = append(probs, store.Problem{Pointer: "/title", Line: m.Line, Message: "cannot be removed"})
			}
			empty := ""
			*dst = &empty
			continue
		}
		var sv string
		if err := json.Unmarshal(v, &sv); err != nil {
			probs = append(probs, store.Problem{Pointer: "/" + name, Line: m.Line, Message: "want a string or null"})
			continue
		}
		*dst = &sv
	}
	if len(members) == 0 {
		probs = append(probs, store.Problem{Message: "the patch changes nothing: send title, notes or source_url"})
	}
	if len(probs) > 0 {
		return store.MetaPatch{}, &store.ValidationError{Problems: probs}
	}
	return p, nil
}

// DeleteRun implements DELETE /v1/runs/{run_id}.
func (s *Server) DeleteRun(ctx context.Context, req api.DeleteRunRequestObject) (api.DeleteRunResponseObject, error) {
	was, wasErr := s.store.Run(ctx, req.RunID)
	if err := s.store.DeleteRun(ctx, req.RunID, keyOf(ctx)); err != nil {
		return nil, err
	}
	s.calc.Forget(req.RunID)
	if wasErr == nil {
		// The runs it corroborated or disputed are judged without it.
		if _, err := s.runs.Uncorroborate(ctx, was); err != nil {
			return nil, err
		}
	}
	return api.DeleteRun204Response{}, nil
}
