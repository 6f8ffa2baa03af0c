package site

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/ingest"
	"github.com/matrixd/matrixd/store"
)

// The pages of who measured (organizations), what the data says
// (reports) and how it was measured (benchmarks).

// organizations is GET /v1/submitters as a page: every submitter with
// their runs, each linking their profile.
func (p *pages) organizations(c echo.Context) error {
	if _, err := p.asAPI(c, "/v1/submitters"); err != nil {
		return p.problemPage(c, err, "/organizations")
	}
	resp, err := p.s.ListSubmitters(c.Request().Context(), api.ListSubmittersRequestObject{})
	if err != nil {
		return err
	}
	list, ok := resp.(api.ListSubmitters200JSONResponse)
	if !ok {
		return fmt.Errorf("list submitters answered %T", resp)
	}
	return p.render(c, http.StatusOK, "organizations.html", pageCSP, map[string]any{
		"Title": p.locale(c).t("nav.organizations"), "Items": list.Items, "JSON": "/v1/submitters",
	})
}

// reports lists the reports, each with its gist; they take no query, as
// their feed.
func (p *pages) reports(c echo.Context) error {
	if _, err := p.asAPI(c, "/feeds/reports.atom"); err != nil {
		return p.problemPage(c, err, "/reports")
	}
	var all []report
	for _, slug := range reportSlugs {
		r, _, err := p.s.makeReport(c.Request().Context(), slug)
		if err != nil {
			return err
		}
		all = append(all, r)
	}
	return p.render(c, http.StatusOK, "reports.html", pageCSP, map[string]any{
		"Title": p.locale(c).t("nav.reports"), "Reports": all,
	})
}

// report is one report at its permalink.
func (p *pages) report(c echo.Context) error {
	slug := strings.TrimPrefix(c.Request().URL.Path, "/reports/")
	if _, err := p.asAPI(c, "/feeds/reports.atom"); err != nil {
		return p.problemPage(c, err, "/reports")
	}
	r, ok, err := p.s.makeReport(c.Request().Context(), slug)
	if err != nil {
		return err
	}
	if !ok {
		return p.problemPage(c, &store.Error{Kind: store.ErrNotFound, Msg: fmt.Sprintf("no report %q; /reports lists them", p.s.req.Clip(slug))}, "/reports")
	}
	return p.render(c, http.StatusOK, "report.html", pageCSP, map[string]any{
		"Title": p.locale(c).t("reports." + slug + ".title"), "Report": r,
	})
}

// benchmark is a page of the benchmarks: a method class or a tool
// matrixd reads.
type benchmark struct {
	Name  string // the class or the format, as the API names it
	Class string // a tool's method class ("" for grid-csv, which takes any; the class's own for a class)
	Tool  bool
	// Import is how its output is submitted (tools only) with the CLI;
	// HTTP, when POST /v1/runs/import takes the format too.
	Import, HTTP string
	// Tools are a class's tools.
	Tools []string
}

// Href is the benchmark's page.
func (b benchmark) Href() string { return "/benchmarks/" + b.Name }

// toolClasses are the method class each format's runs are of.
var toolClasses = map[string]string{
	ingest.FormatLlamaBatchedBench: store.MethodBatchedBurst,
	ingest.FormatVLLMBench:         store.MethodServingSweep,
	ingest.FormatGridCSV:           "",
	ingest.FormatDS4Bench:          store.MethodDecodeAtDepth,
	ingest.FormatLlamaBench:        store.MethodDecodeAtDepth,
	ingest.FormatLlmfit:            store.MethodOneShot,
	ingest.FormatLocalMaxxing:      store.MethodOneShot,
	ingest.FormatInferenceX:        store.MethodServingSweep,
}

// standalone are the formats whose files are recognised without --format
// and read by the CLI only.
var standalone = []string{ingest.FormatDS4Bench, ingest.FormatLlamaBench, ingest.FormatLlmfit, ingest.FormatLocalMaxxing}

// httpFormats are the tools' formats POST /v1/runs/import takes.
var httpFormats = []string{ingest.FormatLlamaBatchedBench, ingest.FormatVLLMBench, ingest.FormatGridCSV}

// benchmarks are the method classes, then the tools, each a page.
func benchmarks() []benchmark {
	var out []benchmark
	for _, class := range store.MethodClasses() {
		b := benchmark{Name: class, Class: class}
		for _, f := range ingest.Formats() {
			if toolClasses[f] == class {
				b.Tools = append(b.Tools, f)
			}
		}
		out = append(out, b)
	}
	for _, f := range ingest.Formats() {
		b := benchmark{Name: f, Class: toolClasses[f], Tool: true}
		switch {
		case slices.Contains(standalone, f):
			b.Import = "matrixd import FILE"
		default:
			b.Import = "matrixd import --format " + f + " --meta META.json FILE"
		}
		if slices.Contains(httpFormats, f) {
			b.HTTP = `curl -X POST 'https://matrixd.example.org/v1/runs/import?format=` + f + `' -H "Authorization: Bearer $KEY" -F meta=@META.json -F file=@FILE`
		}
		out = append(out, b)
	}
	return out
}

// benchmarksPage lists the method classes and the tools; it takes no
// query, as the getting-started guide whose formats it explains.
func (p *pages) benchmarksPage(c echo.Context) error {
	if _, err := p.asAPI(c, "/v1/getting-started"); err != nil {
		return p.problemPage(c, err, "/benchmarks")
	}
	return p.render(c, http.StatusOK, "benchmarks.html", pageCSP, map[string]any{
		"Title": p.locale(c).t("nav.benchmarks"), "Benchmarks": benchmarks(),
	})
}

// benchmarkPage is one method class or tool.
func (p *pages) benchmarkPage(c echo.Context) error {
	name := strings.TrimPrefix(c.Request().URL.Path, "/benchmarks/")
	if _, err := p.asAPI(c, "/v1/getting-started"); err != nil {
		return p.problemPage(c, err, "/benchmarks")
	}
	i := slices.IndexFunc(benchmarks(), func(b benchmark) bool { return b.Name == name })
	if i < 0 {
		return p.problemPage(c, &store.Error{Kind: store.ErrNotFound, Msg: fmt.Sprintf("no method class or tool %q; /benchmarks lists them", p.s.req.Clip(name))}, "/benchmarks")
	}
	b := benchmarks()[i]
	return p.render(c, http.StatusOK, "benchmark.html", pageCSP, map[string]any{
		"Title": b.Name, "Bench": b,
	})
}
