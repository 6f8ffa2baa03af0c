package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// seriesKeyVersion starts every series key: a change to what the key
// covers bumps it, and keys of another version are computed again when
// the database is opened.
const seriesKeyVersion = "s3-"

// notSpeed are launch flags that change what fits or how the server is
// reached, not how fast it decodes: runs differing only in them are one
// series (the differences are named).
var notSpeed = map[string]bool{
	"max-model-len": true, "max_model_len": true, "gpu-memory-utilization": true, "gpu_memory_utilization": true,
	"port": true, "host": true, "served-model-name": true, "api-key": true, "download-dir": true,
	"disable-log-requests": true, "disable-log-stats": true, "uvicorn-log-level": true, "trust-remote-code": true,
	"seed": true, "model": true, "m": true, "c": true, "ctx-size": true, "n_ctx": true,
}

// sameAsAbsent are launch settings a tool began to print at the value
// that was its only behaviour before: at that value a run is in the series
// of runs whose output does not print it. (llama-batched-bench prints
// is_tg_separate since build 7008; 0 is the decode pattern of every build
// before it.)
var sameAsAbsent = map[string]string{"is_tg_separate": "0"}

// SeriesKey is what runs of one series share: model, quantization, GPU
// and count, VRAM, engine and backend, the method class, the benchmark and
// its decode test, and every launch setting that changes speed. Engine version, date and
// capacity-only settings are left out.
func SeriesKey(r Run) string {
	quant := r.Model.Quantization
	if quant == "" {
		quant = r.Engine.Quantization
	}
	parts := []string{
		r.Model.Name, quant, r.Hardware.GPU, intStr(r.Hardware.GPUCount, 1), floatStr(r.Hardware.VRAMGB),
		r.Engine.Name, r.Engine.Backend, string(r.MethodOf().Class), r.Benchmark.Tool, r.Benchmark.DecodeTest,
		r.Launch.KVCacheDtype, r.Launch.AttentionBackend, boolStr(r.Launch.EnablePrefixCaching), intStr(r.Launch.MaxNumSeqs, 0),
	}
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range r.Launch.Flags {
			if !yield(k) {
				return
			}
		}
	}) {
		v := r.Launch.Flags[k]
		if d, ok := sameAsAbsent[strings.ToLower(k)]; ok && strings.TrimSpace(v) == d {
			continue
		}
		if !notSpeed[strings.ToLower(k)] && !knownLaunchField(k) {
			parts = append(parts, k+"="+v)
		}
	}
	for i, p := range parts {
		parts[i] = strings.ToLower(strings.TrimSpace(p))
	}
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return seriesKeyVersion + hex.EncodeToString(sum[:12])
}

// knownLaunchField is a flag already in the key by its parsed field.
func knownLaunchField(k string) bool {
	switch strings.ReplaceAll(strings.ToLower(k), "_", "-") {
	case "kv-cache-dtype", "attention-backend", "enable-prefix-caching", "max-num-seqs":
		return true
	}
	return false
}

func intStr(p *int, def int) string {
	if p == nil {
		return strconv.Itoa(def)
	}
	return strconv.Itoa(*p)
}

func floatStr(p *float64) string {
	if p == nil {
		return ""
	}
	return strconv.FormatFloat(*p, 'g', -1, 64)
}

func boolStr(p *bool) string {
	if p == nil {
		return ""
	}
	return strconv.FormatBool(*p)
}

// staleSeriesKeys is the query for a batch of runs whose series key is
// missing or of another version. Keys of this version are the range
// [version, version with its last byte + 1): NULL and the ranges outside
// it read the runs_by_series index, not every run (the scan it replaces
// read the runs table at every start: 3 s of a cold start over 100,000
// runs).
func staleSeriesKeys() (string, []any) {
	v := seriesKeyVersion
	hi := v[:len(v)-1] + string(v[len(v)-1]+1)
	return `SELECT ` + runColumns + ` FROM runs
			WHERE series_key IS NULL OR series_key < ? OR series_key >= ? LIMIT 500`, []any{v, hi}
}

