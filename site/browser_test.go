//go:build browser

package site_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browser starts Debian's Chromium for a test. Without one the test skips,
// unless MATRIXD_REQUIRE_BROWSER is set (CI sets it), which makes a missing
// browser a failure.
func browser(t *testing.T) context.Context {
	t.Helper()
	bin := os.Getenv("MATRIXD_CHROMIUM")
	if bin == "" {
		for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
			if p, err := exec.LookPath(name); err == nil {
				bin = p
				break
			}
		}
	}
	if bin == "" {
		if os.Getenv("MATRIXD_REQUIRE_BROWSER") != "" {
			t.Fatal("no Chromium found and MATRIXD_REQUIRE_BROWSER is set: apt-get install -y chromium")
		}
		t.Skip("no Chromium found (apt-get install -y chromium); browser tests skipped")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelB(); cancelA() })
	// The first run starts Chromium and binds its life to its context, so
	// it has no timeout of its own (go test's -timeout bounds it).
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return ctx
}

// browserStep bounds one step in the browser: a navigation and what it
// waits for, a script, a screenshot. A test has no budget as a whole, as
// its time grows with its pages and with the machine's other work; a step
// that hangs still fails, naming itself, long before go test's -timeout.
// A step takes about a second on an idle two-core machine.
const browserStep = 3 * time.Minute

// browserDo runs steps in the tab of ctx (from browser) within browserStep.
func browserDo(ctx context.Context, steps ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(ctx, browserStep)
	defer cancel()
	return chromedp.Do(ctx, steps...)
}

// browserRun runs an action that gives a value, as browserDo.
func browserRun[T any](ctx context.Context, a chromedp.Action[T]) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, browserStep)
	defer cancel()
	return chromedp.Run(ctx, a)
}

// screenshot writes a full-page PNG where a person can look at it:
// MATRIXD_SCREENSHOTS, or a matrixd-screenshots folder in the temp dir.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("MATRIXD_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "matrixd-screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	png, err := browserRun(ctx, chromedp.FullScreenshot(100) /* 100: PNG */)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// textOf is the visible text of the first element sel matches.
func textOf(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := browserRun(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// fire dispatches a change event from an input, as a person's edit does.
func fire(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Evaluate[bool](`document.querySelector('`+sel+`').dispatchEvent(new Event('change', {bubbles: true}))`)(ctx, tg)
		return err
	})
}

// numbersIn reads the numbers of a widget output ("1,279 tok/s (…)").
var firstNumber = regexp.MustCompile(`-?\d[\d,]*(\.\d+)?`)

