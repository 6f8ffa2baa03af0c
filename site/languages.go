package site

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/text/language"
)

// The pages speak the reader's language: ?lang= when given (a page-only
// parameter, never passed to the API's checks), else the lang cookie the
// header's language links set, else the best match of Accept-Language,
// else English. Every message is in a catalog, site/pages/locales/CODE.json,
// each with the same keys; {0}, {1}… in a message are its arguments.

// langCookie keeps the reader's choice of language.
const langCookie = "lang"

// locale is one language: its messages and how it writes numbers.
type locale struct {
	numbers
	Code string // the catalog's name, a BCP 47 tag: en, zh-Hant, th
	Name string // the language's name in itself
	tag  language.Tag
	msgs map[string]string
}

// t is a message with its arguments written in.
func (l *locale) t(key string, args ...any) string {
	m, ok := l.msgs[key]
	if !ok {
		return key // a test fails on any key a template uses that a catalog lacks
	}
	return l.fill(m, args, func(s string) string { return s })
}

// html is a message, escaped, with arguments that may be HTML (links).
func (l *locale) html(key string, args ...any) template.HTML {
	m, ok := l.msgs[key]
	if !ok {
		return template.HTML(template.HTMLEscapeString(key))
	}
	for i, a := range args {
		if h, ok := a.(template.HTML); ok {
			args[i] = rawHTML(h)
		}
	}
	return template.HTML(l.fill(template.HTMLEscapeString(m), args, template.HTMLEscapeString))
}

type rawHTML template.HTML

func (l *locale) fill(m string, args []any, escape func(string) string) string {
	if len(args) == 0 {
		return m
	}
	pairs := make([]string, 0, 2*len(args))
	for i, a := range args {
		var s string
		switch x := a.(type) {
		case rawHTML:
			s = string(x)
		case string:
			s = escape(x)
		case *string:
			if x != nil {
				s = escape(*x)
			}
		default:
			s = escape(l.num(a))
		}
		pairs = append(pairs, "{"+strconv.Itoa(i)+"}", s)
	}
	return strings.NewReplacer(pairs...).Replace(m)
}

// enum is the message for one value of an enumeration (a status, a
// verdict), the value itself when the catalogs have none.
func (l *locale) enum(prefix string, value any) string {
	if rv := reflect.ValueOf(value); rv.Kind() == reflect.Pointer { // an optional enum
		if rv.IsNil() {
			return ""
		}
		value = rv.Elem().Interface()
	}
	v := fmt.Sprint(value) // a string or a generated enum type
	if m, ok := l.msgs[prefix+"."+v]; ok {
		return m
	}
	return strings.ReplaceAll(v, "_", " ")
}

// or is the message of key, or fallback when the catalogs have none (an
// API problem's title of a status the pages do not name).
func (l *locale) or(key, fallback string) string {
	if m, ok := l.msgs[key]; ok {
		return m
	}
	return fallback
}

// languages are the site's catalogs, English first.
type languages struct {
	list    []*locale
	matcher language.Matcher
}

// loadLanguages reads every catalog of dir in fsys.
func loadLanguages(fsys fs.FS, dir string) (*languages, error) {
	names, err := fs.Glob(fsys, path.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	ls := &languages{}
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		l := &locale{Code: strings.TrimSuffix(path.Base(name), ".json")}
		if err := json.Unmarshal(b, &l.msgs); err != nil {
			return nil, fmt.Errorf("catalog %s: %w", name, err)
		}
		if l.tag, err = language.Parse(l.Code); err != nil {
			return nil, fmt.Errorf("catalog %s: %w", name, err)
		}
		l.numbers, l.Name = newNumbers(l.tag), l.msgs["language.name"]
		ls.list = append(ls.list, l)
	}
	slices.SortFunc(ls.list, func(a, b *locale) int {
		if a.Code == "en" || b.Code == "en" {
			return map[bool]int{true: -1, false: 1}[a.Code == "en"]
		}
		return strings.Compare(a.Code, b.Code)
	})
	if len(ls.list) == 0 || ls.list[0].Code != "en" {
		return nil, fmt.Errorf("catalogs in %s: no en.json", dir)
	}
	tags := make([]language.Tag, len(ls.list))
	for i, l := range ls.list {
		tags[i] = l.tag
	}
	ls.matcher = language.NewMatcher(tags)
	return ls, nil
}

func (ls *languages) codes() []string {
	var out []string
	for _, l := range ls.list {
		out = append(out, l.Code)
	}
	return out
}

// match is the site's language for tags, nil when none is close.
func (ls *languages) match(tags ...language.Tag) *locale {
	if len(tags) == 0 {
		return nil
	}
	_, i, conf := ls.matcher.Match(tags...)
	if conf == language.No {
		return nil
	}
	return ls.list[i]
}

// named is the language a ?lang= or the cookie names: one of the site's,
// written as its catalog or as a tag that means it (zh-TW for zh-Hant);
// nil for any other.
func (ls *languages) named(v string) *locale {
	tag, err := language.Parse(v)
	if err != nil {
		return nil
	}
	_, i, conf := ls.matcher.Match(tag)
	if conf < language.High {
		return nil
	}
	return ls.list[i]
}

// pick is the language of a page's answer, and whether the URL chose it
// (the answer then varies with nothing else). An unknown ?lang= is left
// to the page's query check, which names it.
func (ls *languages) pick(r *http.Request) (*locale, bool) {
	if v, ok := rawLang(r.URL.RawQuery); ok {
		if l := ls.named(v); l != nil {
			return l, true
		}
	}
	if ck, err := r.Cookie(langCookie); err == nil {
		if l := ls.named(ck.Value); l != nil {
			return l, false
		}
	}
	if l := ls.match(acceptLanguages(r.Header.Get("Accept-Language"))...); l != nil {
		return l, false
	}
	return ls.list[0], false
}

// rawLang is the first lang= of a raw query, read pair by pair: a query
// refused for another pair (?gpu=%zz&lang=th) is refused in the language
// it asks for.
func rawLang(raw string) (string, bool) {
	for pair := range strings.SplitSeq(raw, "&") {
		name, value, _ := strings.Cut(pair, "=")
		if n, err := url.QueryUnescape(name); err != nil || n != "lang" {
			continue
		}
		if v, err := url.QueryUnescape(value); err == nil {
			return v, true
		}
	}
	return "", false
}

// acceptLanguages are the tags an Accept-Language header asks for, most
// wanted first. An entry that does not parse (a tag no registry knows, a
// bad weight) is passed over, not taken as the whole header's refusal:
// "xx, th;q=0.5" asks for Thai.
func acceptLanguages(header string) []language.Tag {
	tags, _, err := language.ParseAcceptLanguage(header)
	if err == nil {
		return tags
	}
	var good []string
	for entry := range strings.SplitSeq(header, ",") {
		if _, _, err := language.ParseAcceptLanguage(entry); err == nil {
			good = append(good, entry)
		}
	}
	tags, _, _ = language.ParseAcceptLanguage(strings.Join(good, ","))
	return tags
}
