// Package httpcache serves GET answers from prepared bytes: computed once
// per data version, kept in a byte-bounded LRU, sent with a strong ETag,
// and computed again in the background when a lenient answer grows stale.
package httpcache

import (
	"bytes"
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/matrixd/matrixd/store"
)

// The data changes only when a run is written, so a GET's answer is
// computed once per data version and served as prepared bytes, with a
// strong ETag over exactly those bytes.
//
// Answers computed from the measurements (plans, rankings, calculator
// answers, feeds: lenient paths) are not computed again for every change of
// a run's text: one computed before such a change is served for up to
// staleRefresh after the change was first seen here; past that, a request
// is served it still and starts one computation in the background (one at
// a time in the process), and the answer keeps being served while that
// runs, up to staleGrace more; past that, requests wait for a fresh answer. A change
// that can move a measurement (a run stored, deleted, hidden, restored)
// makes every answer computed before it stale at once.

const (
	staleRefresh = 5 * time.Second
	staleGrace   = 10 * time.Second
)

// cacheHeaders are the response headers a cached answer keeps: those the
// handlers and the compressor set (a page's own Content-Security-Policy
// among them). Per-request ones (X-Request-ID) are not.
func cacheHeaders() []string {
	return []string{echo.HeaderContentType, echo.HeaderContentEncoding, echo.HeaderVary, echo.HeaderContentSecurityPolicy, "Content-Language"}
}

type cachedResponse struct {
	key    string
	header http.Header
	body   []byte
	etag   string
	v      store.Versions // read before it was computed
	at     time.Time      // when its computation began
}

// Cache is a byte-bounded LRU of GET answers, each with the data
// versions it was computed at.
type Cache struct {
	maxBytes int64
	version  func(context.Context) (store.Versions, error)
	stats    func(hit bool)
	now      func() time.Time

	mu      sync.Mutex
	size    int64
	lru     *list.List // front: most recently used *cachedResponse
	entries map[string]*list.Element
	flights map[string]chan struct{} // answers being computed, closed when done
	writers [64]writeMark            // the latest writes through this process, a ring
	nextW   int
	seen    [1024]versionSeen // when each of the latest data versions was first seen, a ring
	nextS   int

	// refresh computes an answer again in the background (see
	// Config.Refresh); refreshing holds a token while one runs; refreshed
	// is called when one ends.
	refresh    func(*http.Request)
	refreshing chan struct{}
	refreshed  func()
}

// versionSeen says when the cache first saw data version v.
type versionSeen struct {
	v  int64
	at time.Time
}

// see notes that data version v is current at now; rc.mu is held.
func (rc *Cache) see(v int64, now time.Time) {
	last := rc.seen[(rc.nextS+len(rc.seen)-1)%len(rc.seen)]
	if v > last.v {
		rc.seen[rc.nextS] = versionSeen{v: v, at: now}
		rc.nextS = (rc.nextS + 1) % len(rc.seen)
	}
}

// staleSince is when the cache first saw a data version after v (the
// latest noted when it has forgotten the earlier ones); rc.mu is held.
func (rc *Cache) staleSince(v int64, now time.Time) time.Time {
	since := now
	for _, s := range rc.seen {
		if s.v > v && s.at.Before(since) {
			since = s.at
		}
	}
	return since
}

// writeMark says which API key made the data version v.
type writeMark struct {
	v   int64
	key string // as the Middleware's writer names it
}

// Config is what a Cache needs.
type Config struct {
	// MaxBytes bounds the answers kept.
	MaxBytes int64
	// Version reads the data versions now.
	Version func(context.Context) (store.Versions, error)
	// Stats is told of every answer served from the cache (hit) or
	// computed for it (miss).
	Stats func(hit bool)
	// Now is the clock that ages answers (see staleRefresh).
	Now func() time.Time
	// Refresh serves r again, its answer discarded: the cache keeps it.
	Refresh func(r *http.Request)
	// Refreshed, when set, is called each time a background refresh ends.
	Refreshed func()
}

// New returns an empty cache.
func New(cfg Config) *Cache {
	rc := &Cache{maxBytes: cfg.MaxBytes, version: cfg.Version, stats: cfg.Stats, now: cfg.Now, lru: list.New(),
		entries: map[string]*list.Element{}, flights: map[string]chan struct{}{}, refresh: cfg.Refresh, refreshing: make(chan struct{}, 1), refreshed: cfg.Refreshed}
	if rc.refreshed == nil {
		rc.refreshed = func() {}
	}
	return rc
}

