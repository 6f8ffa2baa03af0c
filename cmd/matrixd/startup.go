package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/matrixd/matrixd/assess"
	"github.com/matrixd/matrixd/predict"
	"github.com/matrixd/matrixd/store"
)

// recheck checks the runs stored before their checks existed, by older
// rules, or past the checks (an import straight into the database), so
// that the first answer already tells of them.
func recheck(ctx context.Context, st *store.Store) error {
	runs, err := assess.New(st)
	if err != nil {
		return err
	}
	if _, err := runs.Recheck(ctx); err != nil {
		return fmt.Errorf("check stored runs: %w", err)
	}
	return nil
}

// backfill fits the stored runs with no fit of the current method (after
// an upgrade, or written before fits were stored), one at a time, and
// says how many it fitted.
func backfill(ctx context.Context, calc *predict.Service, logger *slog.Logger) {
	start := time.Now()
	n, err := calc.Backfill(ctx, 1)
	if n > 0 || err != nil {
		attrs := []slog.Attr{slog.Int("runs", n), slog.Float64("seconds", time.Since(start).Seconds())}
		if err != nil && ctx.Err() == nil {
			attrs = append(attrs, slog.String("error", err.Error()))
		}
		logger.LogAttrs(context.Background(), slog.LevelInfo, "fitted stored runs", attrs...)
	}
}
