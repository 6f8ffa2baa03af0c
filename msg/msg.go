// Package msg holds what the service says to people in sentences: each
// message has a stable code, named parameters and one English template, so
// the English text and the code cannot drift apart, and a site, widget or
// client renders the same message in its reader's language from a catalog.
package msg

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Param is one named parameter of a message, as written in its text.
type Param struct {
	Name, Value string
}

// Message is a sentence with its code and parameters; Text is the English.
// A parameter written from a message of its own (a clause the sentence
// holds) has that message in Parts, by the parameter's name, so that a
// catalog says the clause in its language too.
type Message struct {
	Code   string
	Params []Param
	Text   string
	Parts  map[string]Message
}

// String is the English text.
func (m Message) String() string { return m.Text }

// Map is the parameters by name.
func (m Message) Map() map[string]string {
	out := make(map[string]string, len(m.Params))
	for _, p := range m.Params {
		out[p.Name] = p.Value
	}
	return out
}

// New is the message of code with its parameters given in the order the
// template names them first; each is written with the verb its placeholder
// states ({n:%.1f}), else %v; a parameter given as a Message is its text,
// and the message is kept in Parts. A code not declared is its own text (a
// test fails on any code the Go code uses that is not declared).
func New(code string, args ...any) Message {
	m := Message{Code: code}
	parts, ok := parsed[code]
	if !ok {
		m.Text = code
		return m
	}
	var b strings.Builder
	next := 0
	for _, part := range parts {
		if part.name == "" {
			b.WriteString(part.text)
			continue
		}
		i := slices.IndexFunc(m.Params, func(p Param) bool { return p.Name == part.name })
		if i < 0 {
			v := "%!(MISSING)"
			if next < len(args) {
				v = fmt.Sprintf(part.verb, args[next])
				if sub, ok := args[next].(Message); ok {
					v = sub.Text
					if m.Parts == nil {
						m.Parts = map[string]Message{}
					}
					m.Parts[part.name] = sub
				}
			}
			next++
			i = len(m.Params)
			m.Params = append(m.Params, Param{Name: part.name, Value: v})
		}
		b.WriteString(m.Params[i].Value)
	}
	m.Text = b.String()
	return m
}

// Of is the message of code with params (by name) and its English text,
// as a client reads them from the API: for Render.
func Of(code string, params map[string]string, text string) Message {
	m := Message{Code: code, Text: text}
	for _, name := range slices.Sorted(maps.Keys(params)) {
		m.Params = append(m.Params, Param{Name: name, Value: params[name]})
	}
	return m
}

// Texts is the English of each message.
func Texts(ms []Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Text
	}
	return out
}

// Template is a code's English template as catalogs write it: {name}
// placeholders, without their verbs.
func Template(code string) (string, bool) {
	tpl, ok := templates[code]
	if !ok {
		return "", false
	}
	var b strings.Builder
	for _, p := range parse(tpl) {
		if p.name == "" {
			b.WriteString(p.text)
		} else {
			b.WriteString("{" + p.name + "}")
		}
	}
	return b.String(), true
}

// Arity is how many arguments New takes for code.
func Arity(code string) (int, bool) {
	tpl, ok := templates[code]
	if !ok {
		return 0, false
	}
	return len(Placeholders(tpl)), true
}

// Codes is every declared code.
func Codes() []string {
	out := make([]string, 0, len(templates))
	for c := range templates {
		out = append(out, c)
	}
	return out
}

// Placeholders is the distinct names of a template's placeholders, in order.
func Placeholders(tpl string) []string {
	var out []string
	for _, p := range parse(tpl) {
		if p.name != "" && !contains(out, p.name) {
			out = append(out, p.name)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

type part struct{ text, name, verb string }

// parsed is each template's parts, read once: New writes a message often
// (every answer's warnings).
var parsed = func() map[string][]part {
	out := make(map[string][]part, len(templates))
	for code, tpl := range templates {
		out[code] = parse(tpl)
	}
	return out
}()

// parse splits a template into text and {name} or {name:%verb} parts. A
// brace that does not open a placeholder (a letter, digit or _ then } or :)
// is text.
func parse(tpl string) []part {
	var out []part
	for len(tpl) > 0 {
		i := strings.IndexByte(tpl, '{')
		if i < 0 {
			out = append(out, part{text: tpl})
			break
		}
		end := strings.IndexByte(tpl[i:], '}')
		if end < 0 {
			out = append(out, part{text: tpl})
			break
		}
		inner := tpl[i+1 : i+end]
		name, verb, hasVerb := strings.Cut(inner, ":")
		if !isName(name) || (hasVerb && !strings.HasPrefix(verb, "%")) {
			out = append(out, part{text: tpl[:i+1]})
			tpl = tpl[i+1:]
			continue
		}
		if i > 0 {
			out = append(out, part{text: tpl[:i]})
		}
		if !hasVerb {
			verb = "%v"
		}
		out = append(out, part{name: name, verb: verb})
		tpl = tpl[i+end+1:]
	}
	return out
}

func isName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// Catalog is messages by language, then by key (msg.CODE for a message).
type Catalog map[string]map[string]string

// Key is a code's key in a catalog.
func Key(code string) string { return "msg." + code }

// Render is m in lang: the catalog's message for its code with the
// parameters written in (a part said in lang as well), else the English
// text.
func Render(c Catalog, lang string, m Message) string {
	t, ok := c[lang][Key(m.Code)]
	if !ok {
		return m.Text
	}
	var b strings.Builder
	vals := m.Map()
	for _, p := range parse(t) {
		sub, isPart := m.Parts[p.name]
		switch v, ok := vals[p.name]; {
		case p.name == "":
			b.WriteString(p.text)
		case isPart:
			b.WriteString(Render(c, lang, sub))
		case ok:
			b.WriteString(v)
		default:
			b.WriteString("{" + p.name + "}")
		}
	}
	return b.String()
}
