package site_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// navRuns is the header's first link, in each language.
var navRuns = map[string]string{"en": `<a href="/">Runs</a>`, "zh-Hant": `<a href="/">測試結果</a>`, "th": `<a href="/">ผลการวัด</a>`}

func wantLanguage(t *testing.T, what string, rec *httptest.ResponseRecorder, lang string) {
	t.Helper()
	if rec.Code != http.StatusOK {
		t.Fatalf("%s: %d %.300s", what, rec.Code, rec.Body)
	}
	body := rec.Body.String()
	if got := rec.Header().Get("Content-Language"); got != lang {
		t.Errorf("%s: Content-Language %q, want %q", what, got, lang)
	}
	if !strings.Contains(body, `<html lang="`+lang+`">`) {
		t.Errorf("%s: no <html lang=%q>", what, lang)
	}
	if !strings.Contains(body, navRuns[lang]) {
		t.Errorf("%s: lacks %s", what, navRuns[lang])
	}
	for other, nav := range navRuns {
		if other != lang && strings.Contains(body, nav) {
			t.Errorf("%s: in %s, shows %s", what, lang, nav)
		}
	}
}

// TestPagesSpeakTheReadersLanguage: ?lang= first, then the switch's
// cookie, then Accept-Language, then English; each page says which and
// links itself in every language.
func TestPagesSpeakTheReadersLanguage(t *testing.T) {
	e := newEnv(t, 0)
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	for _, target := range []string{"/", "/runs/" + fara.ID, "/leaderboard", "/leaderboard?context_tokens=16384&concurrency=8", "/widget/calculator?run=" + fara.ID} {
		sep := "?"
		if strings.Contains(target, "?") {
			sep = "&"
		}
		for _, c := range []struct {
			name, target, lang string
			header             []string
		}{
			{"no preference", target, "en", nil},
			{"?lang=th", target + sep + "lang=th", "th", nil},
			{"?lang=zh-TW", target + sep + "lang=zh-TW", "zh-Hant", nil},
			{"Accept-Language zh-TW", target, "zh-Hant", []string{"Accept-Language", "zh-TW,zh;q=0.9,en;q=0.5"}},
			{"Accept-Language th", target, "th", []string{"Accept-Language", "th-TH"}},
			{"Accept-Language fr", target, "en", []string{"Accept-Language", "fr-FR"}},
			{"an unknown tag is passed over", target, "th", []string{"Accept-Language", "xx, th;q=0.5"}},
			{"a bad weight is passed over", target, "zh-Hant", []string{"Accept-Language", "th;q=abc, zh-TW;q=0.8"}},
			{"cookie over Accept-Language", target, "th", []string{"Accept-Language", "zh-TW", "Cookie", "lang=th"}},
			{"?lang= over cookie", target + sep + "lang=en", "en", []string{"Cookie", "lang=th"}},
			{"a bad cookie is no choice", target, "zh-Hant", []string{"Accept-Language", "zh-Hant", "Cookie", "lang=xx"}},
		} {
			rec := e.get(t, c.target, c.header...)
			if strings.HasPrefix(target, "/widget/") {
				if rec.Code != 200 || !strings.Contains(rec.Body.String(), `data-lang="`+c.lang+`"`) || rec.Header().Get("Content-Language") != c.lang {
					t.Errorf("%s %s: widget not in %s: %d %s", c.name, c.target, c.lang, rec.Code, rec.Header().Get("Content-Language"))
				}
				continue
			}
			wantLanguage(t, c.name+" "+c.target, rec, c.lang)
			body := rec.Body.String()
			for _, l := range []string{"en", "zh-Hant", "th", "x-default"} {
				if !strings.Contains(body, `<link rel="alternate" hreflang="`+l+`" href="`) {
					t.Errorf("%s: no alternate for %s", c.target, l)
				}
			}
			vary := strings.Join(rec.Header().Values("Vary"), ", ")
			byURL := strings.Contains(c.target, "lang=")
			if form := strings.Contains(body, `<form class="filters"`); form && byURL != strings.Contains(body, `<input type="hidden" name="lang" value="`+c.lang+`">`) {
				t.Errorf("%s %s: the form does not keep (only) the URL's lang", c.name, c.target)
			}
			if got := strings.Contains(vary, "Accept-Language") && strings.Contains(vary, "Cookie"); got == byURL {
				t.Errorf("%s %s: Vary %q", c.name, c.target, vary)
			}
		}
	}
}

