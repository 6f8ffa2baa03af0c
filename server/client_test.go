package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/matrixd/matrixd/api/client"
)

// TestGoClient uses the generated Go client against the real server over
// HTTP, as the example program of docs/api.md does.
func TestGoClient(t *testing.T) {
	e := newEnv(t, 0)
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060")
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	c, err := client.NewClientWithResponses(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	gpu := "RTX 3060"
	runs, err := c.ListRunsWithResponse(ctx, &client.ListRunsParams{GPU: &gpu})
	if err != nil {
		t.Fatal(err)
	}
	if runs.StatusCode() != http.StatusOK || runs.JSON200 == nil || len(runs.JSON200.Items) != 1 || runs.JSON200.Items[0].ID != fara.ID {
		t.Fatalf("list: %d %s", runs.StatusCode(), runs.Body)
	}

	run := fara.ID
	p, err := c.EstimateDecodeWithResponse(ctx, &client.EstimateDecodeParams{RunID: &run, ContextTokens: 16384, Concurrency: 8})
	if err != nil {
		t.Fatal(err)
	}
	if p.JSON200 == nil || p.JSON200.TotalTokS == nil || p.JSON200.TotalTokS.Value != 279.1 || p.JSON200.Basis.Method != client.CalcBasisMethodMeasured {
		t.Fatalf("decode: %d %s", p.StatusCode(), p.Body)
	}

	refused, err := c.EstimateDecodeWithResponse(ctx, &client.EstimateDecodeParams{RunID: &run, ContextTokens: 200000, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	if refused.ApplicationProblemJSON422 == nil || refused.ApplicationProblemJSON422.Supported == nil {
		t.Fatalf("refusal: %d %s", refused.StatusCode(), refused.Body)
	}

	users := 100
	plan, err := c.PlanCapacityWithResponse(ctx, &client.PlanCapacityParams{ContextTokens: 0, MinPerRequestTokS: 50, Users: &users})
	if err != nil {
		t.Fatal(err)
	}
	if plan.JSON200 == nil || plan.JSON200.MatchedRuns != 2 || len(plan.JSON200.Options) != 2 {
		t.Fatalf("plan: %d %s", plan.StatusCode(), plan.Body)
	}
}
