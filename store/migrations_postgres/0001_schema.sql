-- PostgreSQL 15 schema: the final state SQLite reaches after
-- store/migrations/0001_runs.sql … 0006_model_names.sql, in one migration.
-- Keep the two in step: a new SQLite migration needs a PostgreSQL one here.
--
-- It is run as one multi-statement string, in one transaction, with
-- search_path set to the target schema: no schema is named below, and the
-- trigger functions pin the search_path they were created under (SET
-- search_path FROM CURRENT), so a write through another search_path still
-- bumps this schema's counter and names.
--
-- Translation from SQLite:
--   * Times stay TEXT in the fixed-width format the Go code writes
--     (2026-11-30T22:12:11.000000Z): text order is time order.
--   * REAL -> double precision; INTEGER -> bigint, or integer where the
--     value is small (counts of GPUs and cores, 0/1 flags, a status).
--   * Booleans stay integers 0/1, as in SQLite (api_keys.admin,
--     runs.enable_prefix_caching): the Go code must bind 0/1 (pgx does not
--     encode a Go bool into an integer column) and scans the integer back.
--   * BLOB -> bytea. WITHOUT ROWID has no equivalent and is dropped.
--   * COLLATE NOCASE in an index becomes an expression index on lower(col):
--     the queries compare lower(col) = lower($n) and sort by lower(col).
--     Ordering follows the database's collation; under C or C.UTF-8 it is
--     SQLite's byte order.
--   * SQLite triggers are FOR EACH ROW; so are these, as PL/pgSQL trigger
--     functions. A TRUNCATE trigger (SQLite has no TRUNCATE) keeps the same
--     two invariants for TRUNCATE runs.

-- Matrix runs: the run's description in columns, its cells in two tables.
CREATE TABLE runs (
    id                     text PRIMARY KEY,
    content_hash           text NOT NULL UNIQUE,
    created_at             text NOT NULL,
    title                  text NOT NULL,
    submitter              text,
    source_url             text,
    model_name             text NOT NULL,
    model_quantization     text,
    hardware_type          text,
    gpu                    text NOT NULL,
    gpu_count              integer,
    vram_gb                double precision,
    cpu                    text,
    cpu_cores              integer,
    ram_gb                 double precision,
    os                     text,
    driver_version         text,
    power_limit_w          double precision,
    pcie                   text,
    engine_name            text NOT NULL,
    engine_version         text,
    engine_quantization    text,
    engine_backend         text,
    engine_repository      text,
    engine_build           text,
    benchmark_tool         text,
    benchmark_tool_version text,
    served_model           text,
    revision               text,
    decode_test            text,
    prefill_mode           text,
    seconds_per_measurement double precision,
    max_output_tokens      bigint,
    launch_command         text,
    launch_notes           text NOT NULL DEFAULT '[]',  -- JSON array, as text
    max_model_len          bigint,
    gpu_memory_utilization double precision,
    max_num_seqs           bigint,
    kv_cache_dtype         text,
    attention_backend      text,
    enable_prefix_caching  integer,                     -- 0/1, NULL when unknown (as in SQLite, no CHECK)
    launch_flags           text NOT NULL DEFAULT '{}',  -- JSON object, as text
    -- Headline figures, derived from the cells when the run is written.
    single_stream_tok_s          double precision,
    single_stream_context_tokens bigint,
    peak_total_tok_s             double precision,
    peak_context_tokens          bigint,
    peak_concurrency             bigint,
    max_context_tokens_with_output bigint,
    -- Submissions over HTTP (SQLite 0002): the API key's name, and the
    -- owner's notes.
    submitted_by           text,
    notes                  text
);

-- Listing sorts, each walked in order so a page stops after its last row
-- (the cursor condition compares the same expression, then id).
-- sort=created_at / -created_at, and RunConfigs (ORDER BY created_at DESC, id DESC).
CREATE INDEX runs_by_created ON runs (created_at, id);
-- gpu filter lower(r.gpu) = lower($n), GPUNames lower(r.gpu) IN (lower($n), …),
-- and sort=gpu (ORDER BY lower(r.gpu), r.id).
CREATE INDEX runs_by_gpu ON runs (lower(gpu), id);
-- sort=model (ORDER BY lower(r.model_name), r.id).
CREATE INDEX runs_by_model ON runs (lower(model_name), id);
-- sort=-peak_total_tok_s (ORDER BY coalesce(r.peak_total_tok_s, -1) DESC, r.id DESC).
CREATE INDEX runs_by_peak ON runs (coalesce(peak_total_tok_s, -1), id);
-- engine filter lower(r.engine_name) = lower($n), with r.engine_version = $m.
CREATE INDEX runs_by_engine ON runs (lower(engine_name), engine_version);
-- submitted_by filter (exact: r.submitted_by = $n).
CREATE INDEX runs_by_submitted_by ON runs (submitted_by) WHERE submitted_by IS NOT NULL;

