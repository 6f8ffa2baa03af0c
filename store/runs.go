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
	"strings"
	"time"
)

// CreateRun stores run in one transaction and returns it with its id and
// created_at. Storing the same content again stores nothing and returns the
// run already there, with created false.
func (s *Store) CreateRun(ctx context.Context, run Run) (stored Run, created bool, err error) {
	runs, createdAll, err := s.CreateRuns(ctx, []Run{run})
	if err != nil {
		return Run{}, false, err
	}
	if !createdAll[0] {
		stored, err := s.Run(ctx, runs[0].ID)
		return stored, false, err
	}
	return runs[0], true, nil
}

// CreateRuns stores runs all-or-nothing in one transaction: one invalid run
// stores none. Runs whose content is already stored are skipped (created[i]
// false) and keep the stored id.
func (s *Store) CreateRuns(ctx context.Context, runs []Run) (stored []Run, created []bool, err error) {
	stored = make([]Run, len(runs))
	created = make([]bool, len(runs))
	hashes := make([]string, len(runs))
	now := s.now().UTC().Truncate(time.Microsecond)
	for i, run := range runs {
		if err := run.Validate(); err != nil {
			if len(runs) > 1 {
				err = fmt.Errorf("run %d of %d: %w", i+1, len(runs), err)
			}
			return nil, nil, err
		}
		if err := run.checkRetrieved(now); err != nil {
			if len(runs) > 1 {
				err = fmt.Errorf("run %d of %d: %w", i+1, len(runs), err)
			}
			return nil, nil, err
		}
		run.Prefill, run.Decode = slices.Clone(run.Prefill), slices.Clone(run.Decode)
		run.Normalize()
		run.stampSource()
		m := run.MethodOf()
		run.Method = &m
		hashes[i] = run.ContentHash()
		run.ID, run.CreatedAt = IDFromHash(hashes[i]), now
		stored[i] = run
	}
	err = s.inTx(ctx, func(tx *tx) error {
		for i := range stored {
			stored[i].ID = IDFromHash(hashes[i]) // again, when a transaction is retried
			id, inserted, err := storeRun(ctx, tx, stored[i], hashes[i])
			if err != nil {
				return err
			}
			stored[i].ID, created[i] = id, inserted
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("create runs: %w", err)
	}
	return stored, created, nil
}

// storeRun inserts r unless a run with its content is stored already, and
// returns the stored run's id. The database decides, not a read before
// the write: a concurrent transaction storing the same content makes this
// INSERT wait for it and then do nothing, so two writers racing with one
// body store it once and neither fails.
func storeRun(ctx context.Context, tx *tx, r Run, hash string) (id string, inserted bool, err error) {
	inserted, err = insertRun(ctx, tx, r, hash, Summarize(r))
	if err != nil {
		return "", false, err
	}
	if inserted {
		if err := writeMethodTrust(ctx, tx, r.ID, r.MethodOf(), r.Trust); err != nil {
			return "", false, err
		}
		detail := map[string]any{"source_sha256": nil}
		if r.Source != nil {
			sum := sha256.Sum256(r.Source.Data)
			detail["source_sha256"] = hex.EncodeToString(sum[:])
		}
		if r.Provenance.SignedBy != "" {
			detail["signed_by"] = r.Provenance.SignedBy
		}
		return r.ID, true, logEvent(ctx, tx, r.ID, r.SubmittedBy, ActionCreate, detail, r.CreatedAt)
	}
	err = tx.QueryRowContext(ctx, "SELECT id FROM runs WHERE content_hash = ?", hash).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		// The id (a prefix of the content hash) is another content's.
		return "", false, newError(ErrConflict, "run id %s is taken by a run of other content; change any field (e.g. notes) and send it again", r.ID)
	}
	return id, false, err
}

// insertRun inserts r and its cells; inserted is false, and nothing is
// written, when its id or content is stored already.
func insertRun(ctx context.Context, tx *tx, r Run, hash string, sum RunSummary) (inserted bool, err error) {
	notes, err := json.Marshal(nonNil(r.Launch.Notes))
	if err != nil {
		return false, err
	}
	flags := r.Launch.Flags
	if flags == nil {
		flags = map[string]string{}
	}
	flagsJSON, err := json.Marshal(flags)
	if err != nil {
		return false, err
	}
	var srcHash, srcType, srcFormat any
	if r.Source != nil {
		if len(r.Source.Data) > MaxSourceBytes {
			return false, newError(ErrInvalid, "the source is %d bytes, more than the %d kept for one run", len(r.Source.Data), MaxSourceBytes)
		}
		sum := sha256.Sum256(r.Source.Data)
		srcHash, srcType, srcFormat = hex.EncodeToString(sum[:]), r.Source.MediaType, nullStr(r.Source.Format)
	}
	var peakTok, peakL, peakB any
	if sum.Peak != nil {
		peakTok, peakL, peakB = sum.Peak.TotalTokS, sum.Peak.ContextTokens, sum.Peak.Concurrency
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO runs (
		id, content_hash, created_at, submitted_by, title, notes, submitter, source_url,
		model_name, model_quantization,
		hardware_type, gpu, gpu_count, vram_gb, cpu, cpu_cores, ram_gb, os, driver_version, power_limit_w, pcie,
		engine_name, engine_version, engine_quantization, engine_backend, engine_repository, engine_build,
		benchmark_tool, benchmark_tool_version, served_model, revision, decode_test, prefill_mode, seconds_per_measurement, max_output_tokens,
		launch_command, launch_notes, max_model_len, gpu_memory_utilization, max_num_seqs, kv_cache_dtype, attention_backend, enable_prefix_caching, launch_flags,
		single_stream_tok_s, single_stream_context_tokens, peak_total_tok_s, peak_context_tokens, peak_concurrency, max_context_tokens_with_output,
		source_sha256, source_media_type, source_format, signed_by, signature, series_key, avg_power_w,
		publisher, license, retrieved_at
	) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		r.ID, hash, formatTime(r.CreatedAt), nullStr(r.SubmittedBy), r.Title, nullStr(r.Notes), nullStr(r.Submitter), nullStr(r.SourceURL),
		r.Model.Name, nullStr(r.Model.Quantization),
		nullStr(r.Hardware.Type), r.Hardware.GPU, r.Hardware.GPUCount, r.Hardware.VRAMGB, nullStr(r.Hardware.CPU), r.Hardware.CPUCores, r.Hardware.RAMGB, nullStr(r.Hardware.OS), nullStr(r.Hardware.DriverVersion), r.Hardware.PowerLimitW, nullStr(r.Hardware.PCIe),
		r.Engine.Name, nullStr(r.Engine.Version), nullStr(r.Engine.Quantization), nullStr(r.Engine.Backend), nullStr(r.Engine.Repository), nullStr(r.Engine.Build),
		nullStr(r.Benchmark.Tool), nullStr(r.Benchmark.ToolVersion), nullStr(r.Benchmark.ServedModel), nullStr(r.Benchmark.Revision), nullStr(r.Benchmark.DecodeTest), nullStr(r.Benchmark.PrefillMode), r.Benchmark.SecondsPerMeasurement, r.Benchmark.MaxOutputTokens,
		nullStr(r.Launch.Command), string(notes), r.Launch.MaxModelLen, r.Launch.GPUMemoryUtilization, r.Launch.MaxNumSeqs, nullStr(r.Launch.KVCacheDtype), nullStr(r.Launch.AttentionBackend), nullBoolInt(r.Launch.EnablePrefixCaching), string(flagsJSON),
		sum.SingleStreamTokS, sum.SingleStreamContextTokens, peakTok, peakL, peakB, sum.MaxContextTokensWithOutput,
		srcHash, srcType, srcFormat, nullStr(r.Provenance.SignedBy), nullStr(r.Provenance.Signature), SeriesKey(r), r.Hardware.AvgPowerW,
		nullStr(r.Publisher), nullStr(r.License), nullStr(r.RetrievedAt),
	)
	if err != nil {
		return false, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, err
	}
	if r.Source != nil {
		if _, err := putSource(ctx, tx, r.Source.Data); err != nil {
			return false, err
		}
	}
	dstmt, err := tx.PrepareContext(ctx, `INSERT INTO decode_cells (
		run_id, context_tokens, concurrency, status, total_tok_s, per_request_tok_s, ttft_ms, tbt_ms,
		avg_active_requests, completed_requests, output_tokens, duration_s, avg_power_w
	) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return false, err
	}
	defer dstmt.Close()
	for _, c := range r.Decode {
		if _, err := dstmt.ExecContext(ctx, r.ID, c.ContextTokens, c.Concurrency, c.Status, c.TotalTokS, c.PerRequestTokS, c.TTFTMs, c.TBTMs,
			c.AvgActiveRequests, c.CompletedRequests, c.OutputTokens, c.DurationS, c.AvgPowerW); err != nil {
			return false, err
		}
	}
	pstmt, err := tx.PrepareContext(ctx, `INSERT INTO prefill_cells (run_id, context_tokens, status, prompt_tok_s, ttft_ms) VALUES (?, ?, ?, ?, ?)`)
	if err != nil {
		return false, err
	}
	defer pstmt.Close()
	for _, c := range r.Prefill {
		if _, err := pstmt.ExecContext(ctx, r.ID, c.ContextTokens, c.Status, c.PromptTokS, c.TTFTMs); err != nil {
			return false, err
		}
	}
	return true, nil
}

// runColumns are a run's columns; trustColumns those migration 7 added,
// which a migration before it reads as NULL (legacyTrustColumns).
const runColumns = baseRunColumns + ",\n\t" + trustColumns

const baseRunColumns = `id, created_at, submitted_by, title, notes, submitter, source_url,
	model_name, model_quantization,
	hardware_type, gpu, gpu_count, vram_gb, cpu, cpu_cores, ram_gb, os, driver_version, power_limit_w, pcie,
	engine_name, engine_version, engine_quantization, engine_backend, engine_repository, engine_build,
	benchmark_tool, benchmark_tool_version, served_model, revision, decode_test, prefill_mode, seconds_per_measurement, max_output_tokens,
	launch_command, launch_notes, max_model_len, gpu_memory_utilization, max_num_seqs, kv_cache_dtype, attention_backend, enable_prefix_caching, launch_flags`

const trustColumns = `source_sha256, source_media_type, source_format, (SELECT size FROM sources WHERE sha256 = source_sha256), signed_by, signature,
	hidden_at, hidden_by, hidden_reason`

const legacyTrustColumns = "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL"

func scanRun(row interface{ Scan(...any) error }) (Run, error) {
	var (
		r                                  Run
		created, notes, flags              string
		submittedBy, runNotes              *string
		submitter, sourceURL, modelQ       *string
		hwType, cpu, osName, driver, pcie  *string
		ver, engQ, backend, repo, build    *string
		tool, toolVer, served, rev, dt, pm *string
		command, kvDtype, attnBackend      *string
		srcHash, srcType, srcFormat        *string
		srcSize                            *int64
		signedBy, signature                *string
		hiddenAt, hiddenBy, hiddenReason   *string
	)
	err := row.Scan(&r.ID, &created, &submittedBy, &r.Title, &runNotes, &submitter, &sourceURL,
		&r.Model.Name, &modelQ,
		&hwType, &r.Hardware.GPU, &r.Hardware.GPUCount, &r.Hardware.VRAMGB, &cpu, &r.Hardware.CPUCores, &r.Hardware.RAMGB, &osName, &driver, &r.Hardware.PowerLimitW, &pcie,
		&r.Engine.Name, &ver, &engQ, &backend, &repo, &build,
		&tool, &toolVer, &served, &rev, &dt, &pm, &r.Benchmark.SecondsPerMeasurement, &r.Benchmark.MaxOutputTokens,
		&command, &notes, &r.Launch.MaxModelLen, &r.Launch.GPUMemoryUtilization, &r.Launch.MaxNumSeqs, &kvDtype, &attnBackend, &r.Launch.EnablePrefixCaching, &flags,
		&srcHash, &srcType, &srcFormat, &srcSize, &signedBy, &signature, &hiddenAt, &hiddenBy, &hiddenReason)
	if err != nil {
		return Run{}, err
	}
	r.Provenance = Provenance{SourceSHA256: deref(srcHash), SourceMediaType: deref(srcType), SourceFormat: deref(srcFormat),
		SignedBy: deref(signedBy), Signature: deref(signature)}
	if srcSize != nil {
		r.Provenance.SourceSize = *srcSize
	}
	if r.Moderation.HiddenAt, err = optTime(hiddenAt); err != nil {
		return Run{}, fmt.Errorf("run %s hidden_at: %w", r.ID, err)
	}
	r.Moderation.HiddenBy, r.Moderation.HiddenReason = deref(hiddenBy), deref(hiddenReason)
	if r.CreatedAt, err = parseTime(created); err != nil {
		return Run{}, fmt.Errorf("run %s created_at: %w", r.ID, err)
	}
	r.SubmittedBy, r.Notes = deref(submittedBy), deref(runNotes)
	r.Submitter, r.SourceURL, r.Model.Quantization = deref(submitter), deref(sourceURL), deref(modelQ)
	r.Hardware.Type, r.Hardware.CPU, r.Hardware.OS, r.Hardware.DriverVersion, r.Hardware.PCIe = deref(hwType), deref(cpu), deref(osName), deref(driver), deref(pcie)
	r.Engine.Version, r.Engine.Quantization, r.Engine.Backend, r.Engine.Repository, r.Engine.Build = deref(ver), deref(engQ), deref(backend), deref(repo), deref(build)
	r.Benchmark.Tool, r.Benchmark.ToolVersion, r.Benchmark.ServedModel, r.Benchmark.Revision = deref(tool), deref(toolVer), deref(served), deref(rev)
	r.Benchmark.DecodeTest, r.Benchmark.PrefillMode = deref(dt), deref(pm)
	r.Launch.Command, r.Launch.KVCacheDtype, r.Launch.AttentionBackend = deref(command), deref(kvDtype), deref(attnBackend)
	if err := json.Unmarshal([]byte(notes), &r.Launch.Notes); err != nil {
		return Run{}, fmt.Errorf("run %s launch_notes: %w", r.ID, err)
	}
	if err := json.Unmarshal([]byte(flags), &r.Launch.Flags); err != nil {
		return Run{}, fmt.Errorf("run %s launch_flags: %w", r.ID, err)
	}
	if len(r.Launch.Notes) == 0 {
		r.Launch.Notes = nil
	}
	if len(r.Launch.Flags) == 0 {
		r.Launch.Flags = nil
	}
	return r, nil
}

// Run returns the whole run with its cells.
func (s *Store) Run(ctx context.Context, id string) (Run, error) {
	tx, err := s.reader.begin(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return Run{}, fmt.Errorf("run %s: %w", id, err)
	}
	defer tx.Rollback()
	r, err := readRun(ctx, tx, id)
	if err != nil {
		return Run{}, err
	}
	return r, r.gone()
}

func readRun(ctx context.Context, q querier, id string) (Run, error) {
	r, err := readRunColumns(ctx, q, id, false)
	if err != nil {
		return Run{}, err
	}
	if err := readMethodTrust(ctx, q, &r); err != nil {
		return Run{}, err
	}
	if err := readPower(ctx, q, &r); err != nil {
		return Run{}, err
	}
	if err := readOrigin(ctx, q, &r); err != nil {
		return Run{}, err
	}
	if err := readCorroboration(ctx, q, &r); err != nil {
		return Run{}, err
	}
	return r, nil
}

// readOrigin reads where run r came from, the columns migration 16
// (PostgreSQL's 11) added: apart from the run's other columns, so that
// earlier migrations still read runs without them.
func readOrigin(ctx context.Context, q querier, r *Run) error {
	var publisher, license, retrieved *string
	if err := q.QueryRowContext(ctx, "SELECT publisher, license, retrieved_at FROM runs WHERE id = ?", r.ID).Scan(&publisher, &license, &retrieved); err != nil {
		return fmt.Errorf("run %s origin: %w", r.ID, err)
	}
	r.Publisher, r.License, r.RetrievedAt = deref(publisher), deref(license), deref(retrieved)
	return nil
}

// readPower reads the measured power of run r and its decode cells, the
// columns migration 10 (PostgreSQL's 5) added: apart from the run's other
// columns, so that earlier migrations still read runs without them.
func readPower(ctx context.Context, q querier, r *Run) error {
	if err := q.QueryRowContext(ctx, "SELECT avg_power_w FROM runs WHERE id = ?", r.ID).Scan(&r.Hardware.AvgPowerW); err != nil {
		return fmt.Errorf("run %s power: %w", r.ID, err)
	}
	rows, err := q.QueryContext(ctx, "SELECT context_tokens, concurrency, avg_power_w FROM decode_cells WHERE run_id = ? AND avg_power_w IS NOT NULL", r.ID)
	if err != nil {
		return fmt.Errorf("run %s power: %w", r.ID, err)
	}
	defer rows.Close()
	at := make(map[[2]int]int, len(r.Decode))
	for i, c := range r.Decode {
		at[[2]int{c.ContextTokens, c.Concurrency}] = i
	}
	for rows.Next() {
		var l, b int
		var w float64
		if err := rows.Scan(&l, &b, &w); err != nil {
			return err
		}
		if i, ok := at[[2]int{l, b}]; ok {
			r.Decode[i].AvgPowerW = &w
		}
	}
	return rows.Err()
}

// readRunColumns reads run id; legacy is for migrations before the trust
// columns existed.
func readRunColumns(ctx context.Context, q querier, id string, legacy bool) (Run, error) {
	cols := runColumns
	if legacy {
		cols = baseRunColumns + ", " + legacyTrustColumns
	}
	r, err := scanRun(q.QueryRowContext(ctx, "SELECT "+cols+" FROM runs WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return Run{}, runNotFound(id)
	}
	if err != nil {
		return Run{}, fmt.Errorf("run %s: %w", id, err)
	}
	if r.Decode, err = queryDecodeCells(ctx, q, id, DecodeFilter{}); err != nil {
		return Run{}, fmt.Errorf("run %s: %w", id, err)
	}
	if r.Prefill, err = queryPrefillCells(ctx, q, id, PrefillFilter{}); err != nil {
		return Run{}, fmt.Errorf("run %s: %w", id, err)
	}
	if legacy {
		return r, nil
	}
	if err := q.QueryRowContext(ctx, "SELECT count(*) FROM run_flags WHERE run_id = ? AND resolved_at IS NULL", id).Scan(&r.Moderation.OpenFlags); err != nil {
		return Run{}, fmt.Errorf("run %s: %w", id, err)
	}
	return r, nil
}

// DecodeFilter narrows DecodeCells; zero fields match everything.
type DecodeFilter struct {
	ContextTokens *int
	Concurrency   *int
	Status        string
}

// PrefillFilter narrows PrefillCells; zero fields match everything.
type PrefillFilter struct {
	ContextTokens *int
	Status        string
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// DecodeCells returns the run's decode cells that match f, ordered by
// context then concurrency; ErrNotFound when the run does not exist.
func (s *Store) DecodeCells(ctx context.Context, runID string, f DecodeFilter) ([]DecodeCell, error) {
	return cellsOfRun(ctx, s, runID, func(tx *tx) ([]DecodeCell, error) { return queryDecodeCells(ctx, tx, runID, f) })
}

// PrefillCells returns the run's prefill rows that match f, ordered by
// context; ErrNotFound when the run does not exist.
func (s *Store) PrefillCells(ctx context.Context, runID string, f PrefillFilter) ([]PrefillCell, error) {
	return cellsOfRun(ctx, s, runID, func(tx *tx) ([]PrefillCell, error) { return queryPrefillCells(ctx, tx, runID, f) })
}

// cellsOfRun runs query in one read transaction after checking the run
// exists, so an empty answer means no matching cell, not no run.
func cellsOfRun[T any](ctx context.Context, s *Store, runID string, query func(*tx) ([]T, error)) ([]T, error) {
	tx, err := s.reader.begin(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	if err := visible(ctx, tx, runID); err != nil {
		return nil, err
	}
	return query(tx)
}

// RunExists is nil when run id is stored and visible, a gone error when it
// is hidden, and a not-found error otherwise: one primary-key lookup.
func (s *Store) RunExists(ctx context.Context, id string) error {
	return visible(ctx, s.reader, id)
}

// lockRun starts every write that reads run id before it changes the run,
// its flags or its history: the run's row is locked until tx ends, so the
// database decides between writers racing on one run. On PostgreSQL a
// second writer waits here and then reads what the first committed (or
// finds the run deleted); SQLite's writer transactions run one at a time
// already. ErrNotFound when there is no run id.
func lockRun(ctx context.Context, tx *tx, id string) error {
	var one int
	err := tx.QueryRowContext(ctx, "SELECT 1 FROM runs WHERE id = ?"+tx.d.forUpdate(), id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return runNotFound(id)
	}
	if err != nil {
		return fmt.Errorf("lock run %s: %w", id, err)
	}
	return nil
}

func runExists(ctx context.Context, q querier, id string) error {
	var one int
	err := q.QueryRowContext(ctx, "SELECT 1 FROM runs WHERE id = ?", id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return runNotFound(id)
	}
	return err
}

const decodeColumns = `context_tokens, concurrency, status, total_tok_s, per_request_tok_s, ttft_ms, tbt_ms,
	avg_active_requests, completed_requests, output_tokens, duration_s`

func scanDecodeCell(row interface{ Scan(...any) error }, c *DecodeCell) error {
	return row.Scan(&c.ContextTokens, &c.Concurrency, &c.Status, &c.TotalTokS, &c.PerRequestTokS, &c.TTFTMs, &c.TBTMs,
		&c.AvgActiveRequests, &c.CompletedRequests, &c.OutputTokens, &c.DurationS)
}

func queryDecodeCells(ctx context.Context, q querier, runID string, f DecodeFilter) ([]DecodeCell, error) {
	where, args := []string{"run_id = ?"}, []any{runID}
	if f.ContextTokens != nil {
		where, args = append(where, "context_tokens = ?"), append(args, *f.ContextTokens)
	}
	if f.Concurrency != nil {
		where, args = append(where, "concurrency = ?"), append(args, *f.Concurrency)
	}
	if f.Status != "" {
		where, args = append(where, "status = ?"), append(args, f.Status)
	}
	rows, err := q.QueryContext(ctx, "SELECT "+decodeColumns+" FROM decode_cells WHERE "+strings.Join(where, " AND ")+
		" ORDER BY context_tokens, concurrency", args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cells []DecodeCell
	for rows.Next() {
		var c DecodeCell
		if err := scanDecodeCell(rows, &c); err != nil {
			return nil, err
		}
		cells = append(cells, c)
	}
	return cells, rows.Err()
}

func queryPrefillCells(ctx context.Context, q querier, runID string, f PrefillFilter) ([]PrefillCell, error) {
	where, args := []string{"run_id = ?"}, []any{runID}
	if f.ContextTokens != nil {
		where, args = append(where, "context_tokens = ?"), append(args, *f.ContextTokens)
	}
	if f.Status != "" {
		where, args = append(where, "status = ?"), append(args, f.Status)
	}
	rows, err := q.QueryContext(ctx, "SELECT context_tokens, status, prompt_tok_s, ttft_ms FROM prefill_cells WHERE "+
		strings.Join(where, " AND ")+" ORDER BY context_tokens", args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cells []PrefillCell
	for rows.Next() {
		var c PrefillCell
		if err := rows.Scan(&c.ContextTokens, &c.Status, &c.PromptTokS, &c.TTFTMs); err != nil {
			return nil, err
		}
		cells = append(cells, c)
	}
	return cells, rows.Err()
}

// CountRuns returns how many runs are stored.
func (s *Store) CountRuns(ctx context.Context) (int, error) {
	var n int
	if err := s.reader.QueryRowContext(ctx, "SELECT count(*) FROM runs").Scan(&n); err != nil {
		return 0, fmt.Errorf("count runs: %w", err)
	}
	return n, nil
}

func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
