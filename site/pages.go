package site

import (
	"bytes"
	"cmp"
	"context"
	"embed"
	"fmt"
	"html/template"
	"maps"
	"math"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/routers"
	"github.com/labstack/echo/v4"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/msg"
	"github.com/matrixd/matrixd/store"
)

// The pages for people: server-rendered HTML with inline SVG, readable with
// JavaScript off, and the embeddable calculator widget.

//go:embed pages/*.html pages/*.css pages/*.js pages/*.svg pages/locales/*.json
var pageFiles embed.FS

// pageCSP lets a page load its own stylesheet and nothing else; pages are
// not framed. The widget's page may be framed by any site.
const (
	pageCSP   = "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
	widgetCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; frame-ancestors *"
)

type pages struct {
	s      *Site
	langs  *languages
	tmpl   map[string]*template.Template // by language
	router routers.Router                // the API's, to check a page's query as the API's
	widget *routers.Route                // the widget's query, as an operation
}

// pageTemplates are the pages in one language: its messages and its way
// of writing numbers bound to the templates' functions.
func pageTemplates(l *locale) (*template.Template, error) {
	return template.New("").Funcs(template.FuncMap{
		"t":      l.t,
		"th":     l.html,
		"enum":   l.enum,
		"num":    l.num,
		"exact":  exact,
		"fixed":  l.fixed,
		"tokens": l.tokens,
		"link":   link,
		"code":   codeLink,
		"day":    day,
		"list":   func(v ...any) []any { return v },
		"model":  modelHref,
		"say":    l.say,
		"sayAll": l.sayAll,
		"notr":   notr,
		"status": status,
	}).ParseFS(pageFiles, "pages/*.html")
}

// link is an <a> for a message's argument.
func link(href, text string) template.HTML {
	return template.HTML(`<a href="` + template.HTMLEscapeString(href) + `">` + template.HTMLEscapeString(text) + `</a>`)
}

// day is a time's UTC date, as ISO 8601 writes it in every language.
func day(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// codeLink is an <a> around <code>, for an identifier.
func codeLink(href, text string) template.HTML {
	return template.HTML(`<a href="` + template.HTMLEscapeString(href) + `"><code>` + template.HTMLEscapeString(text) + `</code></a>`)
}

func (p *pages) register(e *echo.Echo, js []byte) {
	e.GET("/", p.localised(p.index))
	e.GET("/runs/:id", p.localised(p.run))
	e.GET("/leaderboard", p.localised(p.leaderboard))
	e.GET("/compare", p.localised(p.compare))
	e.GET("/models", p.localised(p.models))
	e.GET("/models/*", p.localised(p.model))
	e.GET("/hardware", p.localised(p.hardware))
	e.GET("/hardware/*", p.localised(p.gpu))
	e.GET("/submitters/*", p.localised(p.submitter))
	e.GET("/organizations", p.localised(p.organizations))
	e.GET("/reports", p.localised(p.reports))
	e.GET("/reports/*", p.localised(p.report))
	e.GET("/benchmarks", p.localised(p.benchmarksPage))
	e.GET("/benchmarks/*", p.localised(p.benchmarkPage))
	e.GET("/calculator", p.localised(p.calculatorPage))
	e.GET("/planner", p.localised(p.planner))
	e.GET("/getting-started", p.localised(p.gettingStarted))
	e.GET("/widget/calculator", p.localised(p.widgetPage))
	e.GET("/language", p.localised(p.chooseLanguage))
	e.GET("/assets/site.css", asset("pages/site.css", "text/css; charset=utf-8"))
	e.GET("/favicon.svg", asset("pages/favicon.svg", "image/svg+xml"))
	// Browsers ask for /favicon.ico on their own (a JSON answer, the API
	// docs); every one of them follows this to the SVG.
	e.GET("/favicon.ico", func(c echo.Context) error { return c.Redirect(http.StatusMovedPermanently, "/favicon.svg") })
	e.GET("/widget/calculator.css", asset("pages/calculator.css", "text/css; charset=utf-8"))
	e.GET("/widget/calculator.js", blob(js, "text/javascript; charset=utf-8"))
	e.HTTPErrorHandler = p.htmlErrors(e.HTTPErrorHandler)
}

// asset serves an embedded file; it changes only with the binary.
func asset(name, contentType string) echo.HandlerFunc {
	b, err := pageFiles.ReadFile(name)
	if err != nil {
		panic(err) // embedded at build time: a missing file is a build mistake
	}
	return blob(b, contentType)
}

func blob(b []byte, contentType string) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Header().Set("Cache-Control", "public, max-age=300")
		return c.Blob(http.StatusOK, contentType, b)
	}
}

