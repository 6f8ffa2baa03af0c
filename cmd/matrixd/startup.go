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
// that the first answer already tells of them. It returns their ids,
// whose corroboration recorroborate judges again.
func recheck(ctx context.Context, st *store.Store) ([]string, error) {
	runs, err := assess.New(st)
	if err != nil {
		return nil, err
	}
	ids, err := runs.Recheck(ctx)
	if err != nil {
		return nil, fmt.Errorf("check stored runs: %w", err)
	}
	return ids, nil
}

// recorroborate judges runs ids again against the rest of the database
// (after an upgrade their statuses were made by other rules, or never),
// in the background until done or shutdown, and says how many changed.
func recorroborate(ctx context.Context, st *store.Store, ids []string, logger *slog.Logger) {
	if len(ids) == 0 {
		return
	}
	runs, err := assess.New(st)
	if err != nil {
		logger.Error("corroborating stored runs", slog.String("error", err.Error()))
		return
	}
	start := time.Now()
	n, changed, err := runs.Recorroborate(ctx, ids)
	attrs := []slog.Attr{slog.Int("runs", n), slog.Int("changed", changed), slog.Float64("seconds", time.Since(start).Seconds())}
	if err != nil && ctx.Err() == nil {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	logger.LogAttrs(context.Background(), slog.LevelInfo, "corroborated stored runs", attrs...)
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
