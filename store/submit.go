package store

import (
	"context"
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
	run.stampSource()
	m := run.MethodOf()
	run.Method = &m
	hash := run.ContentHash()
	now := s.now().UTC().Truncate(time.Microsecond)
	if err := run.checkRetrieved(now); err != nil {
		return Run{}, SubmitResult{}, err
	}
	run.ID, run.CreatedAt = IDFromHash(hash), now
	var (
		out Run
		res SubmitResult
	)
	err := s.inTx(ctx, func(tx *tx) error {
		out, res = Run{}, SubmitResult{}
		if idem != nil {
			replayed, err := claimIdempotencyKey(ctx, tx, idem, run.ID, now)
			if err != nil || replayed != nil {
				if replayed != nil {
					out, res = replayed.run, SubmitResult{Created: replayed.created, Replayed: true}
				}
				return err
			}
		}
		id, inserted, err := storeRun(ctx, tx, run, hash)
		if err != nil {
			return err
		}
		if out, res.Created = run, inserted; !inserted {
			if err := lockRun(ctx, tx, id); errors.Is(err, ErrNotFound) {
				return newError(ErrConflict, "run %s, which holds this content, was deleted while this request was stored; send the request again", id)
			} else if err != nil {
				return err
			}
			if out, err = readRun(ctx, tx, id); err != nil {
				return err
			}
			if err := out.gone(); err != nil {
				return err // the same content, hidden: not stored again, not served
			}
		}
		if idem == nil {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE (key_name, idempotency_key) IN
			(SELECT key_name, idempotency_key FROM idempotency_keys WHERE created_at < ? LIMIT 100)`, formatTime(now.Add(-IdempotencyTTL))); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, "UPDATE idempotency_keys SET run_id = ?, status = ? WHERE key_name = ? AND idempotency_key = ?",
			out.ID, boolInt(res.Created), idem.KeyName, idem.Key)
		return err
	})
	if err != nil {
		return Run{}, SubmitResult{}, fmt.Errorf("submit run: %w", err)
	}
	return out, res, nil
}

// replay is what an Idempotency-Key answered before.
type replay struct {
	run     Run
	created bool
}

// claimIdempotencyKey records idem for this request, unless the key was
// used in the last IdempotencyTTL: then it answers what the key answered
// (the same request) or ErrConflict (another one). The record is written
// first, so the database decides between requests racing with one key: a
// second INSERT waits for the first transaction, then finds its record.
func claimIdempotencyKey(ctx context.Context, tx *tx, idem *Idempotency, runID string, now time.Time) (*replay, error) {
	res, err := tx.ExecContext(ctx, `INSERT INTO idempotency_keys (key_name, idempotency_key, request_hash, run_id, status, created_at)
		VALUES (?, ?, ?, ?, 0, ?)
		ON CONFLICT (key_name, idempotency_key) DO UPDATE SET request_hash = excluded.request_hash,
			run_id = excluded.run_id, status = excluded.status, created_at = excluded.created_at
		WHERE idempotency_keys.created_at < ?`,
		idem.KeyName, idem.Key, idem.RequestHash, runID, formatTime(now), formatTime(now.Add(-IdempotencyTTL)))
	if err != nil {
		return nil, err
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		return nil, err
	}
	var reqHash, id string
	var status int
	if err := tx.QueryRowContext(ctx, "SELECT request_hash, run_id, status FROM idempotency_keys WHERE key_name = ? AND idempotency_key = ?",
		idem.KeyName, idem.Key).Scan(&reqHash, &id, &status); err != nil {
		return nil, err
	}
	if reqHash != idem.RequestHash {
		return nil, newError(ErrConflict, "Idempotency-Key %q was used for another request in the last 24 hours; use a new key for a new request", idem.Key)
	}
	if err := lockRun(ctx, tx, id); errors.Is(err, ErrNotFound) {
		return nil, newError(ErrNotFound, "run %s, which this Idempotency-Key answered, has been deleted since", id)
	} else if err != nil {
		return nil, err
	}
	r, err := readRun(ctx, tx, id)
	if err == nil {
		err = r.gone()
	}
	if err != nil {
		return nil, err
	}
	return &replay{run: r, created: status == 1}, nil
}

// MetaPatch changes a run's editable metadata; nil leaves a field as it is
// and "" removes it (a title cannot be removed).
type MetaPatch struct {
	Title, Notes, SourceURL *string
}

// changes is the patch as its audit event records it: each field sent,
// with its new value (null when removed).
func (p MetaPatch) changes() map[string]any {
	out := map[string]any{}
	for name, v := range map[string]*string{"title": p.Title, "notes": p.Notes, "source_url": p.SourceURL} {
		switch {
		case v == nil:
		case *v == "":
			out[name] = nil
		default:
			out[name] = *v
		}
	}
	return out
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
		return logEvent(ctx, tx, id, by.Name, ActionUpdate, p.changes(), s.now())
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
		r, err := ownedRun(ctx, tx, id, by)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM runs WHERE id = ?", id); err != nil {
			return err
		}
		if h := r.Provenance.SourceSHA256; h != "" {
			// The bytes go with the run, unless another run came from them too.
			if _, err := tx.ExecContext(ctx, "DELETE FROM sources WHERE sha256 = ? AND NOT EXISTS (SELECT 1 FROM runs WHERE source_sha256 = ?)", h, h); err != nil {
				return err
			}
		}
		return logEvent(ctx, tx, id, by.Name, ActionDelete, map[string]any{"title": r.Title}, s.now())
	})
	if err != nil {
		return fmt.Errorf("delete run %s: %w", id, err)
	}
	return nil
}

// ownedRun locks run id (lockRun) and reads it, for a change by its
// submitter or an admin.
func ownedRun(ctx context.Context, tx *tx, id string, by Key) (Run, error) {
	if err := lockRun(ctx, tx, id); err != nil {
		return Run{}, err
	}
	r, err := readRun(ctx, tx, id)
	if err != nil {
		return Run{}, err
	}
	if !by.Admin && r.SubmittedBy != by.Name {
		return Run{}, newError(ErrForbidden, "run %s was not submitted with this key; only its submitter or an admin key may change it", id)
	}
	return r, nil
}
