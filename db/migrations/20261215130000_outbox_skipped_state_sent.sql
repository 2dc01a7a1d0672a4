-- migrate:up

-- Issue 16. A dead letter an operator skips (msgxctl dlq skip) becomes SKIPPED: never sent,
-- distinguishable from delivery, and not removed by the SENT retention.
ALTER TABLE msg_event DROP CONSTRAINT msg_event_status_check;
ALTER TABLE msg_event ADD CONSTRAINT msg_event_status_check CHECK (status IN ('PENDING', 'SENT', 'DEAD', 'SKIPPED'));

-- The unsent events are PENDING or DEAD (no longer "not SENT"): the claim indexes follow.
DROP INDEX msg_event_unsent;
DROP INDEX msg_event_unsent_order;
CREATE INDEX msg_event_unsent ON msg_event (target, partition_key, event_id) WHERE status IN ('PENDING', 'DEAD');
CREATE INDEX msg_event_unsent_order ON msg_event (target, event_id) WHERE status IN ('PENDING', 'DEAD');

-- The highest state_version sent to the compacted state topic per FLID (KAFKA:schd). A flush
-- never sends a version at or below it, so the topic's latest value never goes back, even after
-- the SENT rows are removed by retention.
CREATE TABLE msg_state_sent (
    partition_key text        PRIMARY KEY,
    state_version bigint      NOT NULL CHECK (state_version > 0),
    sent_at       timestamptz NOT NULL
);

-- migrate:down
DROP TABLE msg_state_sent;
DROP INDEX msg_event_unsent;
DROP INDEX msg_event_unsent_order;
CREATE INDEX msg_event_unsent ON msg_event (target, partition_key, event_id) WHERE status <> 'SENT';
CREATE INDEX msg_event_unsent_order ON msg_event (target, event_id) WHERE status <> 'SENT';
UPDATE msg_event SET status = 'SENT', sent_at = coalesce(sent_at, created_at) WHERE status = 'SKIPPED';
ALTER TABLE msg_event DROP CONSTRAINT msg_event_status_check;
ALTER TABLE msg_event ADD CONSTRAINT msg_event_status_check CHECK (status IN ('PENDING', 'SENT', 'DEAD'));
