package site

import (
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
)

// A browser that mistypes a path, or asks a page for a parameter it does
// not take (/docs?lang=th), gets a page with the site around it; API
// clients, and every answer under /v1/ and /feeds/, keep problem+json.

// htmlErrors answers the client errors of browsers (Accept prefers
// text/html) with the site's error page, and everything else with next.
func (p *pages) htmlErrors(next echo.HTTPErrorHandler) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		c.Response().Header().Add(echo.HeaderVary, echo.HeaderAccept)
		r := c.Request()
		if c.Response().Committed || !prefersHTML(r) || strings.HasPrefix(r.URL.Path, "/v1/") || strings.HasPrefix(r.URL.Path, "/feeds/") {
			next(err, c)
			return
		}
		switch p.s.req.Problem(err, c).Status {
		case http.StatusBadRequest, http.StatusNotFound, http.StatusGone:
		default:
			next(err, c)
			return
		}
		c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
		if perr := p.localised(func(c echo.Context) error { return p.problemPage(c, err, "/") })(c); perr != nil {
			next(perr, c)
		}
	}
}

// prefersHTML is whether the request's Accept ranks HTML above JSON, as a
// browser's navigation does; no Accept, or */* alone, is an API client.
func prefersHTML(r *http.Request) bool {
	var html, json float64
	for part := range strings.SplitSeq(r.Header.Get(echo.HeaderAccept), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		q := 1.0
		if v, ok := params["q"]; ok {
			if q, err = strconv.ParseFloat(v, 64); err != nil {
				continue
			}
		}
		switch mt {
		case "text/html", "application/xhtml+xml":
			html = max(html, q)
		case "application/json", "application/problem+json":
			json = max(json, q)
		}
	}
	return html > 0 && html > json
}
