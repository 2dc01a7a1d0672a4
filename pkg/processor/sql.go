package processor

// Every SQL statement of the processor stage, with bound parameters only. Time always comes in as a
// parameter (the injected clock), never from now().

const (
	// headSQL loads the head run: the smallest open msg_ids ≤ W, with their text (the mailbox
	// bytes where no text copy could be stored), at most $1 rows and about $2 bytes of stored text
	// (the first row always), so a run of large schedule messages cannot blow up the batch's memory.
	// Each row also carries the length of the run before the byte bound (run, counted after the
	// LIMIT: a window over the whole partition would read every open row): a run of $1 rows, or
	// one the bound cut, says more open rows are waiting.
	//
	// $3 is the msg_id the run starts after: 0 for the head itself, the last msg_id of the batch
	// in flight for the lookahead (engine.go). replay_forced: an operator forced its replay.
	headSQL = `
SELECT msg_id, raw, raw_bytes, status, attempts, next_attempt_at, processing_started_at, processing_through, crashes, deaths, enqueued_at,
       replay_forced, run
  FROM (SELECT *, count(*) OVER () AS run
          FROM (SELECT msg_id, raw, CASE WHEN raw IS NULL THEN raw_bytes END AS raw_bytes, status, attempts, next_attempt_at,
                       processing_started_at, processing_through, crashes, deaths, enqueued_at, replay_forced,
                       sum(COALESCE(pg_column_size(raw), pg_column_size(raw_bytes), 0)) OVER (ORDER BY msg_id)
                         - COALESCE(pg_column_size(raw), pg_column_size(raw_bytes), 0) AS before
                  FROM proc_state
                 WHERE status IN ('PENDING', 'FAILED')
                   AND msg_id <= (SELECT watermark FROM inbox_cursor) AND msg_id > $3
                 ORDER BY msg_id
                 LIMIT $1) run) head
 WHERE before < $2
 ORDER BY msg_id`

	// markStartedSQL stamps the head's start mark. With $5 (a head read ahead, while the batch
	// before it committed) it changes nothing when an open row lies below the head (a late row
	// or a replay that arrived since): the head moved and must be read again. The check is the
	// smallest open msg_id, which the open index answers whatever the plan ("an open row below
	// $1" had plans that scanned the table), from the index's start: past the entries of the rows
	// finished since the last vacuum.
	markStartedSQL = `
UPDATE proc_state SET processing_started_at = $2, processing_through = $3, deaths = $4
 WHERE msg_id = $1 AND status IN ('PENDING', 'FAILED')
   AND NOT ($5::bool AND (SELECT min(o.msg_id) FROM proc_state o WHERE o.status IN ('PENDING', 'FAILED')) < $1)`

	// attemptEndedSQL records the previous attempt of the head $1, which ended without an
	// outcome ($4 = DIED or INTERRUPTED, why $5), dated $2 (its start mark): one row for each
	// open message of its batch $1..$6 (the head alone for DIED) but the one whose crash ended
	// it (that one has its CRASHED row).
	attemptEndedSQL = `
INSERT INTO msg_attempt (msg_id, attempt, at, epoch, outcome, reason)
SELECT p.msg_id, p.attempts, $2, $3, $4, $5
  FROM proc_state p
 WHERE p.msg_id BETWEEN $1 AND CASE WHEN $4::text = 'DIED' THEN $1 ELSE GREATEST($1, $6::bigint) END
   AND p.status IN ('PENDING', 'FAILED')
   AND NOT EXISTS (SELECT 1 FROM msg_attempt a WHERE a.msg_id = p.msg_id AND a.outcome = 'CRASHED' AND a.at >= $2)`

	// endAttemptSQL ends the attempt of a batch without charging anybody (a batch that failed
	// as a whole, or the database's failure): the head's mark no longer names the batch ($1) and
	// every message of it ($2) gets an attempt row with outcome $6 (BATCH_FAILED, INTERRUPTED).
	endAttemptSQL = `
WITH ended AS (
  UPDATE proc_state SET processing_through = NULL WHERE msg_id = $1 AND status IN ('PENDING', 'FAILED')
  RETURNING msg_id)
INSERT INTO msg_attempt (msg_id, attempt, at, epoch, outcome, reason)
SELECT p.msg_id, p.attempts, $3, $4, $6, $5
  FROM proc_state p
 WHERE p.msg_id = ANY($2::bigint[]) AND p.status IN ('PENDING', 'FAILED') AND EXISTS (SELECT 1 FROM ended)`

	// recordPanicSQL charges a panic to its message and records the attempt (CRASHED); the
	// attempt is over (no death to charge).
	recordPanicSQL = `
WITH charged AS (
  UPDATE proc_state SET crashes = crashes + 1, processing_through = NULL,
         processing_started_at = COALESCE(processing_started_at, $2)
   WHERE msg_id = $1 AND status IN ('PENDING', 'FAILED')
  RETURNING msg_id, attempts, crashes)
INSERT INTO msg_attempt (msg_id, attempt, at, epoch, outcome, reason)
SELECT msg_id, attempts, $2, $3, 'CRASHED', $4 || ' (crash ' || crashes || ' in a row)' FROM charged`

	// lockIdentitiesSQL reads (and locks, in key order) the bindings of a batch's keys
	// (identity.Rule.Bind decides). Each key is probed by the primary key in a LATERAL subquery,
	// which no plan can turn into a scan: with "identity_key = ANY($1)" a table without
	// statistics (a new one; autovacuum not yet run or off) made every key look like a match of
	// every row, and each batch scanned the whole table comparing every row with every key
	// (docs/benchmarks.md).
	lockIdentitiesSQL = `
SELECT m.identity_key, m.msg_id, m.raw_sha256, m.dttm
  FROM (SELECT DISTINCT key FROM unnest($1::text[]) AS u(key) ORDER BY key) k
  CROSS JOIN LATERAL (SELECT identity_key, msg_id, raw_sha256, dttm FROM msg_identity
                       WHERE identity_key = k.key FOR UPDATE) m
 ORDER BY k.key`

	// insertIdentitiesSQL stores the bindings of keys bind found unbound: a plain insert, since the
	// keys' absence was read under PIPELINE_LOCK (only the processor's leader binds). ON CONFLICT
	// would make PostgreSQL insert each row speculatively and confirm it: about a third more time
	// a row for a case that cannot arise (a conflict fails the batch, which is tried again).
	insertIdentitiesSQL = `
INSERT INTO msg_identity (identity_key, msg_id, raw_sha256, dttm, bound_at)
SELECT k, id, h, d, $5 FROM unnest($1::text[], $2::bigint[], $3::bytea[], $4::timestamptz[]) AS u(k, id, h, d)`

	// bindIdentitiesSQL stores the bindings bind decided for keys it found bound (a key bound
	// again): by the primary key, whatever the plan's estimates.
	bindIdentitiesSQL = `
INSERT INTO msg_identity (identity_key, msg_id, raw_sha256, dttm, bound_at)
SELECT k, id, h, d, $5 FROM unnest($1::text[], $2::bigint[], $3::bytea[], $4::timestamptz[]) AS u(k, id, h, d)
ON CONFLICT (identity_key) DO UPDATE
   SET msg_id = EXCLUDED.msg_id, raw_sha256 = EXCLUDED.raw_sha256, dttm = EXCLUDED.dttm, bound_at = EXCLUDED.bound_at`

	// finishSQL writes the terminal status of a batch's messages and, in the same statement, the
	// marker debt (INV-8c: one marker_debt row naming them, whose id it returns) and the attempt: a
	// SUCCEEDED or SKIPPED outcome without a META (almost every message) is kept on the row itself
	// (outcome_epoch = the epoch $10; Attempts reads it from there), any other outcome gets its
	// msg_attempt row, with the epoch and the META read of a message that failed to decode.
	finishSQL = `
WITH u AS (
  SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bool[], $7::text[], $8::text[], $11::text[])
             AS u(id, status, class, reason, identity, differs, typ, styp, meta)
), done AS (
  UPDATE proc_state p
     SET status = u.status, error_class = NULLIF(u.class, ''), reason = NULLIF(u.reason, ''),
         identity_key = NULLIF(u.identity, ''), content_differs = u.differs,
         msg_type = NULLIF(u.typ, ''), msg_styp = NULLIF(u.styp, ''),
         attempts = p.attempts + 1, next_attempt_at = NULL,
         processing_started_at = COALESCE(p.processing_started_at, $9), processing_through = NULL,
         finished_at = $9,
         outcome_epoch = CASE WHEN u.status IN ('SUCCEEDED', 'SKIPPED') AND u.meta = '' THEN $10::bigint END
    FROM u
   WHERE p.msg_id = u.id AND p.status IN ('PENDING', 'FAILED')
  RETURNING p.msg_id, p.attempts, p.status, p.error_class, p.reason, p.outcome_epoch
), attempts AS (
  INSERT INTO msg_attempt (msg_id, attempt, at, epoch, outcome, error_class, reason, meta)
  SELECT d.msg_id, d.attempts, $9, $10, d.status, d.error_class, d.reason, NULLIF(u.meta, '')::jsonb
    FROM done d JOIN u ON u.id = d.msg_id
   WHERE d.outcome_epoch IS NULL)
INSERT INTO marker_debt (ids, finished_at)
SELECT array_agg(msg_id ORDER BY msg_id), $9 FROM done HAVING count(*) > 0
RETURNING debt_id`

	// failSQL records a FAILED attempt and its attempt row.
	failSQL = `
WITH failed AS (
  UPDATE proc_state
     SET status = 'FAILED', error_class = $2, reason = $3, attempts = attempts + 1,
         next_attempt_at = $4, identity_key = COALESCE(NULLIF($5, ''), identity_key),
         msg_type = COALESCE(NULLIF($6, ''), msg_type), msg_styp = COALESCE(NULLIF($7, ''), msg_styp),
         processing_started_at = COALESCE(processing_started_at, $8), processing_through = NULL, crashes = 0, deaths = 0
   WHERE msg_id = $1 AND status IN ('PENDING', 'FAILED')
  RETURNING msg_id, attempts, error_class, reason)
INSERT INTO msg_attempt (msg_id, attempt, at, epoch, outcome, error_class, reason, meta)
SELECT msg_id, attempts, $8, $9, 'FAILED', error_class, reason, NULLIF($10::text, '')::jsonb FROM failed`

	// markerGuardSQL locks the batch's debt row ($1) and returns the rows it names, for the
	// immediate marker's mailbox write (mark): held until that write has committed, the lock keeps
	// a replay from reopening one of them meanwhile, since a reopened row leaves its debts first
	// (the trigger proc_state_leave_debts, INV-8d); a row reopened before is no longer named.
	// SKIP LOCKED: the marker holds mailbox row locks meanwhile and must never wait here; a debt
	// someone else holds (a replay under way, the jobs stage moving it) is left to the sweep, as
	// is one no longer there. (The lock needs the role's UPDATE on one column: pkg/roles.)
	markerGuardSQL = `SELECT ids FROM marker_debt WHERE debt_id = $1 FOR UPDATE SKIP LOCKED`

	// markerPaidSQL settles a batch whose immediate marker wrote every row: its debt row ($3) is
	// deleted, and the rows are not touched. When the debt is no longer there (the jobs stage
	// moved it onto the rows, its grace having passed), the rows that still owe are settled each.
	// The id array is joined (primary key lookups whatever the plan's estimates).
	markerPaidSQL = `
WITH paid AS (DELETE FROM marker_debt WHERE debt_id = $3 RETURNING debt_id)
UPDATE proc_state p SET backfill_done_at = $2, backfill_outcome = 'MARKED', backfill_attempts = p.backfill_attempts + 1,
       backfill_error = NULL
  FROM unnest($1::bigint[]) AS u(id)
 WHERE p.msg_id = u.id AND p.backfill_next_at IS NOT NULL AND p.backfill_done_at IS NULL AND p.backfill_abandoned_at IS NULL
   AND NOT EXISTS (SELECT 1 FROM paid)`

	// markerFailedSQL records a failed immediate marker: the batch's debt ($4) moves onto the
	// terminal rows it still names (a replayed row left it: INV-8d), due again at $2, the failure
	// counted and its error kept; rows of the batch ($1) that owe on their own already (the jobs
	// stage moved the debt first) get the same.
	markerFailedSQL = `
WITH moved AS (DELETE FROM marker_debt WHERE debt_id = $4 RETURNING ids)
UPDATE proc_state p SET backfill_attempts = p.backfill_attempts + 1, backfill_next_at = $2, backfill_error = $3
  FROM unnest($1::bigint[]) AS u(id)
 WHERE p.msg_id = u.id AND p.status IN ('SUCCEEDED', 'SKIPPED', 'DEAD')
   AND p.backfill_done_at IS NULL AND p.backfill_abandoned_at IS NULL
   AND (p.backfill_next_at IS NOT NULL OR EXISTS (SELECT 1 FROM moved WHERE u.id = ANY (moved.ids)))`

	// markerOwedSQL counts the markers owed (the view marker_owed: their one definition).
	markerOwedSQL = `SELECT count(*) FROM marker_owed`
)
