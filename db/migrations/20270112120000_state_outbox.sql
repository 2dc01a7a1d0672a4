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

-- Each FLID's newest unsent state moves to msg_state_out; the older unsent ones it represents go
-- (a flush would have settled them with it).
INSERT INTO msg_state_out (partition_key, event_id, event_type, state_version, msg_id, body, status,
                           attempts, next_attempt_at, created_at, last_error)
SELECT DISTINCT ON (partition_key)
       partition_key, event_id, event_type, state_version, msg_id, COALESCE(body, payload::text), status,
       attempts, next_attempt_at, created_at, last_error
  FROM msg_event
 WHERE target = 'KAFKA:schd' AND status IN ('PENDING', 'DEAD')
 ORDER BY partition_key, event_id DESC;
DELETE FROM msg_event WHERE target = 'KAFKA:schd' AND status IN ('PENDING', 'DEAD');

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
DROP TABLE msg_state_log;
DROP TABLE msg_state_out;
