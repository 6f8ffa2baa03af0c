package server

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"mime"
	"net/http"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/matrixd/matrixd/agent"
	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/server/textcheck"
	"github.com/matrixd/matrixd/store"
)

// NewAgent returns the MCP server of `matrixd mcp`: the tools of POST
// /mcp over st, for an agent that talks to it over stdio.
func NewAgent(st *store.Store, cfg Config) (*mcp.Server, error) {
	s, spec, err := newServer(st, &cfg)
	if err != nil {
		return nil, err
	}
	return s.agent(spec, cfg.Logger)
}

// agent is the MCP server over s's handlers; an error a handler returns
// is answered through the error handler, the one map of errors to
// problems, which also logs it.
func (s *Server) agent(spec *openapi3.T, logger *slog.Logger) (*mcp.Server, error) {
	e := echo.New()
	answer := errorHandler(logger)
	return agent.New(s, spec, agent.Options{
		Version: spec.Info.Version,
		Problem: func(ctx context.Context, err error) (int, []byte) {
			req, rerr := http.NewRequestWithContext(ctx, http.MethodPost, "/mcp", nil)
			if rerr != nil {
				return http.StatusInternalServerError, nil
			}
			w := &bufferedAnswer{header: http.Header{}}
			// A failure's problem and log line quote the POST's request id.
			if id, ok := ctx.Value(requestIDKey{}).(string); ok {
				w.header.Set(echo.HeaderXRequestID, id)
			}
			answer(err, e.NewContext(req, w))
			return w.status, w.body.Bytes()
		},
		Arguments: textcheck.Arguments,
	})
}

// GetMCP implements GET /mcp: the transport's stream of messages the
// server starts, which matrixd does not offer (its tools only answer).
func (s *Server) GetMCP(ctx context.Context, _ api.GetMCPRequestObject) (api.GetMCPResponseObject, error) {
	p := problem(http.StatusMethodNotAllowed, "GET is not allowed on /mcp: this server starts no messages of its own; POST each JSON-RPC message to /mcp")
	instance, allow := "/mcp", http.MethodPost
	p.Instance = &instance
	return api.GetMCP405ApplicationProblemPlusJSONResponse{Body: p, Headers: api.GetMCP405ResponseHeaders{Allow: &allow}}, nil
}

// PostMCP implements the strict interface for POST /mcp, which
// rawBodies.PostMCP answers: the transport reads the message itself.
func (s *Server) PostMCP(ctx context.Context, _ api.PostMCPRequestObject) (api.PostMCPResponseObject, error) {
	return nil, errors.New("POST /mcp reached the strict handler: it is served by rawBodies.PostMCP")
}

// agentHandler is POST /mcp: the MCP server over s as the Streamable
// HTTP transport. It passes the same middleware as the API (limits on
// requests and server time, the body limit, the validator); the cache
// never keeps a POST.
func (s *Server) agentHandler(spec *openapi3.T, logger *slog.Logger) (http.Handler, error) {
	srv, err := s.agent(spec, logger)
	if err != nil {
		return nil, err
	}
	return agent.Handler(srv), nil
}

// PostMCP implements POST /mcp.
func (r rawBodies) PostMCP(c echo.Context) error {
	w := &bufferedAnswer{header: c.Response().Header()}
	req := c.Request()
	// The transport runs the tools in the request's context.
	req = req.WithContext(context.WithValue(req.Context(), requestIDKey{}, c.Response().Header().Get(echo.HeaderXRequestID)))
	r.agent.ServeHTTP(w, req)
	// The transport answers its own refusals (a missing Accept, a
	// malformed message) in plain text: they become problems here.
	if w.status >= 400 && !isJSON(w.header.Get(echo.HeaderContentType)) {
		w.header.Del(echo.HeaderContentType)
		return &echo.HTTPError{Code: w.status, Message: strings.TrimSpace(w.body.String())}
	}
	if w.status == 0 {
		w.status = http.StatusOK
	}
	c.Response().WriteHeader(w.status)
	_, err := c.Response().Write(w.body.Bytes())
	return err
}

type requestIDKey struct{}

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// bufferedAnswer keeps an answer to look at before it is sent.
type bufferedAnswer struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedAnswer) Header() http.Header { return b.header }

func (b *bufferedAnswer) WriteHeader(status int) {
	if b.status == 0 {
		b.status = status
	}
}

func (b *bufferedAnswer) Write(p []byte) (int, error) {
	b.WriteHeader(http.StatusOK)
	return b.body.Write(p)
}
