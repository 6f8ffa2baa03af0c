-- A counter that every change to the stored runs bumps, in the same
-- transaction: caches and ETags key on it, so no answer outlives the data
-- it was computed from, whichever process wrote.
CREATE TABLE data_version (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL
);
INSERT INTO data_version (id, version) VALUES (1, 1);

CREATE TRIGGER runs_inserted AFTER INSERT ON runs BEGIN
    UPDATE data_version SET version = version + 1;
END;
CREATE TRIGGER runs_updated AFTER UPDATE ON runs BEGIN
    UPDATE data_version SET version = version + 1;
END;
CREATE TRIGGER runs_deleted AFTER DELETE ON runs BEGIN
    UPDATE data_version SET version = version + 1;
END;
