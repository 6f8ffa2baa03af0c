-- Where each run came from (SQLite 0016_origin.sql): publisher, licence
-- (an SPDX identifier) and the day its source was retrieved (YYYY-MM-DD).
-- NULL for runs stored before: unknown.
ALTER TABLE runs ADD COLUMN publisher text;
ALTER TABLE runs ADD COLUMN license text;
ALTER TABLE runs ADD COLUMN retrieved_at text;
