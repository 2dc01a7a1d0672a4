package jobs

// Every PostgreSQL statement of the jobs stage, with bound parameters only. Time always comes in
// as a parameter (the injected clock), never from now().

// Backfill sweep.
const (
	// backfillDueSQL claims the due markers of terminal rows, oldest due first: $1 now, $2 the
	// grace cut-off for rows the processor's immediate attempt has not reported on yet
	// (backfill_attempts = 0: due only BackoffBase after they became terminal), $3 the batch.
	// The row locks (held while the mailbox is written) keep a replay from turning a row back
	// to PENDING between this read and its marker (INV-8c); SKIP LOCKED never waits on anyone.
	backfillDueSQL = `
SELECT msg_id, enqueued_at, backfill_attempts
  FROM proc_state
 WHERE backfill_next_at IS NOT NULL AND backfill_done_at IS NULL AND backfill_abandoned_at IS NULL
   AND backfill_next_at <= $1
   AND (backfill_attempts > 0 OR backfill_next_at <= $2)
   AND status IN ('SUCCEEDED', 'SKIPPED', 'DEAD')
 ORDER BY backfill_next_at, msg_id
 LIMIT $3
 FOR UPDATE SKIP LOCKED`

	// moveDebtsSQL moves up to $2 batch debts (marker_debt) finished before $1, the sweep's grace
	// cut-off, onto their terminal rows, which then owe their markers on their own, due since
	// they finished: debts the immediate marker paid only in part, or never reported on (the
	// processor was stopped or lost its term meanwhile; in shadow mode it writes none). A row
	// that owes on its own already, or is open again (a replay), is left as it is. It returns
	// how many debts it moved.
	moveDebtsSQL = `
WITH d AS (
    DELETE FROM marker_debt WHERE debt_id IN (
        SELECT debt_id FROM marker_debt WHERE finished_at <= $1 ORDER BY debt_id LIMIT $2)
    RETURNING ids, finished_at
), moved AS (
    UPDATE proc_state p SET backfill_next_at = d.finished_at
      FROM d, unnest(d.ids) AS u(id)
     WHERE p.msg_id = u.id AND p.status IN ('SUCCEEDED', 'SKIPPED', 'DEAD')
       AND p.backfill_next_at IS NULL AND p.backfill_done_at IS NULL AND p.backfill_abandoned_at IS NULL)
SELECT count(*) FROM d`

	// backfillRecordSQL records one outcome per row: MARKED / ALREADY_MARKED settle it (done),
	// MISSING_ROW / OVERDUE abandon it, an empty outcome is a failure due again at next_at. A
	// settled row is never changed again (the WHERE), so ALREADY_MARKED is never overwritten.
	backfillRecordSQL = `
UPDATE proc_state p
   SET backfill_attempts     = p.backfill_attempts + 1,
       backfill_outcome      = NULLIF(u.outcome, ''),
       backfill_done_at      = CASE WHEN u.outcome IN ('MARKED', 'ALREADY_MARKED') THEN $2::timestamptz END,
       backfill_abandoned_at = CASE WHEN u.outcome IN ('MISSING_ROW', 'OVERDUE') THEN $2::timestamptz END,
       backfill_error        = NULLIF(u.err, ''),
       backfill_next_at      = COALESCE(u.next_at, p.backfill_next_at)
  FROM unnest($1::bigint[], $3::text[], $4::text[], $5::timestamptz[]) AS u(id, outcome, err, next_at)
 WHERE p.msg_id = u.id AND p.backfill_done_at IS NULL AND p.backfill_abandoned_at IS NULL`

	// backfillGaugesSQL: the oldest marker owed and the abandoned count (the views marker_owed
	// and marker_abandoned: their one definition).
	backfillGaugesSQL = `
SELECT (SELECT min(owed_since) FROM marker_owed), (SELECT count(*) FROM marker_abandoned)`

	// listAbandonedSQL lists abandoned markers of both tables for reconciliation.
	listAbandonedSQL = `
SELECT msg_id, status, backfill_outcome, COALESCE(backfill_error, ''), backfill_attempts, received_at,
       enqueued_at, finished_at, backfill_abandoned_at, false
  FROM proc_state WHERE backfill_abandoned_at IS NOT NULL AND backfill_done_at IS NULL
UNION ALL
SELECT msg_id, status, backfill_outcome, COALESCE(backfill_error, ''), backfill_attempts, received_at,
       enqueued_at, finished_at, backfill_abandoned_at, true
  FROM proc_state_hst WHERE backfill_abandoned_at IS NOT NULL AND backfill_done_at IS NULL
 ORDER BY msg_id
 LIMIT $1`

	// unarchiveAbandonedSQL moves archived abandoned rows named by a retry back to proc_state,
	// so the sweep (which reads proc_state only) can retry them.
	unarchiveAbandonedSQL = `
WITH back AS (
    DELETE FROM proc_state_hst
     WHERE msg_id = ANY($1::bigint[]) AND backfill_abandoned_at IS NOT NULL AND backfill_done_at IS NULL
    RETURNING ` + procStateColumns + `)
INSERT INTO proc_state (` + procStateColumns + `)
SELECT ` + procStateColumns + ` FROM back`

	// retryAbandonedSQL makes abandoned markers due again now (msgxctl backfill retry). The
	// attempt count is kept; the next failure past R abandons the row again.
	retryAbandonedSQL = `
UPDATE proc_state
   SET backfill_abandoned_at = NULL, backfill_outcome = NULL, backfill_next_at = $2,
       backfill_error = 'manual retry: ' || $3
 WHERE msg_id = ANY($1::bigint[]) AND backfill_abandoned_at IS NOT NULL AND backfill_done_at IS NULL
RETURNING msg_id`

	auditSQL = `
INSERT INTO replay_audit (action, actor, reason, selector, ids, at) VALUES ($1, $2, $3, $4, $5, $6)`
)

