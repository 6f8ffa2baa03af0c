-- Matrix runs: the run's description in columns, its cells in two tables.
CREATE TABLE runs (
    id                     TEXT PRIMARY KEY,
    content_hash           TEXT NOT NULL UNIQUE,
    created_at             TEXT NOT NULL,
    title                  TEXT NOT NULL,
    submitter              TEXT,
    source_url             TEXT,
    model_name             TEXT NOT NULL,
    model_quantization     TEXT,
    hardware_type          TEXT,
    gpu                    TEXT NOT NULL,
    gpu_count              INTEGER,
    vram_gb                REAL,
    cpu                    TEXT,
    cpu_cores              INTEGER,
    ram_gb                 REAL,
    os                     TEXT,
    driver_version         TEXT,
    power_limit_w          REAL,
    pcie                   TEXT,
    engine_name            TEXT NOT NULL,
    engine_version         TEXT,
    engine_quantization    TEXT,
    engine_backend         TEXT,
    engine_repository      TEXT,
    engine_build           TEXT,
    benchmark_tool         TEXT,
    benchmark_tool_version TEXT,
    served_model           TEXT,
    revision               TEXT,
    decode_test            TEXT,
    prefill_mode           TEXT,
    seconds_per_measurement REAL,
    max_output_tokens      INTEGER,
    launch_command         TEXT,
    launch_notes           TEXT NOT NULL DEFAULT '[]',
    max_model_len          INTEGER,
    gpu_memory_utilization REAL,
    max_num_seqs           INTEGER,
    kv_cache_dtype         TEXT,
    attention_backend      TEXT,
    enable_prefix_caching  INTEGER,
    launch_flags           TEXT NOT NULL DEFAULT '{}',
    -- Headline figures, derived from the cells when the run is written.
    single_stream_tok_s          REAL,
    single_stream_context_tokens INTEGER,
    peak_total_tok_s             REAL,
    peak_context_tokens          INTEGER,
    peak_concurrency             INTEGER,
    max_context_tokens_with_output INTEGER
);

CREATE INDEX runs_by_created ON runs (created_at, id);
CREATE INDEX runs_by_gpu ON runs (gpu COLLATE NOCASE, id);
CREATE INDEX runs_by_model ON runs (model_name COLLATE NOCASE, id);
CREATE INDEX runs_by_peak ON runs (coalesce(peak_total_tok_s, -1), id);
CREATE INDEX runs_by_engine ON runs (engine_name COLLATE NOCASE, engine_version);

CREATE TABLE decode_cells (
    run_id              TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    context_tokens      INTEGER NOT NULL CHECK (context_tokens >= 0),
    concurrency         INTEGER NOT NULL CHECK (concurrency >= 1),
    status              TEXT NOT NULL CHECK (status IN ('valid', 'requests_queued', 'over_capacity')),
    total_tok_s         REAL,
    per_request_tok_s   REAL,
    ttft_ms             REAL,
    tbt_ms              REAL,
    avg_active_requests REAL,
    completed_requests  INTEGER,
    output_tokens       INTEGER,
    duration_s          REAL,
    PRIMARY KEY (run_id, context_tokens, concurrency)
) WITHOUT ROWID;

CREATE INDEX decode_cells_by_cell ON decode_cells (context_tokens, concurrency, status);

-- Leaderboards read one cell across runs in metric order and stop at a page.
CREATE INDEX decode_cells_rank_total ON decode_cells (context_tokens, concurrency, total_tok_s)
    WHERE status = 'valid' AND total_tok_s IS NOT NULL;
CREATE INDEX decode_cells_rank_per_request ON decode_cells (context_tokens, concurrency, per_request_tok_s)
    WHERE status = 'valid' AND per_request_tok_s IS NOT NULL;
CREATE INDEX decode_cells_rank_ttft ON decode_cells (context_tokens, concurrency, ttft_ms)
    WHERE status = 'valid' AND ttft_ms IS NOT NULL;
CREATE INDEX decode_cells_rank_tbt ON decode_cells (context_tokens, concurrency, tbt_ms)
    WHERE status = 'valid' AND tbt_ms IS NOT NULL;

CREATE TABLE prefill_cells (
    run_id         TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    context_tokens INTEGER NOT NULL CHECK (context_tokens >= 0),
    status         TEXT NOT NULL CHECK (status IN ('valid', 'requests_queued', 'over_capacity')),
    prompt_tok_s   REAL,
    ttft_ms        REAL,
    PRIMARY KEY (run_id, context_tokens)
) WITHOUT ROWID;
