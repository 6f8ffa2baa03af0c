package site

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/matrixd/matrixd/api"
)

// localeKey holds a page request's language in its echo context, and
// byURLKey whether its URL chose it.
const (
	localeKey = "matrixd.locale"
	byURLKey  = "matrixd.locale.by-url"
)

// localised answers a page in the reader's language (see languages.pick),
// saying which and, when the URL did not choose it, that the answer
// varies with what did.
func (p *pages) localised(h echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		l, byURL := p.langs.pick(c.Request())
		c.Set(localeKey, l)
		c.Set(byURLKey, byURL)
		hd := c.Response().Header()
		hd.Set("Content-Language", l.Code)
		if !byURL {
			hd.Add(echo.HeaderVary, "Accept-Language")
			hd.Add(echo.HeaderVary, "Cookie")
		}
		return h(c)
	}
}

// locale is the language of the page being answered.
func (p *pages) locale(c echo.Context) *locale {
	if l, ok := c.Get(localeKey).(*locale); ok {
		return l
	}
	return p.langs.list[0]
}

// langLink is a page in one language: for <link rel="alternate"> and the
// header's language switch.
type langLink struct {
	Code, Name, Href string
	Current          bool
}

// alternates are the page of r in each language (and x-default, the URL
// that follows the reader's choice), and the links of the switch, which
// remember the choice and come back here.
func (p *pages) alternates(r *http.Request, current *locale) (alt, switcher []langLink) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		q = url.Values{}
	}
	q.Del("lang")
	back := r.URL.Path
	if len(q) > 0 {
		back += "?" + q.Encode()
	}
	alt = append(alt, langLink{Code: "x-default", Href: back})
	for _, l := range p.langs.list {
		lq := url.Values{}
		for k, v := range q {
			lq[k] = v
		}
		lq.Set("lang", l.Code)
		alt = append(alt, langLink{Code: l.Code, Name: l.Name, Href: r.URL.Path + "?" + lq.Encode()})
		switcher = append(switcher, langLink{Code: l.Code, Name: l.Name, Current: l == current,
			Href: "/language?" + url.Values{"lang": {l.Code}, "back": {back}}.Encode()})
	}
	return alt, switcher
}

// chooseLanguage is the header's language switch: it keeps the choice in
// a cookie and goes back to the page (a path of this site only).
func (p *pages) chooseLanguage(c echo.Context) error {
	q, err := p.s.req.ParseQuery(c.Request().URL.RawQuery)
	if err != nil {
		return p.problemPage(c, err, "/")
	}
	var bad []api.FieldError
	for k := range q {
		if k != "lang" && k != "back" {
			bad = append(bad, fieldError(p.s.req.Clip(k), p.locale(c).t("error.unknown_param")))
		}
	}
	l := p.langs.named(q.Get("lang"))
	if l == nil {
		bad = append(bad, fieldError("lang", p.locale(c).t("error.lang", p.s.req.Clip(q.Get("lang")), strings.Join(p.langs.codes(), ", "))))
	}
	if len(bad) > 0 {
		return p.problemPage(c, p.s.req.Invalid(bad...), "/")
	}
	back := q.Get("back")
	if !strings.HasPrefix(back, "/") || strings.HasPrefix(back, "//") || strings.Contains(back, `\`) {
		back = "/"
	}
	c.SetCookie(&http.Cookie{Name: langCookie, Value: l.Code, Path: "/", MaxAge: 365 * 24 * 3600,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: c.Request().TLS != nil})
	return c.Redirect(http.StatusSeeOther, back)
}

// widgetSays is whether a catalog key is a message the calculator's
// answers can hold (its refusals, warnings and problems), which the
// widget says in its language.
func widgetSays(key string) bool {
	for _, p := range []string{"msg.calculator.", "msg.predict.", "msg.problem.", "msg.api."} {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// widgetScript is the widget with the catalogs' widget messages written in,
// so that it speaks the language of its data-lang without another request.
func widgetScript(langs *languages) ([]byte, error) {
	js, err := pageFiles.ReadFile("pages/calculator.js")
	if err != nil {
		return nil, err
	}
	msgs := map[string]map[string]string{}
	for _, l := range langs.list {
		m := map[string]string{}
		for k, v := range l.msgs {
			if rest, ok := strings.CutPrefix(k, "widget."); ok {
				m[rest] = v
			}
			if widgetSays(k) {
				m[k] = v // the API's messages it shows, by their msg. keys
			}
		}
		msgs[l.Code] = m
	}
	b, err := json.Marshal(msgs)
	if err != nil {
		return nil, err
	}
	const slot = "var MESSAGES = {};"
	if !bytes.Contains(js, []byte(slot)) {
		return nil, fmt.Errorf("widget: calculator.js has no %q", slot)
	}
	return bytes.Replace(js, []byte(slot), append(append([]byte("var MESSAGES = "), b...), ';'), 1), nil
}
