-- migrate:up

-- The age at which ingest judges a gap permanent (MSGX_MAX_COMMIT_DELAY), written by ingest with
-- every cursor move: the readers of an open gap (msgxctl status, the console's verdict) judge it
-- against ingest's own setting instead of a copy of it. NULL until ingest moved the cursor.
ALTER TABLE inbox_cursor ADD COLUMN max_commit_delay interval CHECK (max_commit_delay > interval '0');

-- migrate:down

ALTER TABLE inbox_cursor DROP COLUMN max_commit_delay;