-- Reads that must stay fast at 100,000 runs (SQLite 0005): the catalogs
-- read the runs in group order from these instead of sorting them.
-- GPUs(): GROUP BY gpu, vram_gb ORDER BY gpu, vram_gb.
CREATE INDEX runs_catalog_gpu ON runs (gpu, vram_gb);
-- Models(): GROUP BY model_name, coalesce(model_quantization, engine_quantization).
CREATE INDEX runs_catalog_model ON runs (model_name, coalesce(model_quantization, engine_quantization));
-- Engines(): GROUP BY engine_name, engine_version.
CREATE INDEX runs_catalog_engine ON runs (engine_name, engine_version);
-- The busiest filter (a GPU) walked in the order of each sort:
-- gpu filter with sort=-peak_total_tok_s.
CREATE INDEX runs_by_gpu_peak ON runs (lower(gpu), coalesce(peak_total_tok_s, -1), id);
-- gpu filter with sort=created_at / -created_at, and RunConfigs with a gpu filter.
CREATE INDEX runs_by_gpu_created ON runs (lower(gpu), created_at, id);
-- (SQLite 0006) model filter r.model_name IN (SELECT name FROM model_names …):
-- exact names, so the column itself, in created_at order.
CREATE INDEX runs_by_model_created ON runs (model_name, created_at, id);
-- gpu filter with sort=model (ORDER BY lower(r.model_name), r.id).
CREATE INDEX runs_by_gpu_model ON runs (lower(gpu), lower(model_name), id);

CREATE TABLE decode_cells (
    run_id              text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    context_tokens      bigint NOT NULL CHECK (context_tokens >= 0),
    concurrency         bigint NOT NULL CHECK (concurrency >= 1),
    status              text NOT NULL CHECK (status IN ('valid', 'requests_queued', 'over_capacity')),
    total_tok_s         double precision,
    per_request_tok_s   double precision,
    ttft_ms             double precision,
    tbt_ms              double precision,
    avg_active_requests double precision,
    completed_requests  bigint,
    output_tokens       bigint,
    duration_s          double precision,
    PRIMARY KEY (run_id, context_tokens, concurrency)  -- also serves ON DELETE CASCADE
);

-- CellAxes: min(context_tokens) … WHERE context_tokens > $1 AND status = 'valid',
-- and min(concurrency) … WHERE context_tokens = $1 AND concurrency > $2 AND status = 'valid'.
CREATE INDEX decode_cells_by_cell ON decode_cells (context_tokens, concurrency, status);

-- Leaderboards read one cell across runs in metric order and stop at a page:
-- WHERE d.context_tokens = $n AND d.concurrency = $m AND d.status = 'valid'
-- AND d.<metric> IS NOT NULL ORDER BY d.<metric>, d.run_id (either direction,
-- with the cursor condition on the same two). SQLite's WITHOUT ROWID table
-- appends the primary key to these indexes implicitly; here run_id is
-- spelled out, so the tie-break order comes from the index too.
CREATE INDEX decode_cells_rank_total ON decode_cells (context_tokens, concurrency, total_tok_s, run_id)
    WHERE status = 'valid' AND total_tok_s IS NOT NULL;
CREATE INDEX decode_cells_rank_per_request ON decode_cells (context_tokens, concurrency, per_request_tok_s, run_id)
    WHERE status = 'valid' AND per_request_tok_s IS NOT NULL;
CREATE INDEX decode_cells_rank_ttft ON decode_cells (context_tokens, concurrency, ttft_ms, run_id)
    WHERE status = 'valid' AND ttft_ms IS NOT NULL;
CREATE INDEX decode_cells_rank_tbt ON decode_cells (context_tokens, concurrency, tbt_ms, run_id)
    WHERE status = 'valid' AND tbt_ms IS NOT NULL;

CREATE TABLE prefill_cells (
    run_id         text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    context_tokens bigint NOT NULL CHECK (context_tokens >= 0),
    status         text NOT NULL CHECK (status IN ('valid', 'requests_queued', 'over_capacity')),
    prompt_tok_s   double precision,
    ttft_ms        double precision,
    PRIMARY KEY (run_id, context_tokens)
);

-- A key is "mxd_<id>_<secret>": id finds the row, the secret's SHA-256 is
-- compared in constant time. Names are never reused, so submitted_by always
-- names one key.
CREATE TABLE api_keys (
    id           text PRIMARY KEY,
    name         text NOT NULL UNIQUE,
    secret_hash  bytea NOT NULL,
    admin        integer NOT NULL DEFAULT 0 CHECK (admin IN (0, 1)),
    created_at   text NOT NULL,
    last_used_at text,
    revoked_at   text
);

