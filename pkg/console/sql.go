package console

// The console's queries. Each page reads through an index or a small table, so a page costs the
// same with any length of history (BenchmarkPages).

const (
	// flightPurgedSQL is a purged flight's final state.
	flightPurgedSQL = `SELECT final_state, purge_reason, purged_at FROM flight_history WHERE flid = $1 ORDER BY state_version DESC LIMIT 1`

	// flightSearchSQL finds flights by flight number (with or without the airline code) and
	// operation day.
	flightSearchSQL = `
SELECT flid, COALESCE(alcd, ''), COALESCE(flno, ''), COALESCE(mvin, ''), operation_day, state, state_version, sodt
  FROM flight
 WHERE (upper(flno) = upper($1) OR upper(COALESCE(alcd, '') || flno) = upper($1))
   AND ($2::date IS NULL OR operation_day = $2)
 ORDER BY operation_day DESC NULLS LAST, flid LIMIT 50`

	// flightEventsSQL is a flight's version history: every event enqueued for it (key = FLID),
	// with the message that caused it and its Kafka acknowledgement.
	flightEventsSQL = `
SELECT e.event_id, e.target, e.event_type, e.state_version, e.msg_id, COALESCE(e.body, e.payload::text), e.status, e.attempts,
       e.created_at, e.sent_at, COALESCE(e.last_error, ''), COALESCE(p.msg_type, ''), COALESCE(p.msg_styp, '')
  FROM msg_event e LEFT JOIN proc_state p ON p.msg_id = e.msg_id
 WHERE e.partition_key = $1
 ORDER BY e.state_version DESC, e.target LIMIT $2`

	// duplicatesSQL are the other messages of the same identity.
	duplicatesSQL = `
SELECT msg_id, status, content_differs FROM proc_state WHERE identity_key = $1 AND msg_id <> $2
 ORDER BY msg_id LIMIT 50`

	// identityOwnerSQL is the message an identity is bound to.
	identityOwnerSQL = `SELECT msg_id, bound_at FROM msg_identity WHERE identity_key = $1`

	// messageEventsSQL are the events a message caused.
	messageEventsSQL = `
SELECT event_id, target, partition_key, event_type, state_version, status, sent_at, COALESCE(last_error, '')
  FROM msg_event WHERE msg_id = $1 ORDER BY event_id`

	// deadMessagesSQL lists DEAD and FAILED messages of the given classes, each half through its
	// partial index (proc_state_dead, proc_state_open).
	deadMessagesSQL = `
(SELECT msg_id, status, COALESCE(error_class, ''), COALESCE(reason, ''), attempts, COALESCE(msg_type, ''),
        COALESCE(msg_styp, ''), COALESCE(finished_at, enqueued_at)
   FROM proc_state WHERE status = 'DEAD' AND error_class = ANY($1::text[]) ORDER BY msg_id LIMIT $2)
UNION ALL
(SELECT msg_id, status, COALESCE(error_class, ''), COALESCE(reason, ''), attempts, COALESCE(msg_type, ''),
        COALESCE(msg_styp, ''), COALESCE(finished_at, enqueued_at)
   FROM proc_state WHERE status IN ('PENDING', 'FAILED') AND status = 'FAILED' AND error_class = ANY($1::text[])
  ORDER BY msg_id LIMIT $2)
ORDER BY 1 LIMIT $2`

	// recentAuditSQL is the latest audit rows (the dead letters page shows what was done).
	recentAuditSQL = `SELECT action, actor, reason, selector, ids, at FROM replay_audit ORDER BY audit_id DESC LIMIT $1`

	// closedRequestsSQL are the latest closed requests.
	closedRequestsSQL = `
SELECT req_id, req_type, scope, status, origin, COALESCE(actor, ''), COALESCE(reason, ''), registered_at, closed_at,
       COALESCE(close_reason, '')
  FROM req_track WHERE closed_at IS NOT NULL ORDER BY req_id DESC LIMIT $1`
)

// The console's sessions (console_session): the cookie's id is stored as its SHA-256 only.
const (
	sessionInsertSQL = `INSERT INTO console_session (session_sha256, user_name, scope, token_sha256, created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6)`
	sessionReadSQL = `SELECT user_name, token_sha256, expires_at FROM console_session
 WHERE session_sha256 = $1 AND revoked_at IS NULL AND expires_at > $2`
	sessionRevokeSQL        = `UPDATE console_session SET revoked_at = $2 WHERE session_sha256 = $1 AND revoked_at IS NULL`
	sessionDeleteExpiredSQL = `DELETE FROM console_session WHERE expires_at < $1::timestamptz - interval '1 day'`
)
