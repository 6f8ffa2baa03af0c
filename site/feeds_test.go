package site_test

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3filter"

	"github.com/matrixd/matrixd/predict"
	"github.com/matrixd/matrixd/server"
	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

func init() {
	openapi3filter.RegisterBodyDecoder("application/atom+xml", openapi3filter.PlainBodyDecoder)
}

// TestFeeds: the runs feed lists the newest runs first, bounded, filtered
// as the list is and refusing what it refuses; the regressions feed has
// one entry per regressed series step, naming its rows, with the verdict
// the series gives; ids stay put; answers are cached.
func TestFeeds(t *testing.T) {
	e := newEnv(t, 60)
	base := storetest.Runs(82, 1)[0]
	base.Model.Name = "feeds/Only-This-Series-7B"
	var ls []int
	for _, c := range base.Decode {
		if !slices.Contains(ls, c.ContextTokens) {
			ls = append(ls, c.ContextTokens)
		}
	}
	slices.Sort(ls)
	long := ls[len(ls)-2:]
	stored := e.series(t, base, []string{"1.1.0", "1.2.0", "1.3.0"}, []func(l, b int) float64{
		func(int, int) float64 { return 1 },
		func(int, int) float64 { return 1.10 },
		func(l, _ int) float64 {
			if slices.Contains(long, l) {
				return 1.10 * 0.9
			}
			return 1.10
		},
	})

	f := e.feed(t, "/feeds/runs.atom")
	if len(f.Entries) != 50 {
		t.Errorf("runs feed: %d entries, want the newest 50", len(f.Entries))
	}
	f = e.feed(t, "/feeds/runs.atom?model="+url.QueryEscape(base.Model.Name)+"&engine="+url.QueryEscape(base.Engine.Name))
	if len(f.Entries) != 3 {
		t.Fatalf("runs feed of the series' model: %d entries, want 3", len(f.Entries))
	}
	if got := linkOf(f.Entries[0].Links, "alternate", "text/html"); !slices.ContainsFunc(stored, func(r store.Run) bool { return got == "/runs/"+r.ID }) {
		t.Errorf("runs feed entry links %q, want a run page", got)
	}
	if got := linkOf(f.Entries[0].Links, "related", "text/html"); !strings.HasPrefix(got, "/compare?run_ids=") && !strings.HasSuffix(got, "#series") {
		t.Errorf("runs feed entry: related %q, want the comparison or the series", got)
	}
	again := e.feed(t, "/feeds/runs.atom?engine="+url.QueryEscape(base.Engine.Name)+"&model="+url.QueryEscape(base.Model.Name))
	if again.IDs[0] != f.IDs[0] || again.Entries[0].IDs[0] != f.Entries[0].IDs[0] {
		t.Errorf("ids changed between two answers: %s %s, then %s %s", f.IDs[0], f.Entries[0].IDs[0], again.IDs[0], again.Entries[0].IDs[0])
	}
	if all := e.feed(t, "/feeds/runs.atom"); all.IDs[0] == f.IDs[0] {
		t.Error("the filtered feed has the unfiltered one's id")
	}

	r := e.feed(t, "/feeds/regressions.atom?model="+url.QueryEscape(base.Model.Name))
	if len(r.Entries) != 1 {
		t.Fatalf("regressions feed: %d entries, want the one regressed step (1.2.0 → 1.3.0 at the longest context)", len(r.Entries))
	}
	en := r.Entries[0]
	s := e.runSeries(t, stored[2].ID)
	last := s.Steps[len(s.Steps)-1]
	if last.Verdict != "regressed" || len(last.RegressedRows) == 0 {
		t.Fatalf("the series says %s at %v; the test wants a regression at %v", last.Verdict, last.RegressedRows, long)
	}
	wantCompare := "/compare?run_ids=" + stored[1].ID + "," + stored[2].ID
	if got := linkOf(en.Links, "alternate", "text/html"); got != wantCompare {
		t.Errorf("regression entry links %q, want %q", got, wantCompare)
	}
	if got := linkOf(en.Links, "alternate", "application/json"); got != "/v1/compare?run_ids="+stored[1].ID+","+stored[2].ID {
		t.Errorf("regression entry's JSON %q", got)
	}
	if !strings.Contains(en.Titles[0], "1.2.0 → 1.3.0") || !strings.Contains(en.Titles[0], "context "+strconv.Itoa(last.RegressedRows[0]/1024)+"K") || !strings.Contains(en.Summary, last.Why) {
		t.Errorf("regression entry %q / %q: want the versions, the row and the series' why (%s)", en.Titles[0], en.Summary, last.Why)
	}
	if got := e.feed(t, "/feeds/regressions.atom?model=no-such-model"); len(got.Entries) != 0 || got.Updated[0] != "1970-01-01T00:00:00Z" {
		t.Errorf("an empty feed: %d entries, updated %s", len(got.Entries), got.Updated)
	}

	// Refused as the list refuses.
	for target, field := range map[string]string{
		"/feeds/runs.atom?vram_gb_min=lots":                    "vram_gb_min",
		"/feeds/runs.atom?sort=gpu":                            "sort",
		"/feeds/regressions.atom?gpus=RTX":                     "gpus",
		"/feeds/regressions.atom?vram_gb_min=30&vram_gb_max=8": "vram_gb_min",
		"/feeds/runs.atom?gpu=%zz":                             "gpu",
	} {
		rec := e.do(t, "GET", target, nil)
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `"field":"`+field+`"`) {
			t.Errorf("%s: %d %.300s; want 400 naming %s", target, rec.Code, rec.Body, field)
		}
	}

	// Cached: the same bytes, and 304 for the ETag.
	rec := e.do(t, "GET", "/feeds/regressions.atom", nil)
	etag := rec.Header().Get("ETag")
	if etag == "" || rec.Header().Get("Cache-Control") != "public, max-age=15" {
		t.Fatalf("feed headers %v", rec.Header())
	}
	if rec := e.do(t, "GET", "/feeds/regressions.atom", http.Header{"If-None-Match": {etag}}); rec.Code != http.StatusNotModified {
		t.Errorf("If-None-Match: %d", rec.Code)
	}
}

// TestFeedLinksUnderThePublicURL: with a public URL, every link is
// absolute under it; ids do not depend on it for entries.
func TestFeedLinksUnderThePublicURL(t *testing.T) {
	e := newEnvWith(t, 0, server.Config{PublicURL: "https://matrixd.example.org/"})
	plain := *e
	var err error
	if plain.h, err = server.New(e.st, server.Config{Calc: predict.New(e.st, predict.DefaultCacheBytes, nil)}); err != nil {
		t.Fatal(err)
	}
	f, p := e.feed(t, "/feeds/runs.atom"), plain.feed(t, "/feeds/runs.atom")
	links := append([]atomLink{}, f.Links...)
	for _, en := range f.Entries {
		links = append(links, en.Links...)
	}
	for _, l := range links {
		if !strings.HasPrefix(l.Href, "https://matrixd.example.org/") {
			t.Errorf("link %q is not under the public URL", l.Href)
		}
	}
	if len(f.Entries) == 0 || f.Entries[0].IDs[0] != p.Entries[0].IDs[0] {
		t.Errorf("a run's entry id depends on the public URL")
	}
	if _, err := server.New(e.st, server.Config{Calc: predict.New(e.st, predict.DefaultCacheBytes, nil), PublicURL: "matrixd.example.org"}); err == nil {
		t.Error("a public URL without a scheme was taken")
	}
}
