package store

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"
)

// RunFilter narrows lists of runs. Text fields match case-insensitively:
// Model as a substring, the others whole. Zero fields match everything.
type RunFilter struct {
	GPU string
	// GPUNames, when set, matches runs on any of these GPU names (the
	// names a catalog GPU is stored under); GPU is then ignored.
	GPUNames      []string
	Model         string
	Quantization  string
	Engine        string
	EngineVersion string
	KVCacheDtype  string
	Submitter     string
	SubmittedBy   string // the API key's name, exactly
	VRAMGBMin     *float64
	VRAMGBMax     *float64
	// MethodClass, when set, matches runs of that method class only;
	// ExcludeFlagged leaves out runs a plausibility check flagged and
	// runs their corroboration disputes.
	MethodClass    string
	ExcludeFlagged bool
}

// manyModelRuns is where a model filter stops reading the matching runs by
// their model and instead walks the listing's order, testing each run.
const manyModelRuns = 2000

// modelRuns counts the runs whose model name contains f.Model, from the
// few distinct names. With no model filter it is -1.
func (s *Store) modelRuns(ctx context.Context, f RunFilter) (int, error) {
	if f.Model == "" {
		return -1, nil
	}
	var n int
	err := s.reader.QueryRowContext(ctx, "SELECT coalesce(sum(runs), 0) FROM model_names WHERE "+s.dialect.contains("name", "?"), f.Model).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("model filter: %w", err)
	}
	return n, nil
}

// where is the filter as SQL. modelRuns (from modelRuns) picks how a model
// filter reads: few matching runs through the model index, many by walking
// the listing's own order (the "+" keeps SQLite off the model index).
func (f RunFilter) where(d dialect, modelRuns int) ([]string, []any) {
	where := []string{"r.hidden_at IS NULL"} // hidden runs are in no list
	var args []any
	eq := func(col, v string) {
		if v != "" {
			where, args = append(where, d.eqNoCase(col)), append(args, v)
		}
	}
	if len(f.GPUNames) > 0 {
		where = append(where, d.inNoCase("r.gpu", len(f.GPUNames)))
		for _, n := range f.GPUNames {
			args = append(args, n)
		}
	} else {
		eq("r.gpu", f.GPU)
	}
	eq("r.engine_name", f.Engine)
	eq("r.kv_cache_dtype", f.KVCacheDtype)
	eq("r.submitter", f.Submitter)
	if f.SubmittedBy != "" {
		where, args = append(where, "r.submitted_by = ?"), append(args, f.SubmittedBy)
	}
	if f.Model != "" {
		col := "r.model_name"
		if modelRuns > manyModelRuns && f.GPU == "" && len(f.GPUNames) == 0 { // with a GPU, its index narrows first
			col = d.unindexed("r.model_name")
		}
		where = append(where, col+" IN (SELECT name FROM model_names WHERE "+d.contains("name", "?")+")")
		args = append(args, f.Model)
	}
	if f.Quantization != "" {
		where = append(where, "("+d.eqNoCase("r.model_quantization")+" OR "+d.eqNoCase("r.engine_quantization")+")")
		args = append(args, f.Quantization, f.Quantization)
	}
	if f.EngineVersion != "" {
		where, args = append(where, "r.engine_version = ?"), append(args, f.EngineVersion)
	}
	if f.VRAMGBMin != nil {
		where, args = append(where, "r.vram_gb >= ?"), append(args, *f.VRAMGBMin)
	}
	if f.VRAMGBMax != nil {
		where, args = append(where, "r.vram_gb <= ?"), append(args, *f.VRAMGBMax)
	}
	if f.MethodClass != "" {
		where, args = append(where, "r.method_class = ?"), append(args, f.MethodClass)
	}
	if f.ExcludeFlagged {
		where = append(where, "r.flagged = 0", "r.disputed = 0")
	}
	return where, args
}

// Sort orders for ListRuns.
const (
	SortCreatedDesc = "-created_at"
	SortCreated     = "created_at"
	SortGPU         = "gpu"
	SortModel       = "model"
	SortPeakDesc    = "-peak_total_tok_s"
)