func numbersIn(t *testing.T, s string) []float64 {
	t.Helper()
	var out []float64
	for _, m := range firstNumber.FindAllString(s, -1) {
		v, err := strconv.ParseFloat(strings.ReplaceAll(m, ",", ""), 64)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// TestWidgetOnAnotherOrigin embeds the calculator widget in a page served
// from another origin, changes its inputs as a person would and checks
// that the numbers it shows are the API's answer to the same query.
func TestWidgetOnAnotherOrigin(t *testing.T) {
	ctx := browser(t)
	e := newEnv(t, 0)
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	api := httptest.NewServer(e.h)
	defer api.Close()
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html lang="en"><head><title>A blog about GPUs</title></head><body>
<h1>Will it fit on my card?</h1>
<div data-matrixd-calculator data-run="%s" data-context="16384" data-concurrency="8"></div>
<script src="%s/widget/calculator.js"></script>
</body></html>`, fara.ID, api.URL)
	}))
	defer host.Close()
	if host.URL == api.URL {
		t.Fatal("the host page must be on another origin")
	}

	answer := func(q url.Values) (int, map[string]any) {
		t.Helper()
		q.Set("run_id", fara.ID)
		resp, err := http.Get(api.URL + "/v1/calculator/decode?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, body
	}
	shown := func(key string) string {
		return textOf(t, ctx, `[data-out="`+key+`"]`)
	}
	// same: the widget writes numbers for people, three significant
	// digits below a hundred, whole numbers from there.
	same := func(what string, got string, want map[string]any) {
		t.Helper()
		nums := numbersIn(t, got)
		if want == nil {
			if got != "—" {
				t.Errorf("%s shows %q, the API gives none", what, got)
			}
			return
		}
		wantNums := []float64{want["value"].(float64), want["low"].(float64), want["high"].(float64)}
		if strings.HasSuffix(got, "(measured)") { // a measured value, labelled so rather than as an interval
			wantNums = wantNums[:1]
		}
		if len(nums) != len(wantNums) {
			t.Fatalf("%s shows %q, want value (low–high), or value (measured)", what, got)
		}
		for i := range nums {
			digits := 0.0
			if a := math.Abs(wantNums[i]); a > 0 && a < 100 {
				digits = 2 - math.Floor(math.Log10(a))
			}
			if math.Abs(nums[i]-wantNums[i]) > 0.51*math.Pow(10, -digits) {
				t.Errorf("%s shows %q, the API says %v", what, got, wantNums)
				break
			}
		}
	}
	obj := func(m map[string]any, k string) map[string]any {
		v, _ := m[k].(map[string]any)
		return v
	}

	if err := browserDo(ctx,
		chromedp.Navigate(host.URL),
		chromedp.WaitVisible(chromedp.CSS(`.mxd[data-query="16384x8"]`)),
	); err != nil {
		t.Fatalf("the widget did not answer on the host page: %v", err)
	}
	for _, step := range []struct{ context, concurrency, vram, targetGPU string }{
		{"16384", "8", "", ""},         // measured
		{"49152", "6", "", ""},         // interpolated
		{"16384", "24", "16", ""},      // extrapolated on another VRAM size
		{"16384", "8", "", "RTX 3090"}, // scaled to another GPU
	} {
		name := strings.Join([]string{step.context, step.concurrency, step.vram, step.targetGPU}, "/")
		// The GPUs to scale to are listed once the hardware catalog has
		// come: a value set before its option exists is not taken.
		if step.targetGPU != "" {
			if err := browserDo(ctx, chromedp.WaitReady(chromedp.CSS(`[data-in="target-gpu"] option[value="`+step.targetGPU+`"]`))); err != nil {
				t.Fatalf("%s: %s is not offered: %v", name, step.targetGPU, err)
			}
		}
		// The widget marks its box with the query it answered once it has
		// written that answer; the mark is taken off first, as a change of
		// VRAM or GPU leaves the same query, so the wait is for this answer.
		if err := browserDo(ctx,
			chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				_, err := chromedp.Evaluate[bool](`document.querySelector('.mxd').removeAttribute('data-query'), true`)(ctx, tg)
				return err
			}),
			chromedp.SetValue(chromedp.CSS(`[data-in="context"]`), step.context),
			chromedp.SetValue(chromedp.CSS(`[data-in="concurrency"]`), step.concurrency),
			chromedp.SetValue(chromedp.CSS(`[data-in="vram"]`), step.vram),
			chromedp.SetValue(chromedp.CSS(`[data-in="target-gpu"]`), step.targetGPU),
			fire(`[data-in="concurrency"]`),
			chromedp.WaitVisible(chromedp.CSS(`.mxd[data-query="`+step.context+"x"+step.concurrency+`"]`)),
			chromedp.WaitVisible(chromedp.CSS(`rect[data-chosen="true"]`)),
		); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		q := url.Values{"context_tokens": {step.context}, "concurrency": {step.concurrency}}
		if step.vram != "" {
			q.Set("vram_gb", step.vram)
		}
		if step.targetGPU != "" {
			q.Set("target_gpu", step.targetGPU)
		}
		code, want := answer(q)
		if code != http.StatusOK {
			t.Fatalf("%s: the API answered %d: %v", name, code, want)
		}
		same(name+" total", shown("total"), obj(want, "total_tok_s"))
		same(name+" per request", shown("per-request"), obj(want, "per_request_tok_s"))
		same(name+" TTFT", shown("ttft"), obj(want, "ttft_ms"))
		if got, want := shown("status"), strings.ReplaceAll(want["status"].(string), "_", " "); got != want {
			t.Errorf("%s status %q, the API says %q", name, got, want)
		}
		if got, want := shown("basis"), obj(want, "basis")["method"].(string); !strings.HasPrefix(got, want) {
			t.Errorf("%s basis %q, the API says %q", name, got, want)
		}
		if raw := rawNumbers(textOf(t, ctx, `.mxd`)); len(raw) > 0 {
			t.Errorf("%s: the widget writes numbers not for people: %q", name, raw)
		}
	}
	screenshot(t, ctx, "widget-on-another-origin")

	// A question the data does not support shows the API's reason.
	if err := browserDo(ctx,
		chromedp.SetValue(chromedp.CSS(`[data-in="target-gpu"]`), ""),
		chromedp.SetValue(chromedp.CSS(`[data-in="vram"]`), ""),
		chromedp.SetValue(chromedp.CSS(`[data-in="context"]`), "200000"),
		chromedp.SetValue(chromedp.CSS(`[data-in="concurrency"]`), "1"),
		fire(`[data-in="context"]`),
		chromedp.WaitVisible(chromedp.CSS(`.mxd[data-state="refused"] [data-out="refusal"]`)),
	); err != nil {
		screenshot(t, ctx, "widget-refusal-failed")
		t.Fatalf("refusal: %v", err)
	}
	code, want := answer(url.Values{"context_tokens": {"200000"}, "concurrency": {"1"}})
	if code != http.StatusUnprocessableEntity {
		t.Fatalf("the API answered %d to 200000 tokens", code)
	}
	// Said from its code, its numbers grouped as the widget writes them.
	bare := func(s string) string { return strings.ReplaceAll(s, ",", "") }
	if got := shown("refusal"); !strings.Contains(bare(got), bare(want["detail"].(string))) || !strings.Contains(bare(got), bare(want["supported"].(string))) {
		t.Errorf("refusal shows %q, want the API's %q and %q", got, want["detail"], want["supported"])
	}
	screenshot(t, ctx, "widget-refusal")

	// In Traditional Chinese the refusal is said in it, not in the API's
	// English.
	if err := browserDo(ctx,
		chromedp.Navigate(api.URL+"/widget/calculator?lang=zh-Hant&run="+fara.ID+"&context=200000&concurrency=1"),
		chromedp.WaitVisible(chromedp.CSS(`.mxd[data-state="refused"] [data-out="refusal"]`)),
	); err != nil {
		screenshot(t, ctx, "widget-refusal-zh-failed")
		t.Fatalf("refusal in zh-Hant: %v", err)
	}
	if got := textOf(t, ctx, `[data-out="refusal"]`); len(englishRuns(got)) > 0 || !strings.Contains(got, "上下文") {
		t.Errorf("the refusal in zh-Hant reads %q: English %q", got, englishRuns(got))
	}
	screenshot(t, ctx, "widget-refusal-zh")
}

// TestRunPagesShowEveryCell opens each seed run's page in the browser: every
// decode and prefill value as published is on it, and the heatmap has a
// cell per decode cell.
func TestRunPagesShowEveryCell(t *testing.T) {
	ctx := browser(t)
	e := newEnv(t, 0)
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	for name, r := range e.seeds {
		if err := browserDo(ctx,
			chromedp.Navigate(srv.URL+"/runs/"+r.ID),
			chromedp.WaitVisible(chromedp.CSS(`svg[aria-labelledby="decode-title"]`)),
		); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		text := textOf(t, ctx, `body`)
		rects, err := browserRun(ctx, chromedp.Evaluate[int](`document.querySelectorAll('svg[aria-labelledby="decode-title"] rect').length`))
		if err != nil {
			t.Fatal(err)
		}
		if rects != len(r.Decode) {
			t.Errorf("%s: %d heatmap cells, %d decode cells", name, rects, len(r.Decode))
		}
		for _, want := range []string{r.Title, r.Hardware.GPU, r.Launch.Command} {
			if !strings.Contains(text, want) {
				t.Errorf("%s: the page lacks %q", name, want)
			}
		}
		// Each value is shown for people (93.7, 1,273) and kept exactly, as
		// published, in its cell's <data value>.
		kept, err := browserRun(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('table.cells data')).map(d => d.value)`))
		if err != nil {
			t.Fatal(err)
		}
		values := func(vs ...*float64) {
			for _, v := range vs {
				if v != nil && !slices.Contains(kept, strconv.FormatFloat(*v, 'f', -1, 64)) {
					t.Errorf("%s: the page lacks the value %v", name, *v)
				}
			}
		}
		for _, c := range r.Decode {
			values(c.TotalTokS, c.PerRequestTokS, c.TTFTMs, c.TBTMs, c.AvgActiveRequests, c.DurationS)
			if c.OutputTokens != nil && !slices.Contains(kept, strconv.Itoa(*c.OutputTokens)) {
				t.Errorf("%s: the page lacks output tokens %d", name, *c.OutputTokens)
			}
		}
		for _, c := range r.Prefill {
			values(c.PromptTokS, c.TTFTMs)
		}
		if raw := rawNumbers(text); len(raw) > 0 {
			t.Errorf("%s: numbers not written for people: %q", name, raw)
		}
		// The prefill chart's axis titles and labels are drawn inside it,
		// none over another, with a scale of more than one label.
		drawn, err := browserRun(ctx, chromedp.Evaluate[[]string](`(() => {
			const svg = document.querySelector('svg[aria-labelledby="prefill-title"]'), box = svg.getBoundingClientRect();
			const texts = Array.from(svg.querySelectorAll('text')), out = [];
			texts.forEach((el, i) => {
				const r = el.getBoundingClientRect();
				if (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5) out.push(el.textContent + " outside the chart");
				texts.slice(i + 1).forEach(o => {
					const q = o.getBoundingClientRect();
					if (r.left < q.right - 1 && q.left < r.right - 1 && r.top < q.bottom - 1 && q.top < r.bottom - 1) out.push(el.textContent + " over " + o.textContent);
				});
			});
			return out.concat(texts.filter(el => el.classList.contains('axistitle')).map(el => "title " + el.textContent),
				texts.filter(el => el.getAttribute('text-anchor') === 'end').map(el => "y " + el.textContent));
		})()`))
		if err != nil {
			t.Fatalf("%s: prefill chart: %v", name, err)
		}
		titles, ys := 0, 0
		for _, d := range drawn {
			switch {
			case strings.HasPrefix(d, "title "):
				titles++
			case strings.HasPrefix(d, "y "):
				ys++
			default:
				t.Errorf("%s: prefill chart: %s", name, d)
			}
		}
		if titles != 2 || ys < 3 {
			t.Errorf("%s: prefill chart has %d axis titles and %d y labels: %q", name, titles, ys, drawn)
		}
		screenshot(t, ctx, "run-"+name)
	}
}

