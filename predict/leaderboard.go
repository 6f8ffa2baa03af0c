package predict

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/msg"
	"github.com/matrixd/matrixd/store"
)

// MaxPredictedRank bounds how deep a predicted ranking is listed (offset +
// limit): each place is a run modelled in full.
const MaxPredictedRank = 200

// PredictedEntry is one run ranked by its predicted cell.
type PredictedEntry struct {
	Rank  int
	Value float64
	Run   store.RunConfig
	// Answer is the calculator's answer for the run at the cell.
	Answer Answer[calculator.Prediction]
}

// PredictedBoard is a page of a predicted ranking.
type PredictedBoard struct {
	Entries []PredictedEntry
	// Matched is how many runs the filters select; Pending how many of
	// them were being fitted and are not ranked yet (ask again); More is
	// true when places after this page exist.
	Matched, Pending int
	More             bool
	// Modelled is how many runs were modelled in full; the others were
	// ranked out by their summaries' bounds.
	Modelled int
	Warnings []msg.Message
}

// metricOf is a prediction's value of metric, and whether larger is
// better.
func metricOf(p calculator.Prediction, metric string) (float64, bool, bool) {
	var e *calculator.Estimate
	desc := true
	switch metric {
	case store.MetricTotalTokS:
		e = p.TotalTokS
	case store.MetricPerRequestTokS:
		e = p.PerRequestTokS
	case store.MetricTTFTMs:
		e, desc = p.TTFTMs, false
	case store.MetricTBTMs:
		e, desc = p.TBTMs, false
	}
	if e == nil {
		return 0, desc, false
	}
	return e.Value, desc, true
}

// boundOf is the best value a cell bound allows for metric.
func boundOf(b calculator.CellBound, metric string) float64 {
	switch metric {
	case store.MetricPerRequestTokS:
		return b.PerRequestTokS
	case store.MetricTTFTMs:
		return b.TTFTMs
	case store.MetricTBTMs:
		return b.TBTMs
	}
	return b.TotalTokS
}

// PredictedLeaderboard ranks every run f selects by its predicted value
// of metric at contextTokens × concurrency, measured or not: the runs'
// summaries bound what each can reach, the runs are modelled in the order
// of their bounds, and modelling stops when the last place of the page is
// at least as good as the next bound. Runs whose requests would not all
// fit and run there, or that the calculator refuses there, are not
// ranked. offset + limit is at most MaxPredictedRank.
func (c *Service) PredictedLeaderboard(ctx context.Context, f store.RunFilter, contextTokens, concurrency int, metric string, offset, limit int) (PredictedBoard, error) {
	if offset < 0 || limit < 1 || offset+limit > MaxPredictedRank {
		return PredictedBoard{}, invalidParamSays("cursor", msg.New("predict.cursor_past_ranking", MaxPredictedRank))
	}
	_, desc, _ := metricOf(calculator.Prediction{}, metric)
	// better orders entries best first by value.
	better := func(a, b PredictedEntry) int {
		if desc {
			return cmp.Compare(b.Value, a.Value)
		}
		return cmp.Compare(a.Value, b.Value)
	}
	q := calculator.Query{ContextTokens: contextTokens, Concurrency: concurrency}
	s := c.newSearch()
	r, err := rank(ctx, s, f, ranking[PredictedEntry]{
		want:   offset + limit + 1, // one more tells whether a next page exists
		better: better,
		tie:    func(a, b PredictedEntry) int { return cmp.Compare(a.Run.ID, b.Run.ID) },
		bound: func(cfg store.RunConfig, sum calculator.Summary) (PredictedEntry, bool) {
			b := sum.BoundCell(contextTokens, concurrency)
			return PredictedEntry{Run: cfg, Value: boundOf(b, metric)}, b.Fits
		},
		entry: func(cfg store.RunConfig, m *calculator.Model, _ msg.Message) (PredictedEntry, bool, error) {
			if m == nil {
				return PredictedEntry{}, false, nil // being fitted, or cannot be modelled: not ranked
			}
			p, err := m.Decode(q)
			if errors.Is(err, calculator.ErrRefused) || (err == nil && (p.Status != calculator.Fits || p.Capacity.Unknown)) {
				return PredictedEntry{}, false, nil
			}
			if err != nil {
				return PredictedEntry{}, false, err
			}
			v, _, ok := metricOf(p, metric)
			if !ok || math.IsNaN(v) {
				return PredictedEntry{}, false, nil
			}
			e := PredictedEntry{Value: v, Run: cfg, Answer: Answer[calculator.Prediction]{Result: p, RunIDs: []string{cfg.ID}}}
			if cfg.Flagged {
				e.Answer.Warnings = []msg.Message{flaggedWarning(cfg.ID)}
			}
			return e, true, nil
		},
		listed: func(e PredictedEntry) (store.RunConfig, float64, bool) { return e.Run, e.Value, true },
		spent: func(int, int) msg.Message {
			return msg.New("predict.board_more_than_modelled", maxRefine)
		},
	})
	if err != nil {
		return PredictedBoard{}, err
	}
	out := PredictedBoard{Matched: r.matched, Modelled: r.modelled, Pending: r.more + len(s.pending), Warnings: s.warnings}
	kept := r.kept
	for i := range kept {
		kept[i].Rank = i + 1
		if i > 0 && kept[i].Value == kept[i-1].Value {
			kept[i].Rank = kept[i-1].Rank // ties share a rank
		}
	}
	if len(kept) > offset+limit {
		out.More, kept = true, kept[:offset+limit]
	}
	if offset < len(kept) {
		out.Entries = kept[offset:]
	}
	if out.Matched == 0 {
		w, err := c.noMatch(ctx, f)
		if err != nil {
			return PredictedBoard{}, err
		}
		out.Warnings = append(out.Warnings, w)
	}
	if out.Matched > 0 && len(kept) == 0 && out.Pending == 0 {
		out.Warnings = append(out.Warnings, msg.New(plural(out.Matched, "predict.board_no_answer_one", "predict.board_no_answer"),
			out.Matched, cellText(contextTokens, concurrency)))
	}
	if out.Pending > 0 {
		out.Warnings = append(out.Warnings, partial(out.Pending))
	}
	return out, nil
}