// lookup is what get found: an answer to serve, or the go-ahead to
// compute one (done ends it); rebuild when a write made the cached answer
// stale, with the key of the client that wrote, when this process knows it.
// With an answer to serve, done set means: compute it again in the
// background, then call done.
type lookup struct {
	e       *cachedResponse
	done    func()
	rebuild bool
	payer   string
}

// flight registers the computation of key; rc.mu is held.
func (rc *Cache) flight(key string) func() {
	ch := make(chan struct{})
	rc.flights[key] = ch
	return func() {
		rc.mu.Lock()
		delete(rc.flights, key)
		rc.mu.Unlock()
		close(ch)
	}
}

// get returns the cached answer that may be served at v, or the
// go-ahead to compute it. A caller that finds the same answer being
// computed waits for it instead (up to the request's end), so a burst of
// requests for one cold answer computes it once; on a lenient path it is
// served the previous answer meanwhile, when that is recent enough.
func (rc *Cache) get(ctx context.Context, v store.Versions, key string, lenient bool) lookup {
	for waited := false; ; waited = true {
		rc.mu.Lock()
		now := rc.now()
		rc.see(v.Data, now)
		var old *cachedResponse
		if el, ok := rc.entries[key]; ok {
			old = el.Value.(*cachedResponse)
			fresh := old.v.Data >= v.Data
			l := lookup{e: old}
			if !fresh && lenient && old.v.Measured >= v.Measured {
				age := now.Sub(rc.staleSince(old.v.Data, now))
				_, busy := rc.flights[key]
				fresh = age < staleRefresh || busy && age < staleRefresh+staleGrace
				if !fresh && !busy && age < staleRefresh+staleGrace {
					select {
					case rc.refreshing <- struct{}{}:
						release := rc.flight(key)
						l.done = func() { release(); <-rc.refreshing; rc.refreshed() }
						l.payer = rc.writerSince(old.v.Data, v.Data)
					default: // another answer is being refreshed: later
					}
					fresh = true
				}
			}
			if fresh {
				rc.lru.MoveToFront(el)
				rc.mu.Unlock()
				return l
			}
		}
		wait, busy := rc.flights[key]
		if waited {
			// The answer it waited for was not cacheable (an error, too
			// large): compute alone rather than queue behind others.
			rc.mu.Unlock()
			return lookup{done: func() {}}
		}
		if !busy {
			l := lookup{done: rc.flight(key)}
			if old != nil {
				l.rebuild, l.payer = true, rc.writerSince(old.v.Data, v.Data)
			}
			rc.mu.Unlock()
			return l
		}
		rc.mu.Unlock()
		select {
		case <-wait: // look again
		case <-ctx.Done():
			return lookup{done: func() {}}
		}
	}
}

// wrote records that the client of key made data version v.
func (rc *Cache) wrote(v int64, key string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.see(v, rc.now())
	rc.writers[rc.nextW] = writeMark{v: v, key: key}
	rc.nextW = (rc.nextW + 1) % len(rc.writers)
}

// writerSince is the key of the latest write through this process after
// version from, up to version to; "" when none is known. rc.mu is held.
func (rc *Cache) writerSince(from, to int64) string {
	best := writeMark{}
	for _, w := range rc.writers {
		if w.key != "" && w.v > from && w.v <= to && w.v > best.v {
			best = w
		}
	}
	return best.key
}

func entryCost(e *cachedResponse) int64 { return int64(len(e.body) + len(e.key) + 256) }

