//go:build browser

package site_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// a11yPages is every page the accessibility and phone checks open, one
// line each. In a path, {fara} and {nemotron} are the seed runs
// ({nemotron-model} the latter's model, query-escaped), {old} and
// {new} two runs of a series, {disputed} a copy of {fara} its corroboration
// disputes, {host} another origin whose page embeds the
// widget in a 320 px column. ready is what the page shows once drawn;
// except names an axe rule the page may break, for a reason given here.
// Every page loads with nothing written to the console as an error and no
// resource failing to load, but for the page's own answer when it is an
// error page (name error-…).
var a11yPages = []struct{ name, path, ready, except string }{
	{"landing", "/", "table.runs", ""},
	{"landing-th", "/?lang=th", "table.runs", ""},
	{"run-fara", "/runs/{fara}", `svg[aria-labelledby="decode-title"]`, ""},
	{"run-nemotron", "/runs/{nemotron}", `svg[aria-labelledby="decode-title"]`, ""},
	{"run-disputed", "/runs/{disputed}", `svg[aria-labelledby="decode-title"]`, ""},
	{"run-series", "/runs/{new}", `svg[aria-labelledby="series-title series-desc"]`, ""},
	{"leaderboard", "/leaderboard", "main", ""},
	{"leaderboard-cell", "/leaderboard?context_tokens=16384&concurrency=8", "table.runs", ""},
	{"leaderboard-hint", "/leaderboard?context_tokens=20000&concurrency=3", ".hint", ""},
	{"leaderboard-predicted", "/leaderboard?context_tokens=20000&concurrency=6&predicted=true", "table.runs", ""},
	{"compare", "/compare?run_ids={old},{new}", `svg[aria-labelledby="ratio-title"]`, ""},
	// Redoc's code samples are <pre> boxes that scroll and that Redoc does
	// not make focusable (Chromium lets the keyboard scroll them anyway).
	{"docs", "/docs", ".redoc-wrap", "scrollable-region-focusable"},
	{"widget", "/widget/calculator?run={fara}", `.mxd[data-state="answered"]`, ""},
	{"widget-dark", "/widget/calculator?run={fara}&theme=dark", `.mxd[data-state="answered"]`, ""},
	{"widget-embedded", "{host}/", `.mxd[data-state="answered"]`, ""},
	{"widget-model-gpu", "/widget/calculator?model={nemotron-model}&gpu=RTX%203090", `.mxd[data-state="answered"] [data-drawn] rect`, ""},
	{"error-400", "/?gpu=%zz", "main", ""},
	{"models", "/models", "main", ""},
	{"model", "/models/LeaderboardModel1/Fara1.5-4B-AutoRound-W4A16-RTN", "main", ""},
	{"hardware", "/hardware", "main", ""},
	{"gpu", "/hardware/3090", "main", ""},
	{"submitter", "/submitters/Sandberg", "main", ""},
	{"calculator", "/calculator?run_id={fara}&context_tokens=16384&concurrency=8", "main", ""},
	{"planner", "/planner?context_tokens=16384&min_per_request_tok_s=30&users=100", "main", ""},
	{"getting-started", "/getting-started", "main", ""},
	{"organizations", "/organizations", "table.runs", ""},
	{"reports", "/reports", "main", ""},
	{"report-fastest", "/reports/fastest-per-gpu-16k-x8", "table.runs", ""},
	{"report-versions", "/reports/engine-version-changes", "main", ""},
	{"report-cheapest", "/reports/cheapest-100-users-20-tok-s", "main", ""},
	{"benchmarks", "/benchmarks", "main", ""},
	{"benchmark-tool", "/benchmarks/llama-batched-bench", "main", ""},
	{"benchmark-class", "/benchmarks/serving_sweep?lang=zh-Hant", "main", ""},
	{"error-404", "/nonexistent", "main", ""},
	{"error-docs-lang", "/docs?lang=th", "main", ""},
	{"error-planner-refused", "/planner?context_tokens=16384&min_per_request_tok_s=20&include_scaled_model=true", "form", ""},
	{"calculator-limit", "/calculator?run_id={nemotron}&context_tokens=16384&concurrency=200", "main", ""},
}