// TestLanguageSwitchPersists: the header's switch keeps the choice in a
// cookie and goes back to the page, which then speaks it.
func TestLanguageSwitchPersists(t *testing.T) {
	e := newEnv(t, 0)
	home := e.get(t, "/leaderboard?context_tokens=16384&concurrency=8")
	link := `href="/language?back=%2Fleaderboard%3Fconcurrency%3D8%26context_tokens%3D16384&amp;lang=zh-Hant"`
	if !strings.Contains(home.Body.String(), link) {
		t.Fatalf("the header has no switch to zh-Hant (%s)", link)
	}
	rec := e.get(t, "/language?back=%2Fleaderboard%3Fconcurrency%3D8%26context_tokens%3D16384&lang=zh-Hant")
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/leaderboard?concurrency=8&context_tokens=16384" {
		t.Fatalf("switch: %d to %q", rec.Code, rec.Header().Get("Location"))
	}
	cookies := rec.Result().Cookies()
	if len(cookies) != 1 || cookies[0].Name != "lang" || cookies[0].Value != "zh-Hant" || cookies[0].MaxAge < 86400 || cookies[0].Path != "/" {
		t.Fatalf("switch set %v", cookies)
	}
	if cc := rec.Header().Get("Cache-Control"); cc != "no-store" {
		t.Errorf("switch: Cache-Control %q", cc)
	}
	for _, target := range []string{"/", "/leaderboard?concurrency=8&context_tokens=16384"} {
		wantLanguage(t, "after the switch "+target, e.get(t, target, "Cookie", cookies[0].String(), "Accept-Language", "th"), "zh-Hant")
	}
	for back, want := range map[string]string{"//evil.example/": "/", "https://evil.example/": "/", `/\evil.example`: "/", "/compare": "/compare"} {
		rec := e.get(t, "/language?lang=th&back="+strings.NewReplacer("/", "%2F", `\`, "%5C", ":", "%3A").Replace(back))
		if got := rec.Header().Get("Location"); got != want {
			t.Errorf("back %q: to %q, want %q", back, got, want)
		}
	}
	for _, target := range []string{"/language?lang=fr&back=%2F", "/language?back=%2F", "/language?lang=th&next=%2F"} {
		rec := e.get(t, target)
		if rec.Code != http.StatusBadRequest || len(rec.Result().Cookies()) != 0 {
			t.Errorf("%s: %d, cookies %v", target, rec.Code, rec.Result().Cookies())
		}
	}
}

// TestLanguagesAreCachedApart: one URL answered in two languages (by
// Accept-Language or cookie) gets two cached answers, each served again
// to its own language.
func TestLanguagesAreCachedApart(t *testing.T) {
	e := newEnv(t, 0)
	e.seed(t, "fara1.5-4b-autoround-rtx3060")
	etags := map[string]string{}
	for range 3 {
		for _, c := range []struct {
			lang   string
			header []string
		}{
			{"en", nil}, {"th", []string{"Accept-Language", "th"}}, {"zh-Hant", []string{"Cookie", "lang=zh-Hant"}},
			{"zh-Hant", []string{"Accept-Language", "zh-TW", "Accept-Encoding", "gzip"}},
		} {
			rec := e.get(t, "/", c.header...)
			if rec.Header().Get("Content-Encoding") == "gzip" {
				if rec.Header().Get("Content-Language") != c.lang {
					t.Errorf("gzip %s: Content-Language %q", c.lang, rec.Header().Get("Content-Language"))
				}
				continue
			}
			wantLanguage(t, "/ in "+c.lang, rec, c.lang)
			if old, ok := etags[c.lang]; ok && old != rec.Header().Get("ETag") {
				t.Errorf("%s: ETag changed from %s to %s", c.lang, old, rec.Header().Get("ETag"))
			}
			etags[c.lang] = rec.Header().Get("ETag")
		}
	}
	if etags["en"] == etags["th"] || etags["th"] == etags["zh-Hant"] {
		t.Errorf("one ETag for two languages: %v", etags)
	}
}

// TestLangIsThePagesOwn: lang is a page's parameter, not the API's; an
// unknown one is a 400 naming it, as any bad parameter.
func TestLangIsThePagesOwn(t *testing.T) {
	e := newEnv(t, 0)
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	for _, target := range []string{"/?lang=fr", "/runs/" + fara.ID + "?lang=zh-CN", "/leaderboard?context_tokens=16384&concurrency=8&lang=xx", "/widget/calculator?lang=klingon", "/compare?run_ids=" + fara.ID + "," + fara.ID + "&lang=de"} {
		rec := e.get(t, target, "Accept-Language", "th")
		if rec.Code != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", target, rec.Code)
			continue
		}
		body := rec.Body.String()
		if !strings.Contains(body, "<code>lang</code>") || !strings.Contains(body, "en, th, zh-Hant") {
			t.Errorf("%s: the 400 page does not name lang and the languages: %.2000s", target, body)
		}
		if !strings.Contains(body, `<html lang="th">`) {
			t.Errorf("%s: the 400 page is not in the reader's language", target)
		}
	}
	if rec := e.do(t, "GET", "/v1/runs?lang=en", nil); rec.Code != http.StatusBadRequest {
		t.Errorf("the API took lang: %d", rec.Code)
	}
	if rec := e.get(t, "/?lang=th&gpu=%zz"); rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "<code>gpu</code>") {
		t.Errorf("a bad parameter beside lang: %d", rec.Code)
	}
}

// TestWidgetScriptCarriesTheCatalogs: the widget speaks each language
// without another request.
func TestWidgetScriptCarriesTheCatalogs(t *testing.T) {
	e := newEnv(t, 0)
	js := e.get(t, "/widget/calculator.js").Body.String()
	// The API's messages its answers hold, by code: a refusal, a problem.
	for _, want := range []string{`"zh-Hant":{`, `"th":{`, `"en":{`, "解碼速度計算器", "เครื่องคำนวณความเร็ว decode",
		`"msg.calculator.context_beyond_longest":"上下文`, `"msg.problem.param_at_least":"ตัวเลข`} {
		if !strings.Contains(js, want) {
			t.Errorf("calculator.js lacks %s", want)
		}
	}
	if strings.Contains(js, "var MESSAGES = {};") {
		t.Error("calculator.js has no messages")
	}
}
