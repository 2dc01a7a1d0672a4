-- migrate:up

-- The change topic's delivery (KAFKA:msg) by a cursor instead of a SENT update per event.
--
-- A change event is written QUEUED (the column's new default, so a previous release's processor
-- writes QUEUED too while the Deployments roll) and never updated on the happy path: it is
-- delivered when its id is at or below the cursor, the highest `through` of msg_event_delivered,
-- whose row also says when the dispatcher's transaction that moved the cursor there committed.
-- The rows that are not delivered in cursor order carry their state on the row, as every event
-- did before: PENDING (not delivered: a failing FLID's events the cursor passed, each held behind
-- the one before; a previous release's rows), DEAD, SKIPPED, SENT (delivered out of cursor order).
-- Only those rows enter the partial indexes on status, so a change event's COPY enters the
-- primary key, msg_event_flight and msg_event_msg alone.
--
-- A previous release's dispatcher reads PENDING and DEAD rows only: it never sends a QUEUED one,
-- so it can neither repeat one the cursor passed nor overtake one. Rolling back past this
-- migration needs the rows written back first (docs/deploy.md).
ALTER TABLE msg_event DROP CONSTRAINT msg_event_status_check;
-- NOT VALID: every row already holds one of the old values, and a validation would scan the table
-- under its lock.
ALTER TABLE msg_event ADD CONSTRAINT msg_event_status_check
    CHECK (status IN ('QUEUED', 'PENDING', 'SENT', 'DEAD', 'SKIPPED')) NOT VALID;
ALTER TABLE msg_event ALTER COLUMN status SET DEFAULT 'QUEUED';

-- A previous release's processor still writes its states to msg_event while the Deployments
-- roll, now QUEUED: the state flush's fold takes them as before.
CREATE OR REPLACE FUNCTION msgx_take_legacy_states()
RETURNS TABLE (event_id bigint, partition_key text, event_type text, state_version bigint, msg_id bigint, body text, created_at timestamptz)
LANGUAGE sql VOLATILE SECURITY DEFINER AS $$
  DELETE FROM msg_event e WHERE e.target = 'KAFKA:schd' AND e.status IN ('QUEUED', 'PENDING', 'DEAD')
  RETURNING e.event_id, e.partition_key, e.event_type, e.state_version, e.msg_id, COALESCE(e.body, e.payload::text), e.created_at
$$;
DO $$ BEGIN
  EXECUTE format('ALTER FUNCTION msgx_take_legacy_states() SET search_path = %I, pg_temp', current_schema());
END $$;
-- The fold calls it at every flush: an index that holds only such rows keeps that one descent.
CREATE INDEX msg_event_legacy_states ON msg_event (event_id)
 WHERE target = 'KAFKA:schd' AND status IN ('QUEUED', 'PENDING', 'DEAD');

-- One row per move of the cursor (one a dispatcher transaction): every KAFKA:msg event with
-- status QUEUED and event_id <= through was delivered by sent_at at the latest. The cursor is the
-- highest through; this migration starts it above every event so far (none is QUEUED).
CREATE TABLE msg_event_delivered (
    through bigint      PRIMARY KEY,
    sent_at timestamptz NOT NULL
);
-- Retention finds the old moves, the tail read the newest time, by this index.
CREATE INDEX msg_event_delivered_sent_at ON msg_event_delivered (sent_at);
-- Its time is the last SENT mark's (msg_event_sent), where the dispatcher's tail read starts.
INSERT INTO msg_event_delivered (through, sent_at)
SELECT coalesce((SELECT max(event_id) FROM msg_event), 0),
       coalesce((SELECT max(sent_at) FROM msg_event WHERE status = 'SENT'), '-infinity');

-- msgx_change_cursor is the delivery cursor; msgx_passed(id, c) says whether cursor c passed event
-- id. Ids are (generation << 40) + a sequence value; the cursor passes events in id order, and
-- every event it passed was drawn before it moved, so its sequence value is at most the cursor's
-- too. An event drawn later below the cursor's id (a database restored onto a lower timeline draws
-- a lower generation until the dispatcher raises the restore epoch) has a higher sequence value:
-- not passed, it is renumbered above the cursor with the other unsent events.
CREATE FUNCTION msgx_change_cursor() RETURNS bigint LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT coalesce(max(through), 0) FROM msg_event_delivered
$$;
CREATE FUNCTION msgx_passed(id bigint, cursor bigint) RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT id <= cursor AND (id & 1099511627775) <= (cursor & 1099511627775)
$$;

-- msg_event_delivery is msg_event with each event's delivery as before the cursor: a QUEUED
-- change event is SENT at the time of the cursor move that passed it, or PENDING above the
-- cursor; a QUEUED state (a previous release's processor's, waiting for the fold) is PENDING.
-- Readers that show or compare an event's status read it here.
CREATE VIEW msg_event_delivery AS
SELECT e.event_id, e.target, e.partition_key, e.event_type, e.state_version, e.msg_id, e.payload, e.body,
       CASE WHEN e.status <> 'QUEUED' THEN e.status WHEN d.through IS NULL THEN 'PENDING' ELSE 'SENT' END AS status,
       e.attempts, e.next_attempt_at, e.created_at,
       CASE WHEN e.status <> 'QUEUED' THEN e.sent_at ELSE d.sent_at END AS sent_at,
       e.last_error
  FROM msg_event e
  LEFT JOIN LATERAL (SELECT x.through, x.sent_at FROM msg_event_delivered x
                      WHERE e.status = 'QUEUED' AND e.target = 'KAFKA:msg'
                        AND x.through >= e.event_id AND msgx_passed(e.event_id, x.through)
                      ORDER BY x.through LIMIT 1) d ON true;

-- migrate:down

-- Every QUEUED event written back as the previous release reads it: SENT at or below the cursor,
-- PENDING above it. Run with no dispatcher of this release leading. It rewrites those rows under
-- the table's lock: the pipeline waits for it (docs/deploy.md).
ALTER TABLE msg_event ALTER COLUMN status SET DEFAULT 'PENDING';
UPDATE msg_event e
   SET status = d.status, sent_at = d.sent_at
  FROM msg_event_delivery d
 WHERE e.status = 'QUEUED' AND d.event_id = e.event_id;
DROP VIEW msg_event_delivery;
DROP FUNCTION msgx_passed(bigint, bigint);
DROP FUNCTION msgx_change_cursor();
DROP TABLE msg_event_delivered;
CREATE OR REPLACE FUNCTION msgx_take_legacy_states()
RETURNS TABLE (event_id bigint, partition_key text, event_type text, state_version bigint, msg_id bigint, body text, created_at timestamptz)
LANGUAGE sql VOLATILE SECURITY DEFINER AS $$
  DELETE FROM msg_event e WHERE e.target = 'KAFKA:schd' AND e.status IN ('PENDING', 'DEAD')
  RETURNING e.event_id, e.partition_key, e.event_type, e.state_version, e.msg_id, COALESCE(e.body, e.payload::text), e.created_at
$$;
DO $$ BEGIN
  EXECUTE format('ALTER FUNCTION msgx_take_legacy_states() SET search_path = %I, pg_temp', current_schema());
END $$;
DROP INDEX msg_event_legacy_states;
ALTER TABLE msg_event DROP CONSTRAINT msg_event_status_check;
ALTER TABLE msg_event ADD CONSTRAINT msg_event_status_check CHECK (status IN ('PENDING', 'SENT', 'DEAD', 'SKIPPED'));
