package server

import (
	"bytes"
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"
)

// The data changes only when a run is written, so a GET's answer is
// computed once per data version and served as prepared bytes, with a
// strong ETag over exactly those bytes.

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
}

// responseCache is a byte-bounded LRU of GET answers of one data version.
type responseCache struct {
	maxBytes int64
	version  func(context.Context) (int64, error)
	stats    func(hit bool)

	mu      sync.Mutex
	at      int64 // the data version the entries belong to
	size    int64
	lru     *list.List // front: most recently used *cachedResponse
	entries map[string]*list.Element
	flights map[string]chan struct{} // answers being computed, closed when done
}

func newResponseCache(maxBytes int64, version func(context.Context) (int64, error), stats func(hit bool)) *responseCache {
	return &responseCache{maxBytes: maxBytes, version: version, stats: stats, lru: list.New(),
		entries: map[string]*list.Element{}, flights: map[string]chan struct{}{}}
}

// get returns the cached answer, or nil and a done func: the caller
// computes the answer and calls done. A caller that finds the same answer
// being computed waits for it instead (up to the request's end), so a
// burst of requests for one cold answer computes it once.
func (rc *responseCache) get(ctx context.Context, v int64, key string) (*cachedResponse, func()) {
	for waited := false; ; waited = true {
		rc.mu.Lock()
		if v != rc.at {
			rc.at, rc.size = v, 0
			rc.lru.Init()
			clear(rc.entries)
		}
		if el, ok := rc.entries[key]; ok {
			rc.lru.MoveToFront(el)
			rc.mu.Unlock()
			return el.Value.(*cachedResponse), nil
		}
		wait, busy := rc.flights[key]
		if waited {
			// The answer it waited for was not cacheable (an error, too
			// large): compute alone rather than queue behind others.
			rc.mu.Unlock()
			return nil, func() {}
		}
		if !busy {
			ch := make(chan struct{})
			rc.flights[key] = ch
			rc.mu.Unlock()
			return nil, func() {
				rc.mu.Lock()
				delete(rc.flights, key)
				rc.mu.Unlock()
				close(ch)
			}
		}
		rc.mu.Unlock()
		select {
		case <-wait: // look again
		case <-ctx.Done():
			return nil, func() {}
		}
	}
}

func (rc *responseCache) put(v int64, e *cachedResponse) {
	cost := int64(len(e.body) + len(e.key) + 256)
	if cost > rc.maxBytes/8 {
		return // one answer may not crowd out the rest
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if v != rc.at {
		return // the data changed while this was computed
	}
	if _, ok := rc.entries[e.key]; ok {
		return
	}
	rc.entries[e.key] = rc.lru.PushFront(e)
	rc.size += cost
	for rc.size > rc.maxBytes {
		old := rc.lru.Remove(rc.lru.Back()).(*cachedResponse)
		delete(rc.entries, old.key)
		rc.size -= int64(len(old.body) + len(old.key) + 256)
	}
}

// cacheKey names a GET's answer: the path, the query in canonical order,
// and what the answer is negotiated on (for a page, its language, however
// chosen). Empty when it cannot be cached: a query that does not parse
// goes to the validator, which names the bad parameter.
func cacheKey(r *http.Request, langs *languages) string {
	q, err := url.ParseQuery(r.URL.RawQuery)
	accept := r.Header.Get(echo.HeaderAccept)
	if err != nil || len(accept) > 256 {
		return ""
	}
	gzip := "identity"
	if r.Header.Get(echo.HeaderAcceptEncoding) == "gzip" { // normalised by acceptGzip
		gzip = "gzip"
	}
	key := r.URL.Path + "?" + q.Encode() + "\x00" + accept + "\x00" + gzip
	if isPage(r.URL.Path) {
		l, _ := langs.pick(r)
		key += "\x00" + l.Code
	}
	return key
}

// acceptGzip reduces Accept-Encoding to what matters here: "gzip" when
// the client takes gzip (q above 0), else nothing. The compressor and the
// cache key then agree, and gzip;q=0 is honoured.
func acceptGzip(next echo.HandlerFunc) echo.HandlerFunc {
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
	return etagListed(r.Header.Get("If-None-Match"), etag)
}

// etagListed reports whether an If-None-Match value names etag.
func etagListed(inm, etag string) bool {
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
// doNotStore) when its answer is partial: it is sent with no-store and not
// cached, so that asking again computes it afresh.
type noStoreKey struct{}

// doNotStore marks the answer of the request ctx belongs to as not to be
// cached, here or by clients.
func doNotStore(ctx context.Context) {
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

// cached serves GETs of the API from the cache, computing and storing
// those it lacks. skip names paths that must always be computed.
func cached(rc *responseCache, skip func(path string) bool, langs *languages) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if r.Method != http.MethodGet {
				return next(c)
			}
			if skip(r.URL.Path) {
				c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
				return next(c)
			}
			w := c.Response()
			key := cacheKey(r, langs)
			v, verr := rc.version(r.Context())
			if key != "" && verr == nil {
				e, done := rc.get(r.Context(), v, key)
				if e != nil {
					rc.stats(true)
					send(w, r, e.header, e.etag, e.body, cacheControl(r.URL.Path))
					return nil
				}
				defer done()
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
			e := &cachedResponse{key: key, header: http.Header{}, body: body, etag: etagOf(body)}
			for _, h := range cacheHeaders() {
				if vs := w.Header().Values(h); len(vs) > 0 {
					e.header[h] = vs
				}
			}
			if key != "" && verr == nil {
				rc.put(v, e)
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
