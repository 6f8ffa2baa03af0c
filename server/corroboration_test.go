package server_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

// TestCorroborationOverHTTP posts a run agreeing with a seeded one and a
// 2× copy of it from a second key: the first is corroborated, the copy
// disputed naming the seeded run and the ratio, left out of the
// leaderboard unless include_flagged=true, its status change in its
// history; every response is validated against openapi.yaml.
func TestCorroborationOverHTTP(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "alice", "mallory")
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	scaled := func(f float64) store.Run {
		r := storetest.Scaled(fara, func(int, int) float64 { return f })
		r.Title = "fara measured again"
		r.Submitter = "Second Lab"
		return r
	}
	agree := postRun(t, e, k["alice"], scaled(1.05), http.StatusCreated)
	if c := agree.Corroboration; c.Status != api.Corroborated || c.Sources != 1 || !slices.ContainsFunc(c.References, func(r api.CorroborationReference) bool { return r.RunID == fara.ID }) {
		t.Fatalf("a run 5 %% from the seeded one: %+v", c)
	}
	double := postRun(t, e, k["mallory"], scaled(2), http.StatusCreated)
	if double.Trust.Flagged {
		t.Fatal("the 2× copy is flagged by the checks: the test must reach corroboration")
	}
	c := double.Corroboration
	if c.Status != api.Disputed || !strings.Contains(c.Detail, fara.ID) || !strings.Contains(c.Detail, "2×") {
		t.Fatalf("a 2× copy from a second key: %+v", c)
	}
	// Both details carry their code: its English is the detail, word for
	// word, so a client can say it in its reader's language.
	for _, c := range []api.Corroboration{agree.Corroboration, c} {
		if !strings.HasPrefix(c.Notice.Code, "trust.corroboration_") || english(t, c.Notice.Code, c.Notice.Params) != c.Detail {
			t.Errorf("corroboration notice %s %v says %q, detail %q", c.Notice.Code, c.Notice.Params, english(t, c.Notice.Code, c.Notice.Params), c.Detail)
		}
	}
	got := e.do(t, http.MethodGet, "/v1/runs/"+double.ID, nil)
	if !strings.Contains(got.Body.String(), `"status":"disputed"`) {
		t.Errorf("GET the disputed run: %s", got.Body)
	}

	board := func(query string) []string {
		rec := e.do(t, http.MethodGet, "/v1/leaderboard?context_tokens=0&concurrency=1&model=fara"+query, nil)
		if rec.Code != http.StatusOK {
			t.Fatalf("leaderboard: %d %s", rec.Code, rec.Body)
		}
		var lb api.Leaderboard
		if err := json.Unmarshal(rec.Body.Bytes(), &lb); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, it := range lb.Items {
			ids = append(ids, it.Run.ID+":"+string(it.Run.Corroboration))
		}
		return ids
	}
	def, all := board(""), board("&include_flagged=true")
	if slices.ContainsFunc(def, func(s string) bool { return strings.HasPrefix(s, double.ID) }) {
		t.Errorf("the disputed run is ranked by default: %v", def)
	}
	if !slices.Contains(all, double.ID+":disputed") || !slices.Contains(all, agree.ID+":corroborated") {
		t.Errorf("include_flagged=true ranks %v, want the disputed run and the corroborated one with their statuses", all)
	}

	// The catalog of submitters counts each one's corroborated and
	// disputed runs.
	var subs api.SubmitterCatalog
	if rec := e.do(t, http.MethodGet, "/v1/submitters", nil); rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &subs) != nil {
		t.Fatalf("submitters: %d %s", rec.Code, rec.Body)
	}
	corroborated, disputed := 0, 0
	for _, s := range subs.Items {
		corroborated, disputed = corroborated+s.CorroboratedCount, disputed+s.DisputedCount
	}
	if corroborated < 1 || disputed != 1 {
		t.Errorf("submitters count %d corroborated and %d disputed runs, want at least 1 and exactly 1: %+v", corroborated, disputed, subs.Items)
	}

	rec := e.do(t, http.MethodGet, "/v1/runs/"+double.ID+"/history", nil)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"action":"corroboration"`) || !strings.Contains(rec.Body.String(), `"to":"disputed"`) {
		t.Errorf("history of the disputed run: %d %s", rec.Code, rec.Body)
	}
}
