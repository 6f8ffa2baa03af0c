// Package guard holds what every request passes before a handler sees
// it: request ids kept only when plain, encoded slashes refused, security
// headers, CORS, and the limits on requests, writes and server time (the
// cost classes). Its refusals are typed errors (TooMany, store.Error) that
// the server's error map renders.
package guard

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"

	"github.com/matrixd/matrixd/server/httpcache"
	"github.com/matrixd/matrixd/store"
)

// validRequestID reports whether a client's X-Request-ID may be kept: it
// goes into logs and answers, so it must be short and plain.
func validRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_.:", c)) {
			return false
		}
	}
	return true
}

// DropBadRequestID removes an X-Request-ID that may not be kept, so that
// the request id middleware makes a new one.
func DropBadRequestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Request().Header
		if vs := h.Values(echo.HeaderXRequestID); len(vs) > 0 && (len(vs) > 1 || !validRequestID(vs[0])) {
			h.Del(echo.HeaderXRequestID)
		}
		return next(c)
	}
}

// NoEncodedSlash refuses a path with an encoded slash (%2F) in a segment:
// routed on the decoded path, /v1/runs/ID%2Fdecode would answer as
// /v1/runs/ID/decode, a resource the client did not name.
func NoEncodedSlash(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if raw := c.Request().URL.RawPath; raw != "" && strings.Contains(strings.ToLower(raw), "%2f") {
			return &store.Error{Kind: store.ErrNotFound, Msg: fmt.Sprintf("no resource at %s: a path segment holds an encoded slash (%%2F), which is never read as one; write / itself (a model name such as Qwen/Qwen3-4B goes in the path as it is)",
				clip(c.Request().URL.EscapedPath()))}
		}
		return next(c)
	}
}

// SecurityHeaders are sent with every answer: nothing is to be sniffed,
// framed or given a referrer, and an answer is never a page that runs
// anything.
func SecurityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
		return next(c)
	}
}

// CORS: any origin may read (the data is public and no cookie is ever
// used); only the configured origins may write.
const (
	corsExposed  = "ETag, Location, Idempotent-Replayed, Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, X-Request-ID"
	corsReadHdrs = "Accept, Accept-Encoding, If-None-Match, X-Request-ID"
	corsWrite    = "POST, PATCH, DELETE"
	corsWriteHdr = "Authorization, Content-Type, Idempotency-Key, Accept, X-Request-ID"
)

func isRead(method string) bool { return method == http.MethodGet || method == http.MethodHead }

// CORS grants reads to every origin and writes to writeOrigins ("*": any).
func CORS(writeOrigins []string) echo.MiddlewareFunc {
	mayWrite := func(origin string) bool {
		return slices.Contains(writeOrigins, origin) || slices.Contains(writeOrigins, "*")
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			h := c.Response().Header()
			if isRead(r.Method) {
				// The same for every origin, so a shared cache may keep it.
				h.Set(echo.HeaderAccessControlAllowOrigin, "*")
				h.Set(echo.HeaderAccessControlExposeHeaders, corsExposed)
				return next(c)
			}
			origin := r.Header.Get(echo.HeaderOrigin)
			if origin == "" {
				return next(c)
			}
			h.Add(echo.HeaderVary, echo.HeaderOrigin)
			want := r.Header.Get(echo.HeaderAccessControlRequestMethod)
			if r.Method == http.MethodOptions && want != "" {
				// A preflight: answered here, for every path.
				switch {
				case isRead(want):
					h.Set(echo.HeaderAccessControlAllowOrigin, "*")
					h.Set(echo.HeaderAccessControlAllowMethods, "GET, HEAD")
					h.Set(echo.HeaderAccessControlAllowHeaders, corsReadHdrs)
				case mayWrite(origin):
					h.Set(echo.HeaderAccessControlAllowOrigin, origin)
					h.Set(echo.HeaderAccessControlAllowMethods, "GET, HEAD, "+corsWrite)
					h.Set(echo.HeaderAccessControlAllowHeaders, corsWriteHdr)
				default:
					return c.NoContent(http.StatusNoContent) // no grant: the browser refuses
				}
				h.Set(echo.HeaderAccessControlMaxAge, "600")
				return c.NoContent(http.StatusNoContent)
			}
			if mayWrite(origin) {
				h.Set(echo.HeaderAccessControlAllowOrigin, origin)
				h.Set(echo.HeaderAccessControlExposeHeaders, corsExposed)
				return next(c)
			}
			// Without a grant the browser hides the answer. But a request
			// without credentials writes nothing, so its refusal (a method
			// the path does not take, an unknown path, a body too large, a
			// rate limit) tells only what any reader may know: it carries
			// the read grant, and a widget of another site can say why.
			if r.Header.Get(echo.HeaderAuthorization) != "" {
				return next(c)
			}
			c.Response().Before(func() {
				if c.Response().Status >= http.StatusBadRequest {
					h.Set(echo.HeaderAccessControlAllowOrigin, "*")
					h.Set(echo.HeaderAccessControlExposeHeaders, corsExposed)
				}
			})
			return next(c)
		}
	}
}