// History sweep.

const (
	// historyCandidatesSQL selects a run's next candidates in keyset order: operation day older
	// than $1 (a date) and DELETED or not updated since $2; after ($3, $4); at most $5.
	historyCandidatesSQL = `
SELECT flid, operation_day, state_version, updated_at
  FROM flight
 WHERE operation_day < $1 AND (state = 'DELETED' OR updated_at < $2)
   AND (operation_day, flid) > ($3::date, $4::bigint)
 ORDER BY operation_day, flid
 LIMIT $5`

	// historyRecheckSQL runs under PIPELINE_LOCK: it keeps only the candidates still exactly as
	// selected (same state_version and updated_at) and still meeting the criteria (INV-18), and
	// locks them; their MAID names the master whose MAFL loses them (INV-22b).
	historyRecheckSQL = `
SELECT f.flid, f.state_version, f.state, f.maid
  FROM flight f
  JOIN unnest($1::bigint[], $2::bigint[], $3::timestamptz[]) AS u(flid, v, upd)
    ON f.flid = u.flid AND f.state_version = u.v AND f.updated_at = u.upd
 WHERE f.operation_day < $4 AND (f.state = 'DELETED' OR f.updated_at < $5)
 ORDER BY f.flid
   FOR UPDATE OF f`

	historyDeleteSQL = `DELETE FROM flight WHERE flid = ANY($1::bigint[])`

	// historyDropSQL removes the documents of flights the re-check kept.
	historyDropSQL = `DELETE FROM flight_history WHERE history_id = ANY($1::bigint[])`
)

// historyInsertSQL writes the final state of each candidate still at the state_version and
// updated_at it was selected with ($1 flids, $2 versions, $3 updated_at): $4, its document as
// published (flight.State.AppendJSONIn), purged at $5. It runs before PIPELINE_LOCK is taken;
// the re-check under the lock drops the documents of flights that changed in between.
const historyInsertSQL = `
INSERT INTO flight_history (flid, operation_day, state_version, final_state, purge_reason, purged_at)
SELECT f.flid, f.operation_day, f.state_version, u.doc::jsonb,
       CASE WHEN f.state = 'DELETED' THEN 'deleted' ELSE 'quiet' END, $5
  FROM flight f
  JOIN unnest($1::bigint[], $2::bigint[], $3::timestamptz[], $4::text[]) AS u(flid, v, upd, doc)
    ON f.flid = u.flid AND f.state_version = u.v AND f.updated_at = u.upd
 ORDER BY f.flid
RETURNING history_id, flid, state_version`

