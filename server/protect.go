package server

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"

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

// dropBadRequestID removes an X-Request-ID that may not be kept, so that
// the request id middleware makes a new one.
func dropBadRequestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Request().Header
		if vs := h.Values(echo.HeaderXRequestID); len(vs) > 0 && (len(vs) > 1 || !validRequestID(vs[0])) {
			h.Del(echo.HeaderXRequestID)
		}
		return next(c)
	}
}

// noEncodedSlash refuses a path with an encoded slash (%2F) in a segment:
// routed on the decoded path, /v1/runs/ID%2Fdecode would answer as
// /v1/runs/ID/decode, a resource the client did not name.
func noEncodedSlash(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if raw := c.Request().URL.RawPath; raw != "" && strings.Contains(strings.ToLower(raw), "%2f") {
			return &store.Error{Kind: store.ErrNotFound, Msg: fmt.Sprintf("no resource at %s: a path segment holds an encoded slash (%%2F), which no name here contains; write / between segments",
				clip(c.Request().URL.EscapedPath()))}
		}
		return next(c)
	}
}

// securityHeaders are sent with every answer: nothing is to be sniffed,
// framed or given a referrer, and an answer is never a page that runs
// anything.
func securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
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

func cors(writeOrigins []string) echo.MiddlewareFunc {
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
			}
			return next(c) // without a grant the browser hides the answer
		}
	}
}

// RateLimit bounds how fast one client may ask: reads per client IP,
// writes per API key (each also counts as a read of its IP). Zero turns a
// limit off.
type RateLimit struct {
	ReadsPerSecond  float64
	WritesPerSecond float64
}

// limiter is a token bucket per client, forgotten after a while idle; the
// number of clients it tracks is bounded.
type limiter struct {
	rate  rate.Limit
	burst int

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

func newLimiter(perSecond float64) *limiter {
	if perSecond <= 0 {
		return nil
	}
	return &limiter{rate: rate.Limit(perSecond), burst: max(1, int(math.Ceil(2*perSecond))), clients: map[string]*client{}}
}

// allow takes a token for key; when none is left it says how long until
// one is.
func (l *limiter) allow(key string, now time.Time) (ok bool, remaining int, wait time.Duration) {
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

// tooMany is a 429: the client asked faster than its limit.
type tooMany struct {
	limit int
	wait  time.Duration
	what  string
}

func (t tooMany) Error() string {
	return "too many " + t.what + ": at most " + strconv.Itoa(t.limit) + " a second on average; retry after " + strconv.Itoa(retryAfter(t.wait)) + " s"
}

func retryAfter(d time.Duration) int { return max(1, int(math.Ceil(d.Seconds()))) }

func rateHeaders(h http.Header, l *limiter, remaining int, wait time.Duration) {
	h.Set("RateLimit-Limit", strconv.Itoa(l.burst))
	h.Set("RateLimit-Remaining", strconv.Itoa(remaining))
	h.Set("RateLimit-Reset", strconv.Itoa(retryAfter(max(wait, time.Duration(float64(l.burst-remaining)/float64(l.rate)*float64(time.Second))))))
}

// limitReads applies the per-IP limit to every request.
func limitReads(l *limiter) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		if l == nil {
			return next
		}
		return func(c echo.Context) error {
			ok, remaining, wait := l.allow(c.RealIP(), time.Now())
			rateHeaders(c.Response().Header(), l, remaining, wait)
			if !ok {
				c.Response().Header().Set("Retry-After", strconv.Itoa(retryAfter(wait)))
				return tooMany{limit: int(l.rate), wait: wait, what: "requests from this address"}
			}
			return next(c)
		}
	}
}

// limitWrite applies the per-key limit to a write, once the key is known.
func limitWrite(l *limiter, c echo.Context, keyName string) error {
	if l == nil {
		return nil
	}
	ok, remaining, wait := l.allow(keyName, time.Now())
	rateHeaders(c.Response().Header(), l, remaining, wait)
	if !ok {
		c.Response().Header().Set("Retry-After", strconv.Itoa(retryAfter(wait)))
		return tooMany{limit: max(1, int(l.rate)), wait: wait, what: "writes with this API key"}
	}
	return nil
}