// RateLimit bounds how fast one client may ask: reads per client IP,
// writes per API key (each also counts as a read of its IP), and the
// server time its uncached requests may take. Zero turns a limit off.
type RateLimit struct {
	ReadsPerSecond  float64
	WritesPerSecond float64
	// CostPerSecond is the server time (seconds per second, each request
	// charged its cost class: see costOf) one client address, and one API
	// key, may take on average; CostBurst how much it may take at once (20
	// s of its rate when zero). Answers from the cache, health and metrics
	// are not counted.
	CostPerSecond float64
	CostBurst     time.Duration
}

// Limiter is a token bucket per client, forgotten after a while idle; the
// number of clients it tracks is bounded.
type Limiter struct {
	rate  rate.Limit
	burst int
	now   func() time.Time

	mu      sync.Mutex
	clients map[string]*client
	swept   time.Time
}

type client struct {
	lim  *rate.Limiter
	seen time.Time
}

const (
	maxClients = 100_000
	idleAfter  = 10 * time.Minute
)

// NewLimiter returns a limiter of perSecond requests per client on
// average, on the clock now; nil (no limit) when perSecond is not above 0.
func NewLimiter(perSecond float64, now func() time.Time) *Limiter {
	if perSecond <= 0 {
		return nil
	}
	return &Limiter{rate: rate.Limit(perSecond), burst: max(1, int(math.Ceil(2*perSecond))), now: now, clients: map[string]*client{}}
}

// allow takes a token for key; when none is left it says how long until
// one is.
func (l *Limiter) allow(key string, now time.Time) (ok bool, remaining int, wait time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.swept) > time.Minute || len(l.clients) >= maxClients {
		for k, c := range l.clients {
			if now.Sub(c.seen) > idleAfter {
				delete(l.clients, k)
			}
		}
		l.swept = now
		if len(l.clients) >= maxClients {
			clear(l.clients) // under a flood of new clients: start over rather than grow
		}
	}
	c, found := l.clients[key]
	if !found {
		c = &client{lim: rate.NewLimiter(l.rate, l.burst)}
		l.clients[key] = c
	}
	c.seen = now
	res := c.lim.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return false, 0, d
	}
	return true, int(c.lim.TokensAt(now)), 0
}

// TooMany is a 429: the client asked faster than its limit, or (cost) its
// requests took more server time than its share.
type TooMany struct {
	limit int
	wait  time.Duration
	what  string
	cost  *CostLimiter
}

func (t TooMany) Error() string {
	if t.cost != nil {
		return fmt.Sprintf("this client's requests have cost more server time than its share (%s s a second on average, each request charged by what it asks, at most %d at once): retry after %d s; answers already cached cost nothing",
			strconv.FormatFloat(t.cost.rate, 'f', -1, 64), t.cost.maxInFlight, RetryAfter(t.wait))
	}
	return "too many " + t.what + ": at most " + strconv.Itoa(t.limit) + " a second on average; retry after " + strconv.Itoa(RetryAfter(t.wait)) + " s"
}

// RetryAfter is d in whole seconds for a Retry-After header, at least 1.
func RetryAfter(d time.Duration) int { return max(1, int(math.Ceil(d.Seconds()))) }

func rateHeaders(h http.Header, l *Limiter, remaining int, wait time.Duration) {
	h.Set("RateLimit-Limit", strconv.Itoa(l.burst))
	h.Set("RateLimit-Remaining", strconv.Itoa(remaining))
	h.Set("RateLimit-Reset", strconv.Itoa(RetryAfter(max(wait, time.Duration(float64(l.burst-remaining)/float64(l.rate)*float64(time.Second))))))
}

// LimitReads applies the per-IP limit to every request.
func LimitReads(l *Limiter) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		if l == nil {
			return next
		}
		return func(c echo.Context) error {
			if httpcache.IsRefresh(c.Request().Context()) {
				return next(c) // the cache's own request
			}
			ok, remaining, wait := l.allow(c.RealIP(), l.now())
			rateHeaders(c.Response().Header(), l, remaining, wait)
			if !ok {
				c.Response().Header().Set("Retry-After", strconv.Itoa(RetryAfter(wait)))
				return TooMany{limit: int(l.rate), wait: wait, what: "requests from this address"}
			}
			return next(c)
		}
	}
}

