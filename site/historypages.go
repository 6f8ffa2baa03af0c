package site

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/predict"
)

// A run page's series chart and the comparison page: drawn from the
// answers of GET /v1/runs/{run_id}/series and GET /v1/compare, which each
// page links as its JSON.

// seriesColours tell the chart's lines apart (Okabe–Ito, for colour-blind
// readers); each line also has its own marker shape.
var seriesColours = []string{"#0072b2", "#e69f00", "#009e73", "#cc79a7"}

type chartPoint struct {
	X, Y  int
	Title string
}

type chartLine struct {
	Label, Colour, Points, Dash string
	Dots                        []chartPoint
}

type chartStep struct {
	FromVersion      string
	ToVersion        string
	Verdict, Why     string
	WhyNotice        api.Notice
	Href             string
	RegressedRows    string
	X, BandX         int    // the newer run's position, and its band's left
	Anchor           string // where its "regressed" label hangs: middle, or end near the right edge
	Regressed        bool
	SettingsDiffer   string
	Measured, Shared int
}

// seriesChart is drawn 480 wide, so that scaled to a phone's width its
// labels stay readable; DisplayWidth is its size on wider screens.
type seriesChart struct {
	Width, Height, Left, Top, Bottom, Right int
	DisplayWidth                            int
	// AxisY and AxisX are the plot's bottom and right edges; MidX and
	// MidY where the axis titles go; XTitleY the x title's baseline.
	AxisY, AxisX, MidX, MidY, XTitleY, PlotH int
	Lines                                    []chartLine
	XLabels                                  []axisLabel
	YTicks                                   []axisLabel
	Steps                                    []chartStep
	Cells                                    int // cells every run measured
}

// chartCell is a grid point the chart follows.
type chartCell struct{ l, b int }

func (c chartCell) label(n numbers) string { return n.tokens(c.l) + " × " + n.int(c.b) }