// fillSeriesKeys computes the series key of every run that has none, or
// one of another key version: runs stored before the key existed, or
// before its definition changed. It runs at open, in batches.
func (s *Store) fillSeriesKeys(ctx context.Context) error {
	for {
		q, args := staleSeriesKeys()
		rows, err := s.reader.QueryContext(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("series keys: %w", err)
		}
		var batch []Run
		for rows.Next() {
			r, err := scanRun(rows)
			if err != nil {
				rows.Close()
				return fmt.Errorf("series keys: %w", err)
			}
			batch = append(batch, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("series keys: %w", err)
		}
		for i := range batch {
			if err := readMethodTrust(ctx, s.reader, &batch[i]); err != nil {
				return fmt.Errorf("series keys: %w", err)
			}
		}
		if len(batch) == 0 {
			return nil
		}
		err = s.inTx(ctx, func(tx *tx) error {
			for _, r := range batch {
				if _, err := tx.ExecContext(ctx, "UPDATE runs SET series_key = ? WHERE id = ?", SeriesKey(r), r.ID); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("series keys: %w", err)
		}
	}
}

// SeriesMember is a run of a series, as a series lists it.
type SeriesMember struct {
	RunConfig
	SubmittedBy string
	Launch      map[string]string // the launch flags, to name what differs
}

// maxSeriesRuns bounds the runs one series answer lines up.
const maxSeriesRuns = 20

// Series returns the runs of run id's series, newest first, at most
// maxSeriesRuns, and whether there are more. Hidden and flagged runs are
// in no series; a hidden run's series is ErrGone.
func (s *Store) Series(ctx context.Context, id string) ([]SeriesMember, bool, error) {
	if err := visible(ctx, s.reader, id); err != nil {
		return nil, false, err
	}
	var key *string
	err := s.reader.QueryRowContext(ctx, "SELECT series_key FROM runs WHERE id = ?", id).Scan(&key)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, false, runNotFound(id)
		}
		return nil, false, fmt.Errorf("series of %s: %w", id, err)
	}
	if key == nil {
		return nil, false, fmt.Errorf("series of %s: the run has no series key yet", id)
	}
	rows, err := s.reader.QueryContext(ctx, "SELECT "+runConfigColumns+", r.submitted_by, r.launch_flags FROM runs r WHERE r.series_key = ? AND r.hidden_at IS NULL AND ((r.flagged = 0 AND r.disputed = 0) OR r.id = ?) ORDER BY r.created_at DESC, r.id DESC LIMIT ?",
		*key, id, maxSeriesRuns+1)
	if err != nil {
		return nil, false, fmt.Errorf("series of %s: %w", id, err)
	}
	defer rows.Close()
	var out []SeriesMember
	for rows.Next() {
		var (
			m         SeriesMember
			by, flags *string
		)
		c, err := scanRunConfig(scanTail{rows, []any{&by, &flags}})
		if err != nil {
			return nil, false, fmt.Errorf("series of %s: %w", id, err)
		}
		m.RunConfig = c
		m.SubmittedBy = deref(by)
		if flags != nil {
			_ = json.Unmarshal([]byte(*flags), &m.Launch)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("series of %s: %w", id, err)
	}
	if len(out) > maxSeriesRuns {
		return out[:maxSeriesRuns], true, nil
	}
	return out, false, nil
}

// scanTail scans a row into a RunConfig's columns and then into tail.
type scanTail struct {
	row  interface{ Scan(...any) error }
	tail []any
}

func (s scanTail) Scan(dest ...any) error { return s.row.Scan(append(dest, s.tail...)...) }

// SeriesSummary is one series as the list of series shows it.
type SeriesSummary struct {
	Key          string
	Runs         int
	LatestRunID  string
	LatestAt     time.Time
	ModelName    string
	GPU          string
	EngineName   string
	Quantization string
}

// ListSeries returns the series of at least two runs among the runs f
// matches, most recently extended first, at most limit, and whether more
// matched.
func (s *Store) ListSeries(ctx context.Context, f RunFilter, limit int) ([]SeriesSummary, bool, error) {
	n, err := s.modelRuns(ctx, f)
	if err != nil || n == 0 {
		return nil, false, err
	}
	where, args := f.where(s.dialect, n)
	where = append(where, "r.series_key IS NOT NULL", "r.flagged = 0", "r.disputed = 0")
	q := `SELECT r.series_key, count(*), max(r.created_at) FROM runs r WHERE ` + strings.Join(where, " AND ") +
		` GROUP BY r.series_key HAVING count(*) > 1 ORDER BY max(r.created_at) DESC, r.series_key LIMIT ?`
	rows, err := s.reader.QueryContext(ctx, q, append(args, limit+1)...)
	if err != nil {
		return nil, false, fmt.Errorf("list series: %w", err)
	}
	var out []SeriesSummary
	for rows.Next() {
		var (
			ss     SeriesSummary
			latest string
		)
		if err := rows.Scan(&ss.Key, &ss.Runs, &latest); err != nil {
			rows.Close()
			return nil, false, fmt.Errorf("list series: %w", err)
		}
		if ss.LatestAt, err = parseTime(latest); err != nil {
			rows.Close()
			return nil, false, err
		}
		out = append(out, ss)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("list series: %w", err)
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	for i := range out {
		var c RunConfig
		err := s.reader.QueryRowContext(ctx, "SELECT id, model_name, gpu, engine_name, coalesce(model_quantization, engine_quantization, '') FROM runs WHERE series_key = ? AND hidden_at IS NULL AND flagged = 0 AND disputed = 0 ORDER BY created_at DESC, id DESC LIMIT 1",
			out[i].Key).Scan(&c.ID, &c.ModelName, &c.GPU, &c.EngineName, &c.Quantization)
		if err != nil {
			return nil, false, fmt.Errorf("list series: %w", err)
		}
		out[i].LatestRunID, out[i].ModelName, out[i].GPU, out[i].EngineName, out[i].Quantization = c.ID, c.ModelName, c.GPU, c.EngineName, c.Quantization
	}
	return out, more, nil
}