// put keeps e, unless the cache holds a later answer of its key.
func (rc *Cache) put(e *cachedResponse) {
	cost := entryCost(e)
	if cost > rc.maxBytes/8 {
		return // one answer may not crowd out the rest
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if el, ok := rc.entries[e.key]; ok {
		if old := el.Value.(*cachedResponse); old.v.Data > e.v.Data {
			return
		}
		rc.lru.Remove(el)
		rc.size -= entryCost(el.Value.(*cachedResponse))
	}
	rc.entries[e.key] = rc.lru.PushFront(e)
	rc.size += cost
	for rc.size > rc.maxBytes {
		old := rc.lru.Remove(rc.lru.Back()).(*cachedResponse)
		delete(rc.entries, old.key)
		rc.size -= entryCost(old)
	}
}

// lenientPath reports whether the answers of path are computed from the
// measurements alone, so that one may outlive a change of a run's text
// (see staleRefresh). A run, its cells and the run lists always show the
// latest text: a writer reads its own write.
func lenientPath(path string) bool {
	switch path {
	case "/v1/planner", "/planner", "/v1/leaderboard", "/leaderboard", "/v1/compare", "/compare", "/v1/series",
		"/calculator", "/widget/calculator", "/feeds/regressions.atom", "/feeds/runs.atom":
		return true
	}
	return strings.HasPrefix(path, "/v1/calculator/")
}

// AcceptGzip reduces Accept-Encoding to what matters here: "gzip" when
// the client takes gzip (q above 0), else nothing. The compressor and the
// cache key then agree, and gzip;q=0 is honoured.
func AcceptGzip(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Request().Header
		ok := false
		for part := range strings.SplitSeq(h.Get(echo.HeaderAcceptEncoding), ",") {
			coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			coding = strings.ToLower(strings.TrimSpace(coding))
			if coding != "gzip" && coding != "*" {
				continue
			}
			q := 1.0
			if v, found := strings.CutPrefix(strings.ReplaceAll(params, " ", ""), "q="); found {
				if f, err := strconv.ParseFloat(v, 64); err == nil {
					q = f
				}
			}
			if coding == "gzip" {
				ok = q > 0
				break // an explicit gzip entry decides
			}
			ok = q > 0
		}
		if ok {
			h.Set(echo.HeaderAcceptEncoding, "gzip")
		} else {
			h.Del(echo.HeaderAcceptEncoding)
		}
		return next(c)
	}
}

// cacheControl is how long clients and proxies may keep an answer: a run
// and its cells change only by their owner's edit or delete; lists,
// catalogs and leaderboards with every write.
func cacheControl(path string) string {
	if strings.HasPrefix(path, "/v1/runs/") {
		return "public, max-age=300"
	}
	return "public, max-age=15"
}

