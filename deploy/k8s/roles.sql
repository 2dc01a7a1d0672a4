-- msgx database roles with the least grants each binary needs (SPEC §14).
--
-- Part 1 is PostgreSQL (psql), part 2 is the legacy MySQL mailbox (mysql client); run each
-- against its own server. Both parts are idempotent: run them before the first migration (the
-- roles must exist for the migration Job to log in) and again after every release whose
-- migrations add tables (a grant names existing tables only; missing ones are skipped with a
-- notice). Passwords are not set here: set them out of band and put them into the Secrets the
-- Deployments read (deploy/k8s/README.md):
--
--   psql   -v ON_ERROR_STOP=1 -d msgx -f deploy/k8s/roles.sql          # part 1 only (psql stops at \q)
--   sed -n '/^-- PART 2/,$p' deploy/k8s/roles.sql | mysql msgx_mailbox # part 2 only
--   psql -d msgx -c "ALTER ROLE msgx_ingest PASSWORD '…'"             # per role, from your vault
--
-- One role per binary; each Deployment's MSGX_PG_URL (Secret msgx-pg-<binary>) logs in as it:
--
--   role             used by                 may
--   msgx_owner       migration Job           own the schema and run DDL (msgxctl migrate)
--   msgx_ingest      cmd/ingest              enqueue into proc_state, move the watermark and gap
--                                            ledger, read flights (read API)
--   msgx_processor   cmd/processor           process proc_state, write flights, reference data,
--                                            outbox events, snapshot log, request responses
--   msgx_dispatcher  cmd/dispatcher          read the outbox and set event status
--   msgx_jobs        cmd/jobs                backfill columns, history purge + TOMBSTONEs,
--                                            retention and archive, request timeouts
--   msgx_admin       msgxctl (operators)     read everything; replay, DLQ, backfill retry, gap
--                                            skip, history request, requests — all audited
--
-- Every binary also reads and bumps its leader_lease row (leader election, fencing with
-- SELECT … FOR SHARE, which needs UPDATE). Advisory locks and LISTEN/NOTIFY need no grant.

