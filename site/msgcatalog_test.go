package site

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/msg"
)

// messageCatalog is the pages' catalogs as msg renders from them.
func messageCatalog(t *testing.T) msg.Catalog {
	t.Helper()
	langs, err := loadLanguages(pageFiles, "pages/locales")
	if err != nil {
		t.Fatal(err)
	}
	c := msg.Catalog{}
	for _, l := range langs.list {
		c[l.Code] = l.msgs
	}
	return c
}

// TestEveryCodeIsInTheCatalogs: each code the API says has an entry in
// every language, the English one its template, the others with the same
// placeholders; no entry names a code that is not declared.
func TestEveryCodeIsInTheCatalogs(t *testing.T) {
	c := messageCatalog(t)
	placeholder := regexp.MustCompile(`\{[a-z0-9_]+\}`)
	names := func(s string) []string {
		out := placeholder.FindAllString(s, -1)
		slices.Sort(out)
		return slices.Compact(out)
	}
	codes := msg.Codes()
	if len(codes) < 150 {
		t.Fatalf("only %d codes declared", len(codes))
	}
	for _, code := range codes {
		tpl, _ := msg.Template(code)
		if got := c["en"][msg.Key(code)]; got != tpl {
			t.Errorf("en %s is %q, its template %q", msg.Key(code), got, tpl)
		}
		for _, lang := range []string{"zh-Hant", "th"} {
			s, ok := c[lang][msg.Key(code)]
			switch {
			case !ok:
				t.Errorf("%s lacks %s", lang, msg.Key(code))
			case !slices.Equal(names(s), names(tpl)):
				t.Errorf("%s %s takes %v, the template %v", lang, msg.Key(code), names(s), names(tpl))
			}
		}
	}
	for lang, msgs := range c {
		for _, k := range slices.Sorted(maps.Keys(msgs)) {
			if code, ok := strings.CutPrefix(k, "msg."); ok && !slices.Contains(codes, code) {
				t.Errorf("%s has %s, a code the API does not say", lang, k)
			}
		}
	}
}

// TestEveryCodeRendersInEveryLanguage: each code, with a value for each
// parameter, renders in English, Traditional Chinese and Thai with no
// placeholder left, and the translations are not the English.
func TestEveryCodeRendersInEveryLanguage(t *testing.T) {
	c := messageCatalog(t)
	left := regexp.MustCompile(`\{[a-z0-9_]+\}`)
	for _, code := range msg.Codes() {
		tpl, _ := msg.Template(code)
		m := msg.Message{Code: code, Text: tpl}
		for i, name := range msg.Placeholders(tpl) {
			m.Params = append(m.Params, msg.Param{Name: name, Value: "«" + strings.Repeat("x", i+1) + "»"})
		}
		en := msg.Render(c, "en", m)
		for _, lang := range []string{"en", "zh-Hant", "th"} {
			got := msg.Render(c, lang, m)
			if left.MatchString(got) {
				t.Errorf("%s in %s leaves a placeholder: %q", code, lang, got)
			}
			for _, p := range m.Params {
				if !strings.Contains(got, p.Value) {
					t.Errorf("%s in %s drops %s: %q", code, lang, p.Name, got)
				}
			}
			if lang != "en" && got == en {
				t.Errorf("%s in %s is the English: %q", code, lang, got)
			}
		}
	}
}

// TestMethodClassesHaveLabels: each method class the API names (its value
// is the code) has a label in every language, the translations not the
// English.
func TestMethodClassesHaveLabels(t *testing.T) {
	c := messageCatalog(t)
	spec, err := api.GetSpec()
	if err != nil {
		t.Fatal(err)
	}
	classes := spec.Components.Schemas["MethodClass"].Value.Enum
	if len(classes) < 5 {
		t.Fatalf("method classes %v", classes)
	}
	for _, v := range classes {
		key := "method_class." + v.(string)
		en := c["en"][key]
		if en == "" {
			t.Errorf("en lacks %s", key)
		}
		for _, lang := range []string{"zh-Hant", "th"} {
			if s := c[lang][key]; s == "" || s == en {
				t.Errorf("%s %s is %q (en %q)", lang, key, s, en)
			}
		}
	}
}