func (p *pages) render(c echo.Context, status int, name, csp string, data map[string]any) error {
	l := p.locale(c)
	data["Lang"] = l
	if byURL, _ := c.Get(byURLKey).(bool); byURL {
		data["URLLang"] = l.Code // kept by the page's forms
	}
	data["Alternates"], data["Switch"] = p.alternates(c.Request(), l)
	var buf bytes.Buffer
	if err := p.tmpl[l.Code].ExecuteTemplate(&buf, name, data); err != nil {
		return err
	}
	c.Response().Header().Set("Content-Security-Policy", csp)
	c.Response().Header().Set("Cache-Control", "public, max-age=10")
	return c.HTMLBlob(status, buf.Bytes())
}

// indexShown are the parameters the landing page's form shows; the others
// given ride along hidden, so that filtering again keeps them.
var indexShown = []string{"model", "gpu", "engine", "quantization", "sort"}

// index is GET /v1/runs as a page.
func (p *pages) index(c echo.Context) error {
	ac, err := p.asAPI(c, "/v1/runs")
	if err != nil {
		return p.problemPage(c, err, "/")
	}
	var params api.ListRunsParams
	if err := (&api.ServerInterfaceWrapper{Handler: bound{list: &params}}).ListRuns(ac); err != nil {
		return p.problemPage(c, err, "/")
	}
	params.Format = nil // the page is HTML; its CSV is the API's
	resp, err := p.s.ListRuns(c.Request().Context(), api.ListRunsRequestObject{Params: params})
	if err != nil {
		return p.problemPage(c, err, "/")
	}
	list, ok := resp.(api.ListRuns200JSONResponse)
	if !ok {
		return fmt.Errorf("list runs answered %T", resp)
	}
	q, err := p.values(c)
	if err != nil {
		return err
	}
	filters := hidden(q, "sort", "limit")
	return p.render(c, http.StatusOK, "index.html", pageCSP, map[string]any{
		"Title": p.locale(c).t("index.title"), "Runs": list.Items, "Q": q, "Sort": q.Get("sort"),
		"Hidden": hidden(q, indexShown...), "Filters": filters, "Next": nextPage("/", q, list.NextCursor),
		// No run at all, not none that matches: the store is empty.
		"Empty": len(list.Items) == 0 && len(filters) == 0 && !q.Has("cursor"),
	})
}

// field is a query parameter a page shows or passes on.
type field struct{ Name, Value string }

// hidden are the parameters of q other than shown and the cursor, sorted.
func hidden(q url.Values, shown ...string) []field {
	var out []field
	for _, k := range slices.Sorted(maps.Keys(q)) {
		if k != "cursor" && !slices.Contains(shown, k) {
			out = append(out, field{k, q.Get(k)})
		}
	}
	return out
}

// nextPage links the next page of a listing: the same query, the next
// cursor; none when the listing ends.
func nextPage(path string, q url.Values, cursor *string) string {
	if cursor == nil {
		return ""
	}
	next := maps.Clone(q)
	next.Set("cursor", *cursor)
	return path + "?" + next.Encode()
}

// heatCell is one cell of a run page's decode heatmap: its speed, the
// TTFT under it and a note (queued, over capacity).
type heatCell struct {
	X, Y              int
	Fill, Ink         string
	Label, TTFT, Note string
	Title             string
}

// heatmap is a run page's decode grid, drawn small enough that all its
// columns fit a phone's width when scaled to it (DisplayWidth on wider
// screens), its figures still large enough to read there.
type heatmap struct {
	Width, Height, DisplayWidth int
	CellW, CellH, HalfW         int
	Cols                        []axisLabel
	Rows                        []axisLabel
	Cells                       []heatCell
	Max                         float64
}

