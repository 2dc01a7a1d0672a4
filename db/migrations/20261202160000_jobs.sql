-- migrate:up

-- The jobs stage's bookkeeping (pkg/jobs): one row per job. done_day is the airport day whose
-- daily history sweep completed (so a restart or a takeover does not sweep twice a day);
-- requested_at is set by `msgxctl history sweep` and cleared by the jobs leader once the
-- on-demand sweep completed.
CREATE TABLE job_state (
    job              text        PRIMARY KEY CHECK (job IN ('backfill', 'history', 'retention')),
    last_started_at  timestamptz,
    last_finished_at timestamptz,
    last_selected    bigint      NOT NULL DEFAULT 0,
    last_error       text,
    done_day         date,
    requested_at     timestamptz,
    requested_by     text
);
INSERT INTO job_state (job) VALUES ('backfill'), ('history'), ('retention');

-- Abandoned markers, listed for reconciliation (msgxctl backfill list-abandoned) and counted.
CREATE INDEX proc_state_marker_abandoned ON proc_state (msg_id)
    WHERE backfill_abandoned_at IS NOT NULL AND backfill_done_at IS NULL;
CREATE INDEX proc_state_hst_marker_abandoned ON proc_state_hst (msg_id)
    WHERE backfill_abandoned_at IS NOT NULL AND backfill_done_at IS NULL;

-- The archive's work list: terminal rows whose marker is settled, oldest first.
CREATE INDEX proc_state_settled ON proc_state (finished_at)
    WHERE backfill_done_at IS NOT NULL OR backfill_abandoned_at IS NOT NULL;

-- Archived rows whose raw copy is still kept (cleared after MSGX_RAW_RETENTION).
CREATE INDEX proc_state_hst_raw_kept ON proc_state_hst (finished_at) WHERE raw IS NOT NULL;

-- The history sweep's candidates: operation day first, then FLID (keyset order of a run).
CREATE INDEX flight_purge_order ON flight (operation_day, flid);

-- Closed requests, deleted after MSGX_REQ_TRACK_RETENTION.
CREATE INDEX req_track_closed ON req_track (closed_at) WHERE closed_at IS NOT NULL;

-- migrate:down
DROP INDEX req_track_closed;
DROP INDEX flight_purge_order;
DROP INDEX proc_state_hst_raw_kept;
DROP INDEX proc_state_settled;
DROP INDEX proc_state_hst_marker_abandoned;
DROP INDEX proc_state_marker_abandoned;
DROP TABLE job_state;
