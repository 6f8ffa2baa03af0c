package server

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/matrixd/matrixd/store"
)

// The pages for people: server-rendered HTML with inline SVG, readable with
// JavaScript off, and the embeddable calculator widget.

//go:embed pages/*.html pages/*.css pages/*.js
var pageFiles embed.FS

// pageCSP lets a page load its own stylesheet and nothing else; pages are
// not framed. The widget's page may be framed by any site.
const (
	pageCSP   = "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
	widgetCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; frame-ancestors *"
)

type pages struct {
	s    *Server
	tmpl *template.Template
}

func registerPages(e *echo.Echo, s *Server) error {
	tmpl, err := template.New("").Funcs(template.FuncMap{
		"num":    num,
		"tokens": tokenLabel,
		"query":  func(v url.Values) template.URL { return template.URL(v.Encode()) },
	}).ParseFS(pageFiles, "pages/*.html")
	if err != nil {
		return fmt.Errorf("page templates: %w", err)
	}
	p := &pages{s: s, tmpl: tmpl}
	e.GET("/", p.index)
	e.GET("/runs/:id", p.run)
	e.GET("/leaderboard", p.leaderboard)
	e.GET("/widget/calculator", p.widget)
	e.GET("/assets/site.css", asset("pages/site.css", "text/css; charset=utf-8"))
	e.GET("/widget/calculator.css", asset("pages/calculator.css", "text/css; charset=utf-8"))
	e.GET("/widget/calculator.js", asset("pages/calculator.js", "text/javascript; charset=utf-8"))
	return nil
}

// asset serves an embedded file; it changes only with the binary.
func asset(name, contentType string) echo.HandlerFunc {
	b, err := pageFiles.ReadFile(name)
	if err != nil {
		panic(err) // embedded at build time: a missing file is a build mistake
	}
	return func(c echo.Context) error {
		c.Response().Header().Set("Cache-Control", "public, max-age=300")
		return c.Blob(http.StatusOK, contentType, b)
	}
}

func (p *pages) render(c echo.Context, status int, name, csp string, data any) error {
	var buf bytes.Buffer
	if err := p.tmpl.ExecuteTemplate(&buf, name, data); err != nil {
		return err
	}
	c.Response().Header().Set("Content-Security-Policy", csp)
	c.Response().Header().Set("Cache-Control", "public, max-age=10")
	return c.HTMLBlob(status, buf.Bytes())
}

// pageError renders a problem as a page.
func (p *pages) pageError(c echo.Context, status int, msg string) error {
	return p.render(c, status, "error.html", pageCSP, map[string]any{"Title": http.StatusText(status), "Status": status, "Message": msg})
}

// num prints a published value as published: the shortest form that reads
// back exactly.
func num(v any) string {
	switch x := v.(type) {
	case *float64:
		if x == nil {
			return "—"
		}
		return strconv.FormatFloat(*x, 'f', -1, 64)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case *int:
		if x == nil {
			return "—"
		}
		return strconv.Itoa(*x)
	case int:
		return strconv.Itoa(x)
	}
	return fmt.Sprint(v)
}

// tokenLabel writes a context as pages do: 48K for 49152.
func tokenLabel(n int) string {
	if n > 0 && n%1024 == 0 {
		return strconv.Itoa(n/1024) + "K"
	}
	return strconv.Itoa(n)
}

// listFilters are the filters the landing page passes to the store.
var listFilters = []string{"model", "gpu", "engine", "quantization"}

func (p *pages) index(c echo.Context) error {
	q := c.QueryParams()
	f := store.RunFilter{Model: q.Get("model"), GPU: q.Get("gpu"), Engine: q.Get("engine"), Quantization: q.Get("quantization")}
	for _, k := range listFilters {
		if len(q.Get(k)) > 200 {
			return p.pageError(c, http.StatusBadRequest, k+" is longer than 200 characters")
		}
	}
	sort := q.Get("sort")
	if !slices.Contains([]string{store.SortCreatedDesc, store.SortCreated, store.SortGPU, store.SortModel, store.SortPeakDesc}, sort) {
		sort = store.SortCreatedDesc
	}
	f, err := p.s.calc.WithGPU(c.Request().Context(), f, f.GPU)
	if err != nil {
		return err
	}
	runs, next, err := p.s.store.ListRuns(c.Request().Context(), f, sort, 50, q.Get("cursor"))
	if err != nil {
		var de *store.Error
		if errors.As(err, &de) {
			return p.pageError(c, http.StatusBadRequest, de.Msg)
		}
		return err
	}
	nextQ := url.Values{}
	for _, k := range append(listFilters, "sort") {
		if v := q.Get(k); v != "" {
			nextQ.Set(k, v)
		}
	}
	if next != "" {
		nextQ.Set("cursor", next)
	}
	return p.render(c, http.StatusOK, "index.html", pageCSP, map[string]any{
		"Title": "LLM inference speed, measured", "Runs": runs, "Filter": f, "Sort": sort, "Next": next, "NextQuery": nextQ,
	})
}

