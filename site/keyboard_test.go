//go:build browser

package site_test

import (
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestFormsWorkByKeyboard: the calculator's and the planner's forms are
// used with the keyboard alone, in Chromium: Tab reaches every control of
// the form in the order it is shown, each with a visible focus ring, and
// typing the answers and pressing Enter asks the question (the answer's
// URL holds what was typed, and the page answers it).
func TestFormsWorkByKeyboard(t *testing.T) {
	ctx := browser(t)
	e := newEnv(t, 0)
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	for _, page := range []struct {
		path  string
		typed map[string]string // name → what is typed into it (ArrowDown: the next option of a list)
		want  string            // what the answered page shows
	}{
		{"/calculator", map[string]string{"run_id": kb.ArrowDown, "context_tokens": "16384", "concurrency": "8"}, "table"},
		{"/planner", map[string]string{"context_tokens": "16384", "min_per_request_tok_s": "20", "users": "100"}, "table"},
	} {
		if err := browserDo(ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(srv.URL+page.path), chromedp.WaitVisible(chromedp.CSS(`main form`))); err != nil {
			t.Fatalf("%s: %v", page.path, err)
		}
		controls, err := browserRun(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('main form :is(input,select,button,textarea):not([type=hidden]):not([disabled])')].map(c => c.name || c.type)`))
		if err != nil {
			t.Fatal(err)
		}
		// Tab from the top of the page until focus leaves the form after its
		// last control, noting each control of the form reached.
		var reached []string
		for range 60 {
			if err := browserDo(ctx, chromedp.KeyEvent(kb.Tab)); err != nil {
				t.Fatal(err)
			}
			focus, err := browserRun(ctx, chromedp.Evaluate[focused](`(() => { const a = document.activeElement, s = getComputedStyle(a);
				return {inForm: !!a.closest('main form'), name: a.name || a.type || '', outline: s.outlineStyle === 'none' && s.boxShadow === 'none' ? '' : s.outlineStyle + ' ' + s.boxShadow} })()`))
			if err != nil {
				t.Fatal(err)
			}
			if focus.InForm {
				reached = append(reached, focus.Name)
				if focus.Outline == "" {
					t.Errorf("%s: %s has no visible focus ring", page.path, focus.Name)
				}
			} else if len(reached) > 0 {
				break
			}
		}
		if strings.Join(reached, ",") != strings.Join(controls, ",") {
			t.Errorf("%s: Tab reached %q, want every control in order %q", page.path, reached, controls)
		}
		// Type the question and press Enter in a field typed.
		var last string
		for name, v := range page.typed {
			sel := `main form [name="` + name + `"]`
			if _, err := browserRun(ctx, chromedp.Evaluate[bool](`(() => { const c = document.querySelector('`+sel+`'); c.focus(); if (c.select) c.select(); return true })()`)); err != nil {
				t.Fatalf("%s: focusing %s: %v", page.path, name, err)
			}
			if err := browserDo(ctx, chromedp.KeyEvent(v)); err != nil {
				t.Fatalf("%s: typing %s: %v", page.path, name, err)
			}
			if v != kb.ArrowDown {
				last = sel
			}
		}
		if err := browserDo(ctx, chromedp.Focus(chromedp.CSS(last)), chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(chromedp.CSS(`main `+page.want))); err != nil {
			t.Fatalf("%s: Enter did not answer: %v", page.path, err)
		}
		loc, err := browserRun(ctx, chromedp.Location())
		if err != nil {
			t.Fatal(err)
		}
		u, err := url.Parse(loc)
		if err != nil {
			t.Fatal(err)
		}
		for name, v := range page.typed {
			if got := u.Query().Get(name); got != v && (v != kb.ArrowDown || got == "") {
				t.Errorf("%s: after Enter the URL has %s=%q, want %q (%s)", page.path, name, got, v, loc)
			}
		}
		screenshot(t, ctx, "keyboard"+strings.ReplaceAll(page.path, "/", "-"))
	}
}

// focused is what TestFormsWorkByKeyboard reads of the focused element.
type focused struct {
	InForm  bool   `json:"inForm"`
	Name    string `json:"name"`
	Outline string `json:"outline"`
}