// Retention and archive. Each statement handles one batch ($2 rows) older than $1.
const (
	// A snapshot's audit row is kept until its scope has ended and it was received longer ago
	// than the retention, by (scope_end, recv_at) as the design has it: a season-long snapshot
	// stays while its scope lasts. Both are airport wall-clock values, compared with a day's
	// margin; a row without them (none is written so) falls back to applied_at.
	deleteSnapLogSQL = `
DELETE FROM schd_snap_log WHERE snap_id IN (
    SELECT snap_id FROM schd_snap_log
     WHERE CASE WHEN scope_end IS NULL AND recv_at IS NULL THEN applied_at < $1
                ELSE coalesce(scope_end, recv_at::date) < $1::date - 1
                 AND coalesce(recv_at, scope_end::timestamp) < $1::timestamp - interval '1 day' END
     ORDER BY scope_end NULLS FIRST, recv_at NULLS FIRST LIMIT $2)`

	deleteSentEventsSQL = `
DELETE FROM msg_event WHERE event_id IN (
    SELECT event_id FROM msg_event WHERE status = 'SENT' AND sent_at < $1 ORDER BY sent_at LIMIT $2)`

	// deleteDeliveredEventsSQL removes the change events the delivery cursor passed before $1: the
	// QUEUED ones at or below the highest cursor move older than $1, in id order.
	deleteDeliveredEventsSQL = `
WITH h AS MATERIALIZED (
    SELECT coalesce(max(through), 0) AS through FROM msg_event_delivered WHERE sent_at < $1
)
DELETE FROM msg_event WHERE event_id IN (
    SELECT e.event_id FROM msg_event e, h
     WHERE e.event_id <= h.through AND e.target = 'KAFKA:msg' AND e.status = 'QUEUED'
       AND msgx_passed(e.event_id, h.through)
     ORDER BY e.event_id LIMIT $2)`

	// deleteCursorMovesSQL removes the delivery cursor's moves older than $1, never the newest
	// (the cursor itself). A QUEUED event still below a removed move reads the next move's time.
	deleteCursorMovesSQL = `
DELETE FROM msg_event_delivered WHERE through IN (
    SELECT through FROM msg_event_delivered
     WHERE sent_at < $1 AND through < (SELECT max(through) FROM msg_event_delivered)
     ORDER BY through LIMIT $2)`

	// deleteSentStatesSQL removes a flight's state row sent before $1 (its next state writes a
	// new one); the outer test holds against a newer state written meanwhile.
	deleteSentStatesSQL = `
DELETE FROM msg_state_out WHERE status = 'SENT' AND sent_at < $1 AND partition_key IN (
    SELECT partition_key FROM msg_state_out WHERE status = 'SENT' AND sent_at < $1 LIMIT $2)`

	// deleteIdentitySQL deletes identity bindings older than the identity window plus a margin
	// (bound_at rechecked on the row: a binding the processor renewed meanwhile stays).
	deleteIdentitySQL = `
DELETE FROM msg_identity WHERE bound_at < $1 AND identity_key IN (
    SELECT identity_key FROM msg_identity WHERE bound_at < $1 ORDER BY bound_at LIMIT $2)`

	// deleteArchivedSQL deletes archived rows (MSGX_PROC_STATE_HST_RETENTION), except abandoned
	// markers not reconciled yet (msgxctl backfill lists and retries them).
	deleteArchivedSQL = `
DELETE FROM proc_state_hst WHERE msg_id IN (
    SELECT msg_id FROM proc_state_hst
     WHERE archived_at < $1 AND NOT (backfill_abandoned_at IS NOT NULL AND backfill_done_at IS NULL)
     ORDER BY archived_at LIMIT $2)`

	clearRawSQL = `
UPDATE proc_state_hst SET raw = NULL, raw_bytes = NULL, raw_cleared_at = $3
 WHERE msg_id IN (
    SELECT msg_id FROM proc_state_hst WHERE (raw IS NOT NULL OR raw_bytes IS NOT NULL) AND finished_at < $1
     ORDER BY finished_at LIMIT $2)`

	deleteReqTrackSQL = `
DELETE FROM req_track WHERE req_id IN (
    SELECT req_id FROM req_track WHERE status IN ('DONE', 'EXPIRED') AND closed_at < $1
     ORDER BY closed_at LIMIT $2)`

	deleteFlightHistorySQL = `
DELETE FROM flight_history WHERE history_id IN (
    SELECT history_id FROM flight_history WHERE purged_at < $1 ORDER BY purged_at LIMIT $2)`

	// procStateColumns are proc_state's columns (proc_state_hst has them plus archived_at and
	// raw_cleared_at). TestArchiveColumnsComplete keeps the list equal to the table.
	procStateColumns = `msg_id, raw, raw_sha256, status, error_class, reason, attempts, next_attempt_at,
       identity_key, content_differs, msg_type, msg_styp, received_at, enqueued_at, late,
       processing_started_at, finished_at, backfill_next_at, backfill_attempts, backfill_error,
       backfill_outcome, backfill_done_at, backfill_abandoned_at, processing_through, crashes, deaths, raw_bytes, outcome_epoch, replay_forced`
)

