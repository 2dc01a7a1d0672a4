-- migrate:up

-- Leadership epochs (pkg/leader). One row per role; the epoch grows by one on every takeover and
-- every protected transaction re-reads it FOR SHARE, so a paused old leader cannot commit.
CREATE TABLE leader_lease (
    role        text        PRIMARY KEY CHECK (role IN ('ingest', 'processor', 'dispatcher', 'jobs')),
    epoch       bigint      NOT NULL CHECK (epoch > 0),
    holder      text        NOT NULL,
    backend_pid integer     NOT NULL,
    acquired_at timestamptz NOT NULL,
    renewed_at  timestamptz NOT NULL
);

-- Ingest watermark W (single row) and the one open gap above it.
CREATE TABLE inbox_cursor (
    id                boolean     PRIMARY KEY DEFAULT true CHECK (id),
    watermark         bigint      NOT NULL DEFAULT 0 CHECK (watermark >= 0),
    gap_start         bigint      CHECK (gap_start > watermark),
    gap_first_seen_at timestamptz,
    updated_at        timestamptz NOT NULL DEFAULT now(),
    CHECK ((gap_start IS NULL) = (gap_first_seen_at IS NULL))
);
INSERT INTO inbox_cursor (id) VALUES (true);

-- Gap ledger: every mailbox id that W skipped because it never committed within the max commit
-- delay. Re-probed until reprobe_until; a row found later is enqueued and found_at is set.
CREATE TABLE inbox_gap (
    msg_id        bigint      PRIMARY KEY,
    first_seen_at timestamptz NOT NULL,
    skipped_at    timestamptz NOT NULL,
    reprobe_until timestamptz NOT NULL,
    found_at      timestamptz
);
CREATE INDEX inbox_gap_reprobe ON inbox_gap (reprobe_until) WHERE found_at IS NULL;

-- One row per mailbox message (msg_id = CMINMSGS_ID), with the verbatim raw text copy.
CREATE TABLE proc_state (
    msg_id                bigint      PRIMARY KEY,
    raw                   text,
    raw_sha256            bytea,
    status                text        NOT NULL DEFAULT 'PENDING'
                                      CHECK (status IN ('PENDING', 'FAILED', 'SUCCEEDED', 'SKIPPED', 'DEAD')),
    error_class           text        CHECK (error_class IN ('MALFORMED', 'PROTOCOL', 'CODEC_ERROR', 'UNSUPPORTED', 'INFRA', 'EXHAUSTED')),
    reason                text,
    attempts              integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at       timestamptz,
    identity_key          text        UNIQUE,
    content_differs       boolean     NOT NULL DEFAULT false,
    msg_type              text,
    msg_styp              text,
    received_at           timestamp,
    enqueued_at           timestamptz NOT NULL,
    late                  boolean     NOT NULL DEFAULT false,
    processing_started_at timestamptz,
    finished_at           timestamptz,
    backfill_next_at      timestamptz,
    backfill_attempts     integer     NOT NULL DEFAULT 0 CHECK (backfill_attempts >= 0),
    backfill_error        text,
    backfill_outcome      text        CHECK (backfill_outcome IN ('MARKED', 'ALREADY_MARKED', 'MISSING_ROW', 'OVERDUE')),
    backfill_done_at      timestamptz,
    backfill_abandoned_at timestamptz,
    -- INV-8: a marker is owed only by a terminal row.
    CONSTRAINT proc_state_marker_terminal CHECK (
        status IN ('SUCCEEDED', 'SKIPPED', 'DEAD')
        OR (backfill_next_at IS NULL AND backfill_done_at IS NULL AND backfill_abandoned_at IS NULL)),
    CONSTRAINT proc_state_terminal_finished CHECK (
        (status IN ('SUCCEEDED', 'SKIPPED', 'DEAD')) = (finished_at IS NOT NULL)),
    CONSTRAINT proc_state_failed_due CHECK (status <> 'FAILED' OR next_attempt_at IS NOT NULL)
);
-- The pump's head: the smallest open msg_id.
CREATE INDEX proc_state_open ON proc_state (msg_id) WHERE status IN ('PENDING', 'FAILED');
-- The backfill sweep's work list.
CREATE INDEX proc_state_marker_owed ON proc_state (backfill_next_at)
    WHERE backfill_next_at IS NOT NULL AND backfill_done_at IS NULL AND backfill_abandoned_at IS NULL;
