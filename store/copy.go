package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// CopyResult counts what a copy added; what the destination held already
// is skipped.
type CopyResult struct {
	Runs, RunsSkipped int
	Keys, KeysSkipped int
}

// copyPage is how many runs a copy reads and writes per transaction.
const copyPage = 100

// CopyTo copies every run and API key of s into dst (SQLite to PostgreSQL
// or back), keeping ids, creation times, submitters and key secrets' hashes,
// so that runs keep their URLs and keys keep working. Runs and keys dst
// holds already are skipped, so a copy can be repeated or resumed.
func (s *Store) CopyTo(ctx context.Context, dst *Store) (CopyResult, error) {
	var res CopyResult
	keys, err := s.keyRecords(ctx)
	if err != nil {
		return res, err
	}
	if err := dst.inTx(ctx, func(tx *tx) error {
		for _, k := range keys {
			insert, onConflict := dst.dialect.insertIgnore("api_keys")
			r, err := tx.ExecContext(ctx, insert+" (id, name, secret_hash, admin, created_at, last_used_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?)"+onConflict,
				k.id, k.name, k.hash, k.admin, k.created, k.lastUsed, k.revoked)
			if err != nil {
				return err
			}
			if n, _ := r.RowsAffected(); n == 1 {
				res.Keys++
			} else {
				res.KeysSkipped++
			}
		}
		return nil
	}); err != nil {
		return res, fmt.Errorf("copy keys: %w", err)
	}
	cursor := ""
	for {
		page, next, err := s.ListRuns(ctx, RunFilter{}, SortCreated, copyPage, cursor)
		if err != nil {
			return res, err
		}
		runs := make([]Run, 0, len(page))
		for _, sum := range page {
			r, err := s.Run(ctx, sum.ID)
			if err != nil {
				return res, err
			}
			if r.Provenance.SourceSHA256 != "" {
				src, _, err := s.RunSource(ctx, sum.ID)
				if err != nil {
					return res, err
				}
				r.Source = &src
			}
			runs = append(runs, r)
		}
		added, err := dst.restoreRuns(ctx, runs)
		if err != nil {
			return res, err
		}
		res.Runs += added
		res.RunsSkipped += len(runs) - added
		if next == "" {
			return res, nil
		}
		cursor = next
		if err := ctx.Err(); err != nil {
			return res, err
		}
	}
}

// restoreRuns stores runs as they were stored elsewhere: their ids,
// creation times and submitters kept. A run whose id or content is stored
// already is skipped. It returns how many were added.
func (s *Store) restoreRuns(ctx context.Context, runs []Run) (int, error) {
	added := 0
	err := s.inTx(ctx, func(tx *tx) error {
		for _, r := range runs {
			if err := r.Validate(); err != nil {
				return fmt.Errorf("run %s: %w", r.ID, err)
			}
			if r.ID == "" || r.CreatedAt.IsZero() {
				return errors.New("a run to restore needs its id and creation time")
			}
			hash := r.ContentHash()
			var n int
			if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM runs WHERE id = ? OR content_hash = ?", r.ID, hash).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				continue
			}
			r.Normalize()
			r.CreatedAt = r.CreatedAt.UTC().Truncate(time.Microsecond)
			inserted, err := insertRun(ctx, tx, r, hash, Summarize(r))
			if err == nil && inserted {
				err = writeMethodTrust(ctx, tx, r.ID, r.MethodOf(), r.Trust)
			}
			if err != nil {
				return fmt.Errorf("run %s: %w", r.ID, err)
			}
			if inserted {
				added++
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("copy runs: %w", err)
	}
	return added, nil
}

type keyRecord struct {
	id, name          string
	hash              []byte
	admin             int
	created           string
	lastUsed, revoked *string
}

func (s *Store) keyRecords(ctx context.Context) ([]keyRecord, error) {
	rows, err := s.reader.QueryContext(ctx, "SELECT id, name, secret_hash, admin, created_at, last_used_at, revoked_at FROM api_keys ORDER BY created_at, name")
	if err != nil {
		return nil, fmt.Errorf("read keys: %w", err)
	}
	defer rows.Close()
	var out []keyRecord
	for rows.Next() {
		var k keyRecord
		if err := rows.Scan(&k.id, &k.name, &k.hash, &k.admin, &k.created, &k.lastUsed, &k.revoked); err != nil {
			return nil, fmt.Errorf("read keys: %w", err)
		}
		out = append(out, k)
	}
	return out, rows.Err()
}