// archiveSQL moves terminal rows to proc_state_hst in one statement: rows whose marker is
// settled (written, abandoned, or never owed on the row itself and in no batch debt: paid with
// its batch), or in shadow mode (which writes no markers, the system msgx runs beside marks the
// mailbox) every terminal row. msg_identity is untouched, so their identities still make later
// copies duplicates within the identity window.
func archiveSQL(shadow bool) string {
	settled := `(backfill_done_at IS NOT NULL OR backfill_abandoned_at IS NOT NULL
                OR (backfill_next_at IS NULL AND finished_at IS NOT NULL))
           AND msg_id NOT IN (SELECT unnest(ids) FROM marker_debt)`
	if shadow {
		settled = "true"
	}
	return `
WITH moved AS (
    DELETE FROM proc_state WHERE msg_id IN (
        SELECT msg_id FROM proc_state
         WHERE finished_at < $1 AND ` + settled + `
           AND status IN ('SUCCEEDED', 'SKIPPED', 'DEAD')
         ORDER BY finished_at
         LIMIT $2
           FOR UPDATE SKIP LOCKED)
    RETURNING ` + procStateColumns + `)
INSERT INTO proc_state_hst (` + procStateColumns + `, archived_at)
SELECT ` + procStateColumns + `, $3 FROM moved`
}

// Scheduling bookkeeping (job_state).
const (
	jobStateSQL = `SELECT done_day, requested_at IS NOT NULL FROM job_state WHERE job = $1`

	jobStartedSQL = `UPDATE job_state SET last_started_at = $2 WHERE job = $1`

	// jobFinishedSQL records a run; $5 (a date) sets done_day when not NULL; $6 clears an
	// on-demand request.
	jobFinishedSQL = `
UPDATE job_state
   SET last_finished_at = $2, last_selected = $3, last_error = NULLIF($4, ''),
       done_day = COALESCE($5::date, done_day),
       requested_at = CASE WHEN $6 THEN NULL ELSE requested_at END,
       requested_by = CASE WHEN $6 THEN NULL ELSE requested_by END
 WHERE job = $1`

	requestSQL = `UPDATE job_state SET requested_at = $2, requested_by = $3 WHERE job = $1`

	requestPendingSQL = `SELECT requested_at IS NOT NULL, last_finished_at, last_selected, COALESCE(last_error, '') FROM job_state WHERE job = $1`
)
