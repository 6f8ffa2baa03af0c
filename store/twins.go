package store

import (
	"context"
	"fmt"
)

// RunsNearPeak returns up to limit visible runs other than id whose peak
// (their valid cell of highest total tok/s) is at the same context and
// concurrency as peak and within rel of its tok/s, the earliest stored
// first: the candidates for a copy of a run's cells, whatever their model
// or GPU names, read through the index on the peak (one range, not a
// comparison with every run).
func (s *Store) RunsNearPeak(ctx context.Context, id string, peak PeakCell, rel float64, limit int) ([]RunConfig, error) {
	if peak.TotalTokS <= 0 || limit <= 0 {
		return nil, nil
	}
	rows, err := s.reader.QueryContext(ctx, "SELECT "+runConfigColumns+` FROM runs r
		WHERE coalesce(r.peak_total_tok_s, -1) BETWEEN ? AND ? AND r.peak_context_tokens = ? AND r.peak_concurrency = ?
			AND r.id <> ? AND r.hidden_at IS NULL
		ORDER BY r.created_at, r.id LIMIT ?`,
		peak.TotalTokS*(1-rel), peak.TotalTokS*(1+rel), peak.ContextTokens, peak.Concurrency, id, limit)
	if err != nil {
		return nil, fmt.Errorf("runs near a peak: %w", err)
	}
	defer rows.Close()
	var out []RunConfig
	for rows.Next() {
		c, err := scanRunConfig(rows)
		if err != nil {
			return nil, fmt.Errorf("runs near a peak: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}
