package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Corroboration statuses (the rule is the caller's).
const (
	CorroborationUncorroborated = "uncorroborated"
	CorroborationCorroborated   = "corroborated"
	CorroborationDisputed       = "disputed"
)

// ActionCorroboration is the event of a run's corroboration status
// changing.
const ActionCorroboration = "corroboration"

// Corroboration is a run's status against the independent runs of the
// database, made by the caller of the store and stored with the run.
type Corroboration struct {
	Status string `json:"status"`
	// Sources is how many independent sources agree with the run.
	Sources int    `json:"sources"`
	Detail  string `json:"detail"`
	// DetailCode and DetailParams are Detail's message code and parameters
	// (empty in statuses stored before messages had codes).
	DetailCode   string                   `json:"detail_code,omitempty"`
	DetailParams map[string]string        `json:"detail_params,omitempty"`
	DetailParts  map[string]Part          `json:"detail_parts,omitempty"`
	References   []CorroborationReference `json:"references"`
	// CopyOf is the earlier run whose cells the run repeats under another
	// model or GPU name ("" none).
	CopyOf string `json:"copy_of,omitempty"`
}

// CorroborationReference is one run a run was compared with: kind is
// how (same_config, cross_gpu, copy), ratio the run's median ratio to it.
type CorroborationReference struct {
	RunID string  `json:"run_id"`
	Kind  string  `json:"kind"`
	Ratio float64 `json:"ratio"`
}

// MaxCorroborationPeers bounds the runs one corroboration reads of the
// model's and of the GPU's visible, unflagged runs.
const MaxCorroborationPeers = 200

// CorroborationPeers returns the ids of the visible runs no plausibility
// check flagged that could corroborate a run of model on gpu: up to
// MaxCorroborationPeers runs of the model (any GPU) and as many on the
// GPU (any model), in id order (each read by an index on the name), names
// compared ignoring case.
func (s *Store) CorroborationPeers(ctx context.Context, model, gpu string) ([]string, error) {
	var ids []string
	seen := map[string]bool{}
	for _, q := range []struct{ col, v string }{{"r.model_name", model}, {"r.gpu", gpu}} {
		rows, err := s.reader.QueryContext(ctx, "SELECT r.id FROM runs r WHERE "+s.dialect.eqNoCase(q.col)+
			" AND r.hidden_at IS NULL AND r.flagged = 0 ORDER BY r.id DESC LIMIT ?", q.v, MaxCorroborationPeers)
		if err != nil {
			return nil, fmt.Errorf("corroboration peers: %w", err)
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, fmt.Errorf("corroboration peers: %w", err)
			}
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("corroboration peers: %w", err)
		}
	}
	return ids, nil
}

// IsGone reports whether err is a run hidden or not (any longer) stored.
func IsGone(err error) bool {
	return err != nil && (errors.Is(err, ErrNotFound) || errors.Is(err, ErrGone))
}

// SetCorroboration stores run id's corroboration and, when its status
// changes, the change as an event of its history, in one transaction. It
// reports whether the status changed; a run deleted meanwhile is no error.
func (s *Store) SetCorroboration(ctx context.Context, id string, c Corroboration) (bool, error) {
	changed, err := s.SetCorroborations(ctx, []RunCorroboration{{RunID: id, Corroboration: c}})
	return len(changed) > 0, err
}

// RunCorroboration is one run's corroboration, to store.
type RunCorroboration struct {
	RunID         string
	Corroboration Corroboration
}

// SetCorroborations stores each run's corroboration and each change of
// status as an event of its history, all in one transaction; it returns
// the ids whose status changed. Runs deleted meanwhile are passed over.
func (s *Store) SetCorroborations(ctx context.Context, cs []RunCorroboration) ([]string, error) {
	bodies := make([]string, len(cs))
	for i, rc := range cs {
		if rc.Corroboration.References == nil {
			cs[i].Corroboration.References = []CorroborationReference{}
		}
		b, err := json.Marshal(cs[i].Corroboration)
		if err != nil {
			return nil, err
		}
		bodies[i] = string(b)
	}
	var changed []string
	err := s.inTx(ctx, func(tx *tx) error {
		changed = changed[:0]
		for i, rc := range cs {
			id, c := rc.RunID, rc.Corroboration
			if err := lockRun(ctx, tx, id); errors.Is(err, ErrNotFound) {
				continue
			} else if err != nil {
				return err
			}
			var was, detail string
			if err := tx.QueryRowContext(ctx, "SELECT corroboration_status, corroboration FROM runs WHERE id = ?", id).Scan(&was, &detail); err != nil {
				return err
			}
			if detail == bodies[i] {
				continue
			}
			if _, err := tx.ExecContext(ctx, "UPDATE runs SET corroboration_status = ?, corroboration = ?, disputed = ? WHERE id = ?",
				c.Status, bodies[i], boolInt(c.Status == CorroborationDisputed), id); err != nil {
				return err
			}
			// The first judgement finding what the default said is no change.
			if was == c.Status {
				continue
			}
			changed = append(changed, id)
			if err := logEvent(ctx, tx, id, "", ActionCorroboration, map[string]any{"from": was, "to": c.Status, "sources": c.Sources, "detail": c.Detail}, s.now()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("set corroboration: %w", err)
	}
	return changed, nil
}

// readCorroboration reads run r's corroboration; nil for a run not judged
// yet.
func readCorroboration(ctx context.Context, q querier, r *Run) error {
	var detail string
	if err := q.QueryRowContext(ctx, "SELECT corroboration FROM runs WHERE id = ?", r.ID).Scan(&detail); err != nil {
		return fmt.Errorf("run %s corroboration: %w", r.ID, err)
	}
	if detail == "null" || strings.TrimSpace(detail) == "" {
		return nil
	}
	var c Corroboration
	if err := json.Unmarshal([]byte(detail), &c); err != nil {
		return fmt.Errorf("run %s corroboration: %w", r.ID, err)
	}
	r.Corroboration = &c
	return nil
}
