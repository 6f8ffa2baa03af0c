-- Server secrets shared by every process on the database: the key that
-- signs pagination cursors, made on first open.
CREATE TABLE secrets (
    name  TEXT PRIMARY KEY,
    value BLOB NOT NULL
) WITHOUT ROWID;