CREATE INDEX proc_state_dead ON proc_state (error_class) WHERE status = 'DEAD';

-- Archive of old terminal proc_state rows (same columns, plus archived_at).
CREATE TABLE proc_state_hst (
    LIKE proc_state INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
    archived_at    timestamptz NOT NULL,
    raw_cleared_at timestamptz,
    PRIMARY KEY (msg_id),
    UNIQUE (identity_key)
);

-- Business identity bindings (SNDR|TYPE|STYP|SEQN[|day]). Never archived, so an identity stays
-- unique across proc_state and proc_state_hst by construction.
CREATE TABLE msg_identity (
    identity_key text        PRIMARY KEY,
    msg_id       bigint      NOT NULL UNIQUE,
    raw_sha256   bytea,
    bound_at     timestamptz NOT NULL
);

-- Transactional outbox (pkg/outbox, drained by the dispatcher).
CREATE TABLE msg_event (
    event_id        bigserial   PRIMARY KEY,
    target          text        NOT NULL CHECK (target IN ('KAFKA:msg', 'KAFKA:schd')),
    partition_key   text        NOT NULL,
    event_type      text        NOT NULL CHECK (event_type IN ('UPSERT', 'TOMBSTONE')),
    state_version   bigint      NOT NULL CHECK (state_version > 0),
    msg_id          bigint,
    payload         jsonb,
    status          text        NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'SENT', 'DEAD')),
    attempts        integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at timestamptz,
    created_at      timestamptz NOT NULL,
    sent_at         timestamptz,
    last_error      text,
    CHECK ((status = 'SENT') = (sent_at IS NOT NULL)),
    CHECK (event_type = 'TOMBSTONE' OR payload IS NOT NULL)
);
CREATE INDEX msg_event_unsent ON msg_event (target, partition_key, event_id) WHERE status <> 'SENT';
CREATE INDEX msg_event_sent ON msg_event (sent_at) WHERE status = 'SENT';

-- Flight state (FLIGHT_SCHD): one row per FLID; scalar fields of docs/sis.md §c.1.
-- Flight times are local airport wall-clock times as the AODB sends them (timestamp, no zone).
CREATE TABLE flight (
    flid          bigint      PRIMARY KEY,
    ffid          text,
    alcd          varchar(3),
    alsc          text,
    flno          varchar(12),
    mvin          char(1)     CHECK (mvin IN ('A', 'D')),
    sodt          timestamp,
    flty          text,
    flin          char(1),
    acft          text,
    reno          varchar(10),
    taop          text,
    tafl          text,
    taid          bigint,
    trml          varchar(5),
    maxp          integer,
    stnd          varchar(8),
    phag          bigint,
    fhag          bigint,
    mhag          bigint,
    exsc          text,
    exsr          text,
    ftss          varchar(8),
    fdiv_ddes     text,
    fdiv_ddir     text,
    fdiv_reason   text,
    fret_reid     text,
    fret_reason   text,
    flab_ares     text,
    flab_reason   text,
    csop          text,
    csft          text,
    maid          bigint,
    estt          timestamp,
    actt          timestamp,
    appt          timestamp,
    botm          timestamp,
    lacl          timestamp,
    fint          timestamp,
    cncl          timestamp,
    egsr          timestamp,
    egst          timestamp,
    pedt          timestamp,
    neat          timestamp,
    padt          timestamp,
    naat          timestamp,
    cobt          timestamp,
    tobt          timestamp,
    eobt          timestamp,
    iest          timestamp,
    ctot          timestamp,
    runw          varchar(8),
    port_open     timestamp,
    port_close    timestamp,
    remc          text,
    vipp          integer,
    vipr          text,
    lbno          integer,
    lbwt          numeric,
    paxc          integer,
    operation_day date,
    state         text        NOT NULL DEFAULT 'ACTIVE' CHECK (state IN ('ACTIVE', 'DELETED')),
    state_version bigint      NOT NULL DEFAULT 1 CHECK (state_version > 0),
    last_msg_id   bigint,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL
);
CREATE INDEX flight_operation_day ON flight (operation_day);
CREATE INDEX flight_maid ON flight (maid) WHERE maid IS NOT NULL;

