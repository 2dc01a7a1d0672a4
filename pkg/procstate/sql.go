package procstate

// Every SQL statement of proc_state's shared operations (the attempt history, the status counts,
// replay), with bound parameters only. Time always comes in as a parameter.

const (
	// attemptsSQL is a message's attempt history, oldest first: its msg_attempt rows, then the
	// attempt kept on its row (live or archived) when outcome_epoch says so (the processor writes it so).
	attemptsSQL = `
SELECT attempt, at, epoch, outcome, class, reason, meta FROM (
    SELECT attempt_id AS ord, attempt, at, epoch, outcome, COALESCE(error_class, '') AS class, COALESCE(reason, '') AS reason, meta::text AS meta
      FROM msg_attempt WHERE msg_id = $1
    UNION ALL
    SELECT NULL, attempts, finished_at, outcome_epoch, status, COALESCE(error_class, ''), COALESCE(reason, ''), NULL
      FROM proc_state WHERE msg_id = $1 AND outcome_epoch IS NOT NULL
    UNION ALL
    SELECT NULL, attempts, finished_at, outcome_epoch, status, COALESCE(error_class, ''), COALESCE(reason, ''), NULL
      FROM proc_state_hst WHERE msg_id = $1 AND outcome_epoch IS NOT NULL) h
 ORDER BY ord NULLS LAST`

	// countByStatusSQL and countAllByStatusSQL count proc_state rows per status (CountByStatus).
	countByStatusSQL    = `SELECT status, count(*) FROM proc_state WHERE status = ANY($1::text[]) GROUP BY status`
	countAllByStatusSQL = `SELECT status, count(*) FROM proc_state GROUP BY status`
)

// Replay's statements.
const (
	replayCandidatesSQL = `
SELECT msg_id, status, COALESCE(error_class, ''), COALESCE(reason, ''), raw
  FROM proc_state
 WHERE ((($1::text <> '' AND error_class = $1) OR msg_id = ANY($2::bigint[])) AND status IN ('FAILED', 'DEAD'))
    OR (msg_id = ANY($2::bigint[]) AND status = 'SKIPPED' AND reason LIKE $3)
 ORDER BY msg_id`

	replayExistingSQL = `SELECT msg_id, status, COALESCE(error_class, ''), COALESCE(reason, '') FROM proc_state WHERE msg_id = ANY($1::bigint[])`

	// identityBindingSQL is the message an identity key is bound to (a replay's dry run).
	identityBindingSQL = `SELECT msg_id, raw_sha256, dttm FROM msg_identity WHERE identity_key = $1`

	// unknownFlightsSQL lists the given FLIDs that are not stored.
	unknownFlightsSQL = `
SELECT u.flid FROM unnest($1::bigint[]) AS u(flid)
 WHERE NOT EXISTS (SELECT 1 FROM flight f WHERE f.flid = u.flid) ORDER BY 1`

	laterTouchesSQL = `
SELECT DISTINCT msg_id FROM msg_event WHERE partition_key = ANY($1::text[]) AND msg_id > $2
UNION
SELECT last_msg_id FROM flight WHERE flid = ANY($3::bigint[]) AND last_msg_id > $2
ORDER BY 1`

	// lockDebtsSQL locks the marker debts naming any of $1, in debt order, before a replay
	// touches those rows (msgx_lock_debts, migration marker_debt_guard): a reopened row then
	// leaves them (INV-8d) without waiting, and a debt and its rows are locked in the order the
	// jobs stage's move and the processor's record of a failed marker take them.
	lockDebtsSQL = `SELECT msgx_lock_debts($1::bigint[])`

	// requeueSQL keeps identity_key, error_class and reason until the next outcome (the attempt
	// history in msg_attempt keeps them for good) and clears what makes a row terminal or
	// blocked: attempts, due time, head-deadline start and the marker state. The guard repeats
	// the replay rule (Replayable): classes $2, SKIPPED reasons like $3. $4: the replay is
	// forced (INV-24b), which the processor reads with the row.
	//
	// The attempt a row keeps on itself (outcome_epoch: a SKIPPED no-match) is written to
	// msg_attempt first, so the history keeps it.
	requeueSQL = `
WITH kept AS (
  INSERT INTO msg_attempt (msg_id, attempt, at, epoch, outcome, error_class, reason)
  SELECT msg_id, attempts, finished_at, outcome_epoch, status, error_class, reason
    FROM proc_state
   WHERE msg_id = ANY($1::bigint[]) AND outcome_epoch IS NOT NULL
     AND ((status IN ('FAILED', 'DEAD') AND error_class = ANY($2::text[]))
          OR (status = 'SKIPPED' AND reason LIKE $3)))
UPDATE proc_state
   SET status = 'PENDING', replay_forced = $4, attempts = 0, next_attempt_at = NULL, processing_started_at = NULL,
       processing_through = NULL, crashes = 0, deaths = 0,
       finished_at = NULL, backfill_next_at = NULL, backfill_attempts = 0, backfill_error = NULL,
       backfill_outcome = NULL, backfill_done_at = NULL, backfill_abandoned_at = NULL, outcome_epoch = NULL
 WHERE msg_id = ANY($1::bigint[])
   AND ((status IN ('FAILED', 'DEAD') AND error_class = ANY($2::text[]))
        OR (status = 'SKIPPED' AND reason LIKE $3))`

	// auditSQL writes the replay's audit row ($1: replay or replay-forced) with the error text
	// each message had ($7).
	auditSQL = `
INSERT INTO replay_audit (action, actor, reason, selector, ids, at, errors) VALUES ($1, $2, $3, $4, $5, $6, $7)`
)
