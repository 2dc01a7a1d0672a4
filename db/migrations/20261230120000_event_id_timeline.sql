-- migrate:up

-- The database generation: PostgreSQL's current WAL insert timeline, which every promotion of a
-- standby (and every point-in-time recovery) raises. It is the first 8 hex digits of the current
-- WAL file's name; pg_control_checkpoint() would lag until the first checkpoint after a promotion,
-- and needs a privilege the binaries' roles do not have. It fails on a standby (no inserts there).
CREATE FUNCTION msgx_timeline() RETURNS bigint LANGUAGE sql VOLATILE AS $$
  SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint
$$;

-- Event ids are scoped by the timeline: timeline * 2^40 + the sequence. A standby promoted without
-- the old primary's last transactions resumes the sequence below the ids already used, but on a
-- higher timeline, so its ids are still higher than every id of the lost tail and none names two
-- records (docs/events.md). The sequence stops at 2^40 - 1 rather than spill into the timeline.
CREATE FUNCTION msgx_event_id() RETURNS bigint LANGUAGE sql VOLATILE AS $$
  SELECT (msgx_timeline() << 40) + nextval('msg_event_event_id_seq')
$$;
ALTER SEQUENCE msg_event_event_id_seq MAXVALUE 1099511627775;
ALTER TABLE msg_event ALTER COLUMN event_id SET DEFAULT msgx_event_id();

-- The timelines the dispatcher has run on, to notice a promotion (a new, higher timeline).
CREATE TABLE db_timeline (
    timeline      bigint      PRIMARY KEY,
    first_seen_at timestamptz NOT NULL
);

-- Change records the changes topic holds that this database did not know as sent when the
-- dispatcher read the topic's tail at the start of its term: sent by a primary whose last
-- transactions were lost in a failover (or acknowledged by the broker just before a crash). A
-- later event of the same (FLID, version) is not sent again: Kafka already has that version.
CREATE TABLE msg_kafka_held (
    partition_key  text        NOT NULL,
    state_version  bigint      NOT NULL,
    event_id       bigint      NOT NULL,
    value_sha256   bytea       NOT NULL,
    record_time    timestamptz NOT NULL,
    -- whether the database had the record's event (its event_id) when the record was found; not:
    -- the database lost it (a lost tail), even when it had derived the version again since
    stored         boolean     NOT NULL,
    PRIMARY KEY (partition_key, state_version)
);

-- migrate:down
DROP TABLE msg_kafka_held;
DROP TABLE db_timeline;
ALTER TABLE msg_event ALTER COLUMN event_id SET DEFAULT nextval('msg_event_event_id_seq');
ALTER SEQUENCE msg_event_event_id_seq NO MAXVALUE;
DROP FUNCTION msgx_event_id();
DROP FUNCTION msgx_timeline();