// representative picks up to four of cells spread over the grid: single
// stream at the shortest context, and the highest concurrency at the
// shortest, a middle and the longest context.
func representative(cells []chartCell) []chartCell {
	slices.SortFunc(cells, func(x, y chartCell) int { return cmp.Or(cmp.Compare(x.l, y.l), cmp.Compare(x.b, y.b)) })
	var ls []int
	for _, c := range cells {
		if !slices.Contains(ls, c.l) {
			ls = append(ls, c.l)
		}
	}
	var out []chartCell
	add := func(c chartCell) {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	if len(cells) == 0 {
		return nil
	}
	add(cells[0])
	for _, l := range []int{ls[0], ls[len(ls)/2], ls[len(ls)-1]} {
		top := chartCell{}
		for _, c := range cells {
			if c.l == l {
				top = c
			}
		}
		add(top)
	}
	return out
}

// newSeriesChart draws total tok/s at a few cells every run of the series
// measured, across its runs in version order, the regressed steps marked.
func newSeriesChart(lc *locale, s api.RunSeries) *seriesChart {
	if len(s.Steps) == 0 {
		return nil
	}
	// values[i] are run i's measured values, from the steps either side.
	values := make([]map[chartCell]float64, len(s.Runs))
	for i := range values {
		values[i] = map[chartCell]float64{}
	}
	for i, st := range s.Steps {
		for _, c := range st.Cells {
			if !c.Predicted {
				k := chartCell{c.ContextTokens, c.Concurrency}
				values[i][k], values[i+1][k] = c.FromTotalTokS, c.ToTotalTokS
			}
		}
	}
	var common []chartCell
	for k := range values[0] {
		if !slices.ContainsFunc(values, func(m map[chartCell]float64) bool { _, ok := m[k]; return !ok }) {
			common = append(common, k)
		}
	}
	ch := &seriesChart{Width: 480, DisplayWidth: 640, Height: 300, Left: 76, Top: 28, Bottom: 72, Right: 24, Cells: len(common)}
	ch.AxisY, ch.AxisX, ch.PlotH = ch.Height-ch.Bottom, ch.Width-ch.Right, ch.Height-ch.Top-ch.Bottom
	ch.MidX, ch.MidY, ch.XTitleY = (ch.Left+ch.AxisX)/2, (ch.Top+ch.AxisY)/2, ch.Height-6
	picked := representative(common)
	// A log scale: cells hundreds of times apart share the chart, and a
	// change of a tenth is as tall on each.
	lo, hi := math.Inf(1), 0.0
	for _, k := range picked {
		for _, m := range values {
			lo, hi = math.Min(lo, m[k]), math.Max(hi, m[k])
		}
	}
	if len(picked) == 0 {
		lo, hi = 1, 10
	}
	bottom, top := niceFloor(lo), niceCeil(hi)
	if bottom == top {
		bottom, top = niceFloor(bottom*0.99), niceCeil(top*1.01)
	}
	plotW, plotH := ch.Width-ch.Left-ch.Right, ch.Height-ch.Top-ch.Bottom
	x := func(i int) int {
		if len(s.Runs) == 1 {
			return ch.Left + plotW/2
		}
		return ch.Left + 12 + (plotW-24)*i/(len(s.Runs)-1)
	}
	y := func(v float64) int {
		return ch.Top + int(math.Round(float64(plotH)*math.Log(top/v)/math.Log(top/bottom)))
	}
	ticks := niceSteps(bottom, top)
	if len(ticks) > 8 { // the decades only
		ticks = slices.DeleteFunc(ticks, func(v float64) bool { return v != math.Pow(10, math.Round(math.Log10(v))) })
		ticks = append([]float64{bottom}, append(ticks, top)...)
		ticks = slices.Compact(ticks)
	}
	for _, v := range ticks {
		if n := len(ch.YTicks); n > 0 && ch.YTicks[n-1].Pos-y(v) < 24 {
			continue // a label over another's
		}
		ch.YTicks = append(ch.YTicks, axisLabel{y(v), lc.float(v)})
	}
	for i, r := range s.Runs {
		ch.XLabels = append(ch.XLabels, axisLabel{x(i), cmp.Or(deref(r.EngineVersion), "?")})
	}
	dashes := []string{"", "7 3", "2 3", "9 3 2 3"} // told apart without colour too
	for j, k := range picked {
		line := chartLine{Label: lc.t("cell.where", lc.tokens(k.l), k.b), Colour: seriesColours[j], Dash: dashes[j]}
		var pts []string
		for i, m := range values {
			p := chartPoint{X: x(i), Y: y(m[k]), Title: lc.t("series.point", cmp.Or(deref(s.Runs[i].EngineVersion), lc.t("series.no_version")), k.label(lc.numbers), lc.num(m[k]))}
			pts = append(pts, fmt.Sprintf("%d,%d", p.X, p.Y))
			line.Dots = append(line.Dots, p)
		}
		line.Points = strings.Join(pts, " ")
		ch.Lines = append(ch.Lines, line)
	}
	for i, st := range s.Steps {
		cs := chartStep{FromVersion: cmp.Or(deref(s.Runs[i].EngineVersion), "—"), ToVersion: cmp.Or(deref(s.Runs[i+1].EngineVersion), "—"), Verdict: string(st.Verdict), Why: st.Why, WhyNotice: st.WhyNotice, Href: comparePath(st.From, st.To),
			X: x(i + 1), BandX: x(i+1) - 10, Anchor: "middle", Regressed: st.Verdict == api.Regressed, Measured: st.MeasuredCells, Shared: len(st.Cells),
			RegressedRows: rowsText(lc, st.RegressedRows), SettingsDiffer: strings.Join(st.SettingsDiffer, ", ")}
		if cs.X+50 > ch.Width {
			cs.Anchor = "end"
		}
		ch.Steps = append(ch.Steps, cs)
	}
	return ch
}

func rowsText(lc *locale, rows []int) string {
	var out []string
	for _, l := range rows {
		out = append(out, lc.tokens(l))
	}
	return strings.Join(out, ", ")
}

// niceSteps are the values 1, 2 and 5 times a power of ten from lo to hi.
func niceSteps(lo, hi float64) []float64 {
	var out []float64
	for d := math.Floor(math.Log10(lo)); d <= math.Ceil(math.Log10(hi)); d++ {
		for _, m := range []float64{1, 2, 5} {
			if v := m * math.Pow(10, d); v >= lo*0.999 && v <= hi*1.001 {
				out = append(out, roundNice(v))
			}
		}
	}
	return out
}

// niceCeil is the least of 1, 2 or 5 times a power of ten at or above v;
// niceFloor the greatest at or below it.
func niceCeil(v float64) float64 {
	d := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*d >= v*0.999 {
			return roundNice(m * d)
		}
	}
	return roundNice(10 * d)
}

func niceFloor(v float64) float64 {
	d := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{5, 2, 1} {
		if m*d <= v*1.001 {
			return roundNice(m * d)
		}
	}
	return roundNice(d)
}

