package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"
)

// IdempotencyTTL is how long an Idempotency-Key is remembered.
const IdempotencyTTL = 24 * time.Hour

// Idempotency ties a write to the client's Idempotency-Key, per API key.
type Idempotency struct {
	KeyName     string // the API key's name
	Key         string // the Idempotency-Key header
	RequestHash string // a hash of everything the request sent
}

// SubmitResult says what a submission did.
type SubmitResult struct {
	// Created is true when a new run was stored, false when the content was
	// stored already. A replay repeats the original answer's value.
	Created bool
	// Replayed is true when the Idempotency-Key was seen with the same
	// request: nothing was written.
	Replayed bool
}

// SubmitRun stores run for its submitter (run.SubmittedBy) in one
// transaction: content already stored answers the stored run; an
// Idempotency-Key seen before with the same request answers what it
// answered then, and with another request is ErrConflict.
func (s *Store) SubmitRun(ctx context.Context, run Run, idem *Idempotency) (Run, SubmitResult, error) {
	if err := run.Validate(); err != nil {
		return Run{}, SubmitResult{}, err
	}
	run.Prefill, run.Decode = slices.Clone(run.Prefill), slices.Clone(run.Decode)
	run.Normalize()
	hash := run.ContentHash()
	now := s.now().UTC().Truncate(time.Microsecond)
	run.ID, run.CreatedAt = IDFromHash(hash), now
	var (
		out Run
		res SubmitResult
	)
	err := s.inTx(ctx, func(tx *tx) error {
		if idem != nil {
			var reqHash, runID string
			var status int
			err := tx.QueryRowContext(ctx, `SELECT request_hash, run_id, status FROM idempotency_keys
				WHERE key_name = ? AND idempotency_key = ? AND created_at >= ?`,
				idem.KeyName, idem.Key, formatTime(now.Add(-IdempotencyTTL))).Scan(&reqHash, &runID, &status)
			switch {
			case err == nil && reqHash != idem.RequestHash:
				return newError(ErrConflict, "Idempotency-Key %q was used for another request in the last 24 hours; use a new key for a new request",
					idem.Key)
			case err == nil:
				r, err := readRun(ctx, tx, runID)
				if errors.Is(err, ErrNotFound) {
					return newError(ErrNotFound, "run %s, which this Idempotency-Key answered, has been deleted since", runID)
				}
				out, res = r, SubmitResult{Created: status == 1, Replayed: true}
				return err
			case !errors.Is(err, sql.ErrNoRows):
				return err
			}
		}
		var existing string
		err := tx.QueryRowContext(ctx, "SELECT id FROM runs WHERE content_hash = ?", hash).Scan(&existing)
		switch {
		case err == nil:
			if out, err = readRun(ctx, tx, existing); err != nil {
				return err
			}
		case errors.Is(err, sql.ErrNoRows):
			if err := insertRun(ctx, tx, run, hash, Summarize(run)); err != nil {
				return err
			}
			out, res.Created = run, true
		default:
			return err
		}
		if idem == nil {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE (key_name, idempotency_key) IN
			(SELECT key_name, idempotency_key FROM idempotency_keys WHERE created_at < ? LIMIT 100)`, formatTime(now.Add(-IdempotencyTTL))); err != nil {
			return err
		}
		status := 0
		if res.Created {
			status = 1
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO idempotency_keys (key_name, idempotency_key, request_hash, run_id, status, created_at)
			VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (key_name, idempotency_key) DO UPDATE SET request_hash = excluded.request_hash,
				run_id = excluded.run_id, status = excluded.status, created_at = excluded.created_at`,
			idem.KeyName, idem.Key, idem.RequestHash, out.ID, status, formatTime(now))
		return err
	})
	if err != nil {
		return Run{}, SubmitResult{}, fmt.Errorf("submit run: %w", err)
	}
	return out, res, nil
}

// MetaPatch changes a run's editable metadata; nil leaves a field as it is
// and "" removes it (a title cannot be removed).
type MetaPatch struct {
	Title, Notes, SourceURL *string
}

// UpdateRunMeta applies p to run id on behalf of key by: its owner or an
// admin. Measurements never change; a corrected measurement is a new run.
func (s *Store) UpdateRunMeta(ctx context.Context, id string, p MetaPatch, by Key) (Run, error) {
	var out Run
	err := s.inTx(ctx, func(tx *tx) error {
		r, err := ownedRun(ctx, tx, id, by)
		if err != nil {
			return err
		}
		for _, f := range []struct {
			to  *string
			set *string
		}{{&r.Title, p.Title}, {&r.Notes, p.Notes}, {&r.SourceURL, p.SourceURL}} {
			if f.set != nil {
				*f.to = *f.set
			}
		}
		var ve *ValidationError
		if err := r.Validate(); errors.As(err, &ve) {
			ve.Problems = slices.DeleteFunc(ve.Problems, func(p Problem) bool {
				return p.Pointer != "/title" && p.Pointer != "/notes" && p.Pointer != "/source_url"
			})
			if len(ve.Problems) > 0 {
				return ve
			}
		}
		if _, err := tx.ExecContext(ctx, "UPDATE runs SET title = ?, notes = ?, source_url = ? WHERE id = ?",
			r.Title, nullStr(r.Notes), nullStr(r.SourceURL), id); err != nil {
			return err
		}
		out = r
		return nil
	})
	if err != nil {
		return Run{}, fmt.Errorf("update run %s: %w", id, err)
	}
	return out, nil
}

// DeleteRun deletes run id and its cells on behalf of key by: its owner or
// an admin.
func (s *Store) DeleteRun(ctx context.Context, id string, by Key) error {
	err := s.inTx(ctx, func(tx *tx) error {
		if _, err := ownedRun(ctx, tx, id, by); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, "DELETE FROM runs WHERE id = ?", id)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete run %s: %w", id, err)
	}
	return nil
}

func ownedRun(ctx context.Context, tx *tx, id string, by Key) (Run, error) {
	r, err := readRun(ctx, tx, id)
	if err != nil {
		return Run{}, err
	}
	if !by.Admin && r.SubmittedBy != by.Name {
		return Run{}, newError(ErrForbidden, "run %s was not submitted with this key; only its submitter or an admin key may change it", id)
	}
	return r, nil
}