// sortKey is the SQL expression a sort orders by (then by id, in the same
// direction).
func sortKey(d dialect, sort string) (expr string, desc bool, ok bool) {
	switch sort {
	case SortCreatedDesc:
		return "r.created_at", true, true
	case SortCreated:
		return "r.created_at", false, true
	case SortGPU:
		return d.noCase("r.gpu"), false, true
	case SortModel:
		return d.noCase("r.model_name"), false, true
	case SortPeakDesc:
		return "coalesce(r.peak_total_tok_s, -1)", true, true
	}
	return "", false, false
}

// key identifies the filter, so a cursor can tell it is used with the
// filter it came from.
func (f RunFilter) key() string {
	fl := func(p *float64) string {
		if p == nil {
			return "-"
		}
		return strconv.FormatFloat(*p, 'g', -1, 64)
	}
	return strings.Join([]string{strings.ToLower(f.GPU), strings.ToLower(f.Model), strings.ToLower(f.Quantization),
		strings.ToLower(f.Engine), f.EngineVersion, strings.ToLower(f.KVCacheDtype), strings.ToLower(f.Submitter),
		f.SubmittedBy, fl(f.VRAMGBMin), fl(f.VRAMGBMax), f.MethodClass, strconv.FormatBool(f.ExcludeFlagged)}, "\x00")
}

// queryKey is a short hash of everything that shapes a listing.
func queryKey(parts ...string) string {
	h := fnv.New64a()
	h.Write([]byte(strings.Join(parts, "\x01")))
	return strconv.FormatUint(h.Sum64(), 36)
}

// cursor is the position after the last row of a page. It is opaque to
// clients: base64url JSON and an HMAC over it, so a cursor the server did
// not issue (a forged rank, a wrapped position) is refused.
type cursor struct {
	// Query is the queryKey of the listing the cursor belongs to.
	Query string `json:"q"`
	Key   any    `json:"k"`
	ID    string `json:"i"`
	// Leaderboard only: rows before this one and the last row's rank.
	Pos  int `json:"p,omitempty"`
	Rank int `json:"r,omitempty"`
}

func (s *Store) encodeCursor(c cursor) string {
	b, _ := json.Marshal(c) // strings and numbers only
	payload := base64.RawURLEncoding.EncodeToString(b)
	return payload + "." + s.cursorMAC(payload)
}

func (s *Store) cursorMAC(payload string) string {
	m := hmac.New(sha256.New, s.cursorKey)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
}

// badCursor is a cursor refused, with its message's code (the English
// is the code's, in msg).
func badCursor(code, text string) error {
	return &FieldError{Field: "cursor", Message: text, Code: code, Params: map[string]string{}}
}

