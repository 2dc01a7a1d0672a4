-- migrate:up

-- Requests to the AODB (docs/spec.md §8, docs/requests.md). The life cycle gains WAITING (the
-- AODB's transport took the outbound row: COUTMSGS_DATE_SENT set); an open request is
-- REGISTERED, SENT or WAITING, and only one may be open per (req_type, scope).
ALTER TABLE req_track DROP CONSTRAINT req_track_status_check;
ALTER TABLE req_track ADD CONSTRAINT req_track_status_check
    CHECK (status IN ('REGISTERED', 'SENT', 'WAITING', 'DONE', 'EXPIRED'));
DROP INDEX req_track_one_open;
CREATE UNIQUE INDEX req_track_one_open ON req_track (req_type, scope)
    WHERE status IN ('REGISTERED', 'SENT', 'WAITING');

-- The outbound message is built once, at registration, and stored: its META (SNDR, SEQN, DTTM)
-- is the request's token. Sending again after a crash first looks the exact text up in coutmsgs,
-- so a request is written to the outbound mailbox at most once.
ALTER TABLE req_track
    ADD COLUMN seqn         integer CHECK (seqn BETWEEN 0 AND 999999),
    ADD COLUMN msg_dttm     timestamptz,
    ADD COLUMN routing_id   text,
    ADD COLUMN out_xml      text,
    ADD COLUMN scope_from   date,
    ADD COLUMN scope_to     date,
    ADD COLUMN origin       text NOT NULL DEFAULT 'operator' CHECK (origin IN ('operator', 'bootstrap', 'self-heal')),
    ADD COLUMN actor        text,
    ADD COLUMN reason       text,
    ADD COLUMN waiting_at   timestamptz,
    ADD COLUMN close_reason text,
    ADD COLUMN match_kind   text CHECK (match_kind IN ('echo', 'fallback')),
    ADD CONSTRAINT req_track_scope_days CHECK (req_type <> 'RQFD' OR scope_from <= scope_to);

-- Open requests by kind, oldest first (the RESP guard and the sweep).
CREATE INDEX req_track_open ON req_track (req_type, sent_at) WHERE status IN ('REGISTERED', 'SENT', 'WAITING');
-- Automatic triggers look back at their own recent requests (rate limit).
CREATE INDEX req_track_origin ON req_track (origin, scope, registered_at);

-- The outbound SEQN counter (one row). The next SEQN is last + 1; after 999999 it wraps to 1
-- (six digits in META; 0 is never sent again after the first wrap).
CREATE TABLE req_seqn (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    last      integer NOT NULL CHECK (last BETWEEN 0 AND 999999)
);
INSERT INTO req_seqn (last) VALUES (0);

-- Self-healing: FLOPs for unknown flights counted per operation day within a window.
CREATE TABLE req_heal_tally (
    operation_day date        PRIMARY KEY,
    unknown       integer     NOT NULL CHECK (unknown >= 0),
    window_start  timestamptz NOT NULL
);

ALTER TABLE replay_audit DROP CONSTRAINT replay_audit_action_check;
ALTER TABLE replay_audit ADD CONSTRAINT replay_audit_action_check
    CHECK (action IN ('replay', 'dlq-replay', 'dlq-skip', 'backfill-retry', 'gap-skip', 'request'));

-- migrate:down
ALTER TABLE replay_audit DROP CONSTRAINT replay_audit_action_check;
ALTER TABLE replay_audit ADD CONSTRAINT replay_audit_action_check
    CHECK (action IN ('replay', 'dlq-replay', 'dlq-skip', 'backfill-retry', 'gap-skip'));
DROP TABLE req_heal_tally;
DROP TABLE req_seqn;
DROP INDEX req_track_origin;
DROP INDEX req_track_open;
ALTER TABLE req_track
    DROP CONSTRAINT req_track_scope_days,
    DROP COLUMN match_kind, DROP COLUMN close_reason, DROP COLUMN waiting_at, DROP COLUMN reason, DROP COLUMN actor,
    DROP COLUMN origin, DROP COLUMN scope_to, DROP COLUMN scope_from, DROP COLUMN out_xml,
    DROP COLUMN routing_id, DROP COLUMN msg_dttm, DROP COLUMN seqn;
UPDATE req_track SET status = 'SENT' WHERE status = 'WAITING';
DROP INDEX req_track_one_open;
CREATE UNIQUE INDEX req_track_one_open ON req_track (req_type, scope) WHERE status IN ('REGISTERED', 'SENT');
ALTER TABLE req_track DROP CONSTRAINT req_track_status_check;
ALTER TABLE req_track ADD CONSTRAINT req_track_status_check
    CHECK (status IN ('REGISTERED', 'SENT', 'DONE', 'EXPIRED'));