// roundNice drops the float noise of a power of ten (0.30000000000000004).
func roundNice(v float64) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 6, 64), 64)
	return f
}

// runSeries is the series section of a run page; nil with a note when the
// series cannot be drawn now (its fits are being made: the page is then
// not cached, so that the next view draws it).
func (p *pages) runSeries(ctx context.Context, lc *locale, id string) (*api.RunSeries, *seriesChart, string, error) {
	resp, err := p.s.GetRunSeries(ctx, api.GetRunSeriesRequestObject{RunID: id})
	var fitting *predict.Fitting
	if errors.As(err, &fitting) {
		p.s.req.DoNotStore(ctx)
		return nil, nil, lc.t("series.fitting"), nil
	}
	if err != nil {
		return nil, nil, "", err
	}
	s, ok := resp.(api.GetRunSeries200JSONResponse)
	if !ok {
		return nil, nil, "", fmt.Errorf("run series answered %T", resp)
	}
	rs := api.RunSeries(s)
	return &rs, newSeriesChart(lc, rs), "", nil
}

// ratioHeat is one cell of the comparison heatmap.
type ratioHeat struct {
	X, Y        int
	Fill, Ink   string
	Label, Note string
	Title       string
	Outline     string
}

type ratioHeatmap struct {
	Width, Height int
	Cols, Rows    []axisLabel
	RowVerdicts   []axisLabel
	Cells         []ratioHeat
	Legend        []legendStop
}

type legendStop struct {
	Offset, Colour, Label string
	X                     int
}

const (
	ratioLeft, ratioTop = 64, 28
	ratioW, ratioH      = 64, 38
	ratioVerdictW       = 96
	// ratioSpan is the ratio at which the colour scale is full: beyond
	// ±25 % a change is as dark as it gets.
	ratioSpan = 1.25
)

// ratioColour maps a ratio to a diverging fill, white at 1: blue faster,
// red slower, full at ratioSpan and 1/ratioSpan (on a log scale, so that
// ×1.1 and ÷1.1 are as dark); and a text colour that keeps contrast.
func ratioColour(r float64) (fill, ink string) {
	f := math.Max(-1, math.Min(1, math.Log(r)/math.Log(ratioSpan)))
	white, faster, slower := [3]float64{247, 247, 247}, [3]float64{33, 102, 172}, [3]float64{178, 24, 43}
	to := faster
	if f < 0 {
		to, f = slower, -f
	}
	var rgb [3]int
	for i := range rgb {
		rgb[i] = int(math.Round(white[i] + (to[i]-white[i])*f))
	}
	ink = "#111111"
	if f > 0.55 {
		ink = "#ffffff"
	}
	return fmt.Sprintf("#%02x%02x%02x", rgb[0], rgb[1], rgb[2]), ink
}

// newRatioHeatmap lays out a step's cells: rows by context, columns by
// concurrency, each the newer run's total tok/s over the older's.
func newRatioHeatmap(lc *locale, st api.SeriesStep, contexts, concurrencies *[]int) ratioHeatmap {
	var ls, bs []int
	var cells []api.StepCell
	for _, c := range st.Cells {
		if contexts != nil && !slices.Contains(*contexts, c.ContextTokens) || concurrencies != nil && !slices.Contains(*concurrencies, c.Concurrency) {
			continue
		}
		cells = append(cells, c)
		if !slices.Contains(ls, c.ContextTokens) {
			ls = append(ls, c.ContextTokens)
		}
		if !slices.Contains(bs, c.Concurrency) {
			bs = append(bs, c.Concurrency)
		}
	}
	slices.Sort(ls)
	slices.Sort(bs)
	h := ratioHeatmap{Width: ratioLeft + ratioW*len(bs) + ratioVerdictW, Height: ratioTop + ratioH*len(ls) + 8}
	for i, b := range bs {
		h.Cols = append(h.Cols, axisLabel{ratioLeft + ratioW*i + ratioW/2, strconv.Itoa(b)})
	}
	for j, l := range ls {
		h.Rows = append(h.Rows, axisLabel{ratioTop + ratioH*j + ratioH/2 + 4, lc.tokens(l)})
		for _, g := range st.Rows {
			if g.ContextTokens == l {
				h.RowVerdicts = append(h.RowVerdicts, axisLabel{ratioTop + ratioH*j + ratioH/2 + 4, lc.t("cmp.row_verdict", lc.enum("verdict", string(g.Verdict)))})
			}
		}
	}
	for _, c := range cells {
		rh := ratioHeat{X: ratioLeft + ratioW*slices.Index(bs, c.Concurrency), Y: ratioTop + ratioH*slices.Index(ls, c.ContextTokens),
			Label: lc.fixed(c.Ratio, 3), Note: lc.enum("cell.verdict", string(c.Verdict))}
		rh.Fill, rh.Ink = ratioColour(c.Ratio)
		if c.Predicted {
			rh.Note += " *"
		}
		switch c.Verdict {
		case api.Regressed:
			rh.Outline = "#67000d"
		case api.Improved:
			rh.Outline = "#053061"
		}
		rh.Title = lc.t("cmp.cell.title", lc.t("cell.where", lc.tokens(c.ContextTokens), c.Concurrency),
			lc.num(c.FromTotalTokS), lc.num(c.ToTotalTokS), lc.fixed(c.Ratio, 4), lc.fixed(100*c.Floor, 1), lc.enum("verdict", string(c.Verdict)))
		if c.Predicted {
			rh.Title = lc.t("cmp.cell.predicted", rh.Title)
		}
		h.Cells = append(h.Cells, rh)
	}
	for i, r := range []float64{1 / ratioSpan, 1 / math.Sqrt(ratioSpan), 1, math.Sqrt(ratioSpan), ratioSpan} {
		fill, _ := ratioColour(r)
		h.Legend = append(h.Legend, legendStop{Offset: strconv.Itoa(25*i) + "%", Colour: fill, Label: lc.fixed(r, 2), X: 50 * i})
	}
	return h
}

