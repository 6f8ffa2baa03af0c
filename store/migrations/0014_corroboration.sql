-- Each run's corroboration: its status against the independent runs of
-- the database (uncorroborated, corroborated, disputed) and its detail
-- (JSON: sources, references, ratios), made by the caller of the store.
-- disputed mirrors the status so that the rankings leave disputed runs
-- out beside flagged ones. References are read by model or GPU name,
-- ignoring case: runs_by_gpu_model serves the GPU, this index the model.
ALTER TABLE runs ADD COLUMN corroboration_status TEXT NOT NULL DEFAULT 'uncorroborated';
ALTER TABLE runs ADD COLUMN corroboration TEXT NOT NULL DEFAULT 'null';
ALTER TABLE runs ADD COLUMN disputed INTEGER NOT NULL DEFAULT 0 CHECK (disputed IN (0, 1));

CREATE INDEX runs_by_model_nocase ON runs (model_name COLLATE NOCASE, id);

-- A change of a run's corroboration status is an event of its history:
-- the action's CHECK gains 'corroboration' (SQLite rebuilds the table).
CREATE TABLE run_events_new (
    id       INTEGER PRIMARY KEY,
    run_id   TEXT NOT NULL,
    at       TEXT NOT NULL,
    key_name TEXT,             -- NULL for the server itself (seeds, matrixd import, corroboration)
    action   TEXT NOT NULL CHECK (action IN ('create', 'update', 'flag', 'resolve', 'hide', 'restore', 'delete', 'source', 'corroboration')),
    detail   TEXT NOT NULL     -- a small JSON object of the change
);
INSERT INTO run_events_new (id, run_id, at, key_name, action, detail) SELECT id, run_id, at, key_name, action, detail FROM run_events;
DROP TABLE run_events;
ALTER TABLE run_events_new RENAME TO run_events;
CREATE INDEX run_events_by_run ON run_events (run_id, id);
