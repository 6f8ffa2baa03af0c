package site

import (
	"errors"
	"fmt"
	"html/template"
	"regexp"
	"strconv"
	"strings"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/msg"
	"github.com/matrixd/matrixd/store"
)

// Every sentence the API says (a warning, a refusal, a check, a verdict, a
// planner's limit, a problem) comes with its code and parameters; a page
// says it from the code in its own language (the catalogs' msg.CODE), its
// numbers written as the page writes numbers. Only a code the catalogs do
// not know falls back to the API's English.

// plainNumber is a parameter written as a number, which the page writes
// as it writes its own numbers (grouped, three significant digits).
var plainNumber = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)

// verbatim are the parameters that are names, however they are written
// (a run id, a GPU called 3090), never reformatted as numbers.
var verbatim = map[string]bool{"run_id": true, "request_id": true, "gpu": true, "from_gpu": true, "to_gpu": true, "model": true,
	"to_model": true, "from_model": true, "source_model": true, "facts_model": true, "value": true, "path": true, "name": true, "engine": true,
	"names": true, "known": true, "allowed": true, "field": true}

// param is a parameter's value as the page writes it.
func (l *locale) param(name, v string) string {
	if verbatim[name] || !plainNumber.MatchString(v) || len(v) > 16 {
		return v
	}
	if i, err := strconv.Atoi(v); err == nil {
		return l.int(i)
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return v
	}
	return l.float(f)
}

// render is m in l as HTML: its numbers written by l, each parameter that
// is a name (a run id, a GPU, a model) marked translate="no", as a
// browser's translator must leave it.
func (l *locale) render(m msg.Message) template.HTML { return l.renderWith(m, nil) }

// renderWith is render with the parameters of html written in as given.
func (l *locale) renderWith(m msg.Message, html map[string]template.HTML) template.HTML {
	tpl, ok := l.msgs[msg.Key(m.Code)]
	if m.Code == "" || !ok {
		return template.HTML(template.HTMLEscapeString(m.Text))
	}
	out := msg.Message{Code: m.Code, Text: m.Text}
	for _, p := range m.Params {
		if h, ok := html[p.Name]; ok {
			out.Params = append(out.Params, msg.Param{Name: p.Name, Value: string(h)})
			continue
		}
		if part, ok := m.Parts[p.Name]; ok {
			out.Params = append(out.Params, msg.Param{Name: p.Name, Value: string(l.render(part))})
			continue
		}
		v := template.HTMLEscapeString(l.param(p.Name, p.Value))
		if verbatim[p.Name] {
			v = `<span translate="no">` + v + `</span>`
		}
		out.Params = append(out.Params, msg.Param{Name: p.Name, Value: v})
	}
	c := msg.Catalog{l.Code: {msg.Key(m.Code): template.HTMLEscapeString(tpl)}}
	return template.HTML(msg.Render(c, l.Code, out))
}

// say is the template function: one message in the page's language. v is
// an api.Notice (or a pointer to one; english is then its English), a
// problem, a field error, a stored trust flag or check, or a msg.Message.
func (l *locale) say(v any, english ...any) template.HTML {
	text := ""
	if len(english) > 0 {
		switch e := english[0].(type) {
		case string:
			text = e
		case *string:
			text = deref(e)
		}
	}
	switch x := v.(type) {
	case api.Notice:
		return l.render(noticeMessage(x, text))
	case *api.Notice:
		if x == nil {
			return l.render(msg.Message{Text: text})
		}
		return l.render(noticeMessage(*x, text))
	case api.Problem:
		return l.problem(x, nil)
	case api.FieldError:
		if x.Notice == nil {
			return l.render(msg.Message{Text: x.Message})
		}
		return l.render(msg.Of(x.Notice.Code, x.Notice.Params, x.Message))
	case store.TrustFlag:
		return l.render(store.Message(x.MessageCode, x.MessageParams, x.MessageParts, x.Message))
	case store.TrustCheck:
		return l.render(store.Message(x.DetailCode, x.DetailParams, x.DetailParts, x.Detail))
	case msg.Message:
		return l.render(x)
	case string:
		return l.render(msg.Message{Text: x})
	}
	return l.render(msg.Message{Text: text})
}

// sayAll is the template function for a list of notices and the English
// warnings beside them, one for each: each in the page's language.
func (l *locale) sayAll(notices any, english []string) []template.HTML {
	var ns []api.Notice
	switch x := notices.(type) {
	case []api.Notice:
		ns = x
	case *[]api.Notice:
		if x != nil {
			ns = *x
		}
	}
	out := make([]template.HTML, 0, max(len(ns), len(english)))
	for i := range max(len(ns), len(english)) {
		text := ""
		if i < len(english) {
			text = english[i]
		}
		if i < len(ns) {
			out = append(out, l.say(ns[i], text))
		} else {
			out = append(out, l.render(msg.Message{Text: text}))
		}
	}
	return out
}

// problem is what a problem says, in l: a refusal of the calculator (err)
// from its own codes, the reason and what is supported each said in l; a
// 400 naming its fields with each field's message said in l.
func (l *locale) problem(pr api.Problem, err error) template.HTML {
	var r *calculator.Refusal
	if errors.As(err, &r) && r.Message.Code != "" {
		if r.Supported == "" {
			return l.render(r.Message)
		}
		m := msg.Of("calculator.refused_supported", map[string]string{"reason": r.Reason, "supported": r.Supported}, deref(pr.Detail))
		m.Parts = map[string]msg.Message{"reason": r.Message, "supported": r.SupportedMessage}
		return l.render(m)
	}
	var html map[string]template.HTML
	if pr.Errors != nil && (pr.Code == "problem.invalid_request" || pr.Code == "problem.invalid_request_more") {
		var said []string
		for i, f := range *pr.Errors {
			if i == 3 && pr.Code == "problem.invalid_request_more" {
				break
			}
			s := string(l.say(f))
			if f.Field != nil {
				s = "<code>" + template.HTMLEscapeString(*f.Field) + "</code>: " + s
			}
			said = append(said, s)
		}
		html = map[string]template.HTML{"errors": template.HTML(strings.Join(said, template.HTMLEscapeString(l.t("list.sep.sentence"))))}
	}
	return l.renderWith(msg.Of(pr.Code, pr.Params, deref(pr.Detail)), html)
}

// notr is a name or value a page shows as given: a browser's translator
// leaves it, and so does the test of pages' languages.
func notr(s any) template.HTML {
	var v string
	switch x := s.(type) {
	case string:
		v = x
	case *string:
		v = deref(x)
	default:
		v = fmt.Sprint(x)
	}
	return template.HTML(`<span translate="no">` + template.HTMLEscapeString(v) + `</span>`)
}

// noticeMessage is a notice as a message, its clauses with it; text is its
// English.
func noticeMessage(n api.Notice, text string) msg.Message {
	m := msg.Of(n.Code, n.Params, text)
	if n.Parts != nil {
		m.Parts = map[string]msg.Message{}
		for name, p := range *n.Parts {
			m.Parts[name] = noticeMessage(p, n.Params[name])
		}
	}
	return m
}
