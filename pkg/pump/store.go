package pump

// Every SQL statement of the pump, with bound parameters only. Time always comes in as a
// parameter (the injected clock), never from now().

const (
	// headSQL loads the head run: the smallest open msg_ids ≤ W, with their text.
	headSQL = `
SELECT msg_id, raw, status, attempts, next_attempt_at, processing_started_at, enqueued_at
  FROM proc_state
 WHERE status IN ('PENDING', 'FAILED')
   AND msg_id <= (SELECT watermark FROM inbox_cursor)
 ORDER BY msg_id
 LIMIT $1`

	markStartedSQL = `
UPDATE proc_state SET processing_started_at = $2
 WHERE msg_id = $1 AND processing_started_at IS NULL AND status IN ('PENDING', 'FAILED')`

	// bindIdentitiesSQL binds every identity of a batch at once; a key already bound (to this
	// message on a retry, or to an earlier one) is left alone. Keys repeated inside the batch
	// bind to the first in array (= msg_id) order.
	bindIdentitiesSQL = `
INSERT INTO msg_identity (identity_key, msg_id, raw_sha256, bound_at)
SELECT k, id, h, $4 FROM unnest($1::text[], $2::bigint[], $3::bytea[]) WITH ORDINALITY AS u(k, id, h, n)
 ORDER BY n
ON CONFLICT DO NOTHING`

	ownersSQL = `SELECT identity_key, msg_id, raw_sha256 FROM msg_identity WHERE identity_key = ANY($1::text[])`

	// finishSQL writes the terminal status of a batch's messages and, in the same statement, the
	// backfill intent (INV-8).
	finishSQL = `
UPDATE proc_state p
   SET status = u.status, error_class = NULLIF(u.class, ''), reason = NULLIF(u.reason, ''),
       identity_key = NULLIF(u.identity, ''), content_differs = u.differs,
       msg_type = NULLIF(u.typ, ''), msg_styp = NULLIF(u.styp, ''),
       attempts = p.attempts + 1, next_attempt_at = NULL,
       finished_at = $9, backfill_next_at = $9
  FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bool[], $7::text[], $8::text[])
       AS u(id, status, class, reason, identity, differs, typ, styp)
 WHERE p.msg_id = u.id AND p.status IN ('PENDING', 'FAILED')`

	failSQL = `
UPDATE proc_state
   SET status = 'FAILED', error_class = $2, reason = $3, attempts = attempts + 1,
       next_attempt_at = $4, identity_key = COALESCE(NULLIF($5, ''), identity_key),
       msg_type = COALESCE(NULLIF($6, ''), msg_type), msg_styp = COALESCE(NULLIF($7, ''), msg_styp)
 WHERE msg_id = $1 AND status IN ('PENDING', 'FAILED')`

	markerDoneSQL = `
UPDATE proc_state SET backfill_done_at = $2, backfill_outcome = 'MARKED', backfill_attempts = backfill_attempts + 1,
       backfill_error = NULL
 WHERE msg_id = ANY($1::bigint[]) AND backfill_done_at IS NULL`

	markerFailedSQL = `
UPDATE proc_state SET backfill_attempts = backfill_attempts + 1, backfill_next_at = $2, backfill_error = $3
 WHERE msg_id = ANY($1::bigint[]) AND backfill_done_at IS NULL AND backfill_abandoned_at IS NULL`

	backlogSQL = `
SELECT status, count(*) FROM proc_state WHERE status IN ('PENDING', 'FAILED') GROUP BY status`

	markerOwedSQL = `
SELECT count(*) FROM proc_state
 WHERE backfill_next_at IS NOT NULL AND backfill_done_at IS NULL AND backfill_abandoned_at IS NULL`
)
