package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// StoredFit is a run's fit as kept: what the fit chose and the run's
// capability summary (both in the calculator's encoding, opaque here), or
// why the run cannot be modelled.
type StoredFit struct {
	RunID   string
	Method  string
	Params  []byte
	Summary []byte
	Refusal string
}

// Bounds on a stored fit: a few hundred bytes of parameters and a 1.7 KB
// summary; a calculator whose encoding outgrows them is caught on write.
const (
	MaxFitParamsBytes  = 1 << 10
	MaxFitSummaryBytes = 4 << 10
	maxRefusalBytes    = 2 << 10
)

// PutFit keeps f, replacing the run's earlier fit. A run deleted meanwhile
// is not an error: its fit has nothing left to describe.
func (s *Store) PutFit(ctx context.Context, f StoredFit) error {
	if len(f.Params) > MaxFitParamsBytes || len(f.Summary) > MaxFitSummaryBytes || len(f.Refusal) > maxRefusalBytes {
		return fmt.Errorf("put fit of run %s: %d + %d + %d bytes, beyond the bounds", f.RunID, len(f.Params), len(f.Summary), len(f.Refusal))
	}
	if (f.Params == nil) == (f.Refusal == "") {
		return fmt.Errorf("put fit of run %s: a fit has either parameters or a refusal", f.RunID)
	}
	var params, summary, refusal any
	if f.Params != nil {
		params, summary = f.Params, f.Summary
	} else {
		refusal = f.Refusal
	}
	err := s.inTx(ctx, func(tx *tx) error {
		if err := lockRun(ctx, tx, f.RunID); errors.Is(err, ErrNotFound) {
			return nil
		} else if err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO run_fits (run_id, method, params, summary, refusal, fitted_at)
			SELECT id, ?, ?, ?, ?, ? FROM runs WHERE id = ?
			ON CONFLICT (run_id) DO UPDATE SET method = excluded.method, params = excluded.params,
				summary = excluded.summary, refusal = excluded.refusal, fitted_at = excluded.fitted_at`,
			f.Method, params, summary, refusal, formatTime(s.now()), f.RunID)
		return err
	})
	if err != nil {
		return fmt.Errorf("put fit of run %s: %w", f.RunID, err)
	}
	return nil
}

// Fit returns run id's stored fit made by method; ok is false when there
// is none of that method.
func (s *Store) Fit(ctx context.Context, id, method string) (f StoredFit, ok bool, err error) {
	var refusal sql.NullString
	err = s.reader.QueryRowContext(ctx, "SELECT params, summary, refusal FROM run_fits WHERE run_id = ? AND method = ?", id, method).
		Scan(&f.Params, &f.Summary, &refusal)
	if errors.Is(err, sql.ErrNoRows) {
		return StoredFit{}, false, nil
	}
	if err != nil {
		return StoredFit{}, false, fmt.Errorf("fit of run %s: %w", id, err)
	}
	f.RunID, f.Method, f.Refusal = id, method, refusal.String
	return f, true, nil
}

// FitSummary is one run's capability summary, with what a ranking over
// every run shows of it.
type FitSummary struct {
	Run     RunConfig
	Summary []byte
	// Refusal is set (and Summary nil) when the run cannot be modelled.
	Refusal string
}

// EachFitSummary calls fn with the summary of every listed run matching
// f that method has fitted, and returns the configurations of up to
// maxUnfitted of those it has not (fitted by another method, or not yet)
// and how many more there are: one read over the runs the filters select,
// in no particular order, each summary handed over as it is read (fn must
// not keep Summary: its bytes are reused).
func (s *Store) EachFitSummary(ctx context.Context, f RunFilter, method string, maxUnfitted int, fn func(FitSummary) error) (unfitted []RunConfig, more int, err error) {
	n, err := s.modelRuns(ctx, f)
	if err != nil || n == 0 {
		return nil, 0, err
	}
	where, args := f.where(s.dialect, n)
	// A fit of another method is not read at all.
	q := "SELECT " + runConfigColumns + ", ft.method, ft.summary, ft.refusal FROM runs r LEFT JOIN run_fits ft ON ft.run_id = r.id AND ft.method = ?"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	rows, err := s.reader.QueryContext(ctx, q, append([]any{method}, args...)...)
	if err != nil {
		return nil, 0, fmt.Errorf("fit summaries: %w", err)
	}
	defer rows.Close()
	var (
		m, refusal sql.NullString
		summary    sql.RawBytes
	)
	for rows.Next() {
		c, err := scanRunConfig(fitRow{rows, []any{&m, &summary, &refusal}})
		if err != nil {
			return nil, 0, fmt.Errorf("fit summaries: %w", err)
		}
		if !m.Valid {
			if len(unfitted) < maxUnfitted {
				unfitted = append(unfitted, c)
			} else {
				more++
			}
			continue
		}
		if err := fn(FitSummary{Run: c, Summary: summary, Refusal: refusal.String}); err != nil {
			return nil, 0, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("fit summaries: %w", err)
	}
	return unfitted, more, nil
}

// RunsToFit returns up to limit ids, in id order after after, of runs
// that method has not fitted, for a background pass that fits them.
func (s *Store) RunsToFit(ctx context.Context, method, after string, limit int) ([]string, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT r.id FROM runs r LEFT JOIN run_fits ft ON ft.run_id = r.id
		WHERE r.id > ? AND (ft.method IS NULL OR ft.method <> ?) ORDER BY r.id LIMIT ?`, after, method, limit)
	if err != nil {
		return nil, fmt.Errorf("runs to fit: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("runs to fit: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// fitRow scans a run's configuration followed by more columns.
type fitRow struct {
	rows *sql.Rows
	more []any
}

func (r fitRow) Scan(dest ...any) error { return r.rows.Scan(append(dest, r.more...)...) }

// RunSummaries returns the summaries of the listed runs ids (at most
// maxSummaryIDs), keyed by id; runs that do not exist are left out.
func (s *Store) RunSummaries(ctx context.Context, ids []string) (map[string]RunSummary, error) {
	if len(ids) > maxSummaryIDs {
		return nil, fmt.Errorf("run summaries: %d ids, at most %d", len(ids), maxSummaryIDs)
	}
	out := make(map[string]RunSummary, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := s.reader.QueryContext(ctx, "SELECT "+summaryColumns+" FROM runs r WHERE r.id IN ("+strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",")+")", args...)
	if err != nil {
		return nil, fmt.Errorf("run summaries: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r summaryRow
		if err := rows.Scan(r.dest()...); err != nil {
			return nil, fmt.Errorf("run summaries: %w", err)
		}
		sum, err := r.finish()
		if err != nil {
			return nil, err
		}
		out[sum.ID] = sum
	}
	return out, rows.Err()
}

// maxSummaryIDs bounds one RunSummaries read.
const maxSummaryIDs = 500
