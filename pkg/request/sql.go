package request

// Every statement of the request store (req_track, req_seqn, req_heal_tally, replay_audit), with
// bound parameters; times come from the injected clock, never now().

const reqCols = `req_id, req_type, scope, scope_from, scope_to, status, origin, COALESCE(actor, ''),
       COALESCE(reason, ''), sender, COALESCE(routing_id, ''), COALESCE(seqn, 0), msg_dttm, COALESCE(out_xml, ''),
       registered_at, sent_at, waiting_at, closed_at, COALESCE(out_msg_id, 0), COALESCE(response_msg_id, 0),
       COALESCE(close_reason, ''), COALESCE(match_kind, '')`

const (
	// nextSEQNSQL advances the outbound counter (row-locked until the transaction ends) and
	// returns the new value: last+1, wrapping from 999999 to 1.
	nextSEQNSQL = `UPDATE req_seqn SET last = CASE WHEN last >= 999999 THEN 1 ELSE last + 1 END RETURNING last`

	// supersedeSQL expires the open request of the same kind and scope (a newer one replaces it).
	supersedeSQL = `UPDATE req_track SET status = 'EXPIRED', closed_at = $3, close_reason = 'superseded'
 WHERE req_type = $1 AND scope = $2 AND status IN ('REGISTERED', 'SENT', 'WAITING')
 RETURNING req_id`

	insertSQL = `INSERT INTO req_track (req_type, scope, scope_from, scope_to, sender, routing_id, seqn, msg_dttm,
       out_xml, status, origin, actor, reason, registered_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'REGISTERED', $10, NULLIF($11, ''), NULLIF($12, ''), $13)
RETURNING req_id`

	getSQL        = `SELECT ` + reqCols + ` FROM req_track WHERE req_id = $1`
	getForSendSQL = `SELECT ` + reqCols + ` FROM req_track WHERE req_id = $1 FOR UPDATE`

	listOpenSQL = `SELECT ` + reqCols + ` FROM req_track
 WHERE status IN ('REGISTERED', 'SENT', 'WAITING') ORDER BY req_id`

	listScopeSQL = `SELECT ` + reqCols + ` FROM req_track WHERE req_type = $1 AND scope = $2 ORDER BY req_id DESC LIMIT $3`

	listStatusSQL = `SELECT ` + reqCols + ` FROM req_track WHERE status = $1 ORDER BY req_id LIMIT $2`

	// openForMatchSQL are the answerable (SENT, WAITING) requests of a kind, locked for the RESP
	// guard's transaction (the expiry sweep skips them, or the guard sees the sweep's result). A
	// REGISTERED request cannot be answered, and is not locked: the guard never waits for a sender
	// that holds one during its MySQL insert.
	openForMatchSQL = `SELECT ` + reqCols + ` FROM req_track
 WHERE req_type = $1 AND status IN ('SENT', 'WAITING')
 ORDER BY req_id FOR UPDATE`

	markSentSQL = `UPDATE req_track SET status = 'SENT', out_msg_id = $2, sent_at = $3
 WHERE req_id = $1 AND status = 'REGISTERED'`

	markWaitingSQL = `UPDATE req_track SET status = 'WAITING', waiting_at = $2
 WHERE req_id = $1 AND status = 'SENT'`

	completeSQL = `UPDATE req_track SET status = 'DONE', done_at = $3, closed_at = $3, close_reason = 'applied',
       response_msg_id = $2, match_kind = $4
 WHERE req_id = $1 AND status IN ('SENT', 'WAITING')`

	// expireDueSQL closes the open requests registered at or before the deadline (bounded).
	expireDueSQL = `UPDATE req_track SET status = 'EXPIRED', closed_at = $2, close_reason = 'timeout'
 WHERE req_id IN (SELECT req_id FROM req_track
                   WHERE status IN ('REGISTERED', 'SENT', 'WAITING') AND registered_at <= $1
                   ORDER BY req_id LIMIT $3 FOR UPDATE SKIP LOCKED)
 RETURNING req_id, req_type`

	countSQL = `SELECT req_type, status, count(*) FROM req_track GROUP BY req_type, status`

	oldestOpenSQL = `SELECT req_type, min(registered_at) FROM req_track
 WHERE status IN ('REGISTERED', 'SENT', 'WAITING') GROUP BY req_type`

	// recentOriginSQL: did origin already ask for scope since a time (the triggers' rate limit)?
	recentOriginSQL = `SELECT EXISTS (SELECT 1 FROM req_track WHERE origin = $1 AND scope = $2 AND registered_at > $3)`

	// countOriginSinceSQL: requests of an origin registered since a time (the global rate limit).
	countOriginSinceSQL = `SELECT count(*) FROM req_track WHERE origin = $1 AND registered_at > $2`

	auditSQL = `INSERT INTO replay_audit (action, actor, reason, selector, ids, at) VALUES ('request', $1, $2, $3, $4, $5)`

	// tallySQL counts one unknown-flight FLOP for an operation day: a window older than $3 starts
	// again at 1. It returns the count in the current window.
	tallySQL = `INSERT INTO req_heal_tally AS t (operation_day, unknown, window_start) VALUES ($1, 1, $2)
ON CONFLICT (operation_day) DO UPDATE
   SET unknown = CASE WHEN t.window_start <= $3 THEN 1 ELSE t.unknown + 1 END,
       window_start = CASE WHEN t.window_start <= $3 THEN $2 ELSE t.window_start END
RETURNING unknown`

	flightsEmptySQL = `SELECT NOT EXISTS (SELECT 1 FROM flight)`
)