// etagOf is a strong ETag over the exact bytes of a body.
func etagOf(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`
}

// notModified reports whether If-None-Match names etag (RFC 9110 13.1.2,
// weak comparison).
func notModified(r *http.Request, etag string) bool {
	return ETagListed(r.Header.Get("If-None-Match"), etag)
}

// ETagListed reports whether an If-None-Match value names etag.
func ETagListed(inm, etag string) bool {
	if inm == "" {
		return false
	}
	for tag := range strings.SplitSeq(inm, ",") {
		tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
		if tag == "*" || tag == etag {
			return true
		}
	}
	return false
}

// noStoreKey holds, in a GET's context, the flag a handler sets (through
// DoNotStore) when its answer is partial: it is sent with no-store and not
// cached, so that asking again computes it afresh.
type noStoreKey struct{}

// DoNotStore marks the answer of the request ctx belongs to as not to be
// cached, here or by clients.
func DoNotStore(ctx context.Context) {
	if flag, ok := ctx.Value(noStoreKey{}).(*bool); ok {
		*flag = true
	}
}

// capture buffers an answer so that it can be cached and given an ETag
// before it is sent.
type capture struct {
	http.ResponseWriter
	status int
	buf    bytes.Buffer
}

func (c *capture) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
	}
}

func (c *capture) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	return c.buf.Write(b)
}

// Flush is a no-op: a captured answer is sent whole.
func (c *capture) Flush() {}

// rebuildKey holds, in a GET's context, the rebuild it is (see lookup):
// the cost limit charges it to the writer, not to the client that asked.
type rebuildKey struct{}

type rebuild struct{ payer string }

// Rebuilding reports whether ctx is that of a request computing again an
// answer a write made stale, and who wrote (as the Middleware's writer
// names it; "" when the write came through another process).
func Rebuilding(ctx context.Context) (payer string, ok bool) {
	rb, ok := ctx.Value(rebuildKey{}).(rebuild)
	return rb.payer, ok
}

// refreshKey marks, in its context, a request the cache made to compute an
// answer again in the background: it is computed whatever the cache holds,
// counts against no client's read limit, and ends with done.
type refreshKey struct{}

type refreshing struct{ done func() }

// IsRefresh reports whether ctx is that of a background refresh.
func IsRefresh(ctx context.Context) bool {
	_, ok := ctx.Value(refreshKey{}).(refreshing)
	return ok
}

// refreshRequest is r as the cache asks it again: the same question
// (path, query, what it negotiates), nothing that is the client's.
func refreshRequest(r *http.Request, payer string, done func()) *http.Request {
	ctx := context.WithValue(context.WithoutCancel(r.Context()), refreshKey{}, refreshing{done: done})
	ctx = context.WithValue(ctx, rebuildKey{}, rebuild{payer: payer})
	rr := r.Clone(ctx)
	rr.Header = http.Header{}
	for _, h := range []string{echo.HeaderAccept, echo.HeaderAcceptEncoding, "Accept-Language", "Cookie"} {
		if vs := r.Header.Values(h); len(vs) > 0 {
			rr.Header[h] = vs
		}
	}
	return rr
}

// Middleware serves GETs from the cache, computing and storing those it
// lacks, and notes who made each data version (writer names the client of
// a successful authorized write). skip names paths that must always be
// computed.
func (rc *Cache) Middleware(skip func(path string) bool, k *Keyer, writer func(echo.Context) string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if r.Method != http.MethodGet {
				err := next(c)
				if st := c.Response().Status; err == nil && st >= 200 && st < 300 && r.Header.Get(echo.HeaderAuthorization) != "" {
					if v, verr := rc.version(r.Context()); verr == nil {
						rc.wrote(v.Data, writer(c))
					}
				}
				return err
			}
			if skip(r.URL.Path) {
				c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
				return next(c)
			}
			w := c.Response()
			key := k.key(r)
			v, verr := rc.version(r.Context())
			at := rc.now()
			if rf, ok := r.Context().Value(refreshKey{}).(refreshing); ok {
				defer rf.done()
			} else if key != "" && verr == nil {
				l := rc.get(r.Context(), v, key, lenientPath(r.URL.Path))
				if l.e != nil {
					rc.stats(true)
					if l.done != nil {
						go rc.refresh(refreshRequest(r, l.payer, l.done))
					}
					send(w, r, l.e.header, l.e.etag, l.e.body, cacheControl(r.URL.Path))
					return nil
				}
				defer l.done()
				if l.rebuild {
					r = r.WithContext(context.WithValue(r.Context(), rebuildKey{}, rebuild{payer: l.payer}))
				}
			}
			real := w.Writer
			cw := &capture{ResponseWriter: real}
			w.Writer = cw
			partial := false
			c.SetRequest(r.WithContext(context.WithValue(r.Context(), noStoreKey{}, &partial)))
			err := next(c)
			if err != nil {
				c.Error(err) // rendered into the capture, like any answer
			}
			w.Writer = real
			if cw.status != http.StatusOK || partial {
				w.Header().Set(echo.HeaderCacheControl, "no-store")
				real.WriteHeader(cw.status)
				_, werr := real.Write(cw.buf.Bytes())
				return werr
			}
			if key != "" && verr == nil {
				rc.stats(false) // computed: a miss (errors do not count)
			}
			body := cw.buf.Bytes()
			e := &cachedResponse{key: key, header: http.Header{}, body: body, etag: etagOf(body), v: v, at: at}
			for _, h := range cacheHeaders() {
				if vs := w.Header().Values(h); len(vs) > 0 {
					e.header[h] = vs
				}
			}
			if key != "" && verr == nil {
				rc.put(e)
			}
			w.Status = send(real, r, nil, e.etag, body, cacheControl(r.URL.Path))
			return nil
		}
	}
}

// send writes a 200 answer, or 304 when the client holds it already, and
// returns which.
func send(w http.ResponseWriter, r *http.Request, header http.Header, etag string, body []byte, cc string) int {
	h := w.Header()
	for k, vs := range header {
		h[k] = vs
	}
	h.Set(echo.HeaderCacheControl, cc)
	h.Set("ETag", etag)
	if notModified(r, etag) {
		h.Del(echo.HeaderContentType)
		h.Del(echo.HeaderContentEncoding)
		w.WriteHeader(http.StatusNotModified)
		return http.StatusNotModified
	}
	h.Set(echo.HeaderContentLength, strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	w.Write(body)
	return http.StatusOK
}
