//go:build browser

package site_test

import (
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// leadInViewJS lists what keeps the first row's figure (td.lead: the
// tok/s, or a GPU's run count) from a reader at the page's width: the
// figure beyond the screen's right edge, a box around it or the page
// scrolling sideways. With every=true it checks every row.
const leadInViewJS = `((every) => {
	const w = document.documentElement.clientWidth, out = [];
	if (document.documentElement.scrollWidth > w) out.push("the page is " + document.documentElement.scrollWidth + " px wide in " + w);
	const cells = Array.from(document.querySelectorAll('table tbody td.lead'));
	if (cells.length === 0) out.push("no figure (td.lead) on the page");
	(every ? cells : cells.slice(0, 1)).forEach(td => {
		const r = td.getBoundingClientRect();
		if (r.width === 0 || r.left < 0 || r.right > w) out.push("figure " + JSON.stringify(td.textContent.trim()) + " at x " + Math.round(r.left) + "–" + Math.round(r.right));
		for (let box = td.parentElement; box; box = box.parentElement) {
			if (box.scrollWidth > box.clientWidth + 1 && getComputedStyle(box).overflowX !== 'visible') out.push(box.tagName.toLowerCase() + "." + box.className + " scrolls sideways");
		}
	});
	return out;
})`

// runLeadsJS measures a run page: where the first heatmap cell starts
// (from the top of the page), the heatmap cells and prefill points that
// end beyond the screen's right edge, and the series chart's smallest
// label as drawn, in px.
const runLeadsJS = `(() => {
	const w = document.documentElement.clientWidth;
	const rects = Array.from(document.querySelectorAll('svg[aria-labelledby="decode-title"] rect'));
	const first = rects.length ? rects[0].getBoundingClientRect().top + window.scrollY : -1;
	const beyond = rects.concat(Array.from(document.querySelectorAll('svg[aria-labelledby="prefill-title"] circle')))
		.filter(el => el.getBoundingClientRect().right > w).length;
	const labels = Array.from(document.querySelectorAll('svg[aria-labelledby="prefill-title"] text.pv')).length;
	let smallest = 0;
	const series = document.querySelector('.series-chart svg');
	if (series) {
		const scale = series.getBoundingClientRect().width / series.viewBox.baseVal.width;
		smallest = Math.min(...Array.from(series.querySelectorAll('text')).map(t => parseFloat(getComputedStyle(t).fontSize) * scale));
	}
	return [first, beyond, labels, smallest];
})()`

// TestPagesOnPhones: at 400 px the figure people come for is on the screen
// without scrolling sideways (the first row's tok/s on the run list, the
// leaderboard and the planner, each GPU's run count on the hardware page,
// the peak on the models' and a submitter's pages), a run page's heatmap
// starts within the first 1,200 px, all its columns and every prefill
// point in view, each prefill point labelled, and the series chart's
// labels at least 11 px. Screenshots of each page at 400 and 1280 px in
// each language: phone-PAGE-WIDTH-LANG.
func TestPagesOnPhones(t *testing.T) {
	ctx := browser(t)
	e := newEnv(t, 0)
	series := e.regressedSeries(t)
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	nemo := e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090")
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	_, disputed := e.corroborate(t, fara)
	pages := []struct {
		name, path, ready string
		every             bool // every row's figure, not only the first
		run               bool
	}{
		{"runs", "/", `table.runs`, false, false},
		{"leaderboard", "/leaderboard?context_tokens=16384&concurrency=8", `table.runs`, false, false},
		{"planner", "/planner?context_tokens=16384&min_per_request_tok_s=20&users=100", `table.runs`, false, false},
		{"hardware", "/hardware", `table.runs`, true, false},
		{"models", "/models", `table.runs`, false, false},
		{"submitter", "/submitters/" + nemo.Submitter, `table.runs`, false, false},
		{"run", "/runs/" + nemo.ID, `svg[aria-labelledby="decode-title"]`, false, true},
		{"run-fara", "/runs/" + fara.ID, `svg[aria-labelledby="decode-title"]`, false, true},
		{"run-disputed", "/runs/" + disputed.ID, `svg[aria-labelledby="decode-title"]`, false, true},
		{"run-series", "/runs/" + series[2].ID, `svg[aria-labelledby="decode-title"]`, false, true},
	}
	for _, lang := range []string{"en", "zh-Hant", "th"} {
		for _, p := range pages {
			for _, width := range []int64{400, 1280} {
				at := p.name + " in " + lang + " at " + strconv.FormatInt(width, 10) + " px"
				sep := "?"
				if strings.Contains(p.path, "?") {
					sep = "&"
				}
				if err := browserDo(ctx,
					chromedp.EmulateViewport(width, 900),
					chromedp.Navigate(srv.URL+p.path+sep+"lang="+lang),
					chromedp.WaitVisible(chromedp.CSS(p.ready)),
				); err != nil {
					t.Fatalf("%s: %v", at, err)
				}
				screenshot(t, ctx, "phone-"+p.name+"-"+strconv.FormatInt(width, 10)+"-"+lang)
				if p.run {
					m, err := browserRun(ctx, chromedp.Evaluate[[]float64](runLeadsJS))
					if err != nil {
						t.Fatalf("%s: %v", at, err)
					}
					t.Logf("%s: first heatmap cell %.0f px down", at, m[0])
					if m[0] < 0 || m[0] > 1200 {
						t.Errorf("%s: the first measurement is %.0f px down, want within 1,200", at, m[0])
					}
					if width == 400 && m[1] > 0 {
						t.Errorf("%s: %.0f heatmap cells or prefill points beyond the screen", at, m[1])
					}
					if int(m[2]) != len(nemo.Prefill) && p.name == "run" {
						t.Errorf("%s: %.0f prefill points labelled, want %d", at, m[2], len(nemo.Prefill))
					}
					if p.name == "run-series" && m[3] < 11 {
						t.Errorf("%s: the series chart's smallest label is %.1f px, want at least 11", at, m[3])
					}
					if width == 400 {
						bad, err := browserRun(ctx, chromedp.Evaluate[[]string](sidewaysJS))
						if err != nil {
							t.Fatal(err)
						}
						for _, b := range bad {
							t.Errorf("%s: scrolls sideways: %s", at, b)
						}
					}
					continue
				}
				if width != 400 {
					continue
				}
				bad, err := browserRun(ctx, chromedp.Evaluate[[]string](leadInViewJS+"("+strconv.FormatBool(p.every)+")"))
				if err != nil {
					t.Fatalf("%s: %v", at, err)
				}
				for _, b := range bad {
					t.Errorf("%s: %s", at, b)
				}
			}
		}
	}
}
