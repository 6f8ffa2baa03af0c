-- A second counter beside the data version: bumped only by a change that
-- can move a measurement (a run stored, deleted, hidden or restored, its
-- method or checks restated), not by one of what a run says about itself
-- (title, notes, source). Answers computed from the measurements (fits,
-- plans, predictions, feeds) may then outlive a change of text for a
-- bounded while, and never one of measurements.
ALTER TABLE data_version ADD COLUMN measured bigint NOT NULL DEFAULT 1;

CREATE FUNCTION runs_bump_measured() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    UPDATE data_version SET measured = measured + 1;
    RETURN NULL;
END;
$$;

CREATE TRIGGER runs_inserted_measured AFTER INSERT ON runs
    FOR EACH ROW EXECUTE FUNCTION runs_bump_measured();
CREATE TRIGGER runs_deleted_measured AFTER DELETE ON runs
    FOR EACH ROW EXECUTE FUNCTION runs_bump_measured();
-- An update counts unless it changed the text: one that changed none of
-- these columns (hidden_at, method_class, a column added later) is taken
-- to move a measurement.
CREATE TRIGGER runs_updated_measured AFTER UPDATE ON runs
    FOR EACH ROW WHEN (OLD.title IS NOT DISTINCT FROM NEW.title AND OLD.notes IS NOT DISTINCT FROM NEW.notes
        AND OLD.source_url IS NOT DISTINCT FROM NEW.source_url AND OLD.source_sha256 IS NOT DISTINCT FROM NEW.source_sha256
        AND OLD.source_media_type IS NOT DISTINCT FROM NEW.source_media_type
        AND OLD.source_format IS NOT DISTINCT FROM NEW.source_format)
    EXECUTE FUNCTION runs_bump_measured();
CREATE TRIGGER runs_truncated_measured AFTER TRUNCATE ON runs
    FOR EACH STATEMENT EXECUTE FUNCTION runs_bump_measured();