func (s *Store) decodeCursor(str, query string) (cursor, error) {
	var c cursor
	payload, mac, _ := strings.Cut(str, ".")
	if !hmac.Equal([]byte(mac), []byte(s.cursorMAC(payload))) {
		return cursor{}, badCursor("problem.cursor_not_issued", "not one this API issued; pass next_cursor back unchanged")
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.ID == "" || c.Key == nil {
		return cursor{}, badCursor("problem.cursor_not_issued", "not one this API issued; pass next_cursor back unchanged")
	}
	if c.Query != query {
		return cursor{}, badCursor("problem.cursor_other_listing", "belongs to a listing with other parameters (filters, sort, cell or metric); keep them the same across pages, or drop cursor to start over")
	}
	switch c.Key.(type) {
	case string, float64:
	default:
		return cursor{}, badCursor("problem.cursor_not_issued", "not one this API issued; pass next_cursor back unchanged")
	}
	return c, nil
}

// after is the WHERE fragment that starts a page after c. Ties on the key
// are broken by idCol in the key's direction, so one index serves both.
func after(expr, idCol string, desc bool, c cursor) (string, []any) {
	op := ">"
	if desc {
		op = "<"
	}
	return "(" + expr + " " + op + " ? OR (" + expr + " = ? AND " + idCol + " " + op + " ?))", []any{c.Key, c.Key, c.ID}
}

const summaryColumns = `r.id, r.title, r.model_name, r.gpu, r.vram_gb, r.engine_name, r.engine_version,
	coalesce(r.model_quantization, r.engine_quantization), r.submitter, r.submitted_by, r.created_at,
	r.single_stream_tok_s, r.single_stream_context_tokens, r.peak_total_tok_s, r.peak_context_tokens, r.peak_concurrency,
	r.max_context_tokens_with_output, r.method_class, r.flagged,
	r.source_url, r.publisher, r.license, r.retrieved_at, r.corroboration_status`

// summaryRow receives summaryColumns; finish turns it into a RunSummary.
type summaryRow struct {
	s                            RunSummary
	version, quant, submitter    *string
	submittedBy                  *string
	created                      string
	peakTok                      *float64
	peakContext, peakConcurrency *int
	flagged                      int
	sourceURL, publisher         *string
	license, retrieved           *string
}

func (r *summaryRow) dest() []any {
	s := &r.s
	return []any{&s.ID, &s.Title, &s.ModelName, &s.GPU, &s.VRAMGB, &s.EngineName, &r.version,
		&r.quant, &r.submitter, &r.submittedBy, &r.created,
		&s.SingleStreamTokS, &s.SingleStreamContextTokens, &r.peakTok, &r.peakContext, &r.peakConcurrency,
		&s.MaxContextTokensWithOutput, &s.MethodClass, &r.flagged,
		&r.sourceURL, &r.publisher, &r.license, &r.retrieved, &s.Corroboration}
}

func (r *summaryRow) finish() (RunSummary, error) {
	s := r.s
	s.EngineVersion, s.Quantization, s.Submitter, s.SubmittedBy = deref(r.version), deref(r.quant), deref(r.submitter), deref(r.submittedBy)
	s.SourceURL, s.Publisher, s.License, s.RetrievedAt = deref(r.sourceURL), deref(r.publisher), deref(r.license), deref(r.retrieved)
	t, err := parseTime(r.created)
	if err != nil {
		return RunSummary{}, fmt.Errorf("run %s created_at: %w", s.ID, err)
	}
	s.CreatedAt, s.Flagged = t, r.flagged == 1
	if r.peakTok != nil && r.peakContext != nil && r.peakConcurrency != nil {
		s.Peak = &PeakCell{TotalTokS: *r.peakTok, ContextTokens: *r.peakContext, Concurrency: *r.peakConcurrency}
	}
	return s, nil
}

// ListRuns returns up to limit summaries matching f in the given sort order,
// starting after pageCursor (empty for the first page), and the cursor of
// the next page ("" on the last).
func (s *Store) ListRuns(ctx context.Context, f RunFilter, sort string, limit int, pageCursor string) ([]RunSummary, string, error) {
	expr, desc, ok := sortKey(s.dialect, sort)
	if !ok {
		return nil, "", &FieldError{Field: "sort", Message: fmt.Sprintf("unknown sort %q", sort)}
	}
	if limit < 1 {
		return nil, "", &FieldError{Field: "limit", Message: "must be at least 1"}
	}
	n, err := s.modelRuns(ctx, f)
	if err != nil || n == 0 {
		return nil, "", err
	}
	where, args := f.where(s.dialect, n)
	qk := queryKey("runs", sort, f.key())
	if pageCursor != "" {
		c, err := s.decodeCursor(pageCursor, qk)
		if err != nil {
			return nil, "", err
		}
		w, a := after(expr, "r.id", desc, c)
		where, args = append(where, w), append(args, a...)
	}
	dir := "ASC"
	if desc {
		dir = "DESC"
	}
	q := "SELECT " + summaryColumns + ", " + expr + " FROM runs r"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY " + expr + " " + dir + ", r.id " + dir + " LIMIT ?"
	args = append(args, limit+1)
	rows, err := s.reader.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	var (
		out  []RunSummary
		keys []any
	)
	for rows.Next() {
		var (
			row summaryRow
			key any
		)
		if err := rows.Scan(append(row.dest(), &key)...); err != nil {
			return nil, "", fmt.Errorf("list runs: %w", err)
		}
		sum, err := row.finish()
		if err != nil {
			return nil, "", err
		}
		out, keys = append(out, sum), append(keys, normalizeKey(key))
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("list runs: %w", err)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = s.encodeCursor(cursor{Query: qk, Key: keys[limit-1], ID: out[limit-1].ID})
	}
	return out, next, nil
}

// normalizeKey turns a scanned sort key into a JSON-stable value.
func normalizeKey(k any) any {
	switch v := k.(type) {
	case int64:
		return float64(v)
	case []byte:
		return string(v)
	}
	return k
}

// Leaderboard metrics.
const (
	MetricTotalTokS      = "total_tok_s"
	MetricPerRequestTokS = "per_request_tok_s"
	MetricTTFTMs         = "ttft_ms"
	MetricTBTMs          = "tbt_ms"
)

// LeaderboardQuery selects the cell to rank by and the runs to rank.
type LeaderboardQuery struct {
	ContextTokens int
	Concurrency   int
	Metric        string
	Filter        RunFilter
	Limit         int
	Cursor        string
}

// LeaderboardEntry is one ranked run.
type LeaderboardEntry struct {
	Rank  int
	Value float64
	Run   RunSummary
	Cell  DecodeCell
}

// Leaderboard ranks runs by the measured value of one valid cell: tok/s
// descending, latencies ascending. Ties share a rank.
func (s *Store) Leaderboard(ctx context.Context, lq LeaderboardQuery) ([]LeaderboardEntry, string, error) {
	var desc bool
	switch lq.Metric {
	case MetricTotalTokS, MetricPerRequestTokS:
		desc = true
	case MetricTTFTMs, MetricTBTMs:
	default:
		return nil, "", &FieldError{Field: "metric", Message: fmt.Sprintf("unknown metric %q", lq.Metric)}
	}
	if lq.Limit < 1 {
		return nil, "", &FieldError{Field: "limit", Message: "must be at least 1"}
	}
	expr := "d." + lq.Metric // one of the four constants above
	n, err := s.modelRuns(ctx, lq.Filter)
	if err != nil || n == 0 {
		return nil, "", err
	}
	where, args := lq.Filter.where(s.dialect, n)
	where = append(where, "d.context_tokens = ?", "d.concurrency = ?", "d.status = 'valid'", expr+" IS NOT NULL")
	args = append(args, lq.ContextTokens, lq.Concurrency)
	var c cursor
	qk := queryKey("leaderboard", lq.Metric, strconv.Itoa(lq.ContextTokens), strconv.Itoa(lq.Concurrency), lq.Filter.key())
	if lq.Cursor != "" {
		var err error
		if c, err = s.decodeCursor(lq.Cursor, qk); err != nil {
			return nil, "", err
		}
		if _, ok := c.Key.(float64); !ok {
			return nil, "", badCursor("problem.cursor_not_issued", "not one this API issued; pass next_cursor back unchanged")
		}
		w, a := after(expr, "d.run_id", desc, c)
		where, args = append(where, w), append(args, a...)
	}
	dir := "ASC"
	if desc {
		dir = "DESC"
	}
	// Rank first on narrow columns (covered by the ranking and filter
	// indexes, so SQLite can pick either order cheaply), then read the page's
	// runs and cells in full.
	q := "WITH ranked AS (SELECT d.run_id AS run_id, " + expr + " AS v FROM decode_cells d JOIN runs r ON r.id = d.run_id WHERE " +
		strings.Join(where, " AND ") + " ORDER BY v " + dir + ", d.run_id " + dir + " LIMIT ?)" +
		" SELECT " + summaryColumns + ", d.context_tokens, d.concurrency, d.status, d.total_tok_s, d.per_request_tok_s, d.ttft_ms, d.tbt_ms," +
		" d.avg_active_requests, d.completed_requests, d.output_tokens, d.duration_s, k.v" +
		" FROM ranked k JOIN runs r ON r.id = k.run_id JOIN decode_cells d ON d.run_id = k.run_id AND d.context_tokens = ? AND d.concurrency = ?" +
		" ORDER BY k.v " + dir + ", k.run_id " + dir
	args = append(args, lq.Limit+1, lq.ContextTokens, lq.Concurrency)
	rows, err := s.reader.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", fmt.Errorf("leaderboard: %w", err)
	}
	defer rows.Close()
	var out []LeaderboardEntry
	pos, rank := c.Pos, c.Rank
	prev, hasPrev := 0.0, false
	if k, ok := c.Key.(float64); ok {
		prev, hasPrev = k, true
	}
	for rows.Next() {
		var (
			e   LeaderboardEntry
			row summaryRow
		)
		d := &e.Cell
		dest := append(row.dest(), &d.ContextTokens, &d.Concurrency, &d.Status, &d.TotalTokS, &d.PerRequestTokS, &d.TTFTMs, &d.TBTMs,
			&d.AvgActiveRequests, &d.CompletedRequests, &d.OutputTokens, &d.DurationS, &e.Value)
		if err := rows.Scan(dest...); err != nil {
			return nil, "", fmt.Errorf("leaderboard: %w", err)
		}
		if e.Run, err = row.finish(); err != nil {
			return nil, "", err
		}
		pos++
		if !hasPrev || e.Value != prev {
			rank = pos
		}
		prev, hasPrev = e.Value, true
		e.Rank = rank
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("leaderboard: %w", err)
	}
	next := ""
	if len(out) > lq.Limit {
		out = out[:lq.Limit]
		last := out[lq.Limit-1]
		next = s.encodeCursor(cursor{Query: qk, Key: last.Value, ID: last.Run.ID, Pos: c.Pos + lq.Limit, Rank: last.Rank})
	}
	return out, next, nil
}

