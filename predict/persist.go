package predict

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/msg"
	"github.com/matrixd/matrixd/store"
)

// SetErrorLog sets what is told of errors in the background, such as a
// fit that could not be stored (it is made again when next needed). Set
// it before the first answer.
func (c *Service) SetErrorLog(f func(error)) { c.onError = f }

func (c *Service) background(err error) {
	if c.onError != nil && err != nil {
		c.onError(err)
	}
}

// storedRefusal is a refusal to fit as stored.
type storedRefusal struct {
	Reason    string      `json:"reason"`
	Supported string      `json:"supported,omitempty"`
	Code      string      `json:"code,omitempty"`
	Params    []msg.Param `json:"params,omitempty"`
	// SupportedCode and SupportedParams are Supported's.
	SupportedCode   string      `json:"supported_code,omitempty"`
	SupportedParams []msg.Param `json:"supported_params,omitempty"`
}

// fitOrRebuild makes run id's model: rebuilt from its stored fit when the
// current method made one, else fitted and the fit stored (a run's own
// fit only: one sharing other runs' cells is made for one question).
func (c *Service) fitOrRebuild(ctx context.Context, id string, shared []string, r calculator.Run) (*calculator.Model, error) {
	if len(shared) > 0 {
		return calculator.FitContext(ctx, r)
	}
	sf, ok, err := c.store.Fit(ctx, id, calculator.MethodVersion)
	if err != nil {
		return nil, err
	}
	if ok {
		if m, err := rebuild(sf, r); err == nil || errors.Is(err, calculator.ErrRefused) {
			return m, err
		}
		// A stored fit that does not read is made again.
	}
	m, err := calculator.FitContext(ctx, r)
	var ref *calculator.Refusal
	// A fit made is stored even when the Service is closing (Close waits
	// for it): it costs a fit to make again.
	put, cancel := context.WithTimeout(context.WithoutCancel(ctx), putFitTime)
	defer cancel()
	switch {
	case err == nil:
		c.background(c.store.PutFit(put, store.StoredFit{RunID: id, Method: calculator.MethodVersion,
			Params: m.Params().Encode(), Summary: calculator.Summarize(m).Encode()}))
	case errors.As(err, &ref):
		b, _ := json.Marshal(storedRefusal{Reason: ref.Reason, Supported: ref.Supported, Code: ref.Message.Code, Params: ref.Message.Params,
			SupportedCode: ref.SupportedMessage.Code, SupportedParams: ref.SupportedMessage.Params})
		c.background(c.store.PutFit(put, store.StoredFit{RunID: id, Method: calculator.MethodVersion, Refusal: string(b)}))
	}
	return m, err
}

// putFitTime bounds storing a fit.
const putFitTime = 10 * time.Second

// rebuild makes a model from a stored fit: the refusal it records, or the
// model its parameters choose.
func rebuild(sf store.StoredFit, r calculator.Run) (*calculator.Model, error) {
	if sf.Refusal != "" {
		ref, err := refusalOf(sf.Refusal)
		if err != nil {
			return nil, err
		}
		return nil, ref
	}
	p, err := calculator.DecodeFitParams(sf.Params)
	if err != nil {
		return nil, err
	}
	return calculator.Rebuild(r, p)
}

func refusalOf(s string) (*calculator.Refusal, error) {
	var sr storedRefusal
	if err := json.Unmarshal([]byte(s), &sr); err != nil || sr.Reason == "" {
		return nil, fmt.Errorf("stored refusal %q does not read", s)
	}
	// A refusal stored before messages had codes keeps its text alone.
	m := msg.Message{Code: cmp.Or(sr.Code, "calculator.refused"), Params: sr.Params, Text: sr.Reason}
	if sr.Code == "" {
		m.Params = []msg.Param{{Name: "reason", Value: sr.Reason}}
	}
	sup := msg.Message{Code: sr.SupportedCode, Params: sr.SupportedParams, Text: sr.Supported}
	if sr.SupportedCode == "" && sr.Supported != "" {
		sup = msg.Message{Code: "calculator.supported", Params: []msg.Param{{Name: "supported", Value: sr.Supported}}, Text: sr.Supported}
	}
	return &calculator.Refusal{Reason: sr.Reason, Supported: sr.Supported, Message: m, SupportedMessage: sup}, nil
}

// backfillBatch is how many unfitted runs a backfill pass reads at once.
const backfillBatch = 200

// Backfill fits every run the current method has not fitted (written
// before fits were stored, or fitted by an earlier method), storing each
// fit, until none is left or ctx is done; workers fits at a time (the
// server uses one, leaving the other CPUs to answers). It returns how many
// runs it fitted.
func (c *Service) Backfill(ctx context.Context, workers int) (int, error) {
	n, after := 0, ""
	for {
		ids, err := c.store.RunsToFit(ctx, calculator.MethodVersion, after, backfillBatch)
		if err != nil || len(ids) == 0 {
			return n, err
		}
		next := make(chan string)
		var wg sync.WaitGroup
		for range max(workers, 1) {
			wg.Go(func() {
				for id := range next {
					_, err := c.modelWithin(ctx, -1, id)
					if err != nil && !errors.Is(err, calculator.ErrRefused) && !errors.Is(err, store.ErrNotFound) && ctx.Err() == nil {
						c.background(fmt.Errorf("backfill fit of run %s: %w", id, err))
					}
				}
			})
		}
		for _, id := range ids {
			if ctx.Err() != nil {
				break
			}
			next <- id
			n++
		}
		close(next)
		wg.Wait()
		if err := ctx.Err(); err != nil {
			return n, err
		}
		after = ids[len(ids)-1]
	}
}