// TestPagesInBrowser renders the landing page and the leaderboard with a
// hint, and follows a link from one to a run page.
func TestPagesInBrowser(t *testing.T) {
	ctx := browser(t)
	e := newEnv(t, 0)
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	if err := browserDo(ctx,
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS(`table.runs`)),
	); err != nil {
		t.Fatal(err)
	}
	text := textOf(t, ctx, `table.runs`)
	for _, r := range e.seeds {
		if !strings.Contains(text, r.Title) {
			t.Errorf("landing page lacks %q", r.Title)
		}
	}
	screenshot(t, ctx, "landing")
	if err := browserDo(ctx,
		chromedp.Click(chromedp.CSS(`table.runs a`)),
		chromedp.WaitVisible(chromedp.CSS(`svg[aria-labelledby="decode-title"]`)),
	); err != nil {
		t.Fatal(err)
	}
	title, err := browserRun(ctx, chromedp.Title())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(title, "· matrixd") {
		t.Errorf("run page title %q", title)
	}
	if err := browserDo(ctx,
		chromedp.Navigate(srv.URL+"/leaderboard?context_tokens=20000&concurrency=3"),
		chromedp.WaitVisible(chromedp.CSS(`.hint`)),
	); err != nil {
		t.Fatal(err)
	}
	text = textOf(t, ctx, `.hint`)
	if !strings.Contains(text, "Contexts measured: 0, 16K, 32K") || !strings.Contains(text, "At 16K, the nearest") {
		t.Errorf("leaderboard hint %q", text)
	}
	screenshot(t, ctx, "leaderboard-hint")
	if err := browserDo(ctx,
		chromedp.Navigate(srv.URL+"/leaderboard?context_tokens=16384&concurrency=8"),
		chromedp.WaitVisible(chromedp.CSS(`table.runs`)),
	); err != nil {
		t.Fatal(err)
	}
	text = textOf(t, ctx, `table.runs tbody`)
	if strings.Count(text, "\n")+1 < 2 {
		t.Errorf("leaderboard at 16K × 8 lists %q, want both seeds", text)
	}
	screenshot(t, ctx, "leaderboard")
}

