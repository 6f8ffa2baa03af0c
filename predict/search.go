package predict

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"time"

	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/msg"
	"github.com/matrixd/matrixd/store"
)

// Bounds on a search over every run.
const (
	// maxPlanFits is how many runs with no stored fit one search fits
	// (within its budget); the rest are fitted in the background and
	// counted as pending.
	maxPlanFits = 64
	// maxRefine bounds the runs one answer models in full: each is rebuilt
	// from its stored fit (about a millisecond), the rest are ranked by
	// their bounds.
	maxRefine = 400
)

// search is one answer's work over the stored runs: the fits it waits for
// share one budget, counted on the Service's clock from its start; runs
// not fitted in time are pending (fitted in the background, and the answer
// says it is partial); each run is modelled once; warnings are what the
// answer will say of the work.
type search struct {
	c      *Service
	start  time.Time
	budget time.Duration // negative: every fit is waited for
	// pending are the runs being fitted in the background.
	pending  map[string]bool
	models   map[string]*calculator.Model
	warnings []msg.Message
}

// newSearch begins a search with the Service's plan budget.
func (c *Service) newSearch() *search {
	return &search{c: c, start: c.now(), budget: c.planBudget, pending: map[string]bool{}, models: map[string]*calculator.Model{}}
}

// waitsForAll reports whether the search waits for every fit, as a
// one-shot command does.
func (s *search) waitsForAll() bool { return s.budget < 0 }

// wait is how long the search may still wait for a fit (negative: without
// limit).
func (s *search) wait() time.Duration {
	if s.budget < 0 {
		return -1
	}
	return max(0, s.budget-s.c.now().Sub(s.start))
}

// warn adds warnings to what the answer says.
func (s *search) warn(w ...msg.Message) { s.warnings = append(s.warnings, w...) }

// Why a run has no model in a search.
func whyFitting() msg.Message { return msg.New("predict.run_fitting") }

func cannotModel(ref error) msg.Message { return msg.New("predict.cannot_model", ref.Error()) }

// model is run id's model, waiting for its fit while the budget lasts; nil,
// with why, when the run is being fitted (it is then pending) or cannot be
// modelled.
func (s *search) model(ctx context.Context, id string) (m *calculator.Model, why msg.Message, err error) {
	if m := s.models[id]; m != nil {
		return m, msg.Message{}, nil
	}
	m, err = s.c.modelWithin(ctx, s.wait(), id)
	var ref *calculator.Refusal
	var fitting *Fitting
	switch {
	case errors.As(err, &fitting):
		s.pending[id] = true
		return nil, whyFitting(), nil
	case errors.As(err, &ref):
		return nil, cannotModel(ref), nil
	case err != nil:
		return nil, msg.Message{}, err
	}
	s.models[id] = m
	return m, msg.Message{}, nil
}

// ranking is how one list ranks runs for rank: what a run's summary allows
// at best, what its model gives, and the order of entries.
type ranking[E any] struct {
	// want is how many places the list fills.
	want int
	// better orders entries best first by what they are ranked by: a run
	// whose bound is not better than the last place wanted cannot take it.
	better func(a, b E) int
	// tie, when set, orders entries better ranks alike; else they keep
	// the order they were read (bounds) or refined in (entries).
	tie func(a, b E) int
	// bound is the best entry run cfg's summary allows; false when it
	// allows none.
	bound func(cfg store.RunConfig, s calculator.Summary) (E, bool)
	// entry is run cfg's entry from its model m (nil when the run is being
	// fitted or cannot be modelled: why says which); false when the run
	// takes no place.
	entry func(cfg store.RunConfig, m *calculator.Model, why msg.Message) (E, bool, error)
	// listed reads an entry for listOnce: its run and value, and whether
	// it is a measurement listed once.
	listed func(E) (store.RunConfig, float64, bool)
	// unranked, when set, is given each run known without refining to be
	// being fitted or not to be modelled (why says which); unset, such
	// runs are left out.
	unranked func(cfg store.RunConfig, why msg.Message)
	// spent is the warning when maxRefine runs were modelled with left
	// candidates not, and kept places filled.
	spent func(left, kept int) msg.Message
}

// ranked is what rank found.
type ranked[E any] struct {
	// kept are the places filled, best first.
	kept []E
	// matched counts the runs the filter selects; modelled those modelled
	// in full, omitted the candidates not; more those with no fit that
	// were neither fitted nor waited for (fitted in the background).
	matched, modelled, omitted, more int
	// lc kept the list to one entry per measurement.
	lc *listedCopies
}

