package server_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/predict"
	"github.com/matrixd/matrixd/store"
)

// TestPredictedLeaderboardRanksEveryRun: with predicted=true every run is
// ranked at a cell none of them measured, by the calculator's own answer
// for each (the same as GET /v1/calculator/decode gives), in the order a
// ranking that asked the calculator for every run would give, page after
// page.
func TestPredictedLeaderboardRanksEveryRun(t *testing.T) {
	e := newEnv(t, 40)
	const cell = "context_tokens=20000&concurrency=5"
	get := func(target string) api.Leaderboard { t.Helper(); return leaderboard(t, e, target) }
	// What asking the calculator for every run gives.
	configs, _, err := e.st.RunConfigs(context.Background(), store.RunFilter{MethodClass: store.MethodSustainedDecode, ExcludeFlagged: true}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	type ranked struct {
		id    string
		value float64
		basis api.CalcBasisMethod
	}
	var want []ranked
	for _, c := range configs {
		rec := e.do(t, http.MethodGet, "/v1/calculator/decode?run_id="+c.ID+"&"+cell, nil)
		if rec.Code != http.StatusOK {
			continue // refused here: not ranked
		}
		var p api.DecodePrediction
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		if p.Status != api.CalcStatusFits || p.TotalTokS == nil {
			continue
		}
		want = append(want, ranked{c.ID, p.TotalTokS.Value, p.Basis.Method})
	}
	slices.SortFunc(want, func(a, b ranked) int { return cmp.Or(cmp.Compare(b.value, a.value), cmp.Compare(a.id, b.id)) })
	if len(want) < 15 {
		t.Fatalf("only %d runs answer at the cell; the test needs more", len(want))
	}

	var got []api.LeaderboardEntry
	target := "/v1/leaderboard?predicted=true&limit=6&" + cell
	for page := 0; page < 3; page++ {
		lb := get(target)
		if lb.Predicted == nil || !*lb.Predicted || lb.MatchedRuns == nil || *lb.MatchedRuns != len(configs) {
			t.Fatalf("page %d: predicted %v, matched %v; want true and %d", page, lb.Predicted, lb.MatchedRuns, len(configs))
		}
		got = append(got, lb.Items...)
		if lb.NextCursor == nil {
			t.Fatalf("page %d has no next cursor with %d runs ranked", page, len(want))
		}
		target = "/v1/leaderboard?predicted=true&limit=6&" + cell + "&cursor=" + *lb.NextCursor
	}
	if len(got) != 18 {
		t.Fatalf("%d entries in 3 pages of 6", len(got))
	}
	for i, g := range got {
		w := want[i]
		if g.Run.ID != w.id || g.Value != w.value || g.Rank != i+1 {
			t.Fatalf("place %d: %s at %v (rank %d), want %s at %v", i+1, g.Run.ID, g.Value, g.Rank, w.id, w.value)
		}
		if g.Cell != nil || g.Prediction == nil || g.Prediction.Basis.Method != w.basis || g.Prediction.TotalTokS == nil || g.Prediction.TotalTokS.Value != g.Value {
			t.Fatalf("place %d: cell %v, prediction %+v; want the calculator's answer and no measured cell", i+1, g.Cell, g.Prediction)
		}
	}
	rec := e.do(t, http.MethodGet, "/v1/leaderboard?predicted=true&"+cell+"&cursor=abc", nil)
	if rec.Code != http.StatusBadRequest {
		t.Errorf("a foreign cursor: %d, want 400", rec.Code)
	}
	// A cursor belongs to its ranking: with another metric, cell or filter
	// it is refused, naming cursor.
	first := get("/v1/leaderboard?predicted=true&limit=6&" + cell)
	for _, other := range []string{"&metric=ttft_ms", "&gpu=RTX%203090", "&context_tokens=4096&concurrency=2"} {
		target := "/v1/leaderboard?predicted=true&limit=6&" + cell + other + "&cursor=" + *first.NextCursor
		if other == "&context_tokens=4096&concurrency=2" {
			target = "/v1/leaderboard?predicted=true&limit=6" + other + "&cursor=" + *first.NextCursor
		}
		rec := e.do(t, http.MethodGet, target, nil)
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `"field":"cursor"`) || !strings.Contains(rec.Body.String(), "other parameters") {
			t.Errorf("a cursor reused with %s: %d %s, want 400 naming cursor", other, rec.Code, rec.Body)
		}
	}
	rec = e.do(t, http.MethodGet, fmt.Sprintf("/v1/leaderboard?predicted=true&%s&limit=50&cursor=place-190", cell), nil)
	if rec.Code != http.StatusBadRequest {
		t.Errorf("a cursor without its ranking's tag: %d, want 400", rec.Code)
	}
}