// compare is GET /v1/compare as a page: with two runs, the verdict grid
// as a heatmap of ratios with the rule's verdict, its reasons and noise
// floor; with more, links to each run compared with the first.
func (p *pages) compare(c echo.Context) error {
	ac, err := p.asAPI(c, "/v1/compare")
	if err != nil {
		return p.problemPage(c, err, "/")
	}
	var params api.CompareRunsParams
	if err := (&api.ServerInterfaceWrapper{Handler: bound{compare: &params}}).CompareRuns(ac); err != nil {
		return p.problemPage(c, err, "/")
	}
	ctx := c.Request().Context()
	resp, err := p.s.CompareRuns(ctx, api.CompareRunsRequestObject{Params: params})
	if err != nil {
		return p.problemPage(c, err, "/")
	}
	cmpAns, ok := resp.(api.CompareRuns200JSONResponse)
	if !ok {
		return fmt.Errorf("compare answered %T", resp)
	}
	q, err := p.values(c)
	if err != nil {
		return err
	}
	lc := p.locale(c)
	data := map[string]any{"Title": lc.t("cmp.title"), "Runs": cmpAns.Runs, "JSON": "/v1/compare?" + q.Encode(), "Warnings": cmpAns.Warnings, "Notices": cmpAns.Notices}
	if v := cmpAns.Verdict; v != nil {
		a, b := cmpAns.Runs[0], cmpAns.Runs[1]
		data["Title"] = lc.t("cmp.title.pair", a.Title, versionLabel(b.Engine, deref(b.EngineVersion)), versionLabel(a.Engine, deref(a.EngineVersion)))
		data["Heading"] = lc.html("cmp.title.pair", notr(a.Title), notr(versionLabel(b.Engine, deref(b.EngineVersion))), notr(versionLabel(a.Engine, deref(a.EngineVersion))))
		data["Step"], data["Heat"] = v, newRatioHeatmap(lc, *v, params.Contexts, params.Concurrencies)
		data["RegressedRows"], data["ImprovedRows"] = rowsText(lc, v.RegressedRows), rowsText(lc, v.ImprovedRows)
		data["Differ"] = strings.Join(v.SettingsDiffer, ", ")
		data["Predicted"] = len(v.Cells) - v.MeasuredCells
		data["Pct"] = func(f float64) string { return lc.float(100*f) + " %" }
		data["Sigma"] = func(f float64) string { return lc.fixed(100*f, 2) + " %" }
	} else {
		// Each pair's label names its runs as given.
		type pair struct {
			Label template.HTML
			Href  string
		}
		var pairs []pair
		for _, r := range cmpAns.Runs[1:] {
			pairs = append(pairs, pair{Label: lc.html("cmp.against", notr(cmpAns.Runs[0].Title), notr(r.Title)), Href: comparePath(cmpAns.Runs[0].ID, r.ID)})
		}
		data["Pairs"] = pairs
	}
	return p.render(c, http.StatusOK, "compare.html", pageCSP, data)
}
