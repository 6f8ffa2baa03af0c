package store_test

import (
	"context"
	"math"
	"testing"

	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

// scaled is r under another model name with every cell's speeds and
// output f times r's and its time between tokens 1/f.
func scaled(r store.Run, model string, f float64) store.Run {
	out := r
	out.Model.Name, out.Title = model, r.Title+" as "+model
	out.Decode = append([]store.DecodeCell(nil), r.Decode...)
	for i, c := range out.Decode {
		mul := func(p *float64, by float64) *float64 {
			if p == nil {
				return nil
			}
			v := *p * by
			return &v
		}
		out.Decode[i].TotalTokS, out.Decode[i].PerRequestTokS, out.Decode[i].TBTMs = mul(c.TotalTokS, f), mul(c.PerRequestTokS, f), mul(c.TBTMs, 1/f)
		if c.OutputTokens != nil {
			n := int(math.Round(float64(*c.OutputTokens) * f))
			out.Decode[i].OutputTokens = &n
		}
	}
	return out
}

func TestRunsNearPeakFindsCopiesUnderOtherNames(t *testing.T) {
	forEachStore(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		base := storetest.Runs(7, 1)[0]
		var ids []string
		for _, r := range []store.Run{base, scaled(base, "Renamed-7B", 1.004), scaled(base, "Faster-7B", 1.5)} {
			got, _, err := st.CreateRun(ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, got.ID)
		}
		copied, err := st.Run(ctx, ids[1])
		if err != nil {
			t.Fatal(err)
		}
		peak := store.Summarize(copied).Peak
		if peak == nil {
			t.Fatal("no peak")
		}
		near, err := st.RunsNearPeak(ctx, copied.ID, *peak, 0.01, 4)
		if err != nil {
			t.Fatal(err)
		}
		if len(near) != 1 || near[0].ID != ids[0] {
			var got []string
			for _, c := range near {
				got = append(got, c.ID+" "+c.ModelName)
			}
			t.Errorf("runs near the copy's peak: %v; want the original %s alone (not the copy itself, not the run 1.5× as fast)", got, ids[0])
		}
		if none, err := st.RunsNearPeak(ctx, copied.ID, *peak, 0.01, 0); err != nil || len(none) != 0 {
			t.Errorf("limit 0: %d runs, %v", len(none), err)
		}
	})
}
