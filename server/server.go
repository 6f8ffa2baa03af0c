// Package server is matrixd's HTTP layer: echo wiring, request validation
// against openapi.yaml, RFC 9457 problems and the handlers that map the
// store to the API.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"go.yaml.in/yaml/v3"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/assess"
	"github.com/matrixd/matrixd/msg"
	"github.com/matrixd/matrixd/predict"
	"github.com/matrixd/matrixd/server/guard"
	"github.com/matrixd/matrixd/server/httpcache"
	"github.com/matrixd/matrixd/server/metrics"
	"github.com/matrixd/matrixd/server/textcheck"
	"github.com/matrixd/matrixd/site"
	"github.com/matrixd/matrixd/store"
)

// Server implements the API over a store.
type Server struct {
	store    *store.Store
	runs     *assess.Writer // every write goes through it: each run is checked
	calc     *predict.Service
	metrics  *metrics.Metrics
	specJSON []byte
	specYAML []byte
	// publicURL is Config.PublicURL without its trailing slash.
	publicURL string
	guide     api.GettingStarted // GET /v1/getting-started, built from the contract
	site      *site.Site         // the pages, feeds and API reference over s
	router    routers.Router     // openapi.yaml's operations, servers removed
}

var _ api.StrictServerInterface = (*Server)(nil)

// RateLimit bounds how fast one client may ask (see guard.RateLimit).
type RateLimit = guard.RateLimit

// Config holds what New needs beyond the store.
type Config struct {
	Logger *slog.Logger
	// MaxBodyBytes bounds request bodies; 1 MiB when zero.
	MaxBodyBytes int64
	// Calc answers the calculator endpoints (required).
	Calc *predict.Service
	// CacheBytes bounds the cache of prepared GET answers; 64 MiB when
	// zero, none when negative.
	CacheBytes int64
	// RateLimit bounds requests per client address and writes per API key;
	// the zero value sets no limit.
	RateLimit RateLimit
	// WriteOrigins are the browser origins allowed to write (CORS); reads
	// are open to every origin. "*" allows any.
	WriteOrigins []string
	// TrustedProxies are the networks whose X-Forwarded-For names the
	// client; with none the connection's address is the client.
	TrustedProxies []*net.IPNet
	// PublicURL is where clients reach the server (https://matrixd.example.org),
	// for links that must be absolute (feeds); when empty they are
	// relative to the answer's own address.
	PublicURL string
	// Now is the clock that ages cached answers (see httpcache.Config);
	// time.Now when nil.
	Now func() time.Time
	// AfterRefresh, when set, is called each time a cached answer has
	// been computed again in the background.
	AfterRefresh func()
}

// New returns the HTTP handler: request id → logger → recover → plain
// text → body limit → validator → routes. It does no work of its own:
// the caller rechecks the stored runs (assess.Writer.Recheck) and fits
// them (Backfill) in plain sight.
func New(st *store.Store, cfg Config) (http.Handler, error) {
	s, spec, err := newServer(st, &cfg)
	if err != nil {
		return nil, err
	}
	return s.handler(st, cfg, spec)
}

// newServer makes the API's handlers over st, filling in cfg's defaults:
// what the HTTP wiring and the MCP server over stdio share.
func newServer(st *store.Store, cfg *Config) (*Server, *openapi3.T, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	spec, err := api.GetSpec()
	if err != nil {
		return nil, nil, fmt.Errorf("load embedded spec: %w", err)
	}
	specYAML := api.SpecYAML()
	var doc any
	if err := yaml.Unmarshal(specYAML, &doc); err != nil {
		return nil, nil, fmt.Errorf("decode spec: %w", err)
	}
	specJSON, err := json.Marshal(doc)
	if err != nil {
		return nil, nil, fmt.Errorf("encode spec: %w", err)
	}
	if cfg.Calc == nil {
		return nil, nil, errors.New("server: Config.Calc is required")
	}
	m := metrics.New(st.PoolStats)
	cfg.Calc.SetFitObserver(m.FitTook)
	m.WatchFits(cfg.Calc)
	logger := cfg.Logger
	cfg.Calc.SetErrorLog(func(err error) { logger.Error("calculator", slog.String("error", err.Error())) })
	runs, err := assess.New(st)
	if err != nil {
		return nil, nil, err
	}
	public, err := publicURL(cfg.PublicURL)
	if err != nil {
		return nil, nil, err
	}
	guide, err := newGuide(spec)
	if err != nil {
		return nil, nil, err
	}
	// The validator must not check the Host header against servers.
	spec.Servers = nil
	router, err := gorillamux.NewRouter(spec)
	if err != nil {
		return nil, nil, fmt.Errorf("route spec: %w", err)
	}
	s := &Server{store: st, runs: runs, calc: cfg.Calc, metrics: m, specJSON: specJSON, specYAML: specYAML, publicURL: public, guide: guide, router: router}
	s.site, err = site.New(site.Config{API: s, Reader: siteReader{Store: st, calc: cfg.Calc}, Requests: siteRequests{},
		Spec: spec, Router: router, PublicURL: public})
	if err != nil {
		return nil, nil, err
	}
	return s, spec, nil
}