// heatCell is one cell of a run page's decode heatmap.
type heatCell struct {
	X, Y        int
	Fill, Ink   string
	Label, Note string
	Title       string
}

type heatmap struct {
	Width, Height int
	Cols          []axisLabel
	Rows          []axisLabel
	Cells         []heatCell
	Max           float64
}

type axisLabel struct {
	Pos   int
	Label string
}

const (
	heatLeft, heatTop = 64, 28
	heatW, heatH      = 72, 34
)

// decodeHeatmap lays out the decode grid: rows by context, columns by
// concurrency, coloured by total tok/s relative to the run's best.
func decodeHeatmap(cells []store.DecodeCell) heatmap {
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
	h := heatmap{Width: heatLeft + heatW*len(bs) + 8, Height: heatTop + heatH*len(ls) + 8, Max: peak}
	for i, b := range bs {
		h.Cols = append(h.Cols, axisLabel{heatLeft + heatW*i + heatW/2, strconv.Itoa(b)})
	}
	for j, l := range ls {
		h.Rows = append(h.Rows, axisLabel{heatTop + heatH*j + heatH/2 + 4, tokenLabel(l)})
	}
	for _, c := range cells {
		hc := heatCell{X: heatLeft + heatW*slices.Index(bs, c.Concurrency), Y: heatTop + heatH*slices.Index(ls, c.ContextTokens)}
		where := fmt.Sprintf("context %s × %d requests", tokenLabel(c.ContextTokens), c.Concurrency)
		switch {
		case c.TotalTokS != nil && *c.TotalTokS > 0:
			hc.Fill, hc.Ink = heatColour(*c.TotalTokS / math.Max(peak, 1e-9))
			hc.Label = num(c.TotalTokS)
			hc.Title = fmt.Sprintf("%s: %s tok/s total, %s per request", where, num(c.TotalTokS), num(c.PerRequestTokS))
			if c.Status == store.StatusRequestsQueued {
				hc.Note = "queued"
				hc.Title += " (requests queued)"
			}
		case c.Status == store.StatusOverCapacity && c.DurationS != nil:
			hc.Fill, hc.Ink, hc.Label, hc.Note = "#f3e8e8", "#6b2020", "no token", "ran"
			hc.Title = where + ": ran a full window without a token"
		case c.Status == store.StatusOverCapacity:
			hc.Fill, hc.Ink, hc.Label, hc.Note = "#eeeeee", "#555555", "over", "capacity"
			hc.Title = where + ": over capacity"
		default:
			hc.Fill, hc.Ink, hc.Label = "#f4f4f4", "#555555", "—"
			hc.Title = where + ": " + strings.ReplaceAll(c.Status, "_", " ")
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

// prefillChart is a run page's prefill TTFT chart.
type prefillChart struct {
	Width, Height int
	Points        string
	Dots          []heatCell
	XLabels       []axisLabel
	YMax          string
}

func newPrefillChart(cells []store.PrefillCell) *prefillChart {
	var pts []store.PrefillCell
	maxL, maxT := 0, 0.0
	for _, c := range cells {
		if c.TTFTMs != nil {
			pts = append(pts, c)
			maxL, maxT = max(maxL, c.ContextTokens), math.Max(maxT, *c.TTFTMs)
		}
	}
	if len(pts) == 0 || maxL == 0 || maxT == 0 {
		return nil
	}
	const w, h, left, bottom = 520, 220, 64, 30
	ch := &prefillChart{Width: w, Height: h, YMax: strconv.FormatFloat(maxT/1000, 'f', 1, 64) + " s"}
	var poly []string
	for _, c := range pts {
		x := left + int(float64(w-left-16)*float64(c.ContextTokens)/float64(maxL))
		y := h - bottom - int(float64(h-bottom-16)**c.TTFTMs/maxT)
		poly = append(poly, fmt.Sprintf("%d,%d", x, y))
		ch.Dots = append(ch.Dots, heatCell{X: x, Y: y, Label: num(c.TTFTMs), Title: fmt.Sprintf("%s tokens: TTFT %s ms, %s prompt tok/s", tokenLabel(c.ContextTokens), num(c.TTFTMs), num(c.PromptTokS))})
		ch.XLabels = append(ch.XLabels, axisLabel{x, tokenLabel(c.ContextTokens)})
	}
	ch.Points = strings.Join(poly, " ")
	return ch
}

func (p *pages) run(c echo.Context) error {
	id := c.Param("id")
	if len(id) > 64 {
		return p.pageError(c, http.StatusNotFound, "no such run")
	}
	r, err := p.s.store.Run(c.Request().Context(), id)
	if err != nil {
		var de *store.Error
		if errors.As(err, &de) {
			return p.pageError(c, domainStatus(de.Kind), de.Msg)
		}
		return err
	}
	return p.render(c, http.StatusOK, "run.html", pageCSP, map[string]any{
		"Title": r.Title, "Run": r, "Heat": decodeHeatmap(r.Decode), "Prefill": newPrefillChart(r.Prefill),
	})
}

func (p *pages) leaderboard(c echo.Context) error {
	q := c.QueryParams()
	data := map[string]any{"Title": "Leaderboard", "Metric": store.MetricTotalTokS, "Context": 0, "Concurrency": 1}
	atoi := func(name string, def, lo, hi int) (int, error) {
		s := q.Get(name)
		if s == "" {
			return def, nil
		}
		v, err := strconv.Atoi(s)
		if err != nil || v < lo || v > hi {
			return 0, fmt.Errorf("%s must be a whole number from %d to %d", name, lo, hi)
		}
		return v, nil
	}
	l, err := atoi("context_tokens", 0, 0, 16777216)
	if err != nil {
		return p.pageError(c, http.StatusBadRequest, err.Error())
	}
	b, err := atoi("concurrency", 1, 1, 65536)
	if err != nil {
		return p.pageError(c, http.StatusBadRequest, err.Error())
	}
	metric := q.Get("metric")
	if !slices.Contains([]string{store.MetricTotalTokS, store.MetricPerRequestTokS, store.MetricTTFTMs, store.MetricTBTMs}, metric) {
		metric = store.MetricTotalTokS
	}
	data["Context"], data["Concurrency"], data["Metric"] = l, b, metric
	data["MetricLabel"] = map[string]string{
		store.MetricTotalTokS: "total tok/s", store.MetricPerRequestTokS: "per-request tok/s",
		store.MetricTTFTMs: "TTFT (lowest first)", store.MetricTBTMs: "time between tokens (lowest first)",
	}[metric]
	ctx := c.Request().Context()
	entries, _, err := p.s.store.Leaderboard(ctx, store.LeaderboardQuery{ContextTokens: l, Concurrency: b, Metric: metric, Limit: 50})
	if err != nil {
		return err
	}
	data["Entries"] = entries
	if len(entries) == 0 {
		if err := p.leaderboardHint(ctx, data, l); err != nil {
			return err
		}
	}
	return p.render(c, http.StatusOK, "leaderboard.html", pageCSP, data)
}

// leaderboardHint says which cells were measured when none was at the
// asked one.
func (p *pages) leaderboardHint(ctx context.Context, data map[string]any, l int) error {
	contexts, nearest, concurrencies, err := p.s.store.CellAxes(ctx, l)
	if err != nil {
		return err
	}
	data["Contexts"], data["Nearest"], data["Concurrencies"] = contexts, nearest, concurrencies
	return nil
}

func (p *pages) widget(c echo.Context) error {
	q := c.QueryParams()
	theme := q.Get("theme")
	if theme != "dark" {
		theme = "light"
	}
	clip := func(s string) string {
		if len(s) > 200 {
			return s[:200]
		}
		return s
	}
	return p.render(c, http.StatusOK, "widget.html", widgetCSP, map[string]any{
		"Title": "matrixd calculator", "Run": clip(q.Get("run")), "Model": clip(q.Get("model")), "GPU": clip(q.Get("gpu")), "Theme": theme,
	})
}