// LimitWrite applies the per-key limit to a write, once the key is known.
func LimitWrite(l *Limiter, c echo.Context, keyName string) error {
	if l == nil {
		return nil
	}
	ok, remaining, wait := l.allow(keyName, l.now())
	rateHeaders(c.Response().Header(), l, remaining, wait)
	if !ok {
		c.Response().Header().Set("Retry-After", strconv.Itoa(RetryAfter(wait)))
		return TooMany{limit: max(1, int(l.rate)), wait: wait, what: "writes with this API key"}
	}
	return nil
}

// Cost classes: the server time a request that the cache does not answer
// is charged, in seconds, by what it asks (its route), from the first
// answers measured at 10,000 runs (docs/operating.md): a run, a list, a
// catalog, the cells, a calculator answer or a comparison takes 1–10 ms; a
// series, a feed of runs, a page of them or a write up to 50 ms; a plan, a
// predicted ranking, the regressions feed or the bulk export 150 ms and
// more. A fixed charge
// per route, not the time the request happened to take, so that a client
// is not billed for the load others put on the machine (a busy server
// stretches every request's wall time) nor for waiting on another
// request's computation of the same answer.
const (
	costCheap     = 0.005
	costMedium    = 0.05
	costExpensive = 0.5
)

// costOf is the cost class of r.
func costOf(r *http.Request) float64 {
	path := r.URL.Path
	if r.Method == http.MethodPost && path == "/mcp" {
		return mcpCost(r)
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return costMedium
	}
	switch {
	case path == "/v1/planner" || path == "/planner" || path == "/feeds/regressions.atom" || path == "/v1/runs.ndjson":
		return costExpensive
	case path == "/v1/leaderboard" || path == "/leaderboard":
		if predicted, err := strconv.ParseBool(r.URL.Query().Get("predicted")); err == nil && predicted {
			return costExpensive // however the validator lets it be spelt
		}
		return costCheap
	case path == "/v1/series" || strings.HasSuffix(path, "/series") || strings.HasSuffix(path, "/history") ||
		strings.HasPrefix(path, "/feeds/") || !strings.HasPrefix(path, "/v1/"):
		return costMedium // pages among them
	}
	return costCheap
}

// mcpCost is what POST /mcp is charged: each tool call in it the class of
// the API request it makes (a plan or a predicted ranking is expensive),
// and never less than a write. It reads the body (the body limit has
// bounded it) and leaves it for the transport to read again.
func mcpCost(r *http.Request) float64 {
	body, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body)) // a read past the limit fails again
	if err != nil {
		return costMedium
	}
	type message struct {
		Method string `json:"method"`
		Params struct {
			Name      string `json:"name"`
			Arguments struct {
				Predicted json.RawMessage `json:"predicted"`
			} `json:"arguments"`
		} `json:"params"`
	}
	var msgs []message
	if err := json.Unmarshal(body, &msgs); err != nil {
		var one message
		if json.Unmarshal(body, &one) != nil {
			return costMedium
		}
		msgs = []message{one}
	}
	total := 0.0
	for _, m := range msgs {
		cost := costMedium
		if m.Method == "tools/call" {
			switch m.Params.Name {
			case "planCapacity":
				cost = costExpensive
			case "getLeaderboard":
				if predicted, err := strconv.ParseBool(strings.Trim(string(m.Params.Arguments.Predicted), `"`)); err == nil && predicted {
					cost = costExpensive
				}
			}
		}
		total += cost
	}
	return max(total, costMedium)
}

// CostLimiter charges each client the cost class of each request the cache
// does not answer, as a token bucket of seconds: what a client may spend
// refills at rate per second up to burst. The charge is taken when a
// request starts, so a client already over its share is refused before it
// starts another, however many connections it opens.
type CostLimiter struct {
	rate, burst float64 // seconds per second; seconds
	maxInFlight int
	now         func() time.Time

	mu      sync.Mutex
	clients map[string]*costClient
	swept   time.Time
}

type costClient struct {
	tokens   float64 // seconds it may still spend; negative: in debt
	at       time.Time
	inFlight int
	seen     time.Time
}

// NewCostLimiter returns the cost limit rl sets, on the clock now; nil (no
// limit) when rl.CostPerSecond is not above 0.
func NewCostLimiter(rl RateLimit, now func() time.Time) *CostLimiter {
	if rl.CostPerSecond <= 0 {
		return nil
	}
	burst := rl.CostBurst.Seconds()
	if burst <= 0 {
		burst = 20 * rl.CostPerSecond
	}
	return &CostLimiter{rate: rl.CostPerSecond, burst: burst, maxInFlight: max(2, 2*runtime.GOMAXPROCS(0)), now: now,
		clients: map[string]*costClient{}}
}