// handler wires s: spec → validator → middleware → routes.
func (s *Server) handler(st *store.Store, cfg Config, spec *openapi3.T) (http.Handler, error) {
	m, router := s.metrics, s.router
	if cfg.CacheBytes == 0 {
		cfg.CacheBytes = 64 << 20
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	e := echo.New()
	rc := httpcache.New(httpcache.Config{MaxBytes: max(cfg.CacheBytes, 0), Version: st.Versions, Stats: m.CacheResult, Now: cfg.Now,
		Refresh: func(r *http.Request) { e.ServeHTTP(discard{h: http.Header{}}, r) }, Refreshed: cfg.AfterRefresh})
	keys := httpcache.NewKeyer(router, s.site.Language, parseQuery, wantCSV)
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = errorHandler(cfg.Logger)
	e.IPExtractor = echo.ExtractIPDirect()
	if len(cfg.TrustedProxies) > 0 {
		var trust []echo.TrustOption
		for _, n := range cfg.TrustedProxies {
			trust = append(trust, echo.TrustIPRange(n))
		}
		e.IPExtractor = echo.ExtractIPFromXFFHeader(append(trust, echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false))...)
	}
	e.Use(
		guard.DropBadRequestID,
		middleware.RequestID(),
		requestLogger(cfg.Logger),
		m.Observe,
		recoverer(cfg.Logger),
		guard.NoEncodedSlash,
		textcheck.Request,
		guard.SecurityHeaders,
		guard.CORS(cfg.WriteOrigins),
		guard.LimitReads(guard.NewLimiter(cfg.RateLimit.ReadsPerSecond, time.Now)),
		middleware.BodyLimit(fmt.Sprintf("%dB", cfg.MaxBodyBytes)),
		httpcache.AcceptGzip,
		rc.Middleware(func(path string) bool { return uncached(path) || path == exportPath }, keys, guard.Writer),
		guard.LimitCost(guard.NewCostLimiter(cfg.RateLimit, time.Now), uncached),
		middleware.GzipWithConfig(middleware.GzipConfig{MinLength: 1024}),
		validator(router, st.Authenticate, guard.NewLimiter(cfg.RateLimit.WritesPerSecond, time.Now)),
	)
	strict := api.NewStrictHandler(s, []api.StrictMiddlewareFunc{withAccept})
	agentHTTP, err := s.agentHandler(spec, cfg.Logger)
	if err != nil {
		return nil, err
	}
	api.RegisterHandlers(e, rawBodies{ServerInterface: strict, ssi: s, agent: agentHTTP})
	s.site.Register(e)
	return headAsGet{e}, nil
}

