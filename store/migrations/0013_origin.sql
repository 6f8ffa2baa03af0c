-- Where each run came from, beside source_url: who published it, the
-- licence its data is offered under (an SPDX identifier) and the day its
-- source was retrieved (YYYY-MM-DD). NULL for runs stored before: unknown.
-- Metadata, like source_url: not part of the content hash.
ALTER TABLE runs ADD COLUMN publisher TEXT;
ALTER TABLE runs ADD COLUMN license TEXT;
ALTER TABLE runs ADD COLUMN retrieved_at TEXT;
