package site

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/text/language"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/store"
)

// Atom feeds (RFC 4287) of new runs and of regressions, filtered as the
// run list is. Ids are urn:uuid names (UUID version 5) of the runs they
// are about, so an entry keeps its id wherever and whenever it is served;
// links are absolute under Config.PublicURL when it is set, else
// absolute-path references, which a reader resolves against the feed's
// own address (RFC 4287 section 2). The Host header is never used: it is
// the client's to say, and answers are cached whatever it says.

const (
	// feedEntries bounds a feed.
	feedEntries = 50
	// regressionsExamined is how many of the newest matching runs the
	// regressions feed compares with the run before them in their series.
	regressionsExamined = 200
	atomNS              = "http://www.w3.org/2005/Atom"
	atomType            = "application/atom+xml"
)

// feedNamespace is the UUID namespace of matrixd's feed and entry ids.
var feedNamespace = [16]byte{0x6d, 0x61, 0x74, 0x72, 0x69, 0x78, 0x64, 0x2d, 0x8f, 0x1e, 0x4b, 0x52, 0x9c, 0x0a, 0x7e, 0x33}

// feedID is the urn:uuid (version 5, RFC 9562) of name in matrixd's
// namespace.
func feedID(name string) string {
	h := sha1.New()
	h.Write(feedNamespace[:])
	h.Write([]byte(name))
	u := h.Sum(nil)[:16]
	u[6] = u[6]&0x0f | 0x50
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("urn:uuid:%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

type atomFeed struct {
	XMLName   xml.Name    `xml:"http://www.w3.org/2005/Atom feed"`
	ID        string      `xml:"id"`
	Title     string      `xml:"title"`
	Subtitle  string      `xml:"subtitle,omitempty"`
	Updated   string      `xml:"updated"`
	Links     []atomLink  `xml:"link"`
	Author    atomPerson  `xml:"author"`
	Generator string      `xml:"generator"`
	Entries   []atomEntry `xml:"entry"`
}

type atomLink struct {
	Rel   string `xml:"rel,attr"`
	Type  string `xml:"type,attr,omitempty"`
	Href  string `xml:"href,attr"`
	Title string `xml:"title,attr,omitempty"`
}

type atomPerson struct {
	Name string `xml:"name"`
}

type atomEntry struct {
	ID        string       `xml:"id"`
	Title     string       `xml:"title"`
	Updated   string       `xml:"updated"`
	Published string       `xml:"published,omitempty"`
	Authors   []atomPerson `xml:"author"`
	Links     []atomLink   `xml:"link"`
	Summary   string       `xml:"summary,omitempty"`
	// Rights is the licence of the entry's run (RFC 4287 4.2.10).
	Rights string `xml:"rights,omitempty"`
}

func atomTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// feedFilters is a feed's filters as a canonical query (sorted, encoded),
// for its id, its self link and the page it mirrors.
func feedFilters(p api.GetRunsFeedParams) url.Values {
	q := url.Values{}
	for name, v := range map[string]*string{"gpu": p.GPU, "model": p.Model, "quantization": p.Quantization, "engine": p.Engine,
		"engine_version": p.EngineVersion, "kv_cache_dtype": p.KVCacheDtype, "submitter": p.Submitter, "submitted_by": p.SubmittedBy} {
		if v != nil {
			q.Set(name, *v)
		}
	}
	for name, v := range map[string]*float64{"vram_gb_min": p.VRAMGBMin, "vram_gb_max": p.VRAMGBMax} {
		if v != nil {
			q.Set(name, exact(*v))
		}
	}
	return q
}

func withQuery(path string, q url.Values) string {
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

// newFeed starts the feed at path with filters q.
func (s *Site) newFeed(path, title string, q url.Values) atomFeed {
	self := withQuery(path, q)
	if len(q) > 0 {
		title += " (" + filterText(q) + ")"
	}
	return atomFeed{ID: feedID("feed " + s.publicURL + self), Title: title, Author: atomPerson{Name: "matrixd"}, Generator: "matrixd",
		Links: []atomLink{
			{Rel: "self", Type: atomType, Href: s.abs(self)},
			{Rel: "alternate", Type: "text/html", Href: s.abs(withQuery("/", q))},
		}}
}

func filterText(q url.Values) string {
	var parts []string
	for k := range q {
		parts = append(parts, k+" = "+q.Get(k))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// abs is a link to path on this server: absolute under the public URL
// when it is known.
func (s *Site) abs(path string) string { return s.publicURL + path }

// atomBody is a feed as an answer.
type atomBody struct{ body []byte }

func (b atomBody) VisitGetRunsFeedResponse(w http.ResponseWriter) error        { return b.write(w) }
func (b atomBody) VisitGetRegressionsFeedResponse(w http.ResponseWriter) error { return b.write(w) }
func (b atomBody) VisitGetReportsFeedResponse(w http.ResponseWriter) error     { return b.write(w) }

func (b atomBody) write(w http.ResponseWriter) error {
	w.Header().Set(echo.HeaderContentType, atomType)
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(b.body)
	return err
}

// render finishes f: updated is its newest entry's (the epoch when it has
// none, so that an empty feed's bytes, and its ETag, do not change).
func (f atomFeed) render() (atomBody, error) {
	f.Updated = atomTime(time.Unix(0, 0))
	for _, e := range f.Entries {
		f.Updated = max(f.Updated, e.Updated)
	}
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	enc := xml.NewEncoder(&buf)
	enc.Indent("", "  ")
	if err := enc.Encode(f); err != nil {
		return atomBody{}, fmt.Errorf("encode feed: %w", err)
	}
	buf.WriteByte('\n')
	return atomBody{buf.Bytes()}, nil
}

// GetRunsFeed implements GET /feeds/runs.atom.
func (s *Site) GetRunsFeed(ctx context.Context, req api.GetRunsFeedRequestObject) (api.GetRunsFeedResponseObject, error) {
	p := req.Params
	limit, sort := feedEntries, api.ListRunsParamsSort(store.SortCreatedDesc)
	resp, err := s.ListRuns(ctx, api.ListRunsRequestObject{Params: api.ListRunsParams{GPU: p.GPU, Model: p.Model, Quantization: p.Quantization,
		Engine: p.Engine, EngineVersion: p.EngineVersion, KVCacheDtype: p.KVCacheDtype, Submitter: p.Submitter, SubmittedBy: p.SubmittedBy,
		VRAMGBMin: p.VRAMGBMin, VRAMGBMax: p.VRAMGBMax, Sort: &sort, Limit: &limit}})
	if err != nil {
		return nil, err
	}
	list, ok := resp.(api.ListRuns200JSONResponse)
	if !ok {
		return nil, fmt.Errorf("list runs answered %T", resp)
	}
	f := s.newFeed("/feeds/runs.atom", "matrixd: new runs", feedFilters(p))
	f.Subtitle = fmt.Sprintf("The newest %d runs, newest first.", feedEntries)
	for _, r := range list.Items {
		e := atomEntry{ID: feedID("run " + r.ID), Title: r.Title, Updated: atomTime(r.CreatedAt), Published: atomTime(r.CreatedAt),
			Links: []atomLink{
				{Rel: "alternate", Type: "text/html", Href: s.abs("/runs/" + url.PathEscape(r.ID))},
				{Rel: "alternate", Type: "application/json", Href: s.abs("/v1/runs/" + url.PathEscape(r.ID))},
			}}
		if r.Submitter != nil && *r.Submitter != "" {
			e.Authors = []atomPerson{{Name: *r.Submitter}}
		}
		summary := fmt.Sprintf("%s on %s, %s %s", r.Model, r.GPU, r.Engine, deref(r.EngineVersion))
		if r.Peak != nil {
			summary += fmt.Sprintf("; peak %s tok/s total at context %s × %d", newNumbers(language.English).num(r.Peak.TotalTokS), newNumbers(language.English).tokens(r.Peak.ContextTokens), r.Peak.Concurrency)
		}
		in, ok, err := s.read.Predecessor(ctx, r.ID)
		if err != nil {
			return nil, err
		}
		if ok {
			e.Links = append(e.Links, atomLink{Rel: "related", Type: "text/html", Href: s.abs(comparePath(in.From.ID, in.To.ID)),
				Title: "compared with " + versionLabel(in.From.EngineName, in.From.EngineVersion)})
			summary += "; follows " + versionLabel(in.From.EngineName, in.From.EngineVersion) + " in its series"
		} else {
			e.Links = append(e.Links, atomLink{Rel: "related", Type: "text/html", Href: s.abs("/runs/" + url.PathEscape(r.ID) + "#series"), Title: "its series"})
		}
		e.Summary = summary + origin(r)
		e.Rights = "unknown licence"
		if r.License != nil {
			e.Rights = "Licence: " + *r.License + " (SPDX)"
		}
		if r.SourceURL != nil {
			e.Links = append(e.Links, atomLink{Rel: "via", Href: *r.SourceURL, Title: "where it was published"})
		}
		f.Entries = append(f.Entries, e)
	}
	return f.render()
}

// origin is where a run came from, for an entry's summary.
func origin(r api.RunSummary) string {
	publisher, retrieved := "an unknown publisher", "on an unknown day"
	if r.Publisher != nil {
		publisher = *r.Publisher
	}
	if r.RetrievedAt != nil {
		retrieved = "on " + r.RetrievedAt.String()
	}
	return "; published by " + publisher + ", retrieved " + retrieved
}

// GetRegressionsFeed implements GET /feeds/regressions.atom.
func (s *Site) GetRegressionsFeed(ctx context.Context, req api.GetRegressionsFeedRequestObject) (api.GetRegressionsFeedResponseObject, error) {
	p := req.Params
	if p.VRAMGBMin != nil && p.VRAMGBMax != nil && *p.VRAMGBMin > *p.VRAMGBMax {
		return nil, s.req.Invalid(fieldError("vram_gb_min", "must not exceed vram_gb_max"))
	}
	filter, err := s.read.WithGPU(ctx, runFilter(nil, p.Model, p.Quantization, p.Engine, p.EngineVersion, p.KVCacheDtype, p.Submitter, p.SubmittedBy, p.VRAMGBMin, p.VRAMGBMax), deref(p.GPU))
	if err != nil {
		return nil, err
	}
	steps, examined, err := s.read.LatestSteps(ctx, filter, regressionsExamined)
	if err != nil {
		return nil, err
	}
	f := s.newFeed("/feeds/regressions.atom", "matrixd: regressions", feedFilters(api.GetRunsFeedParams(p)))
	f.Subtitle = fmt.Sprintf("Series steps found slower beyond their noise floor among the newest %d runs (%d examined, %d with a run before them in their series).",
		regressionsExamined, examined, len(steps))
	for _, in := range steps {
		st := in.Step
		if st.Verdict != "regressed" || len(f.Entries) == feedEntries {
			continue
		}
		where := "over the grid"
		if len(st.RegressedRows) > 0 {
			var rows []string
			en := newNumbers(language.English)
			for _, l := range st.RegressedRows {
				rows = append(rows, en.tokens(l))
			}
			where = "at context " + strings.Join(rows, ", ")
		}
		updated := atomTime(in.To.CreatedAt)
		e := atomEntry{ID: feedID("regression " + in.From.ID + " " + in.To.ID), Updated: updated, Published: updated,
			Title: fmt.Sprintf("Regressed: %s, %s → %s %s", in.To.Title, versionLabel(in.From.EngineName, in.From.EngineVersion), in.To.EngineVersion, where),
			Links: []atomLink{
				{Rel: "alternate", Type: "text/html", Href: s.abs(comparePath(in.From.ID, in.To.ID))},
				{Rel: "alternate", Type: "application/json", Href: s.abs("/v1/compare?run_ids=" + url.QueryEscape(in.From.ID) + "," + url.QueryEscape(in.To.ID))},
				{Rel: "related", Type: "text/html", Href: s.abs("/runs/" + url.PathEscape(in.To.ID) + "#series"), Title: "the newer run and its series"},
			},
			Summary: fmt.Sprintf("%s. Noise floor: %s (σ %.2g %% and %.2g %%, z = %g, at least %g %%).", st.Why, strings.ReplaceAll(st.Noise.Basis, "_", " "),
				100*st.Noise.SigmaFrom, 100*st.Noise.SigmaTo, st.Noise.Rule.Z, 100*st.Noise.Rule.MinFloor)}
		if in.To.SubmittedBy != "" {
			e.Authors = []atomPerson{{Name: in.To.SubmittedBy}}
		}
		f.Entries = append(f.Entries, e)
	}
	return f.render()
}

// comparePath is the comparison page of two runs, older first.
func comparePath(from, to string) string {
	return "/compare?run_ids=" + url.QueryEscape(from) + "," + url.QueryEscape(to)
}

func versionLabel(engine, version string) string {
	if version == "" {
		return engine + " (no version)"
	}
	return engine + " " + version
}
