package site

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/history"
	"github.com/matrixd/matrixd/predict"
	"github.com/matrixd/matrixd/store"
)

// Reports: a few questions the site answers from its data, each drawn
// afresh from the API operation that answers it (the leaderboard, the
// series verdicts, the planner), each at a permalink and in a feed.

// The reports' questions.
const (
	reportContext     = 16384
	reportConcurrency = 8
	// reportStepsExamined is how many of the newest runs the version
	// report looks for a series step into.
	reportStepsExamined = 200
	reportSteps         = 20
	reportUsers         = 100
	reportPerRequest    = 20.0
	reportElectricity   = 0.15 // USD per kWh: the price the cheapest-way report plans with
)

// Report slugs, the last segment of each report's permalink.
const (
	reportFastest  = "fastest-per-gpu-16k-x8"
	reportVersions = "engine-version-changes"
	reportCheapest = "cheapest-100-users-20-tok-s"
)

// reportSlugs are the reports in the order the index lists them.
var reportSlugs = []string{reportFastest, reportVersions, reportCheapest}

// report is one report's data; its words are the page's (by slug).
type report struct {
	Slug    string
	Updated time.Time              // the newest run it is drawn from was stored then
	Fastest []api.LeaderboardEntry // the best run of each GPU, fastest first
	Steps   []predict.Into         // newest first
	Plan    *api.CapacityPlan
	Source  string // the API query it is drawn from
}

// Href is the report's permalink.
func (r report) Href() string { return "/reports/" + r.Slug }

// makeReport draws the report named slug from the data; ok is false when
// there is no such report.
func (s *Site) makeReport(ctx context.Context, slug string) (report, bool, error) {
	r := report{Slug: slug, Updated: time.Unix(0, 0).UTC()}
	seen := func(t time.Time) {
		if t.After(r.Updated) {
			r.Updated = t
		}
	}
	switch slug {
	case reportFastest:
		limit := 200
		resp, err := s.GetLeaderboard(ctx, api.GetLeaderboardRequestObject{Params: api.GetLeaderboardParams{
			ContextTokens: reportContext, Concurrency: reportConcurrency, Limit: &limit}})
		if err != nil {
			return r, false, err
		}
		board, ok := resp.(api.GetLeaderboard200JSONResponse)
		if !ok {
			return r, false, fmt.Errorf("leaderboard answered %T", resp)
		}
		gpus := map[string]bool{}
		for _, e := range board.Items {
			if gpus[e.Run.GPU] {
				continue
			}
			gpus[e.Run.GPU] = true
			r.Fastest = append(r.Fastest, e)
			seen(e.Run.CreatedAt)
		}
		r.Source = "/v1/leaderboard?" + url.Values{"context_tokens": {strconv.Itoa(reportContext)}, "concurrency": {strconv.Itoa(reportConcurrency)}}.Encode()
	case reportVersions:
		steps, _, err := s.read.LatestSteps(ctx, store.RunFilter{}, reportStepsExamined)
		if err != nil {
			return r, false, err
		}
		// Newest first: the step into the run stored last, and of runs
		// stored together the later version.
		slices.SortStableFunc(steps, func(a, b predict.Into) int {
			if c := b.To.CreatedAt.Compare(a.To.CreatedAt); c != 0 {
				return c
			}
			return history.CompareVersions(b.To.EngineVersion, a.To.EngineVersion)
		})
		for _, in := range steps {
			if len(r.Steps) == reportSteps {
				break
			}
			r.Steps = append(r.Steps, in)
			seen(in.To.CreatedAt)
		}
		r.Source = "/v1/series"
	case reportCheapest:
		users, limit := reportUsers, 10
		electricity := reportElectricity
		sort := api.PlanCapacityParamsSort("cost")
		resp, err := s.PlanCapacity(ctx, api.PlanCapacityRequestObject{Params: api.PlanCapacityParams{
			ContextTokens: reportContext, MinPerRequestTokS: reportPerRequest, Users: &users, Limit: &limit, Sort: &sort,
			ElectricityUSDPerKwh: &electricity}})
		if err != nil {
			return r, false, err
		}
		plan, ok := resp.(api.PlanCapacity200JSONResponse)
		if !ok {
			return r, false, fmt.Errorf("plan capacity answered %T", resp)
		}
		p := api.CapacityPlan(plan)
		r.Plan = &p
		for _, o := range p.Options {
			run, err := s.read.Run(ctx, o.RunID)
			if err != nil {
				return r, false, err
			}
			seen(run.CreatedAt)
		}
		r.Source = "/v1/planner?" + url.Values{"context_tokens": {strconv.Itoa(reportContext)}, "min_per_request_tok_s": {"20"},
			"users": {strconv.Itoa(reportUsers)}, "sort": {"cost"}, "electricity_usd_per_kwh": {"0.15"}}.Encode()
	default:
		return r, false, nil
	}
	return r, true, nil
}

// reportTitles are the reports' titles in the feed, which speaks English
// as the API does; the pages take theirs from the catalogs.
var reportTitles = map[string]string{
	reportFastest:  "The fastest run of each GPU at 16K × 8",
	reportVersions: "What changed between engine versions",
	reportCheapest: "The cheapest way to serve 100 users at 20 tok/s each",
}

// GetReportsFeed implements GET /feeds/reports.atom.
func (s *Site) GetReportsFeed(ctx context.Context, _ api.GetReportsFeedRequestObject) (api.GetReportsFeedResponseObject, error) {
	f := s.newFeed("/feeds/reports.atom", "matrixd: reports", nil)
	f.Links[1].Href = s.abs("/reports")
	f.Subtitle = "Reports drawn from the runs, each updated when a run it is drawn from arrives."
	for _, slug := range reportSlugs {
		r, _, err := s.makeReport(ctx, slug)
		if err != nil {
			return nil, err
		}
		f.Entries = append(f.Entries, atomEntry{ID: feedID("report " + slug), Title: reportTitles[slug], Updated: atomTime(r.Updated),
			Links: []atomLink{
				{Rel: "alternate", Type: "text/html", Href: s.abs(r.Href())},
				{Rel: "related", Type: "application/json", Href: s.abs(r.Source)},
			},
			Summary: reportSummary(r)})
	}
	return f.render()
}

// reportSummary is a report's gist in a sentence, for its feed entry.
func reportSummary(r report) string {
	switch {
	case r.Slug == reportFastest && len(r.Fastest) > 0:
		e := r.Fastest[0]
		return fmt.Sprintf("%d GPUs measured at 16K × 8; the fastest: %s, %s tok/s total (%s).", len(r.Fastest), e.Run.GPU, exact(e.Value), e.Run.Model)
	case r.Slug == reportVersions && len(r.Steps) > 0:
		in := r.Steps[0]
		return fmt.Sprintf("%d steps between engine versions; the newest: %s, %s → %s: %s.", len(r.Steps), in.To.Title,
			versionLabel(in.From.EngineName, in.From.EngineVersion), in.To.EngineVersion, in.Step.Verdict)
	case r.Slug == reportCheapest && r.Plan != nil && len(r.Plan.Options) > 0:
		o := r.Plan.Options[0]
		return fmt.Sprintf("The cheapest option: %s (%s), %s instances.", o.GPU, o.Model, optInt(o.Instances))
	}
	return "No run answers this report yet."
}

func optInt(v *int) string {
	if v == nil {
		return "—"
	}
	return strconv.Itoa(*v)
}