type axisLabel struct {
	Pos   int
	Label string
}

const (
	heatLeft, heatTop = 48, 24
	heatW, heatH      = 56, 50
)

// decodeHeatmap lays out the decode grid: rows by context, columns by
// concurrency, coloured by total tok/s relative to the run's best.
func decodeHeatmap(lc *locale, cells []store.DecodeCell) heatmap {
	var ls, bs []int
	peak := 0.0
	for _, c := range cells {
		if !slices.Contains(ls, c.ContextTokens) {
			ls = append(ls, c.ContextTokens)
		}
		if !slices.Contains(bs, c.Concurrency) {
			bs = append(bs, c.Concurrency)
		}
		if c.TotalTokS != nil {
			peak = math.Max(peak, *c.TotalTokS)
		}
	}
	slices.Sort(ls)
	slices.Sort(bs)
	h := heatmap{Width: heatLeft + heatW*len(bs) + 4, Height: heatTop + heatH*len(ls) + 4, Max: peak, CellW: heatW - 2, CellH: heatH - 2, HalfW: (heatW - 2) / 2}
	h.DisplayWidth = h.Width * 5 / 4
	for i, b := range bs {
		h.Cols = append(h.Cols, axisLabel{heatLeft + heatW*i + heatW/2, lc.int(b)})
	}
	for j, l := range ls {
		h.Rows = append(h.Rows, axisLabel{heatTop + heatH*j + heatH/2 + 5, lc.tokens(l)})
	}
	for _, c := range cells {
		hc := heatCell{X: heatLeft + heatW*slices.Index(bs, c.Concurrency), Y: heatTop + heatH*slices.Index(ls, c.ContextTokens)}
		where := lc.t("cell.where", lc.tokens(c.ContextTokens), c.Concurrency)
		switch {
		case c.TotalTokS != nil && *c.TotalTokS > 0:
			hc.Fill, hc.Ink = heatColour(*c.TotalTokS / math.Max(peak, 1e-9))
			hc.Label = lc.num(c.TotalTokS)
			hc.Title = lc.t("cell.speed", where, lc.num(c.TotalTokS), lc.num(c.PerRequestTokS))
			if c.TTFTMs != nil {
				hc.TTFT = lc.num(c.TTFTMs)
				hc.Title += lc.t("list.sep") + lc.t("run.heat.ttft.title", lc.num(c.TTFTMs))
			}
			if c.Status == store.StatusRequestsQueued {
				hc.Note = lc.t("cell.queued")
				hc.Title = lc.t("cell.speed.queued", hc.Title)
			}
		case c.Status == store.StatusOverCapacity && c.DurationS != nil:
			hc.Fill, hc.Ink, hc.Label, hc.Note = "#f3e8e8", "#6b2020", lc.t("cell.no_token"), lc.t("cell.no_token.note")
			hc.Title = lc.t("cell.no_token.title", where)
		case c.Status == store.StatusOverCapacity:
			hc.Fill, hc.Ink, hc.Label, hc.Note = "#eeeeee", "#555555", lc.t("cell.over"), lc.t("cell.over.note")
			hc.Title = lc.t("cell.over.title", where)
		default:
			hc.Fill, hc.Ink, hc.Label = "#f4f4f4", "#555555", "—"
			hc.Title = lc.t("cell.other", where, lc.enum("status", c.Status))
		}
		h.Cells = append(h.Cells, hc)
	}
	return h
}

// heatColour maps a share of the run's peak to a fill (pale yellow to deep
// blue) and a text colour that keeps contrast on it.
func heatColour(f float64) (fill, ink string) {
	f = math.Max(0, math.Min(1, f))
	from, to := [3]float64{255, 247, 204}, [3]float64{8, 48, 107}
	var rgb [3]int
	for i := range rgb {
		rgb[i] = int(math.Round(from[i] + (to[i]-from[i])*f))
	}
	ink = "#111111"
	if f > 0.5 {
		ink = "#ffffff"
	}
	return fmt.Sprintf("#%02x%02x%02x", rgb[0], rgb[1], rgb[2]), ink
}

