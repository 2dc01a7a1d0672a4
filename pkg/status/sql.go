package status

// Every SQL statement of the operators' reads, bound parameters only.

const (
	cursorSQL = `SELECT watermark, gap_start, gap_first_seen_at, max_commit_delay FROM inbox_cursor`
	gapsSQL   = `SELECT count(*), count(found_at) FROM inbox_gap`
	headSQL   = `
SELECT msg_id, status, attempts, enqueued_at, next_attempt_at, COALESCE(reason, '') FROM proc_state
 WHERE status IN ('PENDING', 'FAILED') AND msg_id <= (SELECT watermark FROM inbox_cursor)
 ORDER BY msg_id LIMIT 1`
	deadSQL = `SELECT error_class, count(*) FROM proc_state WHERE status = 'DEAD' GROUP BY error_class`
	// markersSQL and abandonedSQL read the markers owed and abandoned through their one
	// definition (the views marker_owed and marker_abandoned; migration marker_views).
	markersSQL   = `SELECT count(*), min(owed_since) FROM marker_owed`
	abandonedSQL = `SELECT count(*) FROM marker_abandoned`
	// openSQL counts the open messages through proc_state_open (Options.OpenOnly).
	openSQL    = `SELECT status, count(*) FROM proc_state WHERE status IN ('PENDING', 'FAILED') GROUP BY status`
	leadersSQL = `SELECT role, epoch, holder, acquired_at, renewed_at FROM leader_lease ORDER BY role`
	flightsSQL = `SELECT state, count(*) FROM flight GROUP BY state`
	sendsSQL   = `
SELECT target, topic, epoch, blocked_since, error_class, error, brokers, brokers_silent, last_sent_at, stall_after,
       report_every, reported_at FROM dispatch_send ORDER BY target`
)

// messageColumns are the columns of a message that proc_state and proc_state_hst share, in the
// order Message scans them.
const messageColumns = `msg_id, raw, raw_bytes, COALESCE(encode(raw_sha256, 'hex'), ''), status, COALESCE(error_class, ''),
       COALESCE(reason, ''), attempts, next_attempt_at, COALESCE(identity_key, ''), content_differs,
       COALESCE(msg_type, ''), COALESCE(msg_styp, ''), received_at, enqueued_at, late, processing_started_at,
       finished_at, backfill_next_at, backfill_attempts, COALESCE(backfill_error, ''), COALESCE(backfill_outcome, ''),
       backfill_done_at, backfill_abandoned_at, processing_through, crashes, deaths`

const (
	// messageSQL is one message, live (proc_state) or archived (proc_state_hst): a message is in
	// one of the two.
	messageSQL = `
SELECT ` + messageColumns + `,
       p.status IN ('SUCCEEDED', 'SKIPPED', 'DEAD') AND EXISTS (SELECT 1 FROM marker_debt d WHERE p.msg_id = ANY (d.ids)),
       false, NULL::timestamptz, NULL::timestamptz FROM proc_state p WHERE msg_id = $1
UNION ALL
SELECT ` + messageColumns + `, false, true, archived_at, raw_cleared_at FROM proc_state_hst WHERE msg_id = $1
 LIMIT 1`

	// messageAuditSQL are the audit rows naming a message (dlq-* rows name event ids instead).
	messageAuditSQL = `SELECT action, actor, reason, at FROM replay_audit
 WHERE $1 = ANY(ids) AND action IN ('replay', 'replay-forced', 'backfill-retry', 'gap-skip') ORDER BY at`
)

// messageFlightsSQL are the flights a message changed and the version it gave each, as the
// outbox recorded them (msg_event_msg; SENT events are kept for MSGX_EVENT_RETENTION).
const messageFlightsSQL = `
SELECT DISTINCT partition_key::bigint, state_version FROM msg_event WHERE msg_id = $1 ORDER BY 1, 2`
