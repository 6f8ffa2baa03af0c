-- Each run's method and the outcome of its plausibility checks: as
-- store/migrations/0007_method_trust.sql. migrateDataPostgres gives the
-- stored runs the method their benchmark text names.
ALTER TABLE runs ADD COLUMN method_class text NOT NULL DEFAULT 'sustained_decode';
ALTER TABLE runs ADD COLUMN method_measurement_s double precision;
ALTER TABLE runs ADD COLUMN method_output_tokens bigint;
ALTER TABLE runs ADD COLUMN method_prefill text;
ALTER TABLE runs ADD COLUMN trust_checks text NOT NULL DEFAULT 'null';
ALTER TABLE runs ADD COLUMN flagged integer NOT NULL DEFAULT 0 CHECK (flagged IN (0, 1));
ALTER TABLE runs ADD COLUMN trust_version integer NOT NULL DEFAULT 0;

CREATE INDEX runs_by_trust_version ON runs (trust_version);