// GPUCount is a catalog entry: a GPU, the VRAM sizes its runs report and
// how many runs it has.
type GPUCount struct {
	GPU    string
	VRAMGB []float64
	// VRAMRuns counts the runs of each VRAMGB size; the rest of RunCount
	// state no VRAM.
	VRAMRuns []int
	RunCount int
}

// GPUs lists every GPU that has a run, by name.
func (s *Store) GPUs(ctx context.Context) ([]GPUCount, error) {
	rows, err := s.reader.QueryContext(ctx, "SELECT gpu, vram_gb, count(*) FROM runs WHERE hidden_at IS NULL GROUP BY gpu, vram_gb ORDER BY gpu, vram_gb")
	if err != nil {
		return nil, fmt.Errorf("gpus: %w", err)
	}
	defer rows.Close()
	var out []GPUCount
	for rows.Next() {
		var (
			gpu  string
			vram *float64
			n    int
		)
		if err := rows.Scan(&gpu, &vram, &n); err != nil {
			return nil, fmt.Errorf("gpus: %w", err)
		}
		if len(out) == 0 || out[len(out)-1].GPU != gpu {
			out = append(out, GPUCount{GPU: gpu, VRAMGB: []float64{}})
		}
		last := &out[len(out)-1]
		last.RunCount += n
		if vram != nil {
			last.VRAMGB = append(last.VRAMGB, *vram)
			last.VRAMRuns = append(last.VRAMRuns, n)
		}
	}
	return out, rows.Err()
}

