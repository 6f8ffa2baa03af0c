package site_test

import (
	"html"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

// regressedSeries stores a series of three runs, the last 10 % slower at
// the two longest contexts, its title holding markup to be escaped.
func (e *env) regressedSeries(t *testing.T) []store.Run {
	t.Helper()
	base := storetest.Runs(82, 1)[0]
	base.Model.Name = "pages/Series-<b>Model</b>-8B"
	base.Title = `Series <script>alert("x")</script> on a GPU`
	var ls []int
	for _, c := range base.Decode {
		if !slices.Contains(ls, c.ContextTokens) {
			ls = append(ls, c.ContextTokens)
		}
	}
	slices.Sort(ls)
	long := ls[len(ls)-2:]
	return e.series(t, base, []string{"2.0.0", "2.1.0", "2.2.0"}, []func(l, b int) float64{
		func(int, int) float64 { return 1 },
		func(int, int) float64 { return 1.05 },
		func(l, _ int) float64 {
			if slices.Contains(long, l) {
				return 1.05 * 0.9
			}
			return 1.05
		},
	})
}

// TestSeriesPages: a run page draws its series (axis titles, a line per
// followed cell, the regressed step marked) and links each step's
// comparison and the series JSON; the comparison page draws the ratio
// heatmap with each ratio as text, the verdict, why, noise floor and the
// regressed rows, links its JSON, and is checked as GET /v1/compare.
func TestSeriesPages(t *testing.T) {
	e := newEnv(t, 0)
	runs := e.regressedSeries(t)
	s := e.runSeries(t, runs[2].ID)
	last := s.Steps[len(s.Steps)-1]
	if last.Verdict != "regressed" || len(last.RegressedRows) == 0 {
		t.Fatalf("the series says %s (%s); the test needs a regression", last.Verdict, last.Why)
	}

	rec := e.page(t, "/runs/"+runs[2].ID, "/v1/runs/"+runs[2].ID)
	body := rec.Body.String()
	if rec.Code != 200 {
		t.Fatalf("run page: %d %.500s", rec.Code, body)
	}
	for _, want := range []string{
		`aria-labelledby="series-title series-desc"`, ">total tok/s (log scale)</text>", ">engine version</text>", "▼ regressed",
		`href="/v1/runs/` + runs[2].ID + `/series"`,
		`href="/compare?run_ids=` + runs[0].ID + "," + runs[1].ID + `"`,
		`href="/compare?run_ids=` + runs[1].ID + "," + runs[2].ID + `"`,
		">2.0.0</text>", ">2.2.0</text>", html.EscapeString(last.Why),
	} {
		if !strings.Contains(body, want) {
			t.Errorf("run page lacks %s", want)
		}
	}
	if n := strings.Count(body, `<g class="series-line">`); n < 3 || n > 4 {
		t.Errorf("the chart follows %d cells, want 3 or 4", n)
	}
	if strings.Contains(body, "<script>") {
		t.Error("the run page repeats the title's markup unescaped")
	}
	if rec := e.page(t, "/runs/"+e.seeds["fara1.5-4b-autoround-rtx3060"].ID, ""); !strings.Contains(rec.Body.String(), "No other run of this configuration yet") {
		t.Error("a run alone in its series does not say so")
	}

	target := "/compare?run_ids=" + runs[1].ID + "," + runs[2].ID
	rec = e.page(t, target, "/v1/compare?run_ids=a,b")
	body = rec.Body.String()
	if rec.Code != 200 {
		t.Fatalf("compare page: %d %.500s", rec.Code, body)
	}
	rows := make([]string, len(last.RegressedRows))
	for i, l := range last.RegressedRows {
		rows[i] = tokensOf(l)
	}
	basis := map[api.NoiseFloorBasis]string{api.RunScatter: "each run's own scatter", api.StepScatter: "this step's own scatter",
		api.RepeatedRuns: "repeated runs of the configuration"}[last.NoiseFloor.Basis]
	for _, want := range []string{
		`<span class="badge verdict-regressed">regressed</span>`, html.EscapeString(last.Why),
		"Regressed rows</dt><dd>context " + strings.Join(rows, ", "), "Noise floor and rule", html.EscapeString(basis),
		`aria-labelledby="ratio-title"`, `class="heatbox"`, `href="/v1/compare?run_ids=` + runs[1].ID + "%2C" + runs[2].ID + `"`,
		">0.900</text>", ">1.000</text>", `id="ratio-scale"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("compare page lacks %s (basis %s): %s", want, last.NoiseFloor.Basis, regexp.MustCompile(`Noise per cell[^<]*`).FindString(body))
		}
	}
	if got := len(regexp.MustCompile(`<g class="cell">`).FindAllString(body, -1)); got != len(last.Cells) {
		t.Errorf("heatmap has %d cells, the step %d", got, len(last.Cells))
	}
	if strings.Contains(body, "<script>") {
		t.Error("the compare page repeats the title's markup unescaped")
	}

	for _, c := range []struct {
		target, field string
		status        int
	}{
		{"/compare?run_ids=" + runs[1].ID, "<code>run_ids</code>", 400},
		{"/compare?run_ids=" + runs[1].ID + "," + runs[2].ID + "&metric=ttft", "<code>metric</code>", 400},
		{"/compare?run_ids=" + runs[1].ID + "," + runs[1].ID, "<code>run_ids</code>", 400},
		{"/compare?run_ids=bad%20id,x", "<code>run_ids</code>", 400},
		{"/compare?run_ids=" + runs[1].ID + ",rnosuch", `run <span translate="no">rnosuch</span> does not exist`, 404},
	} {
		rec := e.page(t, c.target, "/v1/compare?run_ids=a,b")
		if rec.Code != c.status || !strings.Contains(rec.Body.String(), c.field) {
			t.Errorf("%s: %d, want %d naming %s; %.400s", c.target, rec.Code, c.status, c.field, rec.Body)
		}
	}
	rec = e.page(t, "/compare?run_ids="+runs[0].ID+","+runs[1].ID+","+runs[2].ID, "/v1/compare?run_ids=a,b")
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), "A verdict compares two runs") || !strings.Contains(rec.Body.String(), `href="/compare?run_ids=`+runs[0].ID+","+runs[2].ID+`"`) {
		t.Errorf("three runs: %d %.400s", rec.Code, rec.Body)
	}
}

// tokensOf writes a context as the pages do: 48K for 49152.
func tokensOf(l int) string {
	if l > 0 && l%1024 == 0 {
		return strconv.Itoa(l/1024) + "K"
	}
	return strconv.Itoa(l)
}
