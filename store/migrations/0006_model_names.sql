-- The distinct model names, kept by triggers: a model substring filter
-- matches these few names, then reads the runs by index, instead of
-- testing the name of every run.
CREATE TABLE model_names (
    name TEXT PRIMARY KEY,
    runs INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO model_names (name, runs) SELECT model_name, count(*) FROM runs GROUP BY model_name;

CREATE TRIGGER model_names_inserted AFTER INSERT ON runs BEGIN
    INSERT INTO model_names (name, runs) VALUES (new.model_name, 1)
        ON CONFLICT (name) DO UPDATE SET runs = runs + 1;
END;
CREATE TRIGGER model_names_deleted AFTER DELETE ON runs BEGIN
    UPDATE model_names SET runs = runs - 1 WHERE name = old.model_name;
    DELETE FROM model_names WHERE name = old.model_name AND runs <= 0;
END;
CREATE TRIGGER model_names_renamed AFTER UPDATE OF model_name ON runs BEGIN
    UPDATE model_names SET runs = runs - 1 WHERE name = old.model_name;
    DELETE FROM model_names WHERE name = old.model_name AND runs <= 0;
    INSERT INTO model_names (name, runs) VALUES (new.model_name, 1)
        ON CONFLICT (name) DO UPDATE SET runs = runs + 1;
END;

CREATE INDEX runs_by_model_created ON runs (model_name, created_at, id);
CREATE INDEX runs_by_gpu_model ON runs (gpu COLLATE NOCASE, model_name COLLATE NOCASE, id);