// ModelCount is a catalog entry: a model, its quantizations and how many
// runs it has.
type ModelCount struct {
	Model         string
	Quantizations []string
	RunCount      int
}

// Models lists every model that has a run, by name.
func (s *Store) Models(ctx context.Context) ([]ModelCount, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT model_name, coalesce(model_quantization, engine_quantization) AS q, count(*)
		FROM runs WHERE hidden_at IS NULL GROUP BY model_name, q ORDER BY model_name, q`)
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	defer rows.Close()
	var out []ModelCount
	for rows.Next() {
		var (
			model string
			q     *string
			n     int
		)
		if err := rows.Scan(&model, &q, &n); err != nil {
			return nil, fmt.Errorf("models: %w", err)
		}
		if len(out) == 0 || out[len(out)-1].Model != model {
			out = append(out, ModelCount{Model: model, Quantizations: []string{}})
		}
		last := &out[len(out)-1]
		last.RunCount += n
		if q != nil {
			last.Quantizations = append(last.Quantizations, *q)
		}
	}
	return out, rows.Err()
}

// EngineCount is a catalog entry: an engine version and how many runs it
// has.
type EngineCount struct {
	Engine   string
	Version  string
	RunCount int
}

// Engines lists every engine and version that has a run.
func (s *Store) Engines(ctx context.Context) ([]EngineCount, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT engine_name, engine_version, count(*) FROM runs WHERE hidden_at IS NULL
		GROUP BY engine_name, engine_version`)
	if err != nil {
		return nil, fmt.Errorf("engines: %w", err)
	}
	defer rows.Close()
	// Engines are named as runs spell them ("vLLM", "vllm") and filtered
	// ignoring case: one engine, named by its first spelling in byte order
	// (merged here, not by a collation, which differs between backends).
	type key struct{ engine, version string }
	at := map[key]int{}
	var out []EngineCount
	for rows.Next() {
		var (
			e EngineCount
			v *string
		)
		if err := rows.Scan(&e.Engine, &v, &e.RunCount); err != nil {
			return nil, fmt.Errorf("engines: %w", err)
		}
		e.Version = deref(v)
		k := key{strings.ToLower(e.Engine), e.Version}
		if i, ok := at[k]; ok {
			out[i].RunCount += e.RunCount
			out[i].Engine = min(out[i].Engine, e.Engine)
			continue
		}
		at[k] = len(out)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("engines: %w", err)
	}
	slices.SortFunc(out, func(a, b EngineCount) int {
		return cmp.Or(cmp.Compare(strings.ToLower(a.Engine), strings.ToLower(b.Engine)), cmp.Compare(a.Version, b.Version))
	})
	return out, nil
}

