-- Each run's method (what kind of measurement its cells are) and the
-- outcome of its plausibility checks. migrateData gives the stored runs
-- the method their benchmark text names; their checks are made by the
-- caller (trust_version 0: not checked yet).
ALTER TABLE runs ADD COLUMN method_class TEXT NOT NULL DEFAULT 'sustained_decode';
ALTER TABLE runs ADD COLUMN method_measurement_s REAL;
ALTER TABLE runs ADD COLUMN method_output_tokens INTEGER;
ALTER TABLE runs ADD COLUMN method_prefill TEXT;
ALTER TABLE runs ADD COLUMN trust_checks TEXT NOT NULL DEFAULT 'null';
ALTER TABLE runs ADD COLUMN flagged INTEGER NOT NULL DEFAULT 0 CHECK (flagged IN (0, 1));
ALTER TABLE runs ADD COLUMN trust_version INTEGER NOT NULL DEFAULT 0;

CREATE INDEX runs_by_trust_version ON runs (trust_version);