-- =============================================================================================
-- PART 1: PostgreSQL
-- =============================================================================================
\set ON_ERROR_STOP on
-- The schema msgx lives in (MSGX_PG_URL's search_path; public by default).
SELECT set_config('msgx.schema', 'public', false);

DO $$
DECLARE
  r text;
BEGIN
  FOREACH r IN ARRAY ARRAY['msgx_owner', 'msgx_ingest', 'msgx_processor', 'msgx_dispatcher', 'msgx_jobs', 'msgx_admin'] LOOP
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
      -- A pool of MSGX_PG_MAX_CONNS (8) plus the leader lock session per replica, 2–3 replicas,
      -- plus room for a rollout's surge pod.
      EXECUTE format('CREATE ROLE %I LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION CONNECTION LIMIT 40', r);
    END IF;
  END LOOP;
END $$;

DO $$
DECLARE
  s text := current_setting('msgx.schema');
BEGIN
  EXECUTE format('REVOKE CREATE ON SCHEMA %I FROM PUBLIC', s);
  EXECUTE format('GRANT USAGE, CREATE ON SCHEMA %I TO msgx_owner', s);
  EXECUTE format('GRANT USAGE ON SCHEMA %I TO msgx_ingest, msgx_processor, msgx_dispatcher, msgx_jobs, msgx_admin', s);
END $$;

-- (role, privileges, table or sequence). Tables not created yet are skipped with a notice.
DO $$
DECLARE
  s text := current_setting('msgx.schema');
  flights text[] := ARRAY['flight', 'flight_route', 'flight_stand', 'flight_gate', 'flight_checkin',
    'flight_carousel', 'flight_chute', 'flight_chock', 'flight_airbridge', 'flight_delay',
    'flight_service', 'flight_vip'];
  g record;
  t text;
BEGIN
  FOR g IN
    SELECT * FROM (VALUES
      -- every binary: leader election and fencing
      ('msgx_ingest',     'SELECT, INSERT, UPDATE', ARRAY['leader_lease']),
      ('msgx_processor',  'SELECT, INSERT, UPDATE', ARRAY['leader_lease']),
      ('msgx_dispatcher', 'SELECT, INSERT, UPDATE', ARRAY['leader_lease']),
      ('msgx_jobs',       'SELECT, INSERT, UPDATE', ARRAY['leader_lease']),

      -- ingest: proc_state enqueue (ON CONFLICT DO NOTHING), watermark, gap ledger, read API
      ('msgx_ingest', 'SELECT, INSERT',         ARRAY['proc_state']),
      ('msgx_ingest', 'SELECT, INSERT, UPDATE', ARRAY['inbox_cursor', 'inbox_gap']),
      ('msgx_ingest', 'SELECT',                 flights || ARRAY['msg_event']),

      -- processor: the pump and everything one message's transaction writes
      ('msgx_processor', 'SELECT, UPDATE',                 ARRAY['proc_state']),
      ('msgx_processor', 'SELECT',                         ARRAY['inbox_cursor']),
      ('msgx_processor', 'SELECT, INSERT',                 ARRAY['msg_identity', 'msg_event', 'schd_snap_log']),
      ('msgx_processor', 'SELECT, INSERT, UPDATE, DELETE', flights || ARRAY['ref_master']),
      ('msgx_processor', 'SELECT, UPDATE',                 ARRAY['req_track']),
      ('msgx_processor', 'USAGE',                          ARRAY['msg_event_event_id_seq', 'schd_snap_log_snap_id_seq']),

      -- dispatcher: outbox status only
      ('msgx_dispatcher', 'SELECT, UPDATE', ARRAY['msg_event']),

      -- jobs: backfill, history sweep (flight_history + TOMBSTONE + delete under PIPELINE_LOCK),
      -- retention/archive, request timeouts, audit of backfill retries
      ('msgx_jobs', 'SELECT, INSERT, UPDATE, DELETE', ARRAY['proc_state', 'proc_state_hst']),
      ('msgx_jobs', 'SELECT, DELETE',                 flights || ARRAY['schd_snap_log']),
      ('msgx_jobs', 'SELECT, INSERT, DELETE',         ARRAY['flight_history', 'msg_event']),
      ('msgx_jobs', 'SELECT, UPDATE, DELETE',         ARRAY['req_track']),
      ('msgx_jobs', 'SELECT, INSERT, UPDATE',         ARRAY['job_state']),
      ('msgx_jobs', 'SELECT, INSERT',                 ARRAY['replay_audit']),
      ('msgx_jobs', 'USAGE',                          ARRAY['flight_history_history_id_seq', 'msg_event_event_id_seq', 'replay_audit_audit_id_seq']),

      -- msgxctl: read everything; the audited admin actions
      ('msgx_admin', 'SELECT', flights || ARRAY['flight_history', 'proc_state', 'proc_state_hst',
         'inbox_cursor', 'inbox_gap', 'msg_event', 'msg_identity', 'ref_master', 'req_track',
         'schd_snap_log', 'leader_lease', 'job_state', 'replay_audit', 'schema_migrations']),
      ('msgx_admin', 'UPDATE',         ARRAY['proc_state', 'msg_event', 'inbox_cursor', 'inbox_gap', 'job_state']),
      ('msgx_admin', 'INSERT, DELETE', ARRAY['proc_state', 'proc_state_hst']),   -- backfill retry of archived rows
      ('msgx_admin', 'INSERT',         ARRAY['replay_audit', 'inbox_gap']),
      ('msgx_admin', 'INSERT, UPDATE', ARRAY['req_track']),
      ('msgx_admin', 'USAGE',          ARRAY['replay_audit_audit_id_seq', 'req_track_req_id_seq'])
    ) AS v(grantee, privs, objs)
  LOOP
    FOREACH t IN ARRAY g.objs LOOP
      IF to_regclass(format('%I.%I', s, t)) IS NULL THEN
        RAISE NOTICE 'msgx roles: %.% does not exist yet; grant to % skipped (run again after the migration)', s, t, g.grantee;
      ELSIF g.privs = 'USAGE' THEN
        EXECUTE format('GRANT USAGE ON SEQUENCE %I.%I TO %I', s, t, g.grantee);
      ELSE
        EXECUTE format('GRANT %s ON TABLE %I.%I TO %I', g.privs, s, t, g.grantee);
      END IF;
    END LOOP;
  END LOOP;
END $$;

\q

-- =============================================================================================
-- PART 2: MySQL / MariaDB — the AODB's legacy mailbox (database msgx_mailbox; rename to yours)
-- =============================================================================================
-- The mailbox belongs to the AODB team: msgx gets column grants on two tables and nothing else.
-- The processed marker is CMINMSGS_DATE_PROCESSED (+ CMINMSGS_STATUS when
-- MSGX_MAILBOX_PROCESSED_VALUE is set), written only NULL → value (INV-7). The marker UPDATE's
-- WHERE and the backfill's SELECT … FOR UPDATE read CMINMSGS_ID and the marker columns, hence
-- the SELECT on those columns. Replace the host pattern '%' with your pod network.

-- PART 2
CREATE USER IF NOT EXISTS 'msgx_ingest'@'%';
CREATE USER IF NOT EXISTS 'msgx_processor'@'%';
CREATE USER IF NOT EXISTS 'msgx_jobs'@'%';
CREATE USER IF NOT EXISTS 'msgx_admin'@'%';

-- ingest: poll cminmsgs after W; the compat entry POST /cminmsgs/send inserts into it.
GRANT SELECT ON msgx_mailbox.cminmsgs TO 'msgx_ingest'@'%';
GRANT INSERT (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_SUBSYSTEM_NAME,
              CMINMSGS_SUBSYSTEM_SEQUENCE, CMINMSGS_SUBSYSTEM_DATE_SENT,
              CMINMSGS_SUBSYSTEM_SUBTYPE, CMINMSGS_SUBSYSTEM_TYPE, CMINMSGS_STATUS)
  ON msgx_mailbox.cminmsgs TO 'msgx_ingest'@'%';

-- processor: the immediate marker after each terminal commit.
GRANT SELECT (CMINMSGS_ID, CMINMSGS_DATE_PROCESSED, CMINMSGS_STATUS),
      UPDATE (CMINMSGS_DATE_PROCESSED, CMINMSGS_STATUS)
  ON msgx_mailbox.cminmsgs TO 'msgx_processor'@'%';

-- jobs: the backfill sweep's markers; requests to the AODB (RQFD/RQRD) into coutmsgs (the
-- request writer is not built yet: table-level INSERT until its column list is fixed).
GRANT SELECT (CMINMSGS_ID, CMINMSGS_DATE_PROCESSED, CMINMSGS_STATUS),
      UPDATE (CMINMSGS_DATE_PROCESSED, CMINMSGS_STATUS)
  ON msgx_mailbox.cminmsgs TO 'msgx_jobs'@'%';
GRANT INSERT ON msgx_mailbox.coutmsgs TO 'msgx_jobs'@'%';

-- msgxctl (operators): send RQFD/RQRD.
GRANT INSERT ON msgx_mailbox.coutmsgs TO 'msgx_admin'@'%';