// rankCandidate is a run a ranking may list: its best possible entry, by
// its summary, and the order it was read in.
type rankCandidate[E any] struct {
	run   store.RunConfig
	bound E
	seq   int
}

// rank is the ranking search over the runs f selects: each run's stored
// summary bounds what its entry can be (runs with no fit yet are fitted
// within the search's budget, at most maxPlanFits of them), the runs are
// refined (modelled in full) in the order of their bounds, and refining
// stops when the last place wanted is at least as good as the next bound,
// so no run left unrefined could have taken a place.
func rank[E any](ctx context.Context, s *search, f store.RunFilter, r ranking[E]) (ranked[E], error) {
	var (
		out   ranked[E]
		cands []*rankCandidate[E] // pointers: sorting moves them
	)
	add := func(cfg store.RunConfig, sum calculator.Summary) {
		if b, ok := r.bound(cfg, sum); ok {
			cands = append(cands, &rankCandidate[E]{run: cfg, bound: b, seq: len(cands)})
		}
	}
	unfitted, more, err := s.c.store.EachFitSummary(ctx, f, calculator.MethodVersion, maxPlanFits, func(fs store.FitSummary) error {
		out.matched++
		if fs.Refusal != "" {
			if r.unranked == nil {
				return nil
			}
			ref, err := refusalOf(fs.Refusal)
			if err != nil {
				return err
			}
			r.unranked(fs.Run, cannotModel(ref))
			return nil
		}
		sum, err := calculator.DecodeSummary(fs.Summary)
		if err != nil {
			return err
		}
		add(fs.Run, sum)
		return nil
	})
	if err != nil {
		return ranked[E]{}, err
	}
	out.matched += len(unfitted) + more
	out.more = more
	if more > 0 && s.waitsForAll() {
		// A one-shot command waits for every fit: all of them now.
		if unfitted, out.more, err = s.c.store.EachFitSummary(ctx, f, calculator.MethodVersion, math.MaxInt, func(store.FitSummary) error { return nil }); err != nil {
			return ranked[E]{}, err
		}
	}
	// The budget is for fits: reading the summaries (seconds at 100,000
	// runs) does not spend it.
	s.start = s.c.now()
	for _, cfg := range unfitted {
		m, why, err := s.model(ctx, cfg.ID)
		switch {
		case err != nil:
			return ranked[E]{}, err
		case m == nil:
			if r.unranked != nil {
				r.unranked(cfg, why)
			}
		default:
			add(cfg, calculator.Summarize(m))
		}
	}
	order := func(a, b E) int {
		if r.tie == nil {
			return r.better(a, b)
		}
		return cmp.Or(r.better(a, b), r.tie(a, b))
	}
	// In the order read where bounds tie, without a stable sort's
	// merging (at 100,000 runs, run alternately: first plans 4.02–4.07 s
	// with it, 3.80–4.01 s without).
	slices.SortFunc(cands, func(a, b *rankCandidate[E]) int { return cmp.Or(order(a.bound, b.bound), cmp.Compare(a.seq, b.seq)) })
	out.lc = s.c.listedCopies()
	for _, cd := range cands {
		if len(out.kept) >= r.want && r.better(out.kept[r.want-1], cd.bound) <= 0 {
			break // no run left can beat what is kept
		}
		if out.lc.spent(out.modelled) {
			s.warn(r.spent(len(cands)-out.modelled, len(out.kept)))
			break
		}
		out.modelled++
		m, why, err := s.model(ctx, cd.run.ID)
		if err != nil {
			return ranked[E]{}, err
		}
		e, ok, err := r.entry(cd.run, m, why)
		if err != nil {
			return ranked[E]{}, err
		} else if !ok {
			continue
		}
		if run, v, list := r.listed(e); list {
			out.lc.know(run.ID, m)
			kept := out.kept
			if out.kept, list, err = listOnce(ctx, out.lc, kept, run, v, func(i int) (store.RunConfig, float64, bool) { return r.listed(kept[i]) }); err != nil {
				return ranked[E]{}, err
			} else if !list {
				continue
			}
		}
		// After the entries it ties with: they were refined first.
		i, _ := slices.BinarySearchFunc(out.kept, e, func(a, b E) int { return cmp.Or(order(a, b), -1) })
		out.kept = slices.Insert(out.kept, i, e)
	}
	s.warn(out.lc.warning()...)
	out.omitted = len(cands) - out.modelled
	return out, nil
}
