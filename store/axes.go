package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// maxAxis bounds the distinct values CellAxes walks.
const maxAxis = 128

// CellAxes says which cells runs measured: the contexts of valid decode
// cells (at most 128), the one nearest to near, and the concurrencies
// measured there. Each value is one index seek, so the cost is bounded by
// the distinct values, not the cells.
func (s *Store) CellAxes(ctx context.Context, near int) (contexts []int, nearest int, concurrencies []int, err error) {
	next := func(q string, args ...any) (int, bool, error) {
		var v sql.NullInt64
		err := s.reader.QueryRowContext(ctx, q, args...).Scan(&v)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && !v.Valid) {
			return 0, false, nil
		}
		return int(v.Int64), err == nil, err
	}
	for last := -1; len(contexts) < maxAxis; {
		v, ok, err := next("SELECT min(context_tokens) FROM decode_cells WHERE context_tokens > ? AND status = 'valid'", last)
		if err != nil {
			return nil, 0, nil, fmt.Errorf("cell axes: %w", err)
		}
		if !ok {
			break
		}
		contexts = append(contexts, v)
		last = v
	}
	if len(contexts) == 0 {
		return nil, 0, nil, nil
	}
	nearest = contexts[0]
	for _, c := range contexts {
		if abs(c-near) < abs(nearest-near) {
			nearest = c
		}
	}
	for last := 0; len(concurrencies) < maxAxis; {
		v, ok, err := next("SELECT min(concurrency) FROM decode_cells WHERE context_tokens = ? AND concurrency > ? AND status = 'valid'", nearest, last)
		if err != nil {
			return nil, 0, nil, fmt.Errorf("cell axes: %w", err)
		}
		if !ok {
			break
		}
		concurrencies = append(concurrencies, v)
		last = v
	}
	return contexts, nearest, concurrencies, nil
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// maxGPUNames bounds the distinct GPU names GPUNames walks.
const maxGPUNames = 512

// GPUNames lists the distinct GPU names runs are stored under (at most
// 512), one index seek each: a filter by a catalog GPU matches all of the
// names that resolve to it without reading every run.
func (s *Store) GPUNames(ctx context.Context) ([]string, error) {
	var out []string
	last := ""
	for len(out) < maxGPUNames {
		var v sql.NullString
		if err := s.reader.QueryRowContext(ctx, "SELECT min(gpu) FROM runs WHERE gpu > ? AND hidden_at IS NULL", last).Scan(&v); err != nil {
			return nil, fmt.Errorf("gpu names: %w", err)
		}
		if !v.Valid {
			break
		}
		out = append(out, v.String)
		last = v.String
	}
	return out, nil
}
