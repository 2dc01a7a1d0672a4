-- migrate:up

-- The state topic's outbox (KAFKA:schd) in two tables instead of one msg_event row per state
-- that a newer one settles unsent.
--
-- msg_state_log: what the flight writers append, by COPY, one row per state (a transaction's
-- newest of each flight); its only index is the key. The dispatcher's flush moves its rows into
-- msg_state_out (deleting them), newest of each flight.
CREATE TABLE msg_state_log (
    event_id      bigint      PRIMARY KEY DEFAULT msgx_event_id(),
    partition_key text        NOT NULL,
    event_type    text        NOT NULL CHECK (event_type IN ('UPSERT', 'TOMBSTONE')),
    state_version bigint      NOT NULL CHECK (state_version > 0),
    msg_id        bigint,
    body          text,
    created_at    timestamptz NOT NULL,
    CHECK (event_type = 'TOMBSTONE' OR body IS NOT NULL)
);

-- msg_state_out: one row per FLID, its newest state and where its delivery stands (the columns of
-- msg_event). A newer state rewrites the row in place, PENDING again; while a row is unsent its
-- indexed columns do not change, so that is a HOT update (fillfactor leaves room for it).
CREATE TABLE msg_state_out (
    partition_key   text        PRIMARY KEY,
    event_id        bigint      NOT NULL,
    event_type      text        NOT NULL CHECK (event_type IN ('UPSERT', 'TOMBSTONE')),
    state_version   bigint      NOT NULL CHECK (state_version > 0),
    msg_id          bigint,
    body            text,
    status          text        NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'SENT', 'DEAD', 'SKIPPED')),
    attempts        integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at timestamptz,
    created_at      timestamptz NOT NULL,
    pending_since   timestamptz NOT NULL, -- since when the flight's state waits: kept while a newer one replaces an unsent one
    sent_at         timestamptz,
    last_error      text,
    CHECK ((status = 'SENT') = (sent_at IS NOT NULL)),
    CHECK (event_type = 'TOMBSTONE' OR body IS NOT NULL)
) WITH (fillfactor = 50);
CREATE INDEX msg_state_out_unsent ON msg_state_out (partition_key) WHERE status IN ('PENDING', 'DEAD');
DO $$
BEGIN
    ALTER TABLE msg_state_log ALTER COLUMN body SET COMPRESSION lz4;
    ALTER TABLE msg_state_out ALTER COLUMN body SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported OR invalid_parameter_value THEN
    RAISE NOTICE 'lz4 not available: the state bodies keep the default compression';
END $$;

-- msgx_take_legacy_states removes and returns the unsent KAFKA:schd events of msg_event: those
-- the previous release's processor writes while the Deployments roll (and any left by this
-- migration). The state flush's fold moves them into msg_state_out. It runs as its owner, so the
-- dispatcher's role needs EXECUTE on it, not DELETE on msg_event, whose change events it must
-- never remove.
CREATE FUNCTION msgx_take_legacy_states()
RETURNS TABLE (event_id bigint, partition_key text, event_type text, state_version bigint, msg_id bigint, body text, created_at timestamptz)
LANGUAGE sql VOLATILE SECURITY DEFINER AS $$
  DELETE FROM msg_event e WHERE e.target = 'KAFKA:schd' AND e.status IN ('PENDING', 'DEAD')
  RETURNING e.event_id, e.partition_key, e.event_type, e.state_version, e.msg_id, COALESCE(e.body, e.payload::text), e.created_at
$$;
-- Its names resolve in this schema only.
DO $$ BEGIN
  EXECUTE format('ALTER FUNCTION msgx_take_legacy_states() SET search_path = %I, pg_temp', current_schema());
END $$;
REVOKE ALL ON FUNCTION msgx_take_legacy_states() FROM PUBLIC;

-- Each FLID's newest unsent state moves to msg_state_out; the older unsent ones it represents go
-- (a flush would have settled them with it). One statement, so a row it does not move stays; the
-- previous release's processor may still write such rows while the Deployments roll, and the
-- state flush's fold moves them (foldStatesSQL).
WITH moved AS (
    DELETE FROM msg_event WHERE target = 'KAFKA:schd' AND status IN ('PENDING', 'DEAD') RETURNING *
)
INSERT INTO msg_state_out (partition_key, event_id, event_type, state_version, msg_id, body, status,
                           attempts, next_attempt_at, created_at, pending_since, last_error)
SELECT DISTINCT ON (partition_key)
       partition_key, event_id, event_type, state_version, msg_id, COALESCE(body, payload::text), status,
       attempts, next_attempt_at, created_at,
       min(created_at) OVER (PARTITION BY partition_key), last_error
  FROM moved
 ORDER BY partition_key, event_id DESC;

-- migrate:down

INSERT INTO msg_event (event_id, target, partition_key, event_type, state_version, msg_id, body, status,
                       attempts, next_attempt_at, created_at, last_error)
SELECT event_id, 'KAFKA:schd', partition_key, event_type, state_version, msg_id, body, status,
       attempts, next_attempt_at, created_at, last_error
  FROM msg_state_out
 WHERE status IN ('PENDING', 'DEAD');
INSERT INTO msg_event (event_id, target, partition_key, event_type, state_version, msg_id, body, created_at)
SELECT event_id, 'KAFKA:schd', partition_key, event_type, state_version, msg_id, body, created_at
  FROM msg_state_log;
DROP FUNCTION msgx_take_legacy_states();
DROP TABLE msg_state_log;
DROP TABLE msg_state_out;
