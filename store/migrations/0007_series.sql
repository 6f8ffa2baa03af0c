-- A run's series: the runs that share every setting that changes speed
-- and differ in engine version (or, at one version, in date). The key is
-- computed by the store from those settings (SeriesKey) and filled in for
-- stored runs when the database is opened.
ALTER TABLE runs ADD COLUMN series_key TEXT;
CREATE INDEX runs_by_series ON runs (series_key, created_at, id);