-- Detail tables. Each keeps the source sequence number (or key) and the input order (ord).
CREATE TABLE flight_route (
    flid bigint   NOT NULL REFERENCES flight ON DELETE CASCADE,
    kind text     NOT NULL CHECK (kind IN ('ROUT', 'ERUT')),
    rtno integer  NOT NULL,
    ord  integer  NOT NULL,
    apcd text,
    scat timestamp,
    scdt timestamp,
    PRIMARY KEY (flid, kind, rtno)
);
CREATE TABLE flight_stand (
    flid bigint  NOT NULL REFERENCES flight ON DELETE CASCADE,
    psno integer NOT NULL,
    ord  integer NOT NULL,
    psst text,
    stst timestamp,
    stet timestamp,
    trtm timestamp,   -- TIPT patch: tractor in place
    pstm timestamp,   -- PSHT patch: push time
    psid text,        -- PSHT patch: push indicator
    pshn integer,     -- PSHT patch: its sequence number
    PRIMARY KEY (flid, psno)
);
CREATE TABLE flight_gate (
    flid bigint  NOT NULL REFERENCES flight ON DELETE CASCADE,
    gtno integer NOT NULL,
    ord  integer NOT NULL,
    gate text,
    pgot timestamp,
    pgct timestamp,
    gotm timestamp,
    gctm timestamp,
    gtyp text,
    PRIMARY KEY (flid, gtno)
);
CREATE TABLE flight_checkin (
    flid bigint  NOT NULL REFERENCES flight ON DELETE CASCADE,
    ckno integer NOT NULL,
    ord  integer NOT NULL,
    chkc text,
    ccls text,
    pcot timestamp,
    pcct timestamp,
    cotm timestamp,
    cctm timestamp,
    ctyp text,
    PRIMARY KEY (flid, ckno)
);
CREATE TABLE flight_carousel (
    flid bigint  NOT NULL REFERENCES flight ON DELETE CASCADE,
    clno integer NOT NULL,
    ord  integer NOT NULL,
    belt text,
    bcls text,
    pcot timestamp,
    pcct timestamp,
    fbag timestamp,
    lbag timestamp,
    btyp text,
    PRIMARY KEY (flid, clno)
);
CREATE TABLE flight_chute (
    flid bigint  NOT NULL REFERENCES flight ON DELETE CASCADE,
    chno integer NOT NULL,
    ord  integer NOT NULL,
    chut text,
    ccls text,
    pcbt timestamp,
    pcet timestamp,
    cbtm timestamp,
    cetm timestamp,
    ctyp text,
    PRIMARY KEY (flid, chno)
);
CREATE TABLE flight_chock (
    flid bigint  NOT NULL REFERENCES flight ON DELETE CASCADE,
    csno integer NOT NULL,
    ord  integer NOT NULL,
    chtm timestamp,
    chid text,
    chst text,
    PRIMARY KEY (flid, csno)
);
CREATE TABLE flight_airbridge (
    flid bigint  NOT NULL REFERENCES flight ON DELETE CASCADE,
    asno integer NOT NULL,
    ord  integer NOT NULL,
    abdg text,
    abop text,
    aotm timestamp,
    PRIMARY KEY (flid, asno)
);
CREATE TABLE flight_delay (
    flid     bigint  NOT NULL REFERENCES flight ON DELETE CASCADE,
    code     text    NOT NULL,
    ord      integer NOT NULL,
    strt     timestamp,
    dura_min integer,
    comment  text,
    PRIMARY KEY (flid, code)
);
CREATE TABLE flight_service (
    flid bigint  NOT NULL REFERENCES flight ON DELETE CASCADE,
    srtc text    NOT NULL,
    ord  integer NOT NULL,
    srqt text,
    srst timestamp,
    sret timestamp,
    srpr text,
    sanr text,
    sarr text,
    PRIMARY KEY (flid, srtc)
);
CREATE TABLE flight_vip (
    flid bigint  NOT NULL REFERENCES flight ON DELETE CASCADE,
    vpcd text    NOT NULL,
    ord  integer NOT NULL,
    vfes text,
    vipt jsonb    NOT NULL DEFAULT '[]',
    PRIMARY KEY (flid, vpcd)
);

