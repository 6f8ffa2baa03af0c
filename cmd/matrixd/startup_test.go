package main

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/ingest"
	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

// TestServeJudgesStoredRunsAgain: runs stored past the checks (an import
// straight into the database, or a database from before the current
// rules) are checked when the service starts and judged against each
// other in the background: a second publisher's copy at twice the speed
// of a bundled run comes out disputed, and the service says so in its
// log.
func TestServeJudgesStoredRunsAgain(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "old.db")
	st, err := store.Open(ctx, db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	seeds, err := ingest.SeedRuns()
	if err != nil {
		t.Fatal(err)
	}
	orig := seeds[0]
	orig.Source = nil
	double := orig
	double.ID, double.Publisher, double.SourceURL = "", "another publisher", ""
	double.Decode = nil
	for _, c := range orig.Decode {
		for _, v := range []**float64{&c.TotalTokS, &c.PerRequestTokS} {
			if *v != nil {
				x := **v * 2
				*v = &x
			}
		}
		if c.OutputTokens != nil {
			n := *c.OutputTokens * 2
			c.OutputTokens = &n
		}
		if c.TBTMs != nil {
			x := *c.TBTMs / 2
			c.TBTMs = &x
		}
		double.Decode = append(double.Decode, c)
	}
	var ids []string
	for _, r := range []store.Run{orig, double} {
		stored, _, err := st.CreateRun(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, stored.ID)
	}
	if err := st.MarkSeeded(ctx); err != nil {
		t.Fatal(err)
	}
	st.Close()

	srv := serveIn(t, []string{"serve", "--no-seed", "--addr", "127.0.0.1:0", "--db", db}, env(nil))
	base, logs := srv.base, srv.logs
	status := func(id string) string {
		resp, err := http.Get(base + "/v1/runs/" + id)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var got struct {
			Corroboration *struct {
				Status string `json:"status"`
			} `json:"corroboration"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
			t.Fatal(err)
		}
		if got.Corroboration == nil {
			return ""
		}
		return got.Corroboration.Status
	}
	if got := status(ids[1]); got != "uncorroborated" && got != "disputed" {
		t.Errorf("a stored copy before it is judged: %q, want uncorroborated", got)
	}
	// A second publisher's copy at twice the speed.
	storetest.WaitFor(t, "the stored copy disputed", func() bool { return status(ids[1]) == "disputed" })
	storetest.WaitFor(t, "the log line", func() bool { return strings.Contains(logs.String(), "corroborated stored runs") })
	if err := srv.shutdown(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), `"runs":2`) {
		t.Errorf("log: %s, want the two runs judged", logs.String())
	}
}