// TestPredictedLeaderboardEndsAtItsLastPlace: the pages of a predicted
// ranking reach every one of its first 200 places, the last page ends
// there, and it has no next cursor.
func TestPredictedLeaderboardEndsAtItsLastPlace(t *testing.T) {
	e := newEnv(t, 240)
	const cell = "context_tokens=0&concurrency=1"
	get := func(target string) api.Leaderboard { t.Helper(); return leaderboard(t, e, target) }
	// Each answer fits up to 64 runs not yet fitted: ask until none is pending.
	for i := 0; ; i++ {
		lb := get("/v1/leaderboard?predicted=true&" + cell)
		if *lb.Pending == 0 {
			break
		}
		if i == 20 {
			t.Fatalf("still %d runs pending", *lb.Pending)
		}
	}
	places, target := 0, "/v1/leaderboard?predicted=true&limit=37&"+cell
	for page := 0; page < 10; page++ {
		lb := get(target)
		for i, it := range lb.Items {
			if it.Rank > places+i+1 {
				t.Fatalf("place %d ranked %d", places+i+1, it.Rank)
			}
		}
		places += len(lb.Items)
		if lb.NextCursor == nil {
			break
		}
		target = "/v1/leaderboard?predicted=true&limit=37&" + cell + "&cursor=" + *lb.NextCursor
	}
	if places != predict.MaxPredictedRank {
		t.Errorf("the pages listed %d places, want the first %d", places, predict.MaxPredictedRank)
	}
}

// leaderboard asks for a leaderboard that must answer 200 (e.do validates
// it against openapi.yaml) and decodes it.
func leaderboard(t *testing.T, e *env, target string) api.Leaderboard {
	t.Helper()
	rec := e.do(t, http.MethodGet, target, nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("%s: %d %s", target, rec.Code, rec.Body)
	}
	var lb api.Leaderboard
	if err := json.Unmarshal(rec.Body.Bytes(), &lb); err != nil {
		t.Fatal(err)
	}
	return lb
}

// TestPredictedLeaderboardOnAnUnknownGPUSaysSo: a GPU filter that matches
// no run and no catalog GPU is said, with the names it may have meant, as
// the planner says it.
func TestPredictedLeaderboardOnAnUnknownGPUSaysSo(t *testing.T) {
	e := newEnv(t, 0)
	e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090")
	runCases(t, e, []getCase{
		{"a typo", "/v1/leaderboard?predicted=true&context_tokens=16384&concurrency=8&gpu=RTX%203099", 200,
			[]string{`"items":[]`, "the hardware catalog has no GPU of that name", "did you mean RTX 3090"}},
		{"a known GPU with no run", "/v1/leaderboard?predicted=true&context_tokens=16384&concurrency=8&gpu=H100", 200,
			[]string{`"items":[]`, `no stored run matching the filters is on GPU \"H100\"`}},
	})
}

// TestEmptyLeaderboardsSayWhy: a ranking with nothing in it says why: a
// measured one that no matching run has a valid cell there (and that
// predicted=true ranks it), a predicted one that none of the matching runs
// answers there; either, that no run matches at all, and that flagged ones
// would.
func TestEmptyLeaderboardsSayWhy(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "mallory")
	e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090")
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	fast := fara
	fast.Title, fast.Hardware.GPU = "fara, ten times, on a smaller card", "RTX 3050"
	fast.Decode = tenTimes(fara.Decode)
	if flagged := postRun(t, e, k["mallory"], fast, http.StatusCreated); !flagged.Trust.Flagged {
		t.Fatalf("the 10× copy is not flagged: %+v", flagged.Trust)
	}
	runCases(t, e, []getCase{
		{"an unmeasured cell", "/v1/leaderboard?context_tokens=20000&concurrency=6", 200,
			[]string{`"items":[]`, "no matching run has a valid cell at 20000 tokens × 6 requests; predicted=true ranks each matching run there"}},
		{"a cell measured queued", "/v1/leaderboard?context_tokens=131072&concurrency=1&model=fara", 200,
			[]string{`"items":[]`, "no matching run has a valid cell at 131072 tokens × 1 request;"}},
		{"a cell no run answers", "/v1/leaderboard?context_tokens=170000&concurrency=6&predicted=true", 200,
			[]string{`"items":[]`, `"matched_runs":2`, "none of the 2 matching runs has an answer at 170000 tokens × 6 requests"}},
		{"no run matches", "/v1/leaderboard?context_tokens=16384&concurrency=8&model=nosuch&predicted=true", 200,
			[]string{`"items":[]`, `"matched_runs":0`, "no stored run matches the filters"}},
		{"no run matches, measured", "/v1/leaderboard?context_tokens=16384&concurrency=8&model=nosuch", 200,
			[]string{`"items":[]`, "no stored run matches the filters"}},
		{"only a flagged run matches", "/v1/leaderboard?context_tokens=16384&concurrency=8&gpu=RTX%203050&predicted=true", 200,
			[]string{`"items":[]`, "runs a plausibility check flagged, or independent runs dispute, match them: include_flagged=true brings them back"}},
		{"only a flagged run matches, measured", "/v1/leaderboard?context_tokens=16384&concurrency=8&gpu=RTX%203050", 200,
			[]string{`"items":[]`, "include_flagged=true brings them back"}},
		{"a measured cell has no such warning", "/v1/leaderboard?context_tokens=16384&concurrency=8", 200,
			[]string{`"rank":1`}},
		{"flagged runs ranked are counted", "/v1/leaderboard?context_tokens=16384&concurrency=8&include_flagged=true", 200,
			[]string{`"rank":1`, "1 of the runs ranked here failed a plausibility check"}},
	})
	rec := e.do(t, http.MethodGet, "/v1/leaderboard?context_tokens=16384&concurrency=8", nil)
	if strings.Contains(rec.Body.String(), "warnings") {
		t.Errorf("a ranking with items has warnings: %s", rec.Body)
	}
}