// prefillChart is a run page's prefill chart: prompt tok/s by context,
// each point's TTFT in its tooltip.
type prefillChart struct {
	Width, Height, Left, Top int
	// AxisY and AxisX are the plot's bottom and right edges; MidX and
	// MidY where the axis titles go; XLabelY and XTitleY the x labels' and
	// title's baselines.
	AxisY, AxisX, MidX, MidY, XLabelY, XTitleY int
	Points                                     string
	Dots                                       []heatCell
	XLabels                                    []axisLabel
	YTicks                                     []axisLabel
}

func newPrefillChart(lc *locale, cells []store.PrefillCell) *prefillChart {
	var pts []store.PrefillCell
	maxL, maxS := 0, 0.0
	for _, c := range cells {
		if c.PromptTokS != nil && *c.PromptTokS > 0 {
			pts = append(pts, c)
			maxL, maxS = max(maxL, c.ContextTokens), math.Max(maxS, *c.PromptTokS)
		}
	}
	if len(pts) == 0 || maxL == 0 {
		return nil
	}
	ch := &prefillChart{Width: 520, Height: 262, Left: 72, Top: 28}
	ch.AxisY, ch.AxisX = ch.Height-52, ch.Width-24
	ch.MidX, ch.MidY, ch.XLabelY, ch.XTitleY = (ch.Left+ch.AxisX)/2, (ch.Top+ch.AxisY)/2, ch.AxisY+18, ch.Height-8
	// A linear scale from zero, so that a halving looks like one.
	step := linearStep(maxS)
	top := math.Ceil(maxS/step) * step
	y := func(v float64) int { return ch.AxisY - int(math.Round(float64(ch.AxisY-ch.Top)*v/top)) }
	for v := 0.0; v <= top*1.0001; v += step {
		ch.YTicks = append(ch.YTicks, axisLabel{y(v), lc.float(v)})
	}
	var poly []string
	for _, c := range pts {
		x := ch.Left + 8 + int(float64(ch.AxisX-ch.Left-16)*float64(c.ContextTokens)/float64(maxL))
		py := y(*c.PromptTokS)
		poly = append(poly, fmt.Sprintf("%d,%d", x, py))
		ch.Dots = append(ch.Dots, heatCell{X: x, Y: py, Label: lc.num(c.PromptTokS), Title: lc.t("prefill.point", lc.tokens(c.ContextTokens), lc.num(c.TTFTMs), lc.num(c.PromptTokS))})
		ch.XLabels = append(ch.XLabels, axisLabel{x, lc.tokens(c.ContextTokens)})
	}
	ch.Points = strings.Join(poly, " ")
	return ch
}

// runSummary is the line under a run page's title, as the published pages
// write it: engine · version · quantization · 6 contexts (0–248K) × 8
// concurrency levels (1–128) · prefill at 8K, 16K, ….
func runSummary(lc *locale, r store.Run) string {
	parts := []string{r.Engine.Name}
	for _, s := range []string{r.Engine.Version, cmp.Or(r.Engine.Quantization, r.Model.Quantization)} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	var ls, bs []int
	for _, c := range r.Decode {
		ls, bs = append(ls, c.ContextTokens), append(bs, c.Concurrency)
	}
	slices.Sort(ls)
	slices.Sort(bs)
	ls, bs = slices.Compact(ls), slices.Compact(bs)
	if len(ls) > 0 {
		parts = append(parts, lc.t("run.summary.grid", len(ls), lc.tokens(ls[0]), lc.tokens(ls[len(ls)-1]), len(bs), lc.int(bs[0]), lc.int(bs[len(bs)-1])))
	}
	var pl []string
	for _, c := range r.Prefill {
		pl = append(pl, lc.tokens(c.ContextTokens))
	}
	if len(pl) > 0 {
		parts = append(parts, lc.t("run.summary.prefill", strings.Join(pl, lc.t("list.sep"))))
	}
	return strings.Join(parts, " · ")
}

// linearStep is the step, 1, 2 or 5 times a power of ten, that divides 0
// to hi in three to six.
func linearStep(hi float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(hi)))
	for _, m := range []float64{0.1, 0.2, 0.5, 1, 2, 5} {
		if hi/(m*p) <= 6 {
			return m * p
		}
	}
	return 10 * p
}