func (l *CostLimiter) client(key string, now time.Time) *costClient {
	if now.Sub(l.swept) > time.Minute || len(l.clients) >= maxClients {
		// A client is forgotten once its bucket would be full again: it is
		// then as good as new, and one in debt is not forgiven early.
		full := func(c *costClient) bool {
			return c.inFlight == 0 && c.tokens+l.rate*now.Sub(c.at).Seconds() >= l.burst
		}
		for k, c := range l.clients {
			if full(c) && now.Sub(c.seen) > idleAfter {
				delete(l.clients, k)
			}
		}
		l.swept = now
		if len(l.clients) >= maxClients {
			for k, c := range l.clients {
				if full(c) {
					delete(l.clients, k)
				}
			}
		}
		if len(l.clients) >= maxClients {
			clear(l.clients) // a flood of clients in debt: start over rather than grow
		}
	}
	c, ok := l.clients[key]
	if !ok {
		c = &costClient{tokens: l.burst, at: now}
		l.clients[key] = c
	}
	if now.After(c.at) {
		c.tokens = min(l.burst, c.tokens+l.rate*now.Sub(c.at).Seconds())
		c.at = now
	}
	c.seen = now
	return c
}

// admit starts a request of the given cost charged to every key; when one
// of them may not start another it says how long until it may. release
// ends the request.
func (l *CostLimiter) admit(keys []string, cost float64, now time.Time) (release func(), wait time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cs := make([]*costClient, len(keys))
	for i, k := range keys {
		c := l.client(k, now)
		if c.tokens <= 0 {
			return nil, time.Duration((-c.tokens + 0.001) / l.rate * float64(time.Second)), false
		}
		if c.inFlight >= l.maxInFlight {
			return nil, time.Second, false
		}
		cs[i] = c
	}
	for _, c := range cs {
		c.inFlight++
		c.tokens -= cost
	}
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, c := range cs {
			c.inFlight--
		}
	}, 0, true
}

// charge bills key for cost without asking: a rebuild its write caused.
func (l *CostLimiter) charge(key string, cost float64, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.client(key, now).tokens -= cost
}

// Keys are what a request is charged to: its address, and the API key
// it presents (by a hash of it: a key that fails to authenticate is
// charged all the same).
func Keys(c echo.Context) []string {
	keys := []string{"ip " + clientNet(c.RealIP())}
	if auth := c.Request().Header.Get(echo.HeaderAuthorization); auth != "" {
		sum := sha256.Sum256([]byte(auth))
		keys = append(keys, "key "+hex.EncodeToString(sum[:12]))
	}
	return keys
}

// Writer is whom a write is charged to: its API key when it presents one,
// else its address (the last of its Keys).
func Writer(c echo.Context) string {
	keys := Keys(c)
	return keys[len(keys)-1]
}

// clientNet is the network a client address stands for: the address
// itself for IPv4, its /64 for IPv6, where one machine may use any address
// of its network.
func clientNet(addr string) string {
	ip := net.ParseIP(addr)
	if ip == nil || ip.To4() != nil {
		return addr
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// LimitCost applies the cost limit to every request that reaches it (the
// cache answers before it), except those of exempt paths. A rebuild of an
// answer that a write made stale is charged to the API key that wrote
// (when the write came through this process), not to the client that
// happened to ask next.
func LimitCost(l *CostLimiter, exempt func(path string) bool) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		if l == nil {
			return next
		}
		return func(c echo.Context) error {
			if exempt(c.Request().URL.Path) {
				return next(c)
			}
			cost := costOf(c.Request())
			if payer, ok := httpcache.Rebuilding(c.Request().Context()); ok {
				if payer != "" {
					l.charge(payer, cost, l.now())
				}
				return next(c)
			}
			release, wait, ok := l.admit(Keys(c), cost, l.now())
			if !ok {
				c.Response().Header().Set("Retry-After", strconv.Itoa(RetryAfter(wait)))
				return TooMany{what: "server time", wait: wait, cost: l}
			}
			defer release()
			return next(c)
		}
	}
}

// clip shortens s for an error message.
func clip(s string) string {
	const maxEcho = 64
	if len(s) <= maxEcho && utf8.ValidString(s) {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	if utf8.RuneCountInString(s) <= maxEcho {
		return s
	}
	return string([]rune(s)[:maxEcho]) + fmt.Sprintf("… (%d bytes)", len(s))
}
