-- migrate:up

-- How ingest judged a skipped id permanent: aged (missing for MSGX_MAX_COMMIT_DELAY) or proved
-- (no open InnoDB transaction of the mailbox could still commit it; docs/ingest.md). Every id
-- skipped before this column existed was aged.
ALTER TABLE inbox_gap ADD COLUMN passed_by text NOT NULL DEFAULT 'aged'
    CONSTRAINT inbox_gap_passed_by_check CHECK (passed_by IN ('aged', 'proved'));

-- migrate:down

ALTER TABLE inbox_gap DROP COLUMN passed_by;