// publicURL checks a public URL: absolute http or https, with nothing
// after its path; returned without a trailing slash.
func publicURL(raw string) (string, error) {
	if raw == "" {
		return "", nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("public URL %q: want an absolute http or https URL without credentials, query or fragment", raw)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// uncached are the GET paths answered afresh every time: health,
// readiness and metrics must reflect the process and the database now;
// the language switch sets a cookie.
func uncached(path string) bool {
	return path == "/healthz" || path == "/readyz" || path == "/metrics" || path == "/language"
}

// headAsGet answers HEAD on every GET route: as GET, with the headers
// (Content-Length, ETag) and without the body.
type headAsGet struct{ next http.Handler }

func (h headAsGet) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodHead {
		h.next.ServeHTTP(w, r)
		return
	}
	get := r.Clone(r.Context())
	get.Method = http.MethodGet
	h.next.ServeHTTP(bodiless{w}, get)
}

// discard is where a background refresh's answer goes: the cache keeps it.
type discard struct{ h http.Header }

func (d discard) Header() http.Header       { return d.h }
func (discard) Write(p []byte) (int, error) { return len(p), nil }
func (discard) WriteHeader(int)             {}

// bodiless drops the body of an answer.
type bodiless struct{ http.ResponseWriter }

func (b bodiless) Write(p []byte) (int, error) { return len(p), nil }

// rawBodies hands run JSON and merge patches to the handlers byte for
// byte: the generated binder would decode them leniently (and lose the
// lines that problems are reported on). MCP messages go to their
// transport the same way.
type rawBodies struct {
	api.ServerInterface
	ssi   api.StrictServerInterface
	agent http.Handler // POST /mcp, whose transport reads the body itself
}

func readBody(c echo.Context) ([]byte, error) {
	b, err := io.ReadAll(c.Request().Body)
	if tooLarge(err) {
		return nil, echo.ErrStatusRequestEntityTooLarge
	}
	return b, err
}

// tooLarge reports whether err is the body limit cutting a body short
// (a body without Content-Length is cut while it is read).
func tooLarge(err error) bool {
	var mbe *http.MaxBytesError
	var herr *echo.HTTPError
	return errors.As(err, &mbe) || errors.As(err, &herr) && herr.Code == http.StatusRequestEntityTooLarge
}

// CreateRun implements POST /v1/runs.
func (r rawBodies) CreateRun(c echo.Context, params api.CreateRunParams) error {
	b, err := readBody(c)
	if err != nil {
		return err
	}
	body := api.CreateRunJSONRequestBody(b)
	resp, err := r.ssi.CreateRun(c.Request().Context(), api.CreateRunRequestObject{Params: params, Body: &body})
	if err != nil {
		return err
	}
	return resp.VisitCreateRunResponse(c.Response())
}

// UpdateRun implements PATCH /v1/runs/{run_id}.
func (r rawBodies) UpdateRun(c echo.Context, runID api.ParamRunID) error {
	b, err := readBody(c)
	if err != nil {
		return err
	}
	body := api.UpdateRunApplicationMergePatchPlusJSONRequestBody(b)
	resp, err := r.ssi.UpdateRun(c.Request().Context(), api.UpdateRunRequestObject{RunID: runID, Body: &body})
	if err != nil {
		return err
	}
	return resp.VisitUpdateRunResponse(c.Response())
}

// recoverer turns a panic into a 500 and logs it once, with its stack.
func recoverer(logger *slog.Logger) echo.MiddlewareFunc {
	return middleware.RecoverWithConfig(middleware.RecoverConfig{
		DisableStackAll: true, // this goroutine's stack; LogErrorFunc logs it instead of echo printing it
		LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			logger.LogAttrs(c.Request().Context(), slog.LevelError, "panic",
				slog.String("request_id", c.Response().Header().Get(echo.HeaderXRequestID)),
				slog.String("uri", logURI(c.Request().RequestURI)), slog.String("error", err.Error()), slog.String("stack", string(stack)))
			return errPanic
		},
	})
}

// errPanic answers a recovered panic: a 500 that says nothing internal.
var errPanic = errors.New("panic")