-- Reference data (23 lists and SCHS).
CREATE TABLE ref_master (
    rtype          text        NOT NULL,
    rkey           text        NOT NULL,
    fields         jsonb       NOT NULL,
    version        bigint      NOT NULL DEFAULT 1 CHECK (version > 0),
    updated_by_msg bigint,
    updated_at     timestamptz NOT NULL,
    PRIMARY KEY (rtype, rkey)
);

-- Requests to the AODB (RQFD / RQRD).
CREATE TABLE req_track (
    req_id          bigserial   PRIMARY KEY,
    req_type        text        NOT NULL CHECK (req_type IN ('RQFD', 'RQRD')),
    scope           text        NOT NULL,
    sender          text        NOT NULL,
    out_msg_id      bigint,
    status          text        NOT NULL CHECK (status IN ('REGISTERED', 'SENT', 'DONE', 'EXPIRED')),
    registered_at   timestamptz NOT NULL,
    sent_at         timestamptz,
    done_at         timestamptz,
    closed_at       timestamptz,
    response_msg_id bigint,
    CHECK (status = 'REGISTERED' OR status = 'EXPIRED' OR sent_at IS NOT NULL),
    CHECK ((status IN ('DONE', 'EXPIRED')) = (closed_at IS NOT NULL))
);
CREATE UNIQUE INDEX req_track_one_open ON req_track (req_type, scope) WHERE status IN ('REGISTERED', 'SENT');

-- Audit of every schedule snapshot applied.
CREATE TABLE schd_snap_log (
    snap_id     bigserial   PRIMARY KEY,
    msg_id      bigint      NOT NULL,
    scope_start date,
    scope_end   date,
    recv_at     timestamp,
    inserted    integer     NOT NULL DEFAULT 0,
    updated     integer     NOT NULL DEFAULT 0,
    unchanged   integer     NOT NULL DEFAULT 0,
    applied_at  timestamptz NOT NULL
);
CREATE INDEX schd_snap_log_applied ON schd_snap_log (applied_at);

-- History store: the final state of each purged flight. A FLID reused after a purge gets a new row.
CREATE TABLE flight_history (
    history_id    bigserial   PRIMARY KEY,
    flid          bigint      NOT NULL,
    operation_day date,
    state_version bigint      NOT NULL,
    final_state   jsonb       NOT NULL,
    purge_reason  text        NOT NULL,
    purged_at     timestamptz NOT NULL
);
CREATE INDEX flight_history_flid ON flight_history (flid);
CREATE INDEX flight_history_purged ON flight_history (purged_at);

-- Who replayed or skipped what, when and why (messages and dead-lettered events).
CREATE TABLE replay_audit (
    audit_id   bigserial   PRIMARY KEY,
    action     text        NOT NULL CHECK (action IN ('replay', 'dlq-replay', 'dlq-skip', 'backfill-retry', 'gap-skip')),
    actor      text        NOT NULL,
    reason     text        NOT NULL,
    selector   text        NOT NULL,
    ids        bigint[]    NOT NULL,
    at         timestamptz NOT NULL
);

-- migrate:down
DROP TABLE replay_audit;
DROP TABLE flight_history;
DROP TABLE schd_snap_log;
DROP TABLE req_track;
DROP TABLE ref_master;
DROP TABLE flight_vip;
DROP TABLE flight_service;
DROP TABLE flight_delay;
DROP TABLE flight_airbridge;
DROP TABLE flight_chock;
DROP TABLE flight_chute;
DROP TABLE flight_carousel;
DROP TABLE flight_checkin;
DROP TABLE flight_gate;
DROP TABLE flight_stand;
DROP TABLE flight_route;
DROP TABLE flight;
DROP TABLE msg_event;
DROP TABLE msg_identity;
DROP TABLE proc_state_hst;
DROP TABLE proc_state;
DROP TABLE inbox_gap;
DROP TABLE inbox_cursor;
DROP TABLE leader_lease;