// consoleErrors collects the errors and uncaught exceptions the page
// writes to its console (a blocked or failed resource among them) until
// the test ends; the returned func reads them.
func consoleErrors(t *testing.T, ctx context.Context) func() []chromedp.ConsoleMessage {
	t.Helper()
	cctx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	var (
		mu   sync.Mutex
		errs []chromedp.ConsoleMessage
	)
	messages := chromedp.Console(cctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				mu.Lock()
				errs = append(errs, m)
				mu.Unlock()
			}
		}
	}()
	return func() []chromedp.ConsoleMessage {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(errs)
	}
}

// TestSeriesPagesInBrowser opens a run page with a series and the
// comparison of its regressed step at 400 and 1280 px: the chart and the
// heatmap are drawn, the page never scrolls sideways (the heatmap scrolls
// in its own box), nothing is written to the console as an error, and the
// chart's comparison link leads to the comparison.
func TestSeriesPagesInBrowser(t *testing.T) {
	ctx := browser(t)
	e := newEnv(t, 0)
	runs := e.regressedSeries(t)
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	errs := consoleErrors(t, ctx)
	pageWidth := `[document.documentElement.scrollWidth, window.innerWidth]`
	for _, width := range []int64{400, 1280} {
		w := strconv.FormatInt(width, 10)
		if err := browserDo(ctx,
			chromedp.EmulateViewport(width, 900),
			chromedp.Navigate(srv.URL+"/runs/"+runs[2].ID),
			chromedp.WaitVisible(chromedp.CSS(`svg[aria-labelledby="series-title series-desc"]`)),
		); err != nil {
			t.Fatalf("run page at %s px: %v", w, err)
		}
		lines, err := browserRun(ctx, chromedp.Evaluate[int](`document.querySelectorAll('svg[aria-labelledby="series-title series-desc"] polyline').length`))
		if err != nil || lines < 3 {
			t.Errorf("run page at %s px: %d lines in the chart (%v)", w, lines, err)
		}
		if marked, err := browserRun(ctx, chromedp.Evaluate[string](`document.querySelector('svg[aria-labelledby="series-title series-desc"] g.regressed text').textContent`)); err != nil || !strings.Contains(marked, "regressed") {
			t.Errorf("run page at %s px: the regressed step is not marked: %q (%v)", w, marked, err)
		}
		if dims, err := browserRun(ctx, chromedp.Evaluate[[]int](pageWidth)); err != nil || dims[0] > dims[1] {
			t.Errorf("run page at %s px scrolls sideways: %v wide (%v)", w, dims, err)
		}
		if box, err := browserRun(ctx, chromedp.Evaluate[int](`Math.round(document.querySelector('.series-chart svg').getBoundingClientRect().width)`)); err != nil || box > int(width) {
			t.Errorf("run page at %s px: the chart is %d px wide (%v)", w, box, err)
		}
		screenshot(t, ctx, "series-run-"+w)

		if err := browserDo(ctx,
			chromedp.Click(chromedp.CSS(`table.steps tr.regressed a`)),
			chromedp.WaitVisible(chromedp.CSS(`svg[aria-labelledby="ratio-title"]`)),
		); err != nil {
			t.Fatalf("compare page at %s px: %v", w, err)
		}
		if u, err := browserRun(ctx, chromedp.Location()); err != nil || !strings.HasSuffix(u, "/compare?run_ids="+runs[1].ID+","+runs[2].ID) {
			t.Errorf("the regressed step links %s (%v)", u, err)
		}
		cells, err := browserRun(ctx, chromedp.Evaluate[int](`document.querySelectorAll('svg[aria-labelledby="ratio-title"] g.cell').length`))
		if err != nil || cells == 0 {
			t.Errorf("compare page at %s px: %d heatmap cells (%v)", w, cells, err)
		}
		if v := textOf(t, ctx, `#verdict`); !strings.Contains(v, "regressed") {
			t.Errorf("compare page at %s px: verdict %q", w, v)
		}
		if dims, err := browserRun(ctx, chromedp.Evaluate[[]int](pageWidth)); err != nil || dims[0] > dims[1] {
			t.Errorf("compare page at %s px scrolls sideways: %v wide (%v)", w, dims, err)
		}
		if width == 400 {
			inner, err := browserRun(ctx, chromedp.Evaluate[[]int](`(b => [b.scrollWidth, b.clientWidth])(document.querySelector('.heatbox'))`))
			if err != nil || inner[0] <= inner[1] {
				t.Errorf("at 400 px the heatmap should scroll in its box: %v (%v)", inner, err)
			}
		}
		screenshot(t, ctx, "series-compare-"+w)
	}
	if got := errs(); len(got) > 0 {
		t.Errorf("console errors: %v", got)
	}
}

