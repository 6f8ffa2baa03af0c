package site

import (
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestCatalogsHaveOneKeySet: every language has every message, with the
// same arguments; a message in one catalog and not another fails.
func TestCatalogsHaveOneKeySet(t *testing.T) {
	langs, err := loadLanguages(pageFiles, "pages/locales")
	if err != nil {
		t.Fatal(err)
	}
	if got := langs.codes(); !slices.Equal(got, []string{"en", "th", "zh-Hant"}) {
		t.Errorf("languages %v", got)
	}
	args := regexp.MustCompile(`\{\d+\}`)
	en := langs.list[0]
	for _, l := range langs.list[1:] {
		for _, k := range slices.Sorted(maps.Keys(en.msgs)) {
			m, ok := l.msgs[k]
			if !ok {
				t.Errorf("%s lacks %q, which en has", l.Code, k)
				continue
			}
			want, got := args.FindAllString(en.msgs[k], -1), args.FindAllString(m, -1)
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s %q takes %v, en's takes %v", l.Code, k, got, want)
			}
		}
		for k := range l.msgs {
			if _, ok := en.msgs[k]; !ok {
				t.Errorf("%s has %q, which en lacks", l.Code, k)
			}
		}
		if l.Name == "" || l.Name == en.Name {
			t.Errorf("%s: language.name %q", l.Code, l.Name)
		}
	}
}

// TestEveryMessageIsInTheCatalogs: each message the templates, the Go
// code and the widget ask for by key is in the catalogs.
func TestEveryMessageIsInTheCatalogs(t *testing.T) {
	langs, err := loadLanguages(pageFiles, "pages/locales")
	if err != nil {
		t.Fatal(err)
	}
	en := langs.list[0].msgs
	uses := map[string]*regexp.Regexp{
		".html": regexp.MustCompile(`[{(]\s*(?:t|th)\s+"([^"]+)"`),
		".go":   regexp.MustCompile(`\.(?:t|or)\("([^"]+)"`),
		".js":   regexp.MustCompile(`\bt\("([^"]+)"`),
	}
	n := 0
	check := func(name string, b []byte) {
		re := uses[filepath.Ext(name)]
		if re == nil || strings.HasSuffix(name, "_test.go") {
			return
		}
		for _, m := range re.FindAllSubmatch(b, -1) {
			key := string(m[1])
			if filepath.Ext(name) == ".js" {
				key = "widget." + key
			}
			n++
			if _, ok := en[key]; !ok && !strings.HasSuffix(key, ".") {
				t.Errorf("%s asks for %q, which the catalogs lack", name, key)
			}
		}
	}
	if err := fs.WalkDir(pageFiles, "pages", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := pageFiles.ReadFile(path)
			check(path, b)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	gos, _ := filepath.Glob("*.go")
	for _, name := range gos {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		check(name, b)
	}
	if n < 200 {
		t.Errorf("only %d uses of messages found: the patterns miss some", n)
	}
	for _, prefix := range []string{"verdict.", "cell.verdict.", "status.", "metric.", "widget.status.", "widget.method.", "prefill.", "check."} {
		if !slices.ContainsFunc(slices.Collect(maps.Keys(en)), func(k string) bool { return strings.HasPrefix(k, prefix) }) {
			t.Errorf("no message for the values of %s", prefix)
		}
	}
}

func TestLanguageNamed(t *testing.T) {
	langs, err := loadLanguages(pageFiles, "pages/locales")
	if err != nil {
		t.Fatal(err)
	}
	for v, want := range map[string]string{"en": "en", "th": "th", "zh-Hant": "zh-Hant", "zh-TW": "zh-Hant", "zh-hant-tw": "zh-Hant",
		"en-GB": "en", "th-TH": "th", "fr": "", "zh-CN": "", "": "", "x": "", "en_US": "en"} {
		got := ""
		if l := langs.named(v); l != nil {
			got = l.Code
		}
		if got != want {
			t.Errorf("named(%q) = %q, want %q", v, got, want)
		}
	}
}