// logURI is a request URI as log lines repeat it: the values of query
// parameters that may carry a credential, and of those without a name,
// redacted; and bounded.
func logURI(uri string) string {
	path, query, ok := strings.Cut(uri, "?")
	if !ok {
		return clipLog(uri)
	}
	parts := strings.FieldsFunc(query, func(r rune) bool { return r == '&' || r == ';' })
	for i, p := range parts {
		name, _, _ := strings.Cut(p, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		if secretParam(name) {
			parts[i] = url.QueryEscape(name) + "=REDACTED"
		}
	}
	return clipLog(path + "?" + strings.Join(parts, "&"))
}

// secretParam reports a query parameter name that may carry a credential
// (one holding any of the words below, in any case and anywhere in it:
// x_api_key, accessToken), or no name at all: matrixd takes no credential
// in the query, but clients send them anyway.
func secretParam(name string) bool {
	switch name {
	case "context_tokens", "max_output_tokens": // the API's own, which carry token counts
		return false
	case "":
		return true
	}
	n := strings.ToLower(name)
	for _, w := range [...]string{
		"key", "token", "secret", "password", "passwd", "pwd", "pass", "auth", "credential", "bearer", "jwt",
		"session", "cookie", "signature", "sig", "code", "otp", "nonce", "saml", "ticket",
	} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// clipLog bounds what a log line repeats of a request.
func clipLog(s string) string {
	if len(s) <= 512 {
		return s
	}
	return strings.ToValidUTF8(s[:512], "") + "…"
}

func requestLogger(logger *slog.Logger) echo.MiddlewareFunc {
	return middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
		LogStatus: true, LogURI: true, LogMethod: true, LogLatency: true, LogRequestID: true,
		// The error handler has already answered and logged the error.
		LogValuesFunc: func(c echo.Context, v middleware.RequestLoggerValues) error {
			logger.LogAttrs(c.Request().Context(), slog.LevelInfo, "request",
				slog.String("method", v.Method), slog.String("uri", logURI(v.URI)), slog.Int("status", v.Status),
				slog.Float64("latency_ms", float64(v.Latency.Microseconds())/1000), slog.String("client", c.RealIP()),
				slog.String("request_id", v.RequestID))
			return nil
		},
		HandleError: true,
	})
}

// validator checks every routed request against openapi.yaml and fills in
// parameter defaults. Operations the spec secures need a valid API key,
// checked first, so that nobody without one learns more than that. Bodies
// must be of a media type the operation takes; their content is checked
// by the handlers' parsers, which report every problem at once. Requests
// the spec does not route fall through to echo's router, which answers 404
// or 405 with Allow.
func validator(router routers.Router, authenticate func(context.Context, string) (store.Key, error), writes *guard.Limiter) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			route, params, err := router.FindRoute(r)
			if err != nil {
				return next(c)
			}
			if route.Operation.Security != nil && len(*route.Operation.Security) > 0 {
				scheme, token, _ := strings.Cut(r.Header.Get(echo.HeaderAuthorization), " ")
				if !strings.EqualFold(scheme, "Bearer") {
					return store.ErrUnauthorized
				}
				key, err := authenticate(r.Context(), strings.TrimSpace(token))
				if err != nil {
					return err
				}
				if err := guard.LimitWrite(writes, c, key.Name); err != nil {
					return err
				}
				r = r.WithContext(context.WithValue(r.Context(), keyCtx{}, key))
				c.SetRequest(r)
			}
			if err := checkRequest(r, route, params); err != nil {
				return err
			}
			err = next(c)
			if tooLarge(err) {
				return echo.ErrStatusRequestEntityTooLarge // cut short while a handler read it
			}
			return err
		}
	}
}

