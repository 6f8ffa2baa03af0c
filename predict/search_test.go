package predict

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/store"
)

// TestSearchBudgetIsCountedOnTheServiceClock: the fit budget of a plan
// and of a predicted ranking is counted on the Service's clock: once that
// clock has passed the budget, runs not yet fitted are pending, however
// long the budget.
func TestSearchBudgetIsCountedOnTheServiceClock(t *testing.T) {
	ctx := context.Background()
	pq := PlanQuery{Target: calculator.Target{ContextTokens: 4096, MinPerRequestTokS: 1}, IncludeScaled: true}
	for _, tc := range []struct {
		name string
		ask  func(c *Service) (pending int, err error)
	}{
		{"plan", func(c *Service) (int, error) {
			p, err := c.Plan(ctx, pq)
			return p.Pending, err
		}},
		{"predicted leaderboard", func(c *Service) (int, error) {
			b, err := c.PredictedLeaderboard(ctx, store.RunFilter{}, 4096, 1, store.MetricTotalTokS, 0, 10)
			return b.Pending, err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(sixRuns(t), DefaultCacheBytes, nil)
			t.Cleanup(c.Close) // before the store closes
			c.SetPlanFitBudget(time.Hour)
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			var reads atomic.Int64
			c.SetClock(func() time.Time {
				// Two hours pass between any two reads: the hour is over
				// as soon as the search has begun.
				return start.Add(time.Duration(reads.Add(1)) * 2 * time.Hour)
			})
			pending, err := tc.ask(c)
			if err != nil {
				t.Fatal(err)
			}
			if pending != 6 || reads.Load() < 2 {
				t.Errorf("%d pending after %d clock reads; want all 6 runs pending, the budget spent by the clock", pending, reads.Load())
			}
		})
	}
}
