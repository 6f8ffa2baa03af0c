-- Trust: the exact bytes each run came from, the signing keys submissions
-- may be signed with, flags, hidden runs, and the log of every change to a
-- run.

-- Source bytes, content-addressed: identical bytes are kept once, however
-- many runs came from them.
CREATE TABLE sources (
    sha256 TEXT PRIMARY KEY,  -- lower-case hex SHA-256 of data
    size   INTEGER NOT NULL,
    data   BLOB NOT NULL
) WITHOUT ROWID;

-- A run stored before sources were kept has no source_sha256.
ALTER TABLE runs ADD COLUMN source_sha256 TEXT;
ALTER TABLE runs ADD COLUMN source_media_type TEXT;
ALTER TABLE runs ADD COLUMN source_format TEXT;
ALTER TABLE runs ADD COLUMN signed_by TEXT;      -- a signing_keys fingerprint
ALTER TABLE runs ADD COLUMN signature TEXT;      -- base64 Ed25519 signature over the source bytes
ALTER TABLE runs ADD COLUMN hidden_at TEXT;
ALTER TABLE runs ADD COLUMN hidden_by TEXT;
ALTER TABLE runs ADD COLUMN hidden_reason TEXT;

-- A deleted run's source goes with it unless another run came from the
-- same bytes.
CREATE INDEX runs_by_source ON runs (source_sha256) WHERE source_sha256 IS NOT NULL;

-- The catalogs count visible runs only, still from covering indexes.
DROP INDEX runs_catalog_gpu;
DROP INDEX runs_catalog_model;
DROP INDEX runs_catalog_engine;
CREATE INDEX runs_catalog_gpu ON runs (gpu, vram_gb) WHERE hidden_at IS NULL;
CREATE INDEX runs_catalog_model ON runs (model_name, coalesce(model_quantization, engine_quantization)) WHERE hidden_at IS NULL;
CREATE INDEX runs_catalog_engine ON runs (engine_name, engine_version) WHERE hidden_at IS NULL;

-- A submitter's profile and the submitter filter, newest first.
CREATE INDEX runs_by_submitter ON runs (submitter COLLATE NOCASE, created_at, id) WHERE submitter IS NOT NULL;

-- Ed25519 public keys an API key registered; fingerprint is the lower-case
-- hex SHA-256 of the 32 raw key bytes.
CREATE TABLE signing_keys (
    fingerprint TEXT PRIMARY KEY,
    key_name    TEXT NOT NULL,
    public_key  BLOB NOT NULL,
    created_at  TEXT NOT NULL
) WITHOUT ROWID;

CREATE INDEX signing_keys_by_key ON signing_keys (key_name, created_at);

-- Flags readers raise on a run; one open flag per key and run.
CREATE TABLE run_flags (
    id          INTEGER PRIMARY KEY,
    run_id      TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    key_name    TEXT NOT NULL,
    reason      TEXT NOT NULL CHECK (reason IN ('implausible', 'wrong_hardware', 'duplicate', 'spam', 'other')),
    text        TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    resolved_at TEXT,
    resolved_by TEXT,
    resolution  TEXT
);

CREATE UNIQUE INDEX run_flags_open ON run_flags (run_id, key_name) WHERE resolved_at IS NULL;
CREATE INDEX run_flags_by_run ON run_flags (run_id, id);

-- Every change to a run, written in the change's transaction. No foreign
-- key: a deleted run's history stays readable.
CREATE TABLE run_events (
    id       INTEGER PRIMARY KEY,
    run_id   TEXT NOT NULL,
    at       TEXT NOT NULL,
    key_name TEXT,             -- NULL for the server itself (seeds, matrixd import)
    action   TEXT NOT NULL CHECK (action IN ('create', 'update', 'flag', 'resolve', 'hide', 'restore', 'delete', 'source')),
    detail   TEXT NOT NULL     -- a small JSON object of the change
);

CREATE INDEX run_events_by_run ON run_events (run_id, id);

-- Flags and signing keys show in cached answers: they bump the version.
CREATE TRIGGER run_flags_inserted AFTER INSERT ON run_flags BEGIN
    UPDATE data_version SET version = version + 1;
END;
CREATE TRIGGER run_flags_updated AFTER UPDATE ON run_flags BEGIN
    UPDATE data_version SET version = version + 1;
END;
CREATE TRIGGER signing_keys_inserted AFTER INSERT ON signing_keys BEGIN
    UPDATE data_version SET version = version + 1;
END;