// run is GET /v1/runs/{run_id} as a page.
func (p *pages) run(c echo.Context) error {
	id := c.Param("id")
	if _, err := p.asAPI(c, "/v1/runs/"+url.PathEscape(id)); err != nil {
		return p.problemPage(c, err, "/")
	}
	r, err := p.s.read.Run(c.Request().Context(), id)
	if err != nil {
		return p.problemPage(c, err, "/")
	}
	series, chart, note, err := p.runSeries(c.Request().Context(), p.locale(c), id)
	if err != nil {
		return p.problemPage(c, err, "/")
	}
	return p.render(c, http.StatusOK, "run.html", pageCSP, map[string]any{
		"Title": r.Title, "Run": r, "Summary": runSummary(p.locale(c), r),
		"Heat": decodeHeatmap(p.locale(c), r.Decode), "Prefill": newPrefillChart(p.locale(c), r.Prefill),
		"Method": r.MethodOf(), "Trust": r.Trust, "Series": series, "Chart": chart, "SeriesNote": note,
		"Predict": predictHref(r), "Corroboration": corroborationOf(r.Corroboration),
	})
}

// corroborationView is a run's corroboration as its page shows it: a run
// not judged yet is uncorroborated, saying so.
type corroborationView struct {
	Status     string
	Sources    int
	Detail     msg.Message
	References []store.CorroborationReference
	CopyOf     string
}

func corroborationOf(c *store.Corroboration) corroborationView {
	if c == nil {
		return corroborationView{Status: store.CorroborationUncorroborated, Detail: msg.New("trust.corroboration_not_judged")}
	}
	v := corroborationView{Status: c.Status, Sources: c.Sources, CopyOf: c.CopyOf,
		Detail: store.Message(c.DetailCode, c.DetailParams, c.DetailParts, c.Detail)}
	for _, r := range c.References {
		if r.Kind == "copy" && r.RunID == c.CopyOf {
			continue // linked as the original
		}
		v.References = append(v.References, r)
	}
	return v
}

// status is a corroboration status as text, whether the API's enum, a
// pointer to it (a planner's option: nil is none) or a stored string.
func status(v any) string {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return ""
		}
		v = rv.Elem().Interface()
	}
	return fmt.Sprint(v)
}

// leaderboardShown are the parameters the leaderboard's form shows.
var leaderboardShown = []string{"context_tokens", "concurrency", "metric", "method_class", "predicted"}

// boardRow is one ranked run as the leaderboard page shows it: the
// measured cell's values, or with predicted=true the calculator's answer
// and its basis.
type boardRow struct {
	Rank                         int
	Run                          api.RunSummary
	Total, PerRequest, TTFT, TBT *float64
	Basis                        string
	BandPct                      *float64
}

func boardRows(items []api.LeaderboardEntry) []boardRow {
	out := make([]boardRow, len(items))
	for i, e := range items {
		r := boardRow{Rank: e.Rank, Run: e.Run}
		switch {
		case e.Cell != nil:
			r.Total, r.PerRequest, r.TTFT, r.TBT = e.Cell.TotalTokS, e.Cell.PerRequestTokS, e.Cell.TTFTMs, e.Cell.TBTMs
		case e.Prediction != nil:
			v := func(est *api.Estimate) *float64 {
				if est == nil {
					return nil
				}
				return &est.Value
			}
			pr := e.Prediction
			r.Total, r.PerRequest, r.TTFT, r.TBT = v(pr.TotalTokS), v(pr.PerRequestTokS), v(pr.TTFTMs), v(pr.TBTMs)
			r.Basis = string(pr.Basis.Method)
			if b := pr.Basis.ErrorBandPct; b != nil {
				r.BandPct = &b.TotalTokS
			}
		}
		out[i] = r
	}
	return out
}

