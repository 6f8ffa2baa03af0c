package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// MaxExportPage bounds the runs ExportRuns reads at once.
const MaxExportPage = 500

// ExportRuns returns up to limit whole runs (cells, provenance and all)
// matching f whose ids sort after after, in id order: a page of the bulk
// export. Passing the last id of a page as after gives the next page, with
// no run twice, however runs are written in between. Hidden runs are left
// out, as from every list.
func (s *Store) ExportRuns(ctx context.Context, f RunFilter, after string, limit int) ([]Run, error) {
	if limit < 1 || limit > MaxExportPage {
		return nil, &FieldError{Field: "limit", Message: fmt.Sprintf("must be 1 to %d", MaxExportPage)}
	}
	n, err := s.modelRuns(ctx, f)
	if err != nil || n == 0 {
		return nil, err
	}
	tx, err := s.reader.begin(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("export runs: %w", err)
	}
	defer tx.Rollback()
	where, args := f.where(s.dialect, n)
	if after != "" {
		where, args = append(where, "r.id > ?"), append(args, after)
	}
	rows, err := tx.QueryContext(ctx, "SELECT r.id FROM runs r WHERE "+strings.Join(where, " AND ")+" ORDER BY r.id LIMIT ?", append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("export runs: %w", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("export runs: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("export runs: %w", err)
	}
	out := make([]Run, 0, len(ids))
	for _, id := range ids {
		r, err := readRun(ctx, tx, id)
		if err != nil {
			return nil, fmt.Errorf("export runs: %w", err)
		}
		out = append(out, r)
	}
	return out, nil
}
