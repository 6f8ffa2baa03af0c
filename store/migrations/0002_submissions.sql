-- Submissions over HTTP: who submitted a run (the API key's name), the
-- owner's notes, API keys and idempotency records.
ALTER TABLE runs ADD COLUMN submitted_by TEXT;
ALTER TABLE runs ADD COLUMN notes TEXT;

CREATE INDEX runs_by_submitted_by ON runs (submitted_by) WHERE submitted_by IS NOT NULL;

-- A key is "mxd_<id>_<secret>": id finds the row, the secret's SHA-256 is
-- compared in constant time. Names are never reused, so submitted_by always
-- names one key.
CREATE TABLE api_keys (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL UNIQUE,
    secret_hash  BLOB NOT NULL,
    admin        INTEGER NOT NULL DEFAULT 0 CHECK (admin IN (0, 1)),
    created_at   TEXT NOT NULL,
    last_used_at TEXT,
    revoked_at   TEXT
);

-- One record per (key, Idempotency-Key): the request it answered and the
-- run it created or found, so a retry answers the same.
CREATE TABLE idempotency_keys (
    key_name        TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    request_hash    TEXT NOT NULL,
    run_id          TEXT NOT NULL,
    status          INTEGER NOT NULL,
    created_at      TEXT NOT NULL,
    PRIMARY KEY (key_name, idempotency_key)
) WITHOUT ROWID;

CREATE INDEX idempotency_keys_by_created ON idempotency_keys (created_at);