// TestWidgetSpeaksItsLanguage: the widget in Traditional Chinese and in
// Thai, by its page's lang and by data-lang on another site's page, labels
// and numbers in that language.
func TestWidgetSpeaksItsLanguage(t *testing.T) {
	ctx := browser(t)
	e := newEnv(t, 0)
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html lang="en"><head><title>บล็อก</title></head><body>
<div data-matrixd-calculator data-run="%s" data-lang="th-TH"></div>
<script src="%s/widget/calculator.js"></script></body></html>`, fara.ID, srv.URL)
	}))
	defer host.Close()
	for _, c := range []struct{ url, title, status string }{
		{srv.URL + "/widget/calculator?lang=zh-Hant&run=" + fara.ID, "解碼速度計算器", "狀態"},
		{host.URL, "เครื่องคำนวณความเร็ว decode", "สถานะ"},
	} {
		if err := browserDo(ctx, chromedp.Navigate(c.url), chromedp.WaitVisible(chromedp.CSS(`.mxd[data-state="answered"]`))); err != nil {
			t.Fatalf("%s: %v", c.url, err)
		}
		if got := textOf(t, ctx, `.mxd :is(h1, h2)`); got != c.title {
			t.Errorf("%s: title %q, want %q", c.url, got, c.title)
		}
		if got := textOf(t, ctx, `.mxd dt`); got != c.status {
			t.Errorf("%s: first output %q, want %q", c.url, got, c.status)
		}
		if raw := rawNumbers(textOf(t, ctx, `.mxd`)); len(raw) > 0 {
			t.Errorf("%s: numbers not for people: %q", c.url, raw)
		}
		screenshot(t, ctx, "widget-"+map[bool]string{true: "zh-Hant", false: "th"}[c.url != host.URL])
	}
}

// TestWidgetAnswersWhatItAsks embeds the widget on another site's page in
// a 320 px column and asks what the other widget tests do not: a model on
// a GPU draws the heatmap of the run the answer names; an answer with no
// speed shows no error band; a context of 1,000,000 has a row label that
// fits; and each refusal's fix is written as the widget's own controls
// (the "Across generations" box), which then answers; a run that states
// no output reservation answers its speed, its capacity a dash that names
// the max output tokens input.
func TestWidgetAnswersWhatItAsks(t *testing.T) {
	ctx := browser(t)
	e := newEnv(t, 0)
	nemotron := e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090")
	noMaxOut := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	noMaxOut.Title, noMaxOut.Benchmark.MaxOutputTokens = "no max output", nil
	stored, _, err := e.st.CreateRun(context.Background(), noMaxOut)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	attrs := map[string]string{
		"/model":     fmt.Sprintf(`data-model="%s" data-gpu="RTX 3090"`, nemotron.Model.Name),
		"/run":       fmt.Sprintf(`data-run="%s"`, nemotron.ID),
		"/no-out":    fmt.Sprintf(`data-run="%s" data-context="0" data-concurrency="3"`, stored.ID),
		"/no-out-zh": fmt.Sprintf(`data-run="%s" data-context="0" data-concurrency="3" data-lang="zh-Hant"`, stored.ID),
	}
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html lang="en"><head><meta name="viewport" content="width=device-width, initial-scale=1"><title>A blog about GPUs</title>
<style>body { margin: 0; } .column { width: 320px; margin: 0 auto; }</style></head>
<body><main class="column"><h1>Will it fit?</h1><div data-matrixd-calculator %s></div>
<script src="%s/widget/calculator.js"></script></main></body></html>`, attrs[r.URL.Path], srv.URL)
	}))
	defer host.Close()
	errs := consoleErrors(t, ctx)
	ask := func(name, context, concurrency string) {
		t.Helper()
		q := context + "x" + concurrency
		if err := browserDo(ctx,
			chromedp.SetValue(chromedp.CSS(`[data-in="context"]`), context),
			chromedp.SetValue(chromedp.CSS(`[data-in="concurrency"]`), concurrency),
			fire(`[data-in="context"]`),
			chromedp.WaitVisible(chromedp.CSS(`.mxd[data-query="`+q+`"] [data-drawn="`+q+`"] rect[data-chosen="true"]`)),
		); err != nil {
			screenshot(t, ctx, "widget-"+name+"-failed")
			t.Fatalf("%s: %v", name, err)
		}
	}
	fits := func(what string) {
		t.Helper()
		if bad, err := browserRun(ctx, chromedp.Evaluate[[]string](widgetOverflowsJS)); err != nil || len(bad) > 0 {
			t.Errorf("%s: %v (%v)", what, bad, err)
		}
	}

	// A model on a GPU: the heatmap of the run the answer names.
	if err := browserDo(ctx,
		chromedp.EmulateViewport(360, 900),
		chromedp.Navigate(host.URL+"/model"),
		chromedp.WaitVisible(chromedp.CSS(`.mxd[data-state="answered"] [data-drawn="16384x8"] rect[data-chosen="true"]`)),
	); err != nil {
		screenshot(t, ctx, "widget-model-gpu-failed")
		t.Fatalf("model on a GPU: no heatmap: %v", err)
	}
	if cells, err := browserRun(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-out="heatmap"] rect').length`)); err != nil || cells < 16 {
		t.Errorf("model on a GPU: %d heatmap cells (%v), want the run's grid", cells, err)
	}
	if got := textOf(t, ctx, `[data-out="band"]`); got != "measured" {
		t.Errorf("a measured cell's band: %q", got)
	}
	fits("model on a GPU")
	screenshot(t, ctx, "widget-model-gpu")

	// Over capacity: no speed, so no error band.
	ask("no-speed", "16384", "64")
	if got := textOf(t, ctx, `[data-out="status"]`); got != "over capacity" {
		t.Fatalf("16K × 64: status %q, want over capacity", got)
	}
	if shown, err := browserRun(ctx, chromedp.Evaluate[[]bool](`['[data-out="band"]', '.mxd dt:nth-of-type(6)'].map(s => document.querySelector(s).offsetParent !== null)`)); err != nil || shown[0] || shown[1] {
		t.Errorf("an answer without speed shows an error band: %v (%v): %q", shown, err, textOf(t, ctx, `.mxd dl`))
	}
	screenshot(t, ctx, "widget-no-speed")

	// A context of 1,000,000: its row label is written for people and fits
	// left of the cells.
	ask("long-context", "1000000", "1")
	labels, err := browserRun(ctx, chromedp.Evaluate[[]string](`(() => {
		const svg = document.querySelector('[data-out="heatmap"] svg'), left = svg.querySelector('rect').getBBox().x;
		return Array.from(svg.querySelectorAll('text[text-anchor="end"]')).map(el => {
			const b = el.getBBox();
			return el.textContent + (b.x >= 0 && b.x + b.width <= left ? "" : " clipped: " + Math.round(b.x) + "–" + Math.round(b.x + b.width) + " left of " + left);
		});
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(labels, "1,000,000") {
		t.Errorf("row labels %q lack 1,000,000", labels)
	}
	for _, l := range labels {
		if strings.Contains(l, "clipped") {
			t.Errorf("row label %s", l)
		}
	}
	fits("a context of 1,000,000")
	screenshot(t, ctx, "widget-long-context")

	// Another GPU generation: the fix is the "Across generations" box.
	if err := browserDo(ctx,
		chromedp.Navigate(host.URL+"/run"),
		chromedp.WaitVisible(chromedp.CSS(`.mxd[data-state="answered"]`)),
		chromedp.SetValue(chromedp.CSS(`[data-in="target-gpu"]`), "H100 SXM"),
		fire(`[data-in="target-gpu"]`),
		chromedp.WaitVisible(chromedp.CSS(`.mxd[data-state="refused"] [data-out="refusal"]`)),
	); err != nil {
		screenshot(t, ctx, "widget-refusal-rough-failed")
		t.Fatalf("another generation: %v", err)
	}
	if got := textOf(t, ctx, `[data-out="refusal"]`); !strings.Contains(got, "“Across generations” ticked") || strings.Contains(got, "rough=true") {
		t.Errorf("another generation's refusal: %q, want its fix as the widget's box", got)
	}
	screenshot(t, ctx, "widget-refusal-rough")
	if err := browserDo(ctx,
		chromedp.Click(chromedp.CSS(`[data-in="rough"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.mxd[data-state="answered"]`)),
	); err != nil {
		t.Fatalf("ticked across generations: %v", err)
	}
	if got := textOf(t, ctx, `[data-out="basis"]`); !strings.Contains(got, "scaled_gpu") {
		t.Errorf("across generations: basis %q", got)
	}

	// A run that does not say its output reservation: its speed is
	// answered, its KV capacity a dash whose words name the max output
	// tokens input that reads it.
	if err := browserDo(ctx,
		chromedp.Navigate(host.URL+"/no-out"),
		chromedp.WaitVisible(chromedp.CSS(`.mxd[data-state="answered"] [data-out="capacity"]`)),
	); err != nil {
		screenshot(t, ctx, "widget-capacity-unknown-failed")
		t.Fatalf("no output reservation: %v", err)
	}
	if got := textOf(t, ctx, `[data-out="status"]`); got != "capacity unknown" {
		t.Errorf("no output reservation: status %q, want capacity unknown", got)
	}
	if got := textOf(t, ctx, `[data-out="total"]`); !strings.Contains(got, "tok/s") {
		t.Errorf("no output reservation: total %q, want a speed", got)
	}
	if got := textOf(t, ctx, `[data-out="capacity"]`); !strings.HasPrefix(got, "— ") || !strings.Contains(got, "“Max output tokens”") || strings.Contains(got, "max_output_tokens") {
		t.Errorf("no output reservation's capacity: %q, want a dash and its fix as the widget's input", got)
	}
	fits("a capacity unknown")
	screenshot(t, ctx, "widget-capacity-unknown")
	if err := browserDo(ctx,
		chromedp.SetValue(chromedp.CSS(`[data-in="max-output"]`), "8192"),
		fire(`[data-in="max-output"]`),
		chromedp.WaitNotVisible(chromedp.CSS(`[data-out="capacity"]`)),
	); err != nil {
		t.Fatalf("max output tokens given: %v", err)
	}
	if got := textOf(t, ctx, `[data-out="status"]`); got != "fits" {
		t.Errorf("with max output tokens: status %q", got)
	}
	// In Chinese, the input is named as the widget labels it.
	if err := browserDo(ctx,
		chromedp.Navigate(host.URL+"/no-out-zh"),
		chromedp.WaitVisible(chromedp.CSS(`.mxd[data-state="answered"] [data-out="capacity"]`)),
	); err != nil {
		t.Fatalf("no output reservation, in Chinese: %v", err)
	}
	if got := textOf(t, ctx, `[data-out="capacity"]`); !strings.Contains(got, "「輸出 token 上限」") || strings.Contains(got, "max_output_tokens") {
		t.Errorf("no output reservation's capacity in Chinese: %q", got)
	}
	if got := textOf(t, ctx, `label[for$="-out"]`); !strings.HasPrefix(got, "輸出 token 上限") {
		t.Errorf("the max output tokens input in Chinese: %q", got)
	}
	for _, m := range errs() {
		if !strings.Contains(m.Text, "status of 422") { // the refusals asked for
			t.Errorf("console: %s (%s)", m, m.URL)
		}
	}
}

// TestSitePagesInBrowser opens the navigation's pages at 400 and 1280 px:
// none scrolls sideways (wide tables scroll in their own box) and none
// writes an error to the console.
func TestSitePagesInBrowser(t *testing.T) {
	ctx := browser(t)
	e := newEnv(t, 0)
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	errs := consoleErrors(t, ctx)
	for _, page := range []struct{ name, path string }{
		{"models", "/models"},
		{"model", "/models/" + fara.Model.Name},
		{"hardware", "/hardware"},
		{"gpu", "/hardware/3060"},
		{"submitter", "/submitters/Sandberg"},
		{"planner", "/planner?context_tokens=16384&min_per_request_tok_s=20&users=100&include_scaled=true"},
		{"getting-started", "/getting-started"},
		{"calculator", "/calculator?run_id=" + fara.ID + "&context_tokens=16384&concurrency=8&gpu_hour_usd=0.4"},
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
			screenshot(t, ctx, "site-"+page.name+"-"+w)
		}
	}
	if got := errs(); len(got) > 0 {
		t.Errorf("console errors: %v", got)
	}
}
