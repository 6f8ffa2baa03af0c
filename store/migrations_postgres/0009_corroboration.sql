-- Each run's corroboration (SQLite 0014_corroboration.sql): its status,
-- its detail (JSON) and disputed, which the rankings leave out beside
-- flagged. References are read by lower(model_name) (runs_by_model) or
-- lower(gpu) (runs_by_gpu).
ALTER TABLE runs ADD COLUMN corroboration_status text NOT NULL DEFAULT 'uncorroborated';
ALTER TABLE runs ADD COLUMN corroboration text NOT NULL DEFAULT 'null';
ALTER TABLE runs ADD COLUMN disputed integer NOT NULL DEFAULT 0 CHECK (disputed IN (0, 1));

-- A change of a run's corroboration status is an event of its history.
ALTER TABLE run_events DROP CONSTRAINT run_events_action_check;
ALTER TABLE run_events ADD CONSTRAINT run_events_action_check
    CHECK (action IN ('create', 'update', 'flag', 'resolve', 'hide', 'restore', 'delete', 'source', 'corroboration'));