// RunConfig is what decides whether runs can share a speed surface: the
// model, the GPU's memory and the engine configuration.
type RunConfig struct {
	ID                   string
	Title                string
	ModelName            string
	GPU                  string
	GPUCount             *int
	VRAMGB               *float64
	EngineName           string
	EngineVersion        string
	Quantization         string
	KVCacheDtype         string
	AttentionBackend     string
	MaxModelLen          *int
	GPUMemoryUtilization *float64
	MethodClass          string
	Flagged              bool
	// Corroboration is the run's corroboration status.
	Corroboration string
	// PowerLimitW is the launch's power limit per GPU (nil: not published).
	PowerLimitW *float64
	// AvgPowerW is the run's measured average power per GPU (nil: not
	// measured).
	AvgPowerW *float64
	// CreatedAt is when the run was stored.
	CreatedAt time.Time
}

const runConfigColumns = `r.id, r.title, r.model_name, r.gpu, r.gpu_count, r.vram_gb, r.engine_name, r.engine_version,
	coalesce(r.model_quantization, r.engine_quantization), r.kv_cache_dtype, r.attention_backend,
	r.max_model_len, r.gpu_memory_utilization, r.method_class, r.flagged, r.power_limit_w, r.avg_power_w, r.created_at, r.corroboration_status`

func scanRunConfig(row interface{ Scan(...any) error }) (RunConfig, error) {
	var (
		c                           RunConfig
		ver, quant, kv, attnBackend *string
		flagged                     int
		created                     string
	)
	if err := row.Scan(&c.ID, &c.Title, &c.ModelName, &c.GPU, &c.GPUCount, &c.VRAMGB, &c.EngineName, &ver, &quant, &kv, &attnBackend,
		&c.MaxModelLen, &c.GPUMemoryUtilization, &c.MethodClass, &flagged, &c.PowerLimitW, &c.AvgPowerW, &created, &c.Corroboration); err != nil {
		return RunConfig{}, err
	}
	var err error
	if c.CreatedAt, err = parseTime(created); err != nil {
		return RunConfig{}, err
	}
	c.Flagged = flagged == 1
	c.EngineVersion, c.Quantization, c.KVCacheDtype, c.AttentionBackend = deref(ver), deref(quant), deref(kv), deref(attnBackend)
	return c, nil
}

// RunConfigOf returns the configuration of run id: one primary-key lookup.
func (s *Store) RunConfigOf(ctx context.Context, id string) (RunConfig, error) {
	c, err := scanRunConfig(s.reader.QueryRowContext(ctx, "SELECT "+runConfigColumns+" FROM runs r WHERE r.id = ? AND r.hidden_at IS NULL", id))
	if errors.Is(err, sql.ErrNoRows) {
		if err := visible(ctx, s.reader, id); err != nil {
			return RunConfig{}, err
		}
		return RunConfig{}, runNotFound(id)
	}
	if err != nil {
		return RunConfig{}, fmt.Errorf("run %s: %w", id, err)
	}
	return c, nil
}

