package httpcache

import (
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
	"github.com/labstack/echo/v4"
)

// A cached answer is named by what decides it, not by how the request
// spelt it: 7, 7.0, 07 and 7e0 of a numeric parameter are one answer, and
// so are a parameter's default and its absence, an Accept header and the
// representation it negotiates, and an Accept-Language and the site
// language it picks.

// pageQuery is the API operation whose query the page at path takes (see
// pages.asAPI): its numeric parameters are read by value as the API's.
func pageQuery(path string) string {
	switch path {
	case "/":
		return "/v1/runs"
	case "/leaderboard", "/compare", "/hardware", "/planner", "/getting-started":
		return "/v1" + path
	case "/calculator":
		return "/v1/calculator/decode"
	}
	return ""
}

// Keyer makes cache keys, and makes the numbers of a request's query
// canonical so that the handlers read the value the key names.
type Keyer struct {
	router routers.Router
	lang   func(*http.Request) string // the site language a page is answered in
	// parseQuery reads a query strictly (an error: not cacheable); wantCSV
	// decides the representation from the format parameter and Accept.
	parseQuery func(raw string) (url.Values, error)
	wantCSV    func(format *string, accept string) bool
}

// NewKeyer returns the keyer of the operations router routes: lang is the
// site language a page is answered in, parseQuery the strict query parser
// and wantCSV the API's choice of representation.
func NewKeyer(router routers.Router, lang func(*http.Request) string, parseQuery func(string) (url.Values, error), wantCSV func(format *string, accept string) bool) *Keyer {
	return &Keyer{router: router, lang: lang, parseQuery: parseQuery, wantCSV: wantCSV}
}

// queryParams are the query parameters the operation at path declares,
// by name; nil when the spec does not route it.
func (k *Keyer) queryParams(r *http.Request) map[string]*openapi3.Parameter {
	path := r.URL.Path
	api := strings.HasPrefix(path, "/v1/")
	if !api {
		if path = pageQuery(path); path == "" {
			return nil
		}
	}
	req := &http.Request{Method: http.MethodGet, URL: &url.URL{Path: path}, Host: r.Host}
	route, _, err := k.router.FindRoute(req)
	if err != nil {
		return nil
	}
	out := map[string]*openapi3.Parameter{}
	for _, ps := range []openapi3.Parameters{route.PathItem.Parameters, route.Operation.Parameters} {
		for _, p := range ps {
			if p.Value != nil && p.Value.In == openapi3.ParameterInQuery {
				out[p.Value.Name] = p.Value
			}
		}
	}
	return out
}

// key names the answer to r, and rewrites r's query with its numbers
// canonical. Empty when r cannot be cached: a query that does not parse
// goes to the validator, which names the bad parameter.
func (k *Keyer) key(r *http.Request) string {
	q, err := k.parseQuery(r.URL.RawQuery)
	if err != nil || len(r.Header.Get(echo.HeaderAccept)) > 256 {
		return ""
	}
	params := k.queryParams(r)
	changed := false
	for name, vs := range q {
		p := params[name]
		if p == nil || p.Schema == nil || p.Schema.Value == nil {
			continue
		}
		if c, ok := canonicalNumber(p.Schema.Value, vs[0]); ok && c != vs[0] {
			vs[0], changed = c, true
		}
	}
	if changed {
		r.URL.RawQuery = q.Encode()
		r.RequestURI = r.URL.RequestURI()
	}
	page := !strings.HasPrefix(r.URL.Path, "/v1/") && !strings.HasPrefix(r.URL.Path, "/feeds/")
	kq := url.Values{}
	for name, vs := range q {
		if page && vs[0] == "" {
			continue // a form's blank field: not given
		}
		if p := params[name]; !page && p != nil && len(vs) == 1 && (isDefault(p, vs[0]) || name == "format" && inEnum(p, vs[0])) {
			// The validator fills it in; a format the spec lists is in the
			// representation (one it does not list stays in the key, so
			// that the validator, not a cached answer, answers it).
			continue
		}
		kq[name] = vs
	}
	gzip := "identity"
	if r.Header.Get(echo.HeaderAcceptEncoding) == "gzip" { // normalised by AcceptGzip
		gzip = "gzip"
	}
	key := r.URL.Path + "?" + kq.Encode() + "\x00" + gzip
	if page {
		return key + "\x00" + k.lang(r)
	}
	var format *string
	if vs, ok := q["format"]; ok {
		format = &vs[0]
	}
	if k.wantCSV(format, r.Header.Get(echo.HeaderAccept)) {
		return key + "\x00csv"
	}
	return key + "\x00json"
}

// canonicalNumber is v written canonically when the schema is a number
// or an integer and v is one by value; false otherwise (the validator
// then judges v as written).
func canonicalNumber(s *openapi3.Schema, v string) (string, bool) {
	integer := s.Type.Is(openapi3.TypeInteger)
	if !integer && !s.Type.Is(openapi3.TypeNumber) {
		return "", false
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return "", false
	}
	if integer {
		if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return "", false
		}
		return strconv.FormatInt(int64(f), 10), true
	}
	return strconv.FormatFloat(f, 'g', -1, 64), true
}

// isDefault reports whether v is p's default, by value.
func isDefault(p *openapi3.Parameter, v string) bool {
	if p.Schema == nil || p.Schema.Value == nil || p.Schema.Value.Default == nil {
		return false
	}
	s := p.Schema.Value
	switch d := s.Default.(type) {
	case string:
		return v == d
	case bool:
		return v == strconv.FormatBool(d)
	case float64:
		c, ok := canonicalNumber(s, v)
		return ok && c == strconv.FormatFloat(d, 'g', -1, 64)
	case int:
		c, ok := canonicalNumber(s, v)
		return ok && c == strconv.Itoa(d)
	}
	return false
}

// inEnum reports that v is one of the values p's schema lists.
func inEnum(p *openapi3.Parameter, v string) bool {
	if p.Schema == nil || p.Schema.Value == nil {
		return false
	}
	for _, e := range p.Schema.Value.Enum {
		if s, ok := e.(string); ok && s == v {
			return true
		}
	}
	return false
}