// leaderboard is GET /v1/leaderboard as a page; with no query at all it
// asks for the cell, listing those measured.
func (p *pages) leaderboard(c echo.Context) error {
	q, err := p.values(c)
	if err != nil {
		return p.problemPage(c, err, "/leaderboard")
	}
	ctx := c.Request().Context()
	if len(q) == 0 {
		data := map[string]any{"Title": p.locale(c).t("nav.leaderboard"), "Context": 16384, "Concurrency": 8, "Metric": store.MetricTotalTokS,
			"MethodClass": store.MethodSustainedDecode, "MethodClasses": store.MethodClasses()}
		if err := p.leaderboardHint(ctx, p.locale(c), data, q, 16384); err != nil {
			return err
		}
		return p.render(c, http.StatusOK, "leaderboard.html", pageCSP, data)
	}
	ac, err := p.asAPI(c, "/v1/leaderboard")
	if err != nil {
		return p.problemPage(c, err, "/leaderboard")
	}
	var params api.GetLeaderboardParams
	if err := (&api.ServerInterfaceWrapper{Handler: bound{leaderboard: &params}}).GetLeaderboard(ac); err != nil {
		return p.problemPage(c, err, "/leaderboard")
	}
	resp, err := p.s.GetLeaderboard(ctx, api.GetLeaderboardRequestObject{Params: params})
	if err != nil {
		return p.problemPage(c, err, "/leaderboard")
	}
	lb, ok := resp.(api.GetLeaderboard200JSONResponse)
	if !ok {
		return fmt.Errorf("leaderboard answered %T", resp)
	}
	metric := string(lb.Metric)
	data := map[string]any{
		"Title": p.locale(c).t("nav.leaderboard"), "Asked": true, "Context": lb.ContextTokens, "Concurrency": lb.Concurrency, "Metric": metric,
		"Entries": boardRows(lb.Items), "Predicted": lb.Predicted != nil && *lb.Predicted, "MethodClass": string(lb.MethodClass), "MethodClasses": store.MethodClasses(),
		"IncludeFlagged": params.IncludeFlagged != nil && *params.IncludeFlagged, "Hidden": hidden(q, leaderboardShown...),
		"Filters": hidden(q, append(leaderboardShown, "limit")...), "Next": nextPage("/leaderboard", q, lb.NextCursor),
	}
	if len(lb.Items) == 0 && params.Cursor == nil {
		if err := p.leaderboardHint(ctx, p.locale(c), data, q, lb.ContextTokens); err != nil {
			return err
		}
	}
	return p.render(c, http.StatusOK, "leaderboard.html", pageCSP, data)
}

// cellLink is a link to the leaderboard at another cell.
type cellLink struct {
	Label, Href string
}

// leaderboardHint says which cells were measured, each a link that keeps
// the page's other parameters.
func (p *pages) leaderboardHint(ctx context.Context, lc *locale, data map[string]any, q url.Values, l int) error {
	contexts, nearest, concurrencies, err := p.s.read.CellAxes(ctx, l)
	if err != nil {
		return err
	}
	b, _ := data["Concurrency"].(int)
	link := func(l, b int) string {
		next := maps.Clone(q)
		if next == nil {
			next = url.Values{}
		}
		next.Del("cursor")
		next.Set("context_tokens", strconv.Itoa(l))
		next.Set("concurrency", strconv.Itoa(b))
		return "/leaderboard?" + next.Encode()
	}
	var cs, bs []cellLink
	for _, c := range contexts {
		cs = append(cs, cellLink{lc.tokens(c), link(c, b)})
	}
	for _, c := range concurrencies {
		bs = append(bs, cellLink{lc.int(c), link(nearest, c)})
	}
	data["Contexts"], data["Nearest"], data["Concurrencies"] = cs, nearest, bs
	return nil
}

// widgetPage is the calculator widget; its query is checked as the
// calculator's parameters are.
func (p *pages) widgetPage(c echo.Context) error {
	ac, err := p.checkAs(c, "/widget/calculator", p.widget)
	if err != nil {
		return p.problemPage(c, err, "/widget/calculator")
	}
	q := ac.QueryParams()
	return p.render(c, http.StatusOK, "widget.html", widgetCSP, map[string]any{
		"Title": p.locale(c).t("widget.title"), "Run": q.Get("run"), "Model": q.Get("model"), "GPU": q.Get("gpu"), "Theme": q.Get("theme"),
		"Context": q.Get("context"), "Concurrency": q.Get("concurrency"), "MaxOutput": q.Get("max_output"),
	})
}
