

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: flight_operation_day_immutable(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.flight_operation_day_immutable() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF OLD.operation_day IS NOT NULL AND NEW.operation_day IS DISTINCT FROM OLD.operation_day THEN
        RAISE EXCEPTION 'flight %: operation_day % is immutable (got %)', OLD.flid, OLD.operation_day, NEW.operation_day
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;


--
-- Name: msg_attempt_cascade(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.msg_attempt_cascade() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    DELETE FROM msg_attempt a
     WHERE a.msg_id IN (SELECT o.msg_id FROM gone o)
       AND NOT EXISTS (SELECT 1 FROM proc_state p WHERE p.msg_id = a.msg_id);
    RETURN NULL;
END $$;


--
-- Name: msgx_change_cursor(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.msgx_change_cursor() RETURNS bigint
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
  SELECT coalesce(max(through), 0) FROM msg_event_delivered
$$;


--
-- Name: msgx_event_id(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.msgx_event_id() RETURNS bigint
    LANGUAGE sql
    AS $$
  SELECT ((msgx_timeline() + 0) << 40) + nextval('msg_event_event_id_seq')
$$;


--
-- Name: msgx_id_generation(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.msgx_id_generation() RETURNS bigint
    LANGUAGE sql
    AS $$
  SELECT msgx_timeline() + (SELECT epoch FROM db_epoch)
$$;


--
-- Name: msgx_leave_debts(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.msgx_leave_debts() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    UPDATE marker_debt SET ids = array_remove(ids, OLD.msg_id) WHERE ids @> ARRAY[OLD.msg_id] AND cardinality(ids) > 1;
    DELETE FROM marker_debt WHERE ids = ARRAY[OLD.msg_id]; -- a debt never names no row
    RETURN NULL;
END $$;


--
-- Name: msgx_lock_debts(bigint[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.msgx_lock_debts(msg_ids bigint[]) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    PERFORM 1 FROM marker_debt WHERE ids && msg_ids ORDER BY debt_id FOR UPDATE;
END $$;


--
-- Name: msgx_passed(bigint, bigint); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.msgx_passed(id bigint, cursor bigint) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
  SELECT id <= cursor AND (id & 1099511627775) <= (cursor & 1099511627775)
$$;


--
-- Name: msgx_raise_epoch(bigint); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.msgx_raise_epoch(new_epoch bigint) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $_$
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
$_$;


--
-- Name: msgx_system_identifier(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.msgx_system_identifier() RETURNS bigint
    LANGUAGE plpgsql
    AS $$
BEGIN
  RETURN (SELECT system_identifier FROM pg_control_system());
EXCEPTION WHEN insufficient_privilege THEN
  RETURN NULL;
END
$$;


--
-- Name: msgx_take_legacy_states(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.msgx_take_legacy_states() RETURNS TABLE(event_id bigint, partition_key text, event_type text, state_version bigint, msg_id bigint, body text, created_at timestamp with time zone)
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
  DELETE FROM msg_event e WHERE e.target = 'KAFKA:schd' AND e.status IN ('QUEUED', 'PENDING', 'DEAD')
  RETURNING e.event_id, e.partition_key, e.event_type, e.state_version, e.msg_id, COALESCE(e.body, e.payload::text), e.created_at
$$;


--
-- Name: msgx_timeline(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.msgx_timeline() RETURNS bigint
    LANGUAGE sql
    AS $$
  SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint
$$;


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: console_form; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.console_form (
    form_id text NOT NULL,
    req_id bigint,
    created_at timestamp with time zone NOT NULL
);


--
-- Name: console_note; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.console_note (
    note_id bigint NOT NULL,
    msg_id bigint NOT NULL,
    actor text NOT NULL,
    note text NOT NULL,
    acknowledged boolean NOT NULL,
    at timestamp with time zone NOT NULL
);


--
-- Name: console_note_note_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.console_note_note_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: console_note_note_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.console_note_note_id_seq OWNED BY public.console_note.note_id;


--
-- Name: console_session; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.console_session (
    session_sha256 bytea NOT NULL,
    user_name text NOT NULL,
    scope text NOT NULL,
    token_sha256 bytea NOT NULL,
    created_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    revoked_at timestamp with time zone,
    oidc_groups text[]
);


--
-- Name: db_epoch; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.db_epoch (
    one boolean DEFAULT true NOT NULL,
    epoch bigint DEFAULT 0 NOT NULL,
    system_identifier bigint,
    timeline bigint,
    seen_at timestamp with time zone,
    refused_at timestamp with time zone,
    refused_kafka_event_id bigint,
    confirmed_by text,
    confirmed_reason text,
    confirmed_at timestamp with time zone,
    CONSTRAINT db_epoch_check CHECK ((((confirmed_at IS NULL) = (confirmed_by IS NULL)) AND ((confirmed_at IS NULL) = (confirmed_reason IS NULL)))),
    CONSTRAINT db_epoch_check1 CHECK (((refused_at IS NULL) = (refused_kafka_event_id IS NULL))),
    CONSTRAINT db_epoch_epoch_check CHECK ((epoch >= 0)),
    CONSTRAINT db_epoch_one_check CHECK (one)
);


--
-- Name: db_restore; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.db_restore (
    epoch bigint NOT NULL,
    previous_epoch bigint NOT NULL,
    raised_at timestamp with time zone NOT NULL,
    kind text NOT NULL,
    detail text NOT NULL,
    system_identifier bigint,
    timeline bigint NOT NULL,
    kafka_event_id bigint NOT NULL,
    renumbered bigint NOT NULL,
    CONSTRAINT db_restore_check CHECK ((epoch > previous_epoch)),
    CONSTRAINT db_restore_kind_check CHECK ((kind = ANY (ARRAY['ids-behind'::text, 'other-cluster'::text, 'older-timeline'::text, 'confirmed'::text]))),
    CONSTRAINT db_restore_renumbered_check CHECK ((renumbered >= 0))
);


--
-- Name: db_timeline; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.db_timeline (
    timeline bigint NOT NULL,
    first_seen_at timestamp with time zone NOT NULL
);


--
-- Name: dispatch_send; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.dispatch_send (
    target text NOT NULL,
    topic text NOT NULL,
    epoch bigint NOT NULL,
    blocked_since timestamp with time zone,
    error_class text,
    error text,
    brokers text[] DEFAULT '{}'::text[] NOT NULL,
    brokers_silent boolean DEFAULT false NOT NULL,
    last_sent_at timestamp with time zone,
    stall_after interval NOT NULL,
    report_every interval NOT NULL,
    reported_at timestamp with time zone NOT NULL,
    CONSTRAINT dispatch_send_check CHECK (((blocked_since IS NULL) = (error_class IS NULL))),
    CONSTRAINT dispatch_send_target_check CHECK ((target = ANY (ARRAY['KAFKA:msg'::text, 'KAFKA:schd'::text])))
);


--
-- Name: flight; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.flight (
    flid bigint NOT NULL,
    ffid text,
    alcd character varying(3),
    alsc text,
    flno character varying(12),
    mvin character(1),
    sodt timestamp without time zone,
    flty text,
    flin character(1),
    acft text,
    reno character varying(10),
    taop text,
    tafl text,
    taid bigint,
    trml character varying(5),
    maxp integer,
    stnd character varying(8),
    phag bigint,
    fhag bigint,
    mhag bigint,
    exsc text,
    exsr text,
    ftss character varying(8),
    fdiv_ddes text,
    fdiv_ddir text,
    fdiv_reason text,
    fret_reid text,
    fret_reason text,
    flab_ares text,
    flab_reason text,
    csop text,
    csft text,
    maid bigint,
    estt timestamp without time zone,
    actt timestamp without time zone,
    appt timestamp without time zone,
    botm timestamp without time zone,
    lacl timestamp without time zone,
    fint timestamp without time zone,
    cncl timestamp without time zone,
    egsr timestamp without time zone,
    egst timestamp without time zone,
    pedt timestamp without time zone,
    neat timestamp without time zone,
    padt timestamp without time zone,
    naat timestamp without time zone,
    cobt timestamp without time zone,
    tobt timestamp without time zone,
    eobt timestamp without time zone,
    iest timestamp without time zone,
    ctot timestamp without time zone,
    runw character varying(8),
    port_open timestamp without time zone,
    port_close timestamp without time zone,
    remc text,
    vipp integer,
    vipr text,
    lbno integer,
    lbwt numeric,
    paxc integer,
    operation_day date,
    state text DEFAULT 'ACTIVE'::text NOT NULL,
    state_version bigint DEFAULT 1 NOT NULL,
    last_msg_id bigint,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    prov text,
    CONSTRAINT flight_mvin_check CHECK ((mvin = ANY (ARRAY['A'::bpchar, 'D'::bpchar]))),
    CONSTRAINT flight_state_check CHECK ((state = ANY (ARRAY['ACTIVE'::text, 'DELETED'::text]))),
    CONSTRAINT flight_state_version_check CHECK ((state_version > 0))
);


--
-- Name: flight_airbridge; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.flight_airbridge (
    flid bigint NOT NULL,
    asno integer NOT NULL,
    ord integer NOT NULL,
    abdg text,
    abop text,
    aotm timestamp without time zone
);


--
-- Name: flight_carousel; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.flight_carousel (
    flid bigint NOT NULL,
    clno integer NOT NULL,
    ord integer NOT NULL,
    belt text,
    bcls text,
    pcot timestamp without time zone,
    pcct timestamp without time zone,
    fbag timestamp without time zone,
    lbag timestamp without time zone,
    btyp text
);


--
-- Name: flight_checkin; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.flight_checkin (
    flid bigint NOT NULL,
    ckno integer NOT NULL,
    ord integer NOT NULL,
    chkc text,
    ccls text,
    pcot timestamp without time zone,
    pcct timestamp without time zone,
    cotm timestamp without time zone,
    cctm timestamp without time zone,
    ctyp text
);


--
-- Name: flight_chock; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.flight_chock (
    flid bigint NOT NULL,
    csno integer NOT NULL,
    ord integer NOT NULL,
    chtm timestamp without time zone,
    chid text,
    chst text
);


--
-- Name: flight_chute; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.flight_chute (
    flid bigint NOT NULL,
    chno integer NOT NULL,
    ord integer NOT NULL,
    chut text,
    ccls text,
    pcbt timestamp without time zone,
    pcet timestamp without time zone,
    cbtm timestamp without time zone,
    cetm timestamp without time zone,
    ctyp text
);


--
-- Name: flight_delay; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.flight_delay (
    flid bigint NOT NULL,
    code text NOT NULL,
    ord integer NOT NULL,
    strt timestamp without time zone,
    dura_min integer,
    comment text
);


--
-- Name: flight_gate; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.flight_gate (
    flid bigint NOT NULL,
    gtno integer NOT NULL,
    ord integer NOT NULL,
    gate text,
    pgot timestamp without time zone,
    pgct timestamp without time zone,
    gotm timestamp without time zone,
    gctm timestamp without time zone,
    gtyp text
);


--
-- Name: flight_history; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.flight_history (
    history_id bigint NOT NULL,
    flid bigint NOT NULL,
    operation_day date,
    state_version bigint NOT NULL,
    final_state jsonb NOT NULL,
    purge_reason text NOT NULL,
    purged_at timestamp with time zone NOT NULL
);


--
-- Name: flight_history_history_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.flight_history_history_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: flight_history_history_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.flight_history_history_id_seq OWNED BY public.flight_history.history_id;


--
-- Name: flight_route; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.flight_route (
    flid bigint NOT NULL,
    kind text NOT NULL,
    rtno integer NOT NULL,
    ord integer NOT NULL,
    apcd text,
    scat timestamp without time zone,
    scdt timestamp without time zone,
    CONSTRAINT flight_route_kind_check CHECK ((kind = ANY (ARRAY['ROUT'::text, 'ERUT'::text])))
);


--
-- Name: flight_service; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.flight_service (
    flid bigint NOT NULL,
    srtc text NOT NULL,
    ord integer NOT NULL,
    srqt text,
    srst timestamp without time zone,
    sret timestamp without time zone,
    srpr text,
    sanr text,
    sarr text
);


--
-- Name: flight_stand; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.flight_stand (
    flid bigint NOT NULL,
    psno integer NOT NULL,
    ord integer NOT NULL,
    psst text,
    stst timestamp without time zone,
    stet timestamp without time zone,
    trtm timestamp without time zone,
    pstm timestamp without time zone,
    psid text,
    pshn integer
);


--
-- Name: flight_vip; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.flight_vip (
    flid bigint NOT NULL,
    vpcd text NOT NULL,
    ord integer NOT NULL,
    vfes text,
    vipt jsonb DEFAULT '[]'::jsonb NOT NULL
);


--
-- Name: identity_rule; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.identity_rule (
    one boolean DEFAULT true NOT NULL,
    window_seconds bigint NOT NULL,
    include_day boolean NOT NULL,
    set_at timestamp with time zone NOT NULL,
    set_by text NOT NULL,
    reason text NOT NULL,
    CONSTRAINT identity_rule_one_check CHECK (one),
    CONSTRAINT identity_rule_window_seconds_check CHECK ((window_seconds > 0))
);


--
-- Name: inbox_cursor; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.inbox_cursor (
    id boolean DEFAULT true NOT NULL,
    watermark bigint DEFAULT 0 NOT NULL,
    gap_start bigint,
    gap_first_seen_at timestamp with time zone,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    gap_horizon bigint,
    max_commit_delay interval,
    CONSTRAINT inbox_cursor_check CHECK ((gap_start > watermark)),
    CONSTRAINT inbox_cursor_check1 CHECK (((gap_start IS NULL) = (gap_first_seen_at IS NULL))),
    CONSTRAINT inbox_cursor_id_check CHECK (id),
    CONSTRAINT inbox_cursor_max_commit_delay_check CHECK ((max_commit_delay > '00:00:00'::interval)),
    CONSTRAINT inbox_cursor_watermark_check CHECK ((watermark >= 0))
);


--
-- Name: inbox_gap; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.inbox_gap (
    msg_id bigint NOT NULL,
    first_seen_at timestamp with time zone NOT NULL,
    skipped_at timestamp with time zone NOT NULL,
    reprobe_until timestamp with time zone NOT NULL,
    found_at timestamp with time zone,
    passed_by text DEFAULT 'aged'::text NOT NULL,
    CONSTRAINT inbox_gap_passed_by_check CHECK ((passed_by = ANY (ARRAY['aged'::text, 'proved'::text])))
);


--
-- Name: job_state; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.job_state (
    job text NOT NULL,
    last_started_at timestamp with time zone,
    last_finished_at timestamp with time zone,
    last_selected bigint DEFAULT 0 NOT NULL,
    last_error text,
    done_day date,
    requested_at timestamp with time zone,
    requested_by text,
    CONSTRAINT job_state_job_check CHECK ((job = ANY (ARRAY['backfill'::text, 'history'::text, 'retention'::text])))
);


--
-- Name: leader_lease; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.leader_lease (
    role text NOT NULL,
    epoch bigint NOT NULL,
    holder text NOT NULL,
    backend_pid integer NOT NULL,
    acquired_at timestamp with time zone NOT NULL,
    renewed_at timestamp with time zone NOT NULL,
    CONSTRAINT leader_lease_epoch_check CHECK ((epoch > 0)),
    CONSTRAINT leader_lease_role_check CHECK ((role = ANY (ARRAY['ingest'::text, 'processor'::text, 'dispatcher'::text, 'jobs'::text])))
);


--
-- Name: leader_lease_member; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.leader_lease_member (
    db_role name NOT NULL,
    role text NOT NULL,
    CONSTRAINT leader_lease_member_role_check CHECK ((role = ANY (ARRAY['ingest'::text, 'processor'::text, 'dispatcher'::text, 'jobs'::text])))
);


--
-- Name: proc_state; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.proc_state (
    msg_id bigint NOT NULL,
    raw text,
    raw_sha256 bytea,
    status text DEFAULT 'PENDING'::text NOT NULL,
    error_class text,
    reason text,
    attempts integer DEFAULT 0 NOT NULL,
    next_attempt_at timestamp with time zone,
    identity_key text,
    content_differs boolean DEFAULT false NOT NULL,
    msg_type text,
    msg_styp text,
    received_at timestamp without time zone,
    enqueued_at timestamp with time zone NOT NULL,
    late boolean DEFAULT false NOT NULL,
    processing_started_at timestamp with time zone,
    finished_at timestamp with time zone,
    backfill_next_at timestamp with time zone,
    backfill_attempts integer DEFAULT 0 NOT NULL,
    backfill_error text,
    backfill_outcome text,
    backfill_done_at timestamp with time zone,
    backfill_abandoned_at timestamp with time zone,
    processing_through bigint,
    crashes integer DEFAULT 0 NOT NULL,
    deaths integer DEFAULT 0 NOT NULL,
    raw_bytes bytea,
    outcome_epoch bigint,
    replay_forced boolean DEFAULT false NOT NULL,
    CONSTRAINT proc_state_attempts_check CHECK ((attempts >= 0)),
    CONSTRAINT proc_state_backfill_attempts_check CHECK ((backfill_attempts >= 0)),
    CONSTRAINT proc_state_backfill_outcome_check CHECK ((backfill_outcome = ANY (ARRAY['MARKED'::text, 'ALREADY_MARKED'::text, 'MISSING_ROW'::text, 'OVERDUE'::text]))),
    CONSTRAINT proc_state_crashes_check CHECK ((crashes >= 0)),
    CONSTRAINT proc_state_deaths_check CHECK ((deaths >= 0)),
    CONSTRAINT proc_state_error_class_check CHECK ((error_class = ANY (ARRAY['MALFORMED'::text, 'PROTOCOL'::text, 'CODEC_ERROR'::text, 'UNSUPPORTED'::text, 'INFRA'::text, 'EXHAUSTED'::text]))),
    CONSTRAINT proc_state_failed_due CHECK (((status <> 'FAILED'::text) OR (next_attempt_at IS NOT NULL))),
    CONSTRAINT proc_state_marker_terminal CHECK (((status = ANY (ARRAY['SUCCEEDED'::text, 'SKIPPED'::text, 'DEAD'::text])) OR ((backfill_next_at IS NULL) AND (backfill_done_at IS NULL) AND (backfill_abandoned_at IS NULL)))),
    CONSTRAINT proc_state_status_check CHECK ((status = ANY (ARRAY['PENDING'::text, 'FAILED'::text, 'SUCCEEDED'::text, 'SKIPPED'::text, 'DEAD'::text]))),
    CONSTRAINT proc_state_terminal_finished CHECK (((status = ANY (ARRAY['SUCCEEDED'::text, 'SKIPPED'::text, 'DEAD'::text])) = (finished_at IS NOT NULL)))
);


--
-- Name: proc_state_hst; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.proc_state_hst (
    msg_id bigint NOT NULL,
    raw text,
    raw_sha256 bytea,
    status text DEFAULT 'PENDING'::text NOT NULL,
    error_class text,
    reason text,
    attempts integer DEFAULT 0 NOT NULL,
    next_attempt_at timestamp with time zone,
    identity_key text,
    content_differs boolean DEFAULT false NOT NULL,
    msg_type text,
    msg_styp text,
    received_at timestamp without time zone,
    enqueued_at timestamp with time zone NOT NULL,
    late boolean DEFAULT false NOT NULL,
    processing_started_at timestamp with time zone,
    finished_at timestamp with time zone,
    backfill_next_at timestamp with time zone,
    backfill_attempts integer DEFAULT 0 NOT NULL,
    backfill_error text,
    backfill_outcome text,
    backfill_done_at timestamp with time zone,
    backfill_abandoned_at timestamp with time zone,
    archived_at timestamp with time zone NOT NULL,
    raw_cleared_at timestamp with time zone,
    processing_through bigint,
    crashes integer DEFAULT 0 NOT NULL,
    deaths integer DEFAULT 0 NOT NULL,
    raw_bytes bytea,
    outcome_epoch bigint,
    replay_forced boolean DEFAULT false NOT NULL,
    CONSTRAINT proc_state_attempts_check CHECK ((attempts >= 0)),
    CONSTRAINT proc_state_backfill_attempts_check CHECK ((backfill_attempts >= 0)),
    CONSTRAINT proc_state_backfill_outcome_check CHECK ((backfill_outcome = ANY (ARRAY['MARKED'::text, 'ALREADY_MARKED'::text, 'MISSING_ROW'::text, 'OVERDUE'::text]))),
    CONSTRAINT proc_state_error_class_check CHECK ((error_class = ANY (ARRAY['MALFORMED'::text, 'PROTOCOL'::text, 'CODEC_ERROR'::text, 'UNSUPPORTED'::text, 'INFRA'::text, 'EXHAUSTED'::text]))),
    CONSTRAINT proc_state_failed_due CHECK (((status <> 'FAILED'::text) OR (next_attempt_at IS NOT NULL))),
    CONSTRAINT proc_state_hst_crashes_check CHECK ((crashes >= 0)),
    CONSTRAINT proc_state_hst_deaths_check CHECK ((deaths >= 0)),
    CONSTRAINT proc_state_marker_terminal CHECK (((status = ANY (ARRAY['SUCCEEDED'::text, 'SKIPPED'::text, 'DEAD'::text])) OR ((backfill_next_at IS NULL) AND (backfill_done_at IS NULL) AND (backfill_abandoned_at IS NULL)))),
    CONSTRAINT proc_state_status_check CHECK ((status = ANY (ARRAY['PENDING'::text, 'FAILED'::text, 'SUCCEEDED'::text, 'SKIPPED'::text, 'DEAD'::text]))),
    CONSTRAINT proc_state_terminal_finished CHECK (((status = ANY (ARRAY['SUCCEEDED'::text, 'SKIPPED'::text, 'DEAD'::text])) = (finished_at IS NOT NULL)))
);


--
-- Name: marker_abandoned; Type: VIEW; Schema: public; Owner: -
--

CREATE VIEW public.marker_abandoned AS
 SELECT proc_state.msg_id,
    proc_state.backfill_abandoned_at AS abandoned_at,
    false AS archived
   FROM public.proc_state
  WHERE ((proc_state.backfill_abandoned_at IS NOT NULL) AND (proc_state.backfill_done_at IS NULL))
UNION ALL
 SELECT proc_state_hst.msg_id,
    proc_state_hst.backfill_abandoned_at AS abandoned_at,
    true AS archived
   FROM public.proc_state_hst
  WHERE ((proc_state_hst.backfill_abandoned_at IS NOT NULL) AND (proc_state_hst.backfill_done_at IS NULL));


--
-- Name: marker_debt; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.marker_debt (
    debt_id bigint NOT NULL,
    ids bigint[] NOT NULL,
    finished_at timestamp with time zone NOT NULL,
    CONSTRAINT marker_debt_ids_check CHECK ((cardinality(ids) > 0))
);


--
-- Name: marker_debt_debt_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.marker_debt ALTER COLUMN debt_id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.marker_debt_debt_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: marker_owed; Type: VIEW; Schema: public; Owner: -
--

CREATE VIEW public.marker_owed AS
 SELECT proc_state.msg_id,
    proc_state.finished_at AS owed_since,
    false AS in_batch
   FROM public.proc_state
  WHERE ((proc_state.backfill_next_at IS NOT NULL) AND (proc_state.backfill_done_at IS NULL) AND (proc_state.backfill_abandoned_at IS NULL))
UNION ALL
 SELECT p.msg_id,
    min(d.finished_at) AS owed_since,
    true AS in_batch
   FROM ((public.marker_debt d
     CROSS JOIN LATERAL unnest(d.ids) u(id))
     JOIN public.proc_state p ON ((p.msg_id = u.id)))
  WHERE ((p.status = ANY (ARRAY['SUCCEEDED'::text, 'SKIPPED'::text, 'DEAD'::text])) AND (p.backfill_next_at IS NULL) AND (p.backfill_done_at IS NULL) AND (p.backfill_abandoned_at IS NULL))
  GROUP BY p.msg_id;


--
-- Name: msg_attempt; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.msg_attempt (
    attempt_id bigint NOT NULL,
    msg_id bigint NOT NULL,
    attempt integer NOT NULL,
    at timestamp with time zone NOT NULL,
    epoch bigint NOT NULL,
    outcome text NOT NULL,
    error_class text,
    reason text,
    meta jsonb,
    CONSTRAINT msg_attempt_attempt_check CHECK ((attempt >= 0)),
    CONSTRAINT msg_attempt_outcome_check CHECK ((outcome = ANY (ARRAY['SUCCEEDED'::text, 'SKIPPED'::text, 'DEAD'::text, 'FAILED'::text, 'CRASHED'::text, 'DIED'::text, 'INTERRUPTED'::text, 'BATCH_FAILED'::text])))
);


--
-- Name: msg_attempt_attempt_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.msg_attempt ALTER COLUMN attempt_id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.msg_attempt_attempt_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: msg_event; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.msg_event (
    event_id bigint DEFAULT public.msgx_event_id() NOT NULL,
    target text NOT NULL,
    partition_key text NOT NULL,
    event_type text NOT NULL,
    state_version bigint NOT NULL,
    msg_id bigint,
    payload jsonb,
    status text DEFAULT 'QUEUED'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    next_attempt_at timestamp with time zone,
    created_at timestamp with time zone NOT NULL,
    sent_at timestamp with time zone,
    last_error text,
    body text,
    CONSTRAINT msg_event_attempts_check CHECK ((attempts >= 0)),
    CONSTRAINT msg_event_check CHECK (((status = 'SENT'::text) = (sent_at IS NOT NULL))),
    CONSTRAINT msg_event_event_type_check CHECK ((event_type = ANY (ARRAY['UPSERT'::text, 'TOMBSTONE'::text]))),
    CONSTRAINT msg_event_state_version_check CHECK ((state_version > 0)),
    CONSTRAINT msg_event_target_check CHECK ((target = ANY (ARRAY['KAFKA:msg'::text, 'KAFKA:schd'::text])))
);
ALTER TABLE ONLY public.msg_event ALTER COLUMN body SET COMPRESSION lz4;


--
-- Name: msg_event_delivered; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.msg_event_delivered (
    through bigint NOT NULL,
    sent_at timestamp with time zone NOT NULL
);


--
-- Name: msg_event_delivery; Type: VIEW; Schema: public; Owner: -
--

CREATE VIEW public.msg_event_delivery AS
 SELECT e.event_id,
    e.target,
    e.partition_key,
    e.event_type,
    e.state_version,
    e.msg_id,
    e.payload,
    e.body,
        CASE
            WHEN (e.status <> 'QUEUED'::text) THEN e.status
            WHEN (d.through IS NULL) THEN 'PENDING'::text
            ELSE 'SENT'::text
        END AS status,
    e.attempts,
    e.next_attempt_at,
    e.created_at,
        CASE
            WHEN (e.status <> 'QUEUED'::text) THEN e.sent_at
            ELSE d.sent_at
        END AS sent_at,
    e.last_error
   FROM (public.msg_event e
     LEFT JOIN LATERAL ( SELECT x.through,
            x.sent_at
           FROM public.msg_event_delivered x
          WHERE ((e.status = 'QUEUED'::text) AND (e.target = 'KAFKA:msg'::text) AND (x.through >= e.event_id) AND public.msgx_passed(e.event_id, x.through))
          ORDER BY x.through
         LIMIT 1) d ON (true));


--
-- Name: msg_event_event_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.msg_event_event_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    MAXVALUE 1099511627775
    CACHE 1;


--
-- Name: msg_event_event_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.msg_event_event_id_seq OWNED BY public.msg_event.event_id;


--
-- Name: msg_identity; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.msg_identity (
    identity_key text NOT NULL,
    msg_id bigint NOT NULL,
    raw_sha256 bytea,
    bound_at timestamp with time zone NOT NULL,
    dttm timestamp with time zone NOT NULL
);


--
-- Name: msg_kafka_held; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.msg_kafka_held (
    partition_key text NOT NULL,
    state_version bigint NOT NULL,
    event_id bigint NOT NULL,
    value_sha256 bytea NOT NULL,
    record_time timestamp with time zone NOT NULL,
    stored boolean NOT NULL
);


--
-- Name: msg_state_log; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.msg_state_log (
    event_id bigint DEFAULT public.msgx_event_id() NOT NULL,
    partition_key text NOT NULL,
    event_type text NOT NULL,
    state_version bigint NOT NULL,
    msg_id bigint,
    body text,
    created_at timestamp with time zone NOT NULL,
    CONSTRAINT msg_state_log_check CHECK (((event_type = 'TOMBSTONE'::text) OR (body IS NOT NULL))),
    CONSTRAINT msg_state_log_event_type_check CHECK ((event_type = ANY (ARRAY['UPSERT'::text, 'TOMBSTONE'::text]))),
    CONSTRAINT msg_state_log_state_version_check CHECK ((state_version > 0))
);
ALTER TABLE ONLY public.msg_state_log ALTER COLUMN body SET COMPRESSION lz4;


--
-- Name: msg_state_out; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.msg_state_out (
    partition_key text NOT NULL,
    event_id bigint NOT NULL,
    event_type text NOT NULL,
    state_version bigint NOT NULL,
    msg_id bigint,
    body text,
    status text DEFAULT 'PENDING'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    next_attempt_at timestamp with time zone,
    created_at timestamp with time zone NOT NULL,
    pending_since timestamp with time zone NOT NULL,
    sent_at timestamp with time zone,
    last_error text,
    CONSTRAINT msg_state_out_attempts_check CHECK ((attempts >= 0)),
    CONSTRAINT msg_state_out_check CHECK (((status = 'SENT'::text) = (sent_at IS NOT NULL))),
    CONSTRAINT msg_state_out_check1 CHECK (((event_type = 'TOMBSTONE'::text) OR (body IS NOT NULL))),
    CONSTRAINT msg_state_out_event_type_check CHECK ((event_type = ANY (ARRAY['UPSERT'::text, 'TOMBSTONE'::text]))),
    CONSTRAINT msg_state_out_state_version_check CHECK ((state_version > 0)),
    CONSTRAINT msg_state_out_status_check CHECK ((status = ANY (ARRAY['PENDING'::text, 'SENT'::text, 'DEAD'::text, 'SKIPPED'::text])))
)
WITH (fillfactor='50');
ALTER TABLE ONLY public.msg_state_out ALTER COLUMN body SET COMPRESSION lz4;


--
-- Name: msg_state_sent; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.msg_state_sent (
    partition_key text NOT NULL,
    state_version bigint NOT NULL,
    sent_at timestamp with time zone NOT NULL,
    CONSTRAINT msg_state_sent_state_version_check CHECK ((state_version > 0))
);


--
-- Name: ref_master; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.ref_master (
    rtype text NOT NULL,
    rkey text NOT NULL,
    fields jsonb NOT NULL,
    version bigint DEFAULT 1 NOT NULL,
    updated_by_msg bigint,
    updated_at timestamp with time zone NOT NULL,
    CONSTRAINT ref_master_version_check CHECK ((version > 0))
);


--
-- Name: replay_audit; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.replay_audit (
    audit_id bigint NOT NULL,
    action text NOT NULL,
    actor text NOT NULL,
    reason text NOT NULL,
    selector text NOT NULL,
    ids bigint[] NOT NULL,
    at timestamp with time zone NOT NULL,
    errors text[],
    CONSTRAINT replay_audit_action_check CHECK ((action = ANY (ARRAY['replay'::text, 'replay-forced'::text, 'dlq-replay'::text, 'dlq-skip'::text, 'backfill-retry'::text, 'gap-skip'::text, 'request'::text, 'identity-set'::text, 'db-restored'::text, 'kafka-reseed'::text, 'acknowledge'::text, 'note'::text, 'token-revoke'::text])))
);


--
-- Name: replay_audit_audit_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.replay_audit_audit_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: replay_audit_audit_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.replay_audit_audit_id_seq OWNED BY public.replay_audit.audit_id;


--
-- Name: req_heal_tally; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.req_heal_tally (
    operation_day date NOT NULL,
    unknown integer NOT NULL,
    window_start timestamp with time zone NOT NULL,
    CONSTRAINT req_heal_tally_unknown_check CHECK ((unknown >= 0))
);


--
-- Name: req_open_day; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.req_open_day (
    req_type text NOT NULL,
    sender text NOT NULL,
    operation_day date NOT NULL,
    req_id bigint NOT NULL,
    CONSTRAINT req_open_day_req_type_check CHECK ((req_type = 'RQFD'::text))
);


--
-- Name: req_seqn; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.req_seqn (
    singleton boolean DEFAULT true NOT NULL,
    last integer NOT NULL,
    CONSTRAINT req_seqn_last_check CHECK (((last >= 0) AND (last <= 999999))),
    CONSTRAINT req_seqn_singleton_check CHECK (singleton)
);


--
-- Name: req_track; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.req_track (
    req_id bigint NOT NULL,
    req_type text NOT NULL,
    scope text NOT NULL,
    sender text NOT NULL,
    out_msg_id bigint,
    status text NOT NULL,
    registered_at timestamp with time zone NOT NULL,
    sent_at timestamp with time zone,
    done_at timestamp with time zone,
    closed_at timestamp with time zone,
    response_msg_id bigint,
    seqn integer,
    msg_dttm timestamp with time zone,
    routing_id text,
    out_xml text,
    scope_from date,
    scope_to date,
    origin text DEFAULT 'operator'::text NOT NULL,
    actor text,
    reason text,
    waiting_at timestamp with time zone,
    close_reason text,
    match_kind text,
    match_skew interval,
    CONSTRAINT req_track_check CHECK (((status = 'REGISTERED'::text) OR (status = 'EXPIRED'::text) OR (sent_at IS NOT NULL))),
    CONSTRAINT req_track_check1 CHECK (((status = ANY (ARRAY['DONE'::text, 'EXPIRED'::text])) = (closed_at IS NOT NULL))),
    CONSTRAINT req_track_match_kind_check CHECK ((match_kind = ANY (ARRAY['echo'::text, 'fallback'::text]))),
    CONSTRAINT req_track_match_skew_check CHECK ((match_skew > '00:00:00'::interval)),
    CONSTRAINT req_track_origin_check CHECK ((origin = ANY (ARRAY['operator'::text, 'bootstrap'::text, 'self-heal'::text]))),
    CONSTRAINT req_track_req_type_check CHECK ((req_type = ANY (ARRAY['RQFD'::text, 'RQRD'::text]))),
    CONSTRAINT req_track_scope_days CHECK (((req_type <> 'RQFD'::text) OR (scope_from <= scope_to))),
    CONSTRAINT req_track_seqn_check CHECK (((seqn >= 0) AND (seqn <= 999999))),
    CONSTRAINT req_track_status_check CHECK ((status = ANY (ARRAY['REGISTERED'::text, 'SENT'::text, 'WAITING'::text, 'DONE'::text, 'EXPIRED'::text])))
);


--
-- Name: req_track_req_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.req_track_req_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: req_track_req_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.req_track_req_id_seq OWNED BY public.req_track.req_id;


--
-- Name: schd_snap_log; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.schd_snap_log (
    snap_id bigint NOT NULL,
    msg_id bigint NOT NULL,
    scope_start date,
    scope_end date,
    recv_at timestamp without time zone,
    inserted integer DEFAULT 0 NOT NULL,
    updated integer DEFAULT 0 NOT NULL,
    unchanged integer DEFAULT 0 NOT NULL,
    applied_at timestamp with time zone NOT NULL
);


--
-- Name: schd_snap_log_snap_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.schd_snap_log_snap_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: schd_snap_log_snap_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.schd_snap_log_snap_id_seq OWNED BY public.schd_snap_log.snap_id;


--
-- Name: schema_migrations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.schema_migrations (
    version character varying(128) NOT NULL
);


--
-- Name: token_revoked; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.token_revoked (
    token_sha256 bytea NOT NULL,
    client text NOT NULL,
    revoked_at timestamp with time zone NOT NULL,
    actor text NOT NULL,
    reason text NOT NULL,
    CONSTRAINT token_revoked_token_sha256_check CHECK ((length(token_sha256) = 32))
);


--
-- Name: console_note note_id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.console_note ALTER COLUMN note_id SET DEFAULT nextval('public.console_note_note_id_seq'::regclass);


--
-- Name: flight_history history_id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.flight_history ALTER COLUMN history_id SET DEFAULT nextval('public.flight_history_history_id_seq'::regclass);


--
-- Name: replay_audit audit_id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.replay_audit ALTER COLUMN audit_id SET DEFAULT nextval('public.replay_audit_audit_id_seq'::regclass);


--
-- Name: req_track req_id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.req_track ALTER COLUMN req_id SET DEFAULT nextval('public.req_track_req_id_seq'::regclass);


--
-- Name: schd_snap_log snap_id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.schd_snap_log ALTER COLUMN snap_id SET DEFAULT nextval('public.schd_snap_log_snap_id_seq'::regclass);


--
-- Name: console_form console_form_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.console_form
    ADD CONSTRAINT console_form_pkey PRIMARY KEY (form_id);


--
-- Name: console_note console_note_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.console_note
    ADD CONSTRAINT console_note_pkey PRIMARY KEY (note_id);


--
-- Name: console_session console_session_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.console_session
    ADD CONSTRAINT console_session_pkey PRIMARY KEY (session_sha256);


--
-- Name: db_epoch db_epoch_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.db_epoch
    ADD CONSTRAINT db_epoch_pkey PRIMARY KEY (one);


--
-- Name: db_restore db_restore_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.db_restore
    ADD CONSTRAINT db_restore_pkey PRIMARY KEY (epoch);


--
-- Name: db_timeline db_timeline_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.db_timeline
    ADD CONSTRAINT db_timeline_pkey PRIMARY KEY (timeline);


--
-- Name: dispatch_send dispatch_send_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dispatch_send
    ADD CONSTRAINT dispatch_send_pkey PRIMARY KEY (target);


--
-- Name: flight_airbridge flight_airbridge_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.flight_airbridge
    ADD CONSTRAINT flight_airbridge_pkey PRIMARY KEY (flid, asno);


--
-- Name: flight_carousel flight_carousel_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.flight_carousel
    ADD CONSTRAINT flight_carousel_pkey PRIMARY KEY (flid, clno);


--
-- Name: flight_checkin flight_checkin_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.flight_checkin
    ADD CONSTRAINT flight_checkin_pkey PRIMARY KEY (flid, ckno);


--
-- Name: flight_chock flight_chock_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.flight_chock
    ADD CONSTRAINT flight_chock_pkey PRIMARY KEY (flid, csno);


--
-- Name: flight_chute flight_chute_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.flight_chute
    ADD CONSTRAINT flight_chute_pkey PRIMARY KEY (flid, chno);


--
-- Name: flight_delay flight_delay_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.flight_delay
    ADD CONSTRAINT flight_delay_pkey PRIMARY KEY (flid, code);


--
-- Name: flight_gate flight_gate_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.flight_gate
    ADD CONSTRAINT flight_gate_pkey PRIMARY KEY (flid, gtno);


--
-- Name: flight_history flight_history_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.flight_history
    ADD CONSTRAINT flight_history_pkey PRIMARY KEY (history_id);


--
-- Name: flight flight_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.flight
    ADD CONSTRAINT flight_pkey PRIMARY KEY (flid);


--
-- Name: flight_route flight_route_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.flight_route
    ADD CONSTRAINT flight_route_pkey PRIMARY KEY (flid, kind, rtno);


--
-- Name: flight_service flight_service_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.flight_service
    ADD CONSTRAINT flight_service_pkey PRIMARY KEY (flid, srtc);


--
-- Name: flight_stand flight_stand_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.flight_stand
    ADD CONSTRAINT flight_stand_pkey PRIMARY KEY (flid, psno);


--
-- Name: flight_vip flight_vip_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.flight_vip
    ADD CONSTRAINT flight_vip_pkey PRIMARY KEY (flid, vpcd);


--
-- Name: identity_rule identity_rule_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.identity_rule
    ADD CONSTRAINT identity_rule_pkey PRIMARY KEY (one);


--
-- Name: inbox_cursor inbox_cursor_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.inbox_cursor
    ADD CONSTRAINT inbox_cursor_pkey PRIMARY KEY (id);


--
-- Name: inbox_gap inbox_gap_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.inbox_gap
    ADD CONSTRAINT inbox_gap_pkey PRIMARY KEY (msg_id);


--
-- Name: job_state job_state_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.job_state
    ADD CONSTRAINT job_state_pkey PRIMARY KEY (job);


--
-- Name: leader_lease_member leader_lease_member_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.leader_lease_member
    ADD CONSTRAINT leader_lease_member_pkey PRIMARY KEY (db_role);


--
-- Name: leader_lease leader_lease_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.leader_lease
    ADD CONSTRAINT leader_lease_pkey PRIMARY KEY (role);


--
-- Name: marker_debt marker_debt_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.marker_debt
    ADD CONSTRAINT marker_debt_pkey PRIMARY KEY (debt_id);


--
-- Name: msg_attempt msg_attempt_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.msg_attempt
    ADD CONSTRAINT msg_attempt_pkey PRIMARY KEY (attempt_id);


--
-- Name: msg_event_delivered msg_event_delivered_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.msg_event_delivered
    ADD CONSTRAINT msg_event_delivered_pkey PRIMARY KEY (through);


--
-- Name: msg_event msg_event_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.msg_event
    ADD CONSTRAINT msg_event_pkey PRIMARY KEY (event_id);


--
-- Name: msg_event msg_event_status_check; Type: CHECK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE public.msg_event
    ADD CONSTRAINT msg_event_status_check CHECK ((status = ANY (ARRAY['QUEUED'::text, 'PENDING'::text, 'SENT'::text, 'DEAD'::text, 'SKIPPED'::text]))) NOT VALID;


--
-- Name: msg_event msg_event_value; Type: CHECK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE public.msg_event
    ADD CONSTRAINT msg_event_value CHECK (((event_type = 'TOMBSTONE'::text) OR (body IS NOT NULL) OR (payload IS NOT NULL))) NOT VALID;


--
-- Name: msg_identity msg_identity_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.msg_identity
    ADD CONSTRAINT msg_identity_pkey PRIMARY KEY (identity_key);


--
-- Name: msg_kafka_held msg_kafka_held_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.msg_kafka_held
    ADD CONSTRAINT msg_kafka_held_pkey PRIMARY KEY (partition_key, state_version);


--
-- Name: msg_state_log msg_state_log_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.msg_state_log
    ADD CONSTRAINT msg_state_log_pkey PRIMARY KEY (event_id);


--
-- Name: msg_state_out msg_state_out_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.msg_state_out
    ADD CONSTRAINT msg_state_out_pkey PRIMARY KEY (partition_key);


--
-- Name: msg_state_sent msg_state_sent_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.msg_state_sent
    ADD CONSTRAINT msg_state_sent_pkey PRIMARY KEY (partition_key);


--
-- Name: proc_state_hst proc_state_hst_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.proc_state_hst
    ADD CONSTRAINT proc_state_hst_pkey PRIMARY KEY (msg_id);


--
-- Name: proc_state proc_state_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.proc_state
    ADD CONSTRAINT proc_state_pkey PRIMARY KEY (msg_id);


--
-- Name: ref_master ref_master_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.ref_master
    ADD CONSTRAINT ref_master_pkey PRIMARY KEY (rtype, rkey);


--
-- Name: replay_audit replay_audit_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.replay_audit
    ADD CONSTRAINT replay_audit_pkey PRIMARY KEY (audit_id);


--
-- Name: req_heal_tally req_heal_tally_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.req_heal_tally
    ADD CONSTRAINT req_heal_tally_pkey PRIMARY KEY (operation_day);


--
-- Name: req_open_day req_open_day_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.req_open_day
    ADD CONSTRAINT req_open_day_pkey PRIMARY KEY (req_type, sender, operation_day);


--
-- Name: req_seqn req_seqn_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.req_seqn
    ADD CONSTRAINT req_seqn_pkey PRIMARY KEY (singleton);


--
-- Name: req_track req_track_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.req_track
    ADD CONSTRAINT req_track_pkey PRIMARY KEY (req_id);


--
-- Name: schd_snap_log schd_snap_log_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.schd_snap_log
    ADD CONSTRAINT schd_snap_log_pkey PRIMARY KEY (snap_id);


--
-- Name: schema_migrations schema_migrations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.schema_migrations
    ADD CONSTRAINT schema_migrations_pkey PRIMARY KEY (version);


--
-- Name: token_revoked token_revoked_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.token_revoked
    ADD CONSTRAINT token_revoked_pkey PRIMARY KEY (token_sha256);


--
-- Name: console_note_msg; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX console_note_msg ON public.console_note USING btree (msg_id, note_id);


--
-- Name: console_session_expires; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX console_session_expires ON public.console_session USING btree (expires_at);


--
-- Name: flight_history_flid; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX flight_history_flid ON public.flight_history USING btree (flid);


--
-- Name: flight_history_purged; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX flight_history_purged ON public.flight_history USING btree (purged_at);


--
-- Name: flight_maid; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX flight_maid ON public.flight USING btree (maid) WHERE (maid IS NOT NULL);


--
-- Name: flight_maid_active; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX flight_maid_active ON public.flight USING btree (maid, flid) WHERE ((maid IS NOT NULL) AND (state = 'ACTIVE'::text));


--
-- Name: flight_operation_day; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX flight_operation_day ON public.flight USING btree (operation_day);


--
-- Name: flight_purge_order; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX flight_purge_order ON public.flight USING btree (operation_day, flid);


--
-- Name: inbox_gap_reprobe; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX inbox_gap_reprobe ON public.inbox_gap USING btree (reprobe_until) WHERE (found_at IS NULL);


--
-- Name: msg_attempt_msg; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX msg_attempt_msg ON public.msg_attempt USING btree (msg_id, attempt_id);


--
-- Name: msg_event_delivered_sent_at; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX msg_event_delivered_sent_at ON public.msg_event_delivered USING btree (sent_at);


--
-- Name: msg_event_flight; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX msg_event_flight ON public.msg_event USING btree (partition_key, state_version);


--
-- Name: msg_event_legacy_states; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX msg_event_legacy_states ON public.msg_event USING btree (event_id) WHERE ((target = 'KAFKA:schd'::text) AND (status = ANY (ARRAY['QUEUED'::text, 'PENDING'::text, 'DEAD'::text])));


--
-- Name: msg_event_msg; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX msg_event_msg ON public.msg_event USING btree (msg_id) WHERE (msg_id IS NOT NULL);


--
-- Name: msg_event_sent; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX msg_event_sent ON public.msg_event USING btree (sent_at) WHERE (status = 'SENT'::text);


--
-- Name: msg_event_unsent; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX msg_event_unsent ON public.msg_event USING btree (target, partition_key, event_id) WHERE (status = ANY (ARRAY['PENDING'::text, 'DEAD'::text]));


--
-- Name: msg_event_unsent_order; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX msg_event_unsent_order ON public.msg_event USING btree (target, event_id) WHERE (status = ANY (ARRAY['PENDING'::text, 'DEAD'::text]));


--
-- Name: msg_identity_bound_at; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX msg_identity_bound_at ON public.msg_identity USING btree (bound_at);


--
-- Name: msg_state_out_unsent; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX msg_state_out_unsent ON public.msg_state_out USING btree (partition_key) WHERE (status = ANY (ARRAY['PENDING'::text, 'DEAD'::text]));


--
-- Name: proc_state_dead; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX proc_state_dead ON public.proc_state USING btree (error_class) WHERE (status = 'DEAD'::text);


--
-- Name: proc_state_hst_archived_at; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX proc_state_hst_archived_at ON public.proc_state_hst USING btree (archived_at);


--
-- Name: proc_state_hst_identity_key; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX proc_state_hst_identity_key ON public.proc_state_hst USING btree (identity_key);


--
-- Name: proc_state_hst_marker_abandoned; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX proc_state_hst_marker_abandoned ON public.proc_state_hst USING btree (msg_id) WHERE ((backfill_abandoned_at IS NOT NULL) AND (backfill_done_at IS NULL));


--
-- Name: proc_state_hst_raw_kept; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX proc_state_hst_raw_kept ON public.proc_state_hst USING btree (finished_at) WHERE ((raw IS NOT NULL) OR (raw_bytes IS NOT NULL));


--
-- Name: proc_state_identity_key; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX proc_state_identity_key ON public.proc_state USING btree (identity_key);


--
-- Name: proc_state_marker_abandoned; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX proc_state_marker_abandoned ON public.proc_state USING btree (msg_id) WHERE ((backfill_abandoned_at IS NOT NULL) AND (backfill_done_at IS NULL));


--
-- Name: proc_state_marker_owed; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX proc_state_marker_owed ON public.proc_state USING btree (backfill_next_at) WHERE ((backfill_next_at IS NOT NULL) AND (backfill_done_at IS NULL) AND (backfill_abandoned_at IS NULL));


--
-- Name: proc_state_no_match; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX proc_state_no_match ON public.proc_state USING btree (msg_id) WHERE ((status = 'SKIPPED'::text) AND (reason ~~ 'no-match:%'::text));


--
-- Name: proc_state_open; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX proc_state_open ON public.proc_state USING btree (msg_id) WHERE (status = ANY (ARRAY['PENDING'::text, 'FAILED'::text]));


--
-- Name: proc_state_settled; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX proc_state_settled ON public.proc_state USING btree (finished_at) WHERE ((backfill_done_at IS NOT NULL) OR (backfill_abandoned_at IS NOT NULL) OR ((backfill_next_at IS NULL) AND (finished_at IS NOT NULL)));


--
-- Name: req_open_day_req; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX req_open_day_req ON public.req_open_day USING btree (req_id);


--
-- Name: req_track_closed; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX req_track_closed ON public.req_track USING btree (closed_at) WHERE (closed_at IS NOT NULL);


--
-- Name: req_track_one_open_list; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX req_track_one_open_list ON public.req_track USING btree (req_type, sender, scope) WHERE ((req_type = 'RQRD'::text) AND (status = ANY (ARRAY['REGISTERED'::text, 'SENT'::text, 'WAITING'::text])));


--
-- Name: req_track_open; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX req_track_open ON public.req_track USING btree (req_type, sent_at) WHERE (status = ANY (ARRAY['REGISTERED'::text, 'SENT'::text, 'WAITING'::text]));


--
-- Name: req_track_origin; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX req_track_origin ON public.req_track USING btree (origin, scope, registered_at);


--
-- Name: schd_snap_log_applied; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX schd_snap_log_applied ON public.schd_snap_log USING btree (applied_at);


--
-- Name: schd_snap_log_msg; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX schd_snap_log_msg ON public.schd_snap_log USING btree (msg_id);


--
-- Name: flight flight_operation_day_immutable; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER flight_operation_day_immutable BEFORE UPDATE OF operation_day ON public.flight FOR EACH ROW EXECUTE FUNCTION public.flight_operation_day_immutable();


--
-- Name: proc_state_hst msg_attempt_cascade; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER msg_attempt_cascade AFTER DELETE ON public.proc_state_hst REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION public.msg_attempt_cascade();


--
-- Name: proc_state proc_state_leave_debts; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER proc_state_leave_debts AFTER UPDATE OF status ON public.proc_state FOR EACH ROW WHEN (((old.status = ANY (ARRAY['SUCCEEDED'::text, 'SKIPPED'::text, 'DEAD'::text])) AND (new.status <> ALL (ARRAY['SUCCEEDED'::text, 'SKIPPED'::text, 'DEAD'::text])))) EXECUTE FUNCTION public.msgx_leave_debts();


--
-- Name: flight_airbridge flight_airbridge_flid_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.flight_airbridge
    ADD CONSTRAINT flight_airbridge_flid_fkey FOREIGN KEY (flid) REFERENCES public.flight(flid) ON DELETE CASCADE;


--
-- Name: flight_carousel flight_carousel_flid_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.flight_carousel
    ADD CONSTRAINT flight_carousel_flid_fkey FOREIGN KEY (flid) REFERENCES public.flight(flid) ON DELETE CASCADE;


--
-- Name: flight_checkin flight_checkin_flid_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.flight_checkin
    ADD CONSTRAINT flight_checkin_flid_fkey FOREIGN KEY (flid) REFERENCES public.flight(flid) ON DELETE CASCADE;


--
-- Name: flight_chock flight_chock_flid_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.flight_chock
    ADD CONSTRAINT flight_chock_flid_fkey FOREIGN KEY (flid) REFERENCES public.flight(flid) ON DELETE CASCADE;


--
-- Name: flight_chute flight_chute_flid_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.flight_chute
    ADD CONSTRAINT flight_chute_flid_fkey FOREIGN KEY (flid) REFERENCES public.flight(flid) ON DELETE CASCADE;


--
-- Name: flight_delay flight_delay_flid_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.flight_delay
    ADD CONSTRAINT flight_delay_flid_fkey FOREIGN KEY (flid) REFERENCES public.flight(flid) ON DELETE CASCADE;


--
-- Name: flight_gate flight_gate_flid_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.flight_gate
    ADD CONSTRAINT flight_gate_flid_fkey FOREIGN KEY (flid) REFERENCES public.flight(flid) ON DELETE CASCADE;


--
-- Name: flight_route flight_route_flid_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.flight_route
    ADD CONSTRAINT flight_route_flid_fkey FOREIGN KEY (flid) REFERENCES public.flight(flid) ON DELETE CASCADE;


--
-- Name: flight_service flight_service_flid_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.flight_service
    ADD CONSTRAINT flight_service_flid_fkey FOREIGN KEY (flid) REFERENCES public.flight(flid) ON DELETE CASCADE;


--
-- Name: flight_stand flight_stand_flid_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.flight_stand
    ADD CONSTRAINT flight_stand_flid_fkey FOREIGN KEY (flid) REFERENCES public.flight(flid) ON DELETE CASCADE;


--
-- Name: flight_vip flight_vip_flid_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.flight_vip
    ADD CONSTRAINT flight_vip_flid_fkey FOREIGN KEY (flid) REFERENCES public.flight(flid) ON DELETE CASCADE;


--
-- Name: req_open_day req_open_day_req_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.req_open_day
    ADD CONSTRAINT req_open_day_req_id_fkey FOREIGN KEY (req_id) REFERENCES public.req_track(req_id) ON DELETE CASCADE;


--
-- Name: leader_lease; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.leader_lease ENABLE ROW LEVEL SECURITY;

--
-- Name: leader_lease leader_lease_insert_own; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY leader_lease_insert_own ON public.leader_lease FOR INSERT WITH CHECK ((role = ( SELECT m.role
   FROM public.leader_lease_member m
  WHERE (m.db_role = CURRENT_USER))));


--
-- Name: leader_lease leader_lease_read; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY leader_lease_read ON public.leader_lease FOR SELECT USING (true);


--
-- Name: leader_lease leader_lease_update_own; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY leader_lease_update_own ON public.leader_lease FOR UPDATE USING ((role = ( SELECT m.role
   FROM public.leader_lease_member m
  WHERE (m.db_role = CURRENT_USER)))) WITH CHECK ((role = ( SELECT m.role
   FROM public.leader_lease_member m
  WHERE (m.db_role = CURRENT_USER))));


--
-- PostgreSQL database dump complete
--



--
-- Dbmate schema migrations
--

INSERT INTO public.schema_migrations (version) VALUES
    ('20261202120000'),
    ('20261202140000'),
    ('20261202150000'),
    ('20261202160000'),
    ('20261202170000'),
    ('20261210120000'),
    ('20261211120000'),
    ('20261212120000'),
    ('20261215120000'),
    ('20261215130000'),
    ('20261220120000'),
    ('20261220130000'),
    ('20261220140000'),
    ('20261221120000'),
    ('20261221130000'),
    ('20261222120000'),
    ('20261228120000'),
    ('20261229120000'),
    ('20261230120000'),
    ('20261231120000'),
    ('20270101120000'),
    ('20270102120000'),
    ('20270103120000'),
    ('20270104120000'),
    ('20270105120000'),
    ('20270110120000'),
    ('20270110130000'),
    ('20270110140000'),
    ('20270111120000'),
    ('20270111130000'),
    ('20270111140000'),
    ('20270112120000'),
    ('20270113120000'),
    ('20270114120000');
