package predict

import (
	"context"
	"math"

	"github.com/matrixd/matrixd/store"
)

// copyTolerance is the relative difference within which two runs' cells
// count as the same measurement: the noise of published values (the
// calculator's 1 % floor).
const copyTolerance = 0.01

// copyShare is the share of common valid cells that must agree within
// copyTolerance for two runs to be one measurement: a copy with a few
// cells changed is still a copy.
const copyShare = 0.8

// independent keeps, of ids (newest first, runs that could share a
// surface), one run per independent measurement: a run that is a near-copy
// of another (the same submitter re-posting, or cells within noise) adds
// no certainty, so each group of copies counts once, as its earliest run
// (the original), in the place of the group's newest. copies counts the
// runs left out.
func (c *Service) independent(ctx context.Context, ids []string) (kept []string, copies int, err error) {
	var reps []store.Run
	for _, id := range ids {
		r, err := c.store.Run(ctx, id)
		if err != nil {
			return nil, 0, err
		}
		j := -1
		for i := range reps {
			if nearCopy(r, reps[i]) {
				j = i
				break
			}
		}
		if j < 0 {
			reps = append(reps, r)
			continue
		}
		copies++
		if r.CreatedAt.Before(reps[j].CreatedAt) {
			reps[j] = r
		}
	}
	for _, r := range reps {
		kept = append(kept, r.ID)
	}
	return kept, copies, nil
}

// nearCopy reports whether a and b are one measurement: sent by the same
// API key, or most of their common valid cells agree within noise on
// total tok/s and TBT.
func nearCopy(a, b store.Run) bool {
	if a.SubmittedBy != "" && a.SubmittedBy == b.SubmittedBy {
		return true
	}
	type key struct{ l, b int }
	cells := map[key]store.DecodeCell{}
	for _, d := range b.Decode {
		if d.Status == store.StatusValid {
			cells[key{d.ContextTokens, d.Concurrency}] = d
		}
	}
	common, same := 0, 0
	for _, d := range a.Decode {
		o, ok := cells[key{d.ContextTokens, d.Concurrency}]
		if !ok || d.Status != store.StatusValid {
			continue
		}
		common++
		if within(d.TotalTokS, o.TotalTokS) && within(d.TBTMs, o.TBTMs) {
			same++
		}
	}
	return common >= 3 && float64(same) >= copyShare*float64(common)
}

// within reports whether two optional values agree within copyTolerance
// (both absent agrees).
func within(a, b *float64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return math.Abs(*a-*b) <= copyTolerance*math.Max(math.Abs(*a), math.Abs(*b))
}