// axeRequired are the milder axe rules every page must pass as well: one
// main landmark and a level-one heading, which a screen reader's reader
// jumps to.
var axeRequired = map[string]bool{"landmark-one-main": true, "page-has-heading-one": true}

// axeSource is the pinned axe-core that testdata/axe/fetch.sh copies from
// npm, checked against the sum that script pins.
func axeSource(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("testdata/axe/axe.min.js")
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile("testdata/axe/fetch.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^script_sha256=([0-9a-f]{64})$`).FindSubmatch(script)
	if m == nil {
		t.Fatal("testdata/axe/fetch.sh pins no script_sha256")
	}
	if sum := sha256.Sum256(src); hex.EncodeToString(sum[:]) != string(m[1]) {
		t.Fatal("testdata/axe/axe.min.js is not the file testdata/axe/fetch.sh pins: run it")
	}
	return string(src)
}

// axeViolation is what axe.run reports of one rule a page breaks.
type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target  []any  `json:"target"`
		Summary string `json:"failureSummary"`
	} `json:"nodes"`
}

func (v axeViolation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s): %s", v.ID, v.Impact, v.Help)
	for i, n := range v.Nodes {
		if i == 8 {
			fmt.Fprintf(&b, "\n\t\t… %d more", len(v.Nodes)-i)
			break
		}
		fmt.Fprintf(&b, "\n\t\t%v: %s", n.Target, strings.ReplaceAll(n.Summary, "\n", " "))
	}
	return b.String()
}

// Phone checks, each a script giving the offenders as strings.
const (
	// sideways: the page is wider than the window.
	sidewaysJS = `(d => d.scrollWidth <= d.clientWidth ? [] : [d.scrollWidth + " px wide in " + d.clientWidth].concat(
		Array.from(document.body.querySelectorAll('*'))
			.filter(el => el.getBoundingClientRect().right > d.clientWidth && el.parentElement.getBoundingClientRect().right <= d.clientWidth)
			.slice(0, 5).map(el => el.tagName.toLowerCase() + "." + el.className + " ends at " + Math.round(el.getBoundingClientRect().right))))(document.documentElement)`
	// smallTargets: links, buttons and fields of the header, navigation
	// and forms smaller than 44 × 44 px; a link inside running text is
	// allowed to be the size of its line.
	smallTargetsJS = `Array.from(document.querySelectorAll(
		'header a, header button, nav a, form a, form button, form input:not([type=hidden]), form select, .mxd button, .mxd input, .mxd select'))
	.filter(el => el.offsetParent !== null && !el.closest('p, li, td, figcaption, .sr-only'))
	.map(el => [el, (el.type == "checkbox" || el.type == "radio") && el.closest("label") || el])
	.map(([el, box]) => [el, box.getBoundingClientRect()])
	.filter(([el, r]) => r.width < 44 || r.height < 44)
	.map(([el, r]) => el.tagName.toLowerCase() + (el.name ? "[name=" + el.name + "]" : "") + " " + JSON.stringify((el.textContent || el.value || "").trim().slice(0, 30)) + " " + Math.round(r.width) + "×" + Math.round(r.height))`
	// widgetOverflows: the widget is wider than its 320 px column.
	widgetOverflowsJS = `Array.from(document.querySelectorAll('.column .mxd')).flatMap(w =>
		w.getBoundingClientRect().width > 320 || w.scrollWidth > w.clientWidth ? ["widget " + w.scrollWidth + " px wide in 320"] : [])`
)