-- One record per (key, Idempotency-Key): the request it answered and the
-- run it created or found, so a retry answers the same. run_id has no
-- foreign key (as in SQLite): a replay of a deleted run says so.
CREATE TABLE idempotency_keys (
    key_name        text NOT NULL,
    idempotency_key text NOT NULL,
    request_hash    text NOT NULL,
    run_id          text NOT NULL,
    status          integer NOT NULL,  -- 1 when the request created the run, else 0
    created_at      text NOT NULL,
    PRIMARY KEY (key_name, idempotency_key)
);

-- Lookups WHERE … AND created_at >= $n, and the purge of expired records
-- (WHERE created_at < $n LIMIT 100).
CREATE INDEX idempotency_keys_by_created ON idempotency_keys (created_at);

-- Server secrets shared by every process on the database: the key that
-- signs pagination cursors, made on first open.
CREATE TABLE secrets (
    name  text PRIMARY KEY,
    value bytea NOT NULL
);

-- A counter that every change to the stored runs bumps, in the same
-- transaction: caches and ETags key on it, so no answer outlives the data
-- it was computed from, whichever process wrote. The row lock taken by the
-- bump is held to commit, so concurrent writers of runs serialize on it,
-- as they do on SQLite's one writer.
CREATE TABLE data_version (
    id      integer PRIMARY KEY CHECK (id = 1),
    version bigint NOT NULL
);
INSERT INTO data_version (id, version) VALUES (1, 1);

CREATE FUNCTION runs_bump_data_version() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    UPDATE data_version SET version = version + 1;
    RETURN NULL;  -- AFTER trigger: the result is ignored
END;
$$;

-- One bump per row inserted, updated or deleted, as SQLite's row triggers.
CREATE TRIGGER runs_inserted AFTER INSERT ON runs
    FOR EACH ROW EXECUTE FUNCTION runs_bump_data_version();
CREATE TRIGGER runs_updated AFTER UPDATE ON runs
    FOR EACH ROW EXECUTE FUNCTION runs_bump_data_version();
CREATE TRIGGER runs_deleted AFTER DELETE ON runs
    FOR EACH ROW EXECUTE FUNCTION runs_bump_data_version();

-- The distinct model names, kept by triggers: a model substring filter
-- matches these few names, then reads the runs by index, instead of
-- testing the name of every run.
CREATE TABLE model_names (
    name text PRIMARY KEY,
    runs bigint NOT NULL
);

CREATE FUNCTION model_names_add() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    INSERT INTO model_names AS m (name, runs) VALUES (NEW.model_name, 1)
        ON CONFLICT (name) DO UPDATE SET runs = m.runs + 1;
    RETURN NULL;
END;
$$;

CREATE FUNCTION model_names_remove() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    UPDATE model_names SET runs = runs - 1 WHERE name = OLD.model_name;
    DELETE FROM model_names WHERE name = OLD.model_name AND runs <= 0;
    RETURN NULL;
END;
$$;

CREATE FUNCTION model_names_rename() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    UPDATE model_names SET runs = runs - 1 WHERE name = OLD.model_name;
    DELETE FROM model_names WHERE name = OLD.model_name AND runs <= 0;
    INSERT INTO model_names AS m (name, runs) VALUES (NEW.model_name, 1)
        ON CONFLICT (name) DO UPDATE SET runs = m.runs + 1;
    RETURN NULL;
END;
$$;

CREATE TRIGGER model_names_inserted AFTER INSERT ON runs
    FOR EACH ROW EXECUTE FUNCTION model_names_add();
CREATE TRIGGER model_names_deleted AFTER DELETE ON runs
    FOR EACH ROW EXECUTE FUNCTION model_names_remove();
-- SQLite fires UPDATE OF model_name whenever the column is SET, changed or
-- not; its net effect on an unchanged name is nil, so the WHEN skips it.
CREATE TRIGGER model_names_renamed AFTER UPDATE OF model_name ON runs
    FOR EACH ROW WHEN (OLD.model_name IS DISTINCT FROM NEW.model_name)
    EXECUTE FUNCTION model_names_rename();

-- TRUNCATE fires no row triggers: bump the version once and forget every
-- name, so both invariants hold for it too (PostgreSQL only).
CREATE FUNCTION runs_truncated() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    UPDATE data_version SET version = version + 1;
    DELETE FROM model_names;
    RETURN NULL;
END;
$$;

CREATE TRIGGER runs_truncated AFTER TRUNCATE ON runs
    FOR EACH STATEMENT EXECUTE FUNCTION runs_truncated();
