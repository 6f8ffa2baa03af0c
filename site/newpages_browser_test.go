//go:build browser

package site_test

import (
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestNewPagesInBrowser opens the organizations, reports and benchmarks
// pages, the error page a mistyped path gets and the planner's refusal at
// 400 and 1280 px: none scrolls sideways, none writes to the console, and
// each has the navigation to the three.
func TestNewPagesInBrowser(t *testing.T) {
	ctx := browser(t)
	e := newEnv(t, 0)
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	errs := consoleErrors(t, ctx)
	for _, page := range []struct{ name, path string }{
		{"organizations", "/organizations"},
		{"reports", "/reports"},
		{"report-fastest", "/reports/fastest-per-gpu-16k-x8"},
		{"report-versions", "/reports/engine-version-changes"},
		{"report-cheapest", "/reports/cheapest-100-users-20-tok-s"},
		{"benchmarks", "/benchmarks"},
		{"benchmark-tool", "/benchmarks/vllm-bench"},
		{"benchmark-class", "/benchmarks/decode_at_depth?lang=th"},
		{"not-found", "/nonexistent"},
		{"planner-refused", "/planner?context_tokens=16384&min_per_request_tok_s=20&include_scaled_model=true"},
	} {
		for _, width := range []int64{400, 1280} {
			w := strconv.FormatInt(width, 10)
			if err := browserDo(ctx,
				chromedp.EmulateViewport(width, 900),
				chromedp.Navigate(srv.URL+page.path),
				chromedp.WaitVisible(chromedp.CSS(`main h1`)),
			); err != nil {
				t.Fatalf("%s at %s px: %v", page.path, w, err)
			}
			if dims, err := browserRun(ctx, chromedp.Evaluate[[]int](`[document.documentElement.scrollWidth, window.innerWidth]`)); err != nil || dims[0] > dims[1] {
				t.Errorf("%s at %s px scrolls sideways: %v wide (%v)", page.path, w, dims, err)
			}
			if n, err := browserRun(ctx, chromedp.Evaluate[int](`document.querySelectorAll('header nav a[href="/organizations"], header nav a[href="/reports"], header nav a[href="/benchmarks"]').length`)); err != nil || n != 3 {
				t.Errorf("%s: the navigation links %d of the three new pages (%v)", page.path, n, err)
			}
			screenshot(t, ctx, "newpages-"+page.name+"-"+w)
		}
	}
	for _, m := range errs() {
		if !strings.Contains(m.Text, "status of 404") && !strings.Contains(m.Text, "status of 400") { // the error pages asked for
			t.Errorf("console: %s (%s)", m, m.URL)
		}
	}
}

// TestWidgetSaysItsLimitsAndTouch: the widget opened on a question past
// the run's KV capacity says so in words; on a screen without hover its
// legend says to tap a cell, and choosing a cell asks it; a measured
// answer is labelled measured.
func TestWidgetSaysItsLimitsAndTouch(t *testing.T) {
	ctx := browser(t)
	e := newEnv(t, 0)
	n := e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090")
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	if err := browserDo(ctx,
		chromedp.EmulateViewport(400, 900),
		chromedp.Navigate(srv.URL+"/widget/calculator?run="+n.ID+"&context=16384&concurrency=200"),
		chromedp.WaitVisible(chromedp.CSS(`[data-out="limit"]`)),
	); err != nil {
		screenshot(t, ctx, "widget-limit-failed")
		t.Fatalf("no limit in words: %v", err)
	}
	if got := textOf(t, ctx, `[data-out="limit"]`); !strings.Contains(got, "No speed: 200 requests") || !strings.Contains(got, "at most 48 fit") {
		t.Errorf("the limit: %q", got)
	}
	screenshot(t, ctx, "widget-limit")
	// A screen with hover, then one without (a phone): matchMedia answers
	// so before the next grid is drawn, which choosing a cell draws.
	for i, touch := range []bool{false, true} {
		if _, err := browserRun(ctx, chromedp.Evaluate[bool](`(() => { const mm = window.__mm || (window.__mm = window.matchMedia.bind(window)); window.matchMedia = q => q === "(hover: none)" ? { matches: `+strconv.FormatBool(touch)+`, media: q } : mm(q); return true; })()`)); err != nil {
			t.Fatal(err)
		}
		if err := browserDo(ctx, chromedp.WaitVisible(chromedp.CSS(`[data-out="heatmap"] g.mxd-cell`))); err != nil {
			t.Fatalf("no grid: %v", err)
		}
		q, err := browserRun(ctx, chromedp.Evaluate[string](`(() => {
			const cells = document.querySelectorAll('[data-out="heatmap"] g.mxd-cell');
			cells[`+strconv.Itoa(i)+`].dispatchEvent(new MouseEvent("click", { bubbles: true }));
			return document.querySelector('[data-in="context"]').value + "x" + document.querySelector('[data-in="concurrency"]').value;
		})()`))
		if err != nil {
			t.Fatal(err)
		}
		if q == "16384x200" {
			t.Fatalf("choosing a cell asked nothing new: %s", q)
		}
		if err := browserDo(ctx, chromedp.WaitVisible(chromedp.CSS(`.mxd[data-query="`+q+`"] [data-drawn="`+q+`"] rect[data-chosen="true"]`))); err != nil {
			screenshot(t, ctx, "widget-touch-failed")
			t.Fatalf("the chosen cell %s was not asked: %v", q, err)
		}
		legend := textOf(t, ctx, `[data-out="heatmap"] p`)
		want, not := "Hover a cell", "Tap"
		if touch {
			want, not = "Tap a cell", "Hover"
		}
		if !strings.Contains(legend, want) || strings.Contains(legend, not) {
			t.Errorf("legend (touch %v): %q, want %q", touch, legend, want)
		}
		if shown, _ := browserRun(ctx, chromedp.Evaluate[bool](`!document.querySelector('[data-out="limit"]').hidden`)); shown {
			t.Errorf("the limit still shown after asking %s", q)
		}
	}
	screenshot(t, ctx, "widget-touch")
	// A measured cell: the value labelled measured, not a zero-width interval.
	if err := browserDo(ctx,
		chromedp.Navigate(srv.URL+"/widget/calculator?run="+n.ID+"&context=16384&concurrency=8"),
		chromedp.WaitVisible(chromedp.CSS(`.mxd[data-state="answered"]`)),
	); err != nil {
		t.Fatal(err)
	}
	if got := textOf(t, ctx, `[data-out="total"]`); !strings.Contains(got, "(measured)") {
		t.Errorf("a measured total: %q", got)
	}
}