// TestPagesAccessible opens every page of a11yPages in Chromium. At 400
// and 1280 px it runs axe-core and fails on each serious or critical
// violation and on a page without a main landmark or a level-one heading;
// at 360 and 400 px the page must not scroll sideways (wide
// tables and heatmaps scroll in their own box), the header's, navigation's
// and forms' targets must be at least 44 × 44 px, and the embedded widget
// must fit its 320 px column.
func TestPagesAccessible(t *testing.T) {
	ctx := browser(t)
	axe := axeSource(t)
	e := newEnv(t, 0)
	series := e.regressedSeries(t)
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	_, disputed := e.corroborate(t, fara)
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html lang="en"><head><meta name="viewport" content="width=device-width, initial-scale=1"><title>A blog about GPUs</title>
<style>body { margin: 0; font: 16px/1.5 sans-serif; } .column { width: 320px; max-width: 100%%; margin: 0 auto; }</style></head>
<body><main class="column"><h1>Will it fit on my card?</h1>
<div data-matrixd-calculator data-run="%s"></div>
<script src="%s/widget/calculator.js"></script>
</main></body></html>`, fara.ID, srv.URL)
	}))
	defer host.Close()
	ids := strings.NewReplacer(
		"{fara}", fara.ID,
		"{nemotron}", e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090").ID,
		"{nemotron-model}", url.QueryEscape(e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090").Model.Name),
		"{old}", series[1].ID,
		"{new}", series[2].ID,
		"{host}", host.URL,
		"{disputed}", disputed.ID,
	)
	consoled := consoleErrors(t, ctx)
	for _, p := range a11yPages {
		u := ids.Replace(p.path)
		if !strings.HasPrefix(u, host.URL) {
			u = srv.URL + u
		}
		for _, width := range []int64{360, 400, 1280} {
			at := p.name + " at " + strconv.FormatInt(width, 10) + " px"
			before := len(consoled())
			console := func() {
				for _, m := range consoled()[before:] {
					if strings.HasPrefix(p.name, "error-") && m.URL == u && strings.Contains(m.Text, "Failed to load resource") {
						continue // the error page's own status
					}
					t.Errorf("%s: console: %s (%s)", at, m, m.URL)
				}
			}
			if err := browserDo(ctx,
				chromedp.EmulateViewport(width, 900),
				chromedp.Navigate(u),
				chromedp.WaitVisible(chromedp.CSS(p.ready)),
			); err != nil {
				screenshot(t, ctx, "a11y-"+p.name+"-failed")
				t.Fatalf("%s: %v", at, err)
			}
			if width != 1280 {
				for what, js := range map[string]string{
					"scrolls sideways":           sidewaysJS,
					"has targets under 44 px":    smallTargetsJS,
					"overflows its 320 px space": widgetOverflowsJS,
				} {
					bad, err := browserRun(ctx, chromedp.Evaluate[[]string](js))
					if err != nil {
						t.Fatalf("%s: %v", at, err)
					}
					if len(bad) > 0 {
						t.Errorf("%s %s:\n\t%s", at, what, strings.Join(bad, "\n\t"))
					}
				}
			}
			if width == 360 {
				console()
				continue
			}
			if _, err := browserRun(ctx, chromedp.Evaluate[bool](axe+";true")); err != nil {
				t.Fatalf("%s: load axe: %v", at, err)
			}
			raw, err := browserRun(ctx, chromedp.Evaluate[string](
				`axe.run(document, {resultTypes: ["violations"]}).then(r => JSON.stringify(r.violations))`,
				chromedp.EvalAwaitPromise))
			if err != nil {
				t.Fatalf("%s: axe: %v", at, err)
			}
			var vs []axeViolation
			if err := json.Unmarshal([]byte(raw), &vs); err != nil {
				t.Fatal(err)
			}
			for _, v := range vs {
				if (v.Impact == "serious" || v.Impact == "critical" || axeRequired[v.ID]) && v.ID != p.except {
					t.Errorf("%s: %s", at, v)
				} else {
					t.Logf("%s: %s", at, v)
				}
			}
			console()
		}
		screenshot(t, ctx, "a11y-"+p.name)
	}
}
