// Package agent serves matrixd's read operations to AI agents over the
// Model Context Protocol. Each tool is one operation of openapi.yaml, named
// by its operationId, with the operation's parameters as its input schema;
// it calls the API's strict handler, so every answer is the API's answer.
package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/matrixd/matrixd/api"
)

// Options holds what New needs beyond the operations and the contract.
type Options struct {
	// Version is the server's version as clients see it.
	Version string
	// Problem answers an error an operation returned instead of a
	// documented answer as the API would: its status and problem+json
	// body. When nil, such an error is a 500 that says nothing internal.
	Problem func(ctx context.Context, err error) (status int, body []byte)
	// Arguments checks a call's arguments, and may rewrite them, as the
	// API checks the text of a query before anything reads it; its error
	// is answered through Problem, and the operation is not called.
	Arguments func(args map[string]any) error
}

// instructions tell an agent what the tools are for and how to start.
const instructions = `matrixd holds measured LLM inference speeds (matrix runs: one model, engine and GPU, measured over context length × concurrency) and a calculator that predicts from them. ` +
	`To choose hardware for a model and a load, call planCapacity (context_tokens, min_per_request_tok_s, users, model); ` +
	`to rank runs at one cell, getLeaderboard (predicted=true ranks every run by the calculator); for one run's numbers, estimateDecode and estimateCapacity. ` +
	`Every answer is the HTTP API's JSON: predictions carry their basis (measured, interpolated, extrapolated, scaled) and an interval; cite the run ids they come from.`

// New returns an MCP server whose tools call ops, described by spec
// (api.GetSpec()).
func New(ops api.StrictServerInterface, spec *openapi3.T, opts Options) (*mcp.Server, error) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "matrixd", Title: "matrixd: LLM inference speeds", Version: opts.Version},
		&mcp.ServerOptions{Instructions: instructions})
	for _, t := range tools() {
		if err := add(srv, ops, spec, opts, t); err != nil {
			return nil, err
		}
	}
	return srv, nil
}

// Handler serves srv as the Streamable HTTP transport: stateless, each
// POST answered with JSON, so any instance answers any request.
func Handler(srv *mcp.Server) http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Stateless:    true,
		JSONResponse: true,
		// The tools read public data that the API serves to every origin;
		// a proxy on the same machine sends the public host name.
		DisableLocalhostProtection: true,
	})
}

// add registers t as a tool whose input schema is its operation's
// parameters.
func add(srv *mcp.Server, ops api.StrictServerInterface, spec *openapi3.T, opts Options, t tool) error {
	op, params := operation(spec, t.op)
	if op == nil {
		return fmt.Errorf("tool %s: no such operation in openapi.yaml", t.op)
	}
	in, err := inputSchema(params)
	if err != nil {
		return fmt.Errorf("tool %s: %w", t.op, err)
	}
	desc := op.Summary
	if op.Description != "" {
		desc += ".\n\n" + op.Description
	}
	mcp.AddTool(srv, &mcp.Tool{
		Name:        t.op,
		Title:       op.Summary,
		Description: desc,
		InputSchema: in,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)},
	}, func(ctx context.Context, _ *mcp.CallToolRequest, args map[string]any) (*mcp.CallToolResult, any, error) {
		if opts.Arguments != nil {
			if err := opts.Arguments(args); err != nil {
				return failure(ctx, opts, err).result(t.summary), nil, nil
			}
		}
		b, err := json.Marshal(args)
		if err != nil {
			return nil, nil, err
		}
		a, err := ask(ctx, ops, t, b)
		if err != nil {
			a = failure(ctx, opts, err)
		}
		return a.result(t.summary), nil, nil
	})
	return nil
}

// ask calls t's operation and keeps its answer. The transport runs tools
// on goroutines of its own, past the HTTP server's recovery: a panic is
// returned as an error, which answers 500 and is logged with its stack.
func ask(ctx context.Context, ops api.StrictServerInterface, t tool, args []byte) (a *answer, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("tool %s panicked: %v\n%s", t.op, r, debug.Stack())
		}
	}()
	visit, err := t.call(ctx, ops, args)
	if err != nil {
		return nil, err
	}
	a = &answer{header: http.Header{}}
	return a, visit(a)
}

// operation finds an operation by its id, with the parameters of its
// path and its own.
func operation(spec *openapi3.T, id string) (*openapi3.Operation, openapi3.Parameters) {
	for _, item := range spec.Paths.Map() {
		for _, op := range item.Operations() {
			// The embedded spec spells operationIds as Go names (GetRun).
			if strings.EqualFold(op.OperationID, id) {
				return op, append(append(openapi3.Parameters{}, item.Parameters...), op.Parameters...)
			}
		}
	}
	return nil, nil
}

// failure is an error an operation returned, answered as the API would.
func failure(ctx context.Context, opts Options, err error) *answer {
	a := &answer{header: http.Header{}, status: http.StatusInternalServerError}
	if opts.Problem != nil {
		status, body := opts.Problem(ctx, err)
		a.status = status
		a.body.Write(body)
		return a
	}
	a.body.WriteString(`{"type":"about:blank","title":"Internal Server Error","status":500,"detail":"the server failed to answer","code":"problem.internal_server_error","params":{"detail":"the server failed to answer"}}`)
	return a
}

// answer holds what an operation wrote: the API's HTTP answer.
type answer struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (a *answer) Header() http.Header { return a.header }

func (a *answer) WriteHeader(status int) {
	if a.status == 0 {
		a.status = status
	}
}

func (a *answer) Write(p []byte) (int, error) {
	a.WriteHeader(http.StatusOK)
	return a.body.Write(p)
}

// result is the tool's answer: a line summing it up and the API's JSON,
// also as structured content. A problem is a tool error carrying it.
func (a *answer) result(summary func([]byte) string) *mcp.CallToolResult {
	body := a.body.Bytes()
	r := &mcp.CallToolResult{StructuredContent: json.RawMessage(body)}
	var line string
	if a.status >= 400 {
		r.IsError = true
		var p api.Problem
		if json.Unmarshal(body, &p) == nil {
			line = fmt.Sprintf("%d %s", p.Status, p.Title)
			if p.Detail != nil {
				line += ": " + *p.Detail
			}
			if p.Errors != nil {
				for _, fe := range *p.Errors {
					if fe.Field != nil {
						line += "; " + *fe.Field + ": " + fe.Message
					} else {
						line += "; " + fe.Message
					}
				}
			}
		} else {
			line = fmt.Sprintf("%d %s", a.status, http.StatusText(a.status))
		}
	} else {
		line = summary(body)
	}
	r.Content = []mcp.Content{&mcp.TextContent{Text: line}, &mcp.TextContent{Text: string(body)}}
	return r
}