// EmptyBoardWarning says why a measured ranking of cell (l, b) under f has
// nothing in it: no stored run matches f, or none of those that do has a
// valid cell there.
func (c *Service) EmptyBoardWarning(ctx context.Context, f store.RunFilter, l, b int) (msg.Message, error) {
	any, _, err := c.store.RunConfigs(ctx, f, 1)
	if err != nil {
		return msg.Message{}, err
	}
	if len(any) == 0 {
		return c.noMatch(ctx, f)
	}
	return msg.New("predict.board_no_valid_cell", cellText(l, b)), nil
}

// OtherClassesNote says, for a ranking of one method class chosen by
// default, which other classes have runs matching f and how to rank them:
// "" when none has. Runs of other classes measured something else and are
// never ranked beside these, but a reader should know they are there.
func (c *Service) OtherClassesNote(ctx context.Context, f store.RunFilter) (msg.Message, error) {
	counts, err := c.otherClassCounts(ctx, f)
	if err != nil || len(counts) == 0 {
		return msg.Message{}, err
	}
	parts := make([]string, len(counts))
	for i, cc := range counts {
		parts[i] = fmt.Sprintf("%d of method class %s (method_class=%s)", cc.n, cc.class, cc.class)
	}
	return msg.New("predict.other_classes_ranked_apart", f.MethodClass, strings.Join(parts, ", ")), nil
}

// noMatch says that no stored run matches f, naming the GPU the catalog
// lacks and the flagged runs include_flagged would bring back.
func (c *Service) noMatch(ctx context.Context, f store.RunFilter) (msg.Message, error) {
	more := ""
	if f.ExcludeFlagged {
		all := f
		all.ExcludeFlagged = false
		flagged, _, err := c.store.RunConfigs(ctx, all, 1)
		if err != nil {
			return msg.Message{}, err
		}
		if len(flagged) > 0 {
			more += "; runs a plausibility check flagged, or independent runs dispute, match them: include_flagged=true brings them back"
		}
	}
	if f.MethodClass != "" {
		// One class is ranked at a time: say which others have runs.
		counts, err := c.otherClassCounts(ctx, f)
		if err != nil {
			return msg.Message{}, err
		}
		for _, cc := range counts {
			more += fmt.Sprintf("; %d %s of method class %s, ranked with method_class=%s", cc.n, plural(cc.n, "run matches them", "runs match them"), cc.class, cc.class)
		}
	}
	if f.GPU != "" {
		return noRunOn(f.GPU, more), nil
	}
	return msg.New("predict.no_match", more), nil
}

// cellText is a cell as said: "16384 tokens × 1 request".
func cellText(l, b int) string {
	return fmt.Sprintf("%d tokens × %d %s", l, b, plural(b, "request", "requests"))
}