// RunConfigs returns the configurations of up to limit runs matching f,
// newest first, and whether more matched.
func (s *Store) RunConfigs(ctx context.Context, f RunFilter, limit int) ([]RunConfig, bool, error) {
	return s.runConfigs(ctx, f, limit, false)
}

// NewestRunPerModel returns the configuration of the newest run of each
// model (by its stored name) among the newest perModelScan runs matching f,
// up to limit models, newest first, and whether more models matched: a
// choice among models sees every model of those runs, however many runs
// the newest of them has.
func (s *Store) NewestRunPerModel(ctx context.Context, f RunFilter, limit int) ([]RunConfig, bool, error) {
	return s.runConfigs(ctx, f, limit, true)
}

// perModelScan bounds the runs NewestRunPerModel reads, newest first (by
// the index on GPU and creation): a GPU with 12,000 runs was read whole in
// 160–190 ms.
const perModelScan = 2000

// CountRunsByClass returns how many stored runs f matches in each method
// class, f's own class aside: one pass over the runs, not one per class.
func (s *Store) CountRunsByClass(ctx context.Context, f RunFilter) (map[string]int, error) {
	f.MethodClass = ""
	n, err := s.modelRuns(ctx, f)
	if err != nil || n == 0 {
		return map[string]int{}, err
	}
	where, args := f.where(s.dialect, n)
	rows, err := s.reader.QueryContext(ctx, "SELECT r.method_class, count(*) FROM runs r WHERE "+strings.Join(where, " AND ")+" GROUP BY r.method_class", args...)
	if err != nil {
		return nil, fmt.Errorf("count runs by class: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var class string
		var count int
		if err := rows.Scan(&class, &count); err != nil {
			return nil, fmt.Errorf("count runs by class: %w", err)
		}
		out[class] = count
	}
	return out, rows.Err()
}

// perModelColumns are the columns runConfigColumns and the per-model
// choice read, all a scan of perModelScan runs carries.
const perModelColumns = `r.id, r.title, r.model_name, r.gpu, r.gpu_count, r.vram_gb, r.engine_name, r.engine_version,
	r.model_quantization, r.engine_quantization, r.kv_cache_dtype, r.attention_backend, r.max_model_len,
	r.gpu_memory_utilization, r.method_class, r.flagged, r.power_limit_w, r.avg_power_w, r.created_at, r.corroboration_status`

// CountMatchingRuns returns how many stored runs f matches.
func (s *Store) CountMatchingRuns(ctx context.Context, f RunFilter) (int, error) {
	n, err := s.modelRuns(ctx, f)
	if err != nil || n == 0 {
		return 0, err
	}
	where, args := f.where(s.dialect, n)
	var count int
	if err := s.reader.QueryRowContext(ctx, "SELECT count(*) FROM runs r WHERE "+strings.Join(where, " AND "), args...).Scan(&count); err != nil {
		return 0, fmt.Errorf("count matching runs: %w", err)
	}
	return count, nil
}

func (s *Store) runConfigs(ctx context.Context, f RunFilter, limit int, perModel bool) ([]RunConfig, bool, error) {
	n, err := s.modelRuns(ctx, f)
	if err != nil || n == 0 {
		return nil, false, err
	}
	where, args := f.where(s.dialect, n)
	from := "runs r"
	if len(where) > 0 {
		from += " WHERE " + strings.Join(where, " AND ")
	}
	if perModel {
		recent := "(SELECT " + perModelColumns + " FROM " + from + " ORDER BY r.created_at DESC, r.id DESC LIMIT " + strconv.Itoa(perModelScan) + ") r"
		from = "(SELECT r.*, row_number() OVER (PARTITION BY r.model_name ORDER BY r.created_at DESC, r.id DESC) AS newest FROM " + recent + ") r WHERE r.newest = 1"
	}
	q := "SELECT " + runConfigColumns + " FROM " + from + " ORDER BY r.created_at DESC, r.id DESC LIMIT ?"
	rows, err := s.reader.QueryContext(ctx, q, append(args, limit+1)...)
	if err != nil {
		return nil, false, fmt.Errorf("run configs: %w", err)
	}
	defer rows.Close()
	var out []RunConfig
	for rows.Next() {
		c, err := scanRunConfig(rows)
		if err != nil {
			return nil, false, fmt.Errorf("run configs: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("run configs: %w", err)
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}