// checkRequest holds a routed request to its operation in openapi.yaml:
// a query that parses strictly, only the parameters the operation takes,
// a body of a media type it takes, and every parameter valid by its
// schema (defaults are filled in). The pages check their queries with it
// too, as requests to the operations they mirror.
func checkRequest(r *http.Request, route *routers.Route, params map[string]string) error {
	query, err := parseQuery(r.URL.RawQuery)
	if err != nil {
		return err
	}
	if err := unknownParams(route, query); err != nil {
		return err
	}
	if err := mediaType(route, r); err != nil {
		return err
	}
	err = openapi3filter.ValidateRequest(r.Context(), &openapi3filter.RequestValidationInput{
		Request: r, PathParams: params, Route: route,
		Options: &openapi3filter.Options{MultiError: true, ExcludeRequestBody: true, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
	})
	if tooLarge(err) {
		return echo.ErrStatusRequestEntityTooLarge
	}
	if err != nil {
		return &echo.HTTPError{Code: http.StatusBadRequest, Message: "invalid request", Internal: err}
	}
	return nil
}

// unknownParams rejects query parameters the operation does not declare:
// a misspelt filter would otherwise be ignored and answer unfiltered data.
func unknownParams(route *routers.Route, query url.Values) error {
	known := map[string]bool{}
	for _, ps := range []openapi3.Parameters{route.PathItem.Parameters, route.Operation.Parameters} {
		for _, p := range ps {
			if p.Value != nil && p.Value.In == openapi3.ParameterInQuery {
				known[p.Value.Name] = true
			}
		}
	}
	var unknown []string
	for name := range query {
		if !known[name] {
			unknown = append(unknown, clip(name))
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	names := slices.Sorted(maps.Keys(known))
	says := msg.New("problem.param_unknown_takes_none")
	if len(names) > 0 {
		says = msg.New("problem.param_unknown_takes", strings.Join(names, ", "))
	}
	fields := make([]api.FieldError, len(unknown))
	for i, name := range unknown {
		fields[i] = fieldNotice(name, says)
		says = msg.New("problem.param_unknown") // the list once is enough
	}
	return fieldErrors(fields).capped()
}

// mediaType holds a request body to the media types its operation takes.
func mediaType(route *routers.Route, r *http.Request) error {
	rb := route.Operation.RequestBody
	if rb == nil || rb.Value == nil {
		return nil
	}
	accepted := slices.Sorted(maps.Keys(rb.Value.Content))
	mt, params, err := mime.ParseMediaType(r.Header.Get(echo.HeaderContentType))
	if err != nil && strings.HasPrefix(strings.ToLower(strings.TrimSpace(r.Header.Get(echo.HeaderContentType))), "multipart/") {
		return malformed{fmt.Errorf("the Content-Type %s cannot be read (%v): send multipart/form-data; boundary=… as your HTTP client's form builder writes it", clip(r.Header.Get(echo.HeaderContentType)), err)}
	}
	if err == nil && slices.Contains(accepted, mt) {
		// A multipart body is read by its boundary: without one (or with
		// one longer than RFC 2046 allows) there are no parts to read.
		if b, ok := params["boundary"]; strings.HasPrefix(mt, "multipart/") && (!ok || b == "" || len(b) > 70) {
			return malformed{fmt.Errorf("the Content-Type %s needs a boundary of 1 to 70 characters (multipart/form-data; boundary=…), the line that separates the parts; HTTP clients add it when they build the form", clip(r.Header.Get(echo.HeaderContentType)))}
		}
		// Bodies are read as UTF-8 (US-ASCII is a part of it); text said to
		// be in another charset would be misread, not converted.
		if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "us-ascii") {
			return unsupportedMedia(fmt.Sprintf("charset %s is not taken here: send the body as UTF-8 (charset=utf-8, or no charset)", clip(cs)))
		}
		return nil
	}
	got := r.Header.Get(echo.HeaderContentType)
	if got == "" {
		got = "none"
	}
	return unsupportedMedia(fmt.Sprintf("Content-Type %s is not taken here; send %s", got, strings.Join(accepted, " or ")))
}

type acceptKey struct{}

// withAccept hands the Accept header to handlers that negotiate content,
// and tells caches that their answers vary with it.
func withAccept(f api.StrictHandlerFunc, operation string) api.StrictHandlerFunc {
	negotiates := operation == "ListDecodeCells" || operation == "ListPrefillCells" || operation == "ListRuns"
	return func(c echo.Context, req any) (any, error) {
		if !negotiates {
			return f(c, req)
		}
		c.Response().Header().Add(echo.HeaderVary, echo.HeaderAccept)
		r := c.Request()
		c.SetRequest(r.WithContext(context.WithValue(r.Context(), acceptKey{}, r.Header.Get(echo.HeaderAccept))))
		return f(c, req)
	}
}

func accept(ctx context.Context) string {
	s, _ := ctx.Value(acceptKey{}).(string)
	return s
}

// NewHTTPServer wraps h in an http.Server with timeouts fit for a public API.
func NewHTTPServer(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
}
