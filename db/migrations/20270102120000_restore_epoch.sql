-- migrate:up

-- What msgx records of its database, one row. epoch is the restore epoch: event ids carry
-- timeline + epoch in their high bits (msgx_event_id), and the dispatcher raises it at the start
-- of a term when the database is behind event ids Kafka holds without being on a higher timeline:
-- a physical backup started without archive recovery, a logical dump restored (docs/events.md,
-- "After a database failover or restore"). system_identifier and timeline are the server's as the
-- dispatcher last saw them (NULL: not seen yet). refused_at is when the dispatcher last refused to
-- send from this database because Kafka holds ids of a newer generation (with the highest id it
-- saw), until a term start succeeds; the confirmed_ columns are an operator's word, given while it
-- refuses, that this database was restored on purpose (msgxctl db restored), kept until the
-- dispatcher's next try has read it.
CREATE TABLE db_epoch (
    one                    boolean     PRIMARY KEY DEFAULT true CHECK (one),
    epoch                  bigint      NOT NULL DEFAULT 0 CHECK (epoch >= 0),
    system_identifier      bigint,
    timeline               bigint,
    seen_at                timestamptz,
    refused_at             timestamptz,
    refused_kafka_event_id bigint,
    confirmed_by           text,
    confirmed_reason       text,
    confirmed_at           timestamptz,
    CHECK ((confirmed_at IS NULL) = (confirmed_by IS NULL) AND (confirmed_at IS NULL) = (confirmed_reason IS NULL)),
    CHECK ((refused_at IS NULL) = (refused_kafka_event_id IS NULL))
);
INSERT INTO db_epoch DEFAULT VALUES;

-- Every raise of the restore epoch: why (kind, detail), on which server, the highest event id
-- Kafka held then, and how many unsent events were given new ids.
CREATE TABLE db_restore (
    epoch             bigint      PRIMARY KEY,
    previous_epoch    bigint      NOT NULL,
    raised_at         timestamptz NOT NULL,
    kind              text        NOT NULL CHECK (kind IN ('ids-behind', 'other-cluster', 'older-timeline', 'confirmed')),
    detail            text        NOT NULL,
    system_identifier bigint,
    timeline          bigint      NOT NULL,
    kafka_event_id    bigint      NOT NULL,
    renumbered        bigint      NOT NULL CHECK (renumbered >= 0),
    CHECK (epoch > previous_epoch)
);

-- The server's system identifier (pg_control_system): a standby shares its primary's, a cluster
-- made by initdb (where a logical dump is restored) has a new one. NULL where the server withholds
-- it (a managed service that revoked the function): the dispatcher then does not compare it.
CREATE FUNCTION msgx_system_identifier() RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  RETURN (SELECT system_identifier FROM pg_control_system());
EXCEPTION WHEN insufficient_privilege THEN
  RETURN NULL;
END
$$;

-- The high bits of the event ids drawn now: the timeline (every promotion and point-in-time
-- recovery raises it) plus the restore epoch. For readers; msgx_event_id carries the epoch as a
-- constant, so that drawing an id reads no table (it runs once per event).
CREATE FUNCTION msgx_id_generation() RETURNS bigint LANGUAGE sql VOLATILE AS $$
  SELECT msgx_timeline() + (SELECT epoch FROM db_epoch)
$$;

CREATE OR REPLACE FUNCTION msgx_event_id() RETURNS bigint LANGUAGE sql VOLATILE AS $$
  SELECT ((msgx_timeline() + 0) << 40) + nextval('msg_event_event_id_seq')
$$;

-- msgx_raise_epoch raises the restore epoch to new_epoch in the caller's transaction: db_epoch and
-- msgx_event_id's constant together. It runs as its owner (who owns msgx_event_id), so the
-- dispatcher's role needs EXECUTE on it only (pkg/roles); it only ever raises, and keeps the ids
-- below 2^53 (JSON numbers: generation < 8192). The caller renumbers what needs it.
CREATE FUNCTION msgx_raise_epoch(new_epoch bigint) RETURNS void LANGUAGE plpgsql VOLATILE SECURITY DEFINER AS $$
DECLARE
  current_epoch bigint := (SELECT epoch FROM db_epoch FOR UPDATE);
BEGIN
  IF new_epoch IS NULL OR new_epoch <= current_epoch THEN
    RAISE EXCEPTION 'msgx_raise_epoch: the restore epoch is %, % does not raise it', current_epoch, new_epoch;
  END IF;
  IF msgx_timeline() + new_epoch >= 8192 THEN
    RAISE EXCEPTION 'msgx_raise_epoch: timeline % + epoch % reaches generation 8192: event ids would pass 2^53', msgx_timeline(), new_epoch;
  END IF;
  UPDATE db_epoch SET epoch = new_epoch;
  EXECUTE format($f$CREATE OR REPLACE FUNCTION msgx_event_id() RETURNS bigint LANGUAGE sql VOLATILE AS %L$f$,
                 format($b$SELECT ((msgx_timeline() + %s) << 40) + nextval('msg_event_event_id_seq')$b$, new_epoch));
END
$$;
-- Its names resolve in this schema only (a caller's temporary table cannot stand in for db_epoch).
DO $$ BEGIN
  EXECUTE format('ALTER FUNCTION msgx_raise_epoch(bigint) SET search_path = %I, pg_temp', current_schema());
END $$;
REVOKE ALL ON FUNCTION msgx_raise_epoch(bigint) FROM PUBLIC;

-- msgxctl db restored is audited like every operator action.
ALTER TABLE replay_audit DROP CONSTRAINT replay_audit_action_check;
ALTER TABLE replay_audit ADD CONSTRAINT replay_audit_action_check
    CHECK (action IN ('replay', 'dlq-replay', 'dlq-skip', 'backfill-retry', 'gap-skip', 'request', 'identity-set', 'db-restored'));

-- migrate:down

-- Ids drawn after a raise carry the epoch; the ids of the timeline alone would fall below them
-- and break the event order. Only a database whose epoch was never raised goes back.
DO $$
BEGIN
  IF (SELECT epoch FROM db_epoch) > 0 THEN
    RAISE EXCEPTION 'the restore epoch of this database is %: its event ids carry it, and without it new ids would fall below them; it cannot be rolled back past 20270102120000', (SELECT epoch FROM db_epoch);
  END IF;
END
$$;
CREATE OR REPLACE FUNCTION msgx_event_id() RETURNS bigint LANGUAGE sql VOLATILE AS $$
  SELECT (msgx_timeline() << 40) + nextval('msg_event_event_id_seq')
$$;
DELETE FROM replay_audit WHERE action = 'db-restored';
ALTER TABLE replay_audit DROP CONSTRAINT replay_audit_action_check;
ALTER TABLE replay_audit ADD CONSTRAINT replay_audit_action_check
    CHECK (action IN ('replay', 'dlq-replay', 'dlq-skip', 'backfill-retry', 'gap-skip', 'request', 'identity-set'));
DROP FUNCTION msgx_raise_epoch(bigint);
DROP FUNCTION msgx_id_generation();
DROP FUNCTION msgx_system_identifier();
DROP TABLE db_restore;
DROP TABLE db_epoch;
