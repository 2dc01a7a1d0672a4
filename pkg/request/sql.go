package request

// Every statement of the request store (req_track, req_open_day, req_seqn, req_heal_tally, replay_audit), with
// bound parameters; times come from the injected clock, never now().

const reqCols = `req_id, req_type, scope, scope_from, scope_to, status, origin, COALESCE(actor, ''),
       COALESCE(reason, ''), sender, COALESCE(routing_id, ''), COALESCE(seqn, 0), msg_dttm, COALESCE(out_xml, ''),
       registered_at, sent_at, waiting_at, closed_at, COALESCE(out_msg_id, 0), COALESCE(response_msg_id, 0),
       COALESCE(close_reason, ''), COALESCE(match_kind, '')`

// openStatuses are the statuses of an open request, for the statements below.
const openStatuses = `('REGISTERED', 'SENT', 'WAITING')`

const (
	// nextSEQNSQL advances the outbound counter (row-locked until the transaction ends) and
	// returns the new value: last+1, wrapping from 999999 to 1.
	nextSEQNSQL = `UPDATE req_seqn SET last = CASE WHEN last >= 999999 THEN 1 ELSE last + 1 END RETURNING last`

	// lockSEQNSQL takes the counter's row lock first: registrations are serialised by it, so the
	// days a registration finds uncovered stay so until it commits.
	lockSEQNSQL = `SELECT last FROM req_seqn FOR UPDATE`

	// readSEQNSQL reads the counter without taking it (a dry run).
	readSEQNSQL = `SELECT last FROM req_seqn`

	// supersedeListSQL expires the open RQRD of the same list and sender (a newer one replaces it).
	supersedeListSQL = `UPDATE req_track SET status = 'EXPIRED', closed_at = $3, close_reason = 'superseded'
 WHERE req_type = 'RQRD' AND sender = $1 AND scope = $2 AND status IN ` + openStatuses + `
 RETURNING req_id`

	// dayOwnersSQL are the open RQFD of sender $1 holding days of [$2, $3], with the range each
	// asked for, in req_id order.
	dayOwnersSQL = `SELECT req_id, scope_from, scope_to FROM req_track WHERE req_id IN (SELECT req_id FROM req_open_day
   WHERE req_type = 'RQFD' AND sender = $1 AND operation_day BETWEEN $2 AND $3)
   AND status IN ` + openStatuses + `
 ORDER BY req_id`

	// lockDayOwnersSQL is dayOwnersSQL locking the requests, in req_id order as the RESP guard
	// locks them, before they are superseded.
	lockDayOwnersSQL = dayOwnersSQL + ` FOR UPDATE`

	// supersedeDaysSQL expires the open RQFD $1: a newer request of their days replaces them
	// (takeDaysSQL then gives it their days).
	supersedeDaysSQL = `UPDATE req_track SET status = 'EXPIRED', closed_at = $2, close_reason = 'superseded'
 WHERE req_id = ANY($1) AND status IN ` + openStatuses + `
 RETURNING req_id`

	// takeDaysSQL gives every day of [$2, $3] of sender $1 to request $4: a free day, or one of
	// the requests $5 it superseded (all their days lie in its range). A day another request holds
	// is neither inserted nor updated, so the statement then counts fewer rows than days.
	takeDaysSQL = `INSERT INTO req_open_day AS o (req_type, sender, operation_day, req_id)
SELECT 'RQFD', $1, d::date, $4 FROM generate_series($2::date, $3::date, interval '1 day') AS d
ON CONFLICT (req_type, sender, operation_day) DO UPDATE SET req_id = EXCLUDED.req_id WHERE o.req_id = ANY($5::bigint[])`

	// ownedDaysSQL are the days of [$2, $3] an open RQFD of sender $1 owns.
	ownedDaysSQL = `SELECT operation_day FROM req_open_day
 WHERE req_type = 'RQFD' AND sender = $1 AND operation_day BETWEEN $2 AND $3 ORDER BY operation_day`

	// openListSQL: is an RQRD of the list and sender open?
	openListSQL = `SELECT req_id FROM req_track WHERE req_type = 'RQRD' AND sender = $1 AND scope = $2 AND status IN ` + openStatuses

	// releaseDaysSQL frees the days of a request that closed.
	releaseDaysSQL = `DELETE FROM req_open_day WHERE req_id = $1`

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

	// candidatesSQL are the requests of a kind an answer may be matched to, locked for the RESP
	// guard's transaction (the expiry sweep skips them, or the guard sees the sweep's result):
	// SENT and WAITING, registered after $2 (a request registered at or before it has timed out,
	// as expireDueSQL counts).
	candidatesSQL = `SELECT ` + reqCols + ` FROM req_track
 WHERE req_type = $1 AND status IN ('SENT', 'WAITING') AND registered_at > $2
 ORDER BY req_id FOR UPDATE`

	// registeredSQL are the REGISTERED requests of a kind registered after $2, not locked: the
	// guard never waits for a sender that holds one during its MySQL insert.
	registeredSQL = `SELECT ` + reqCols + ` FROM req_track WHERE req_type = $1 AND status = 'REGISTERED' AND registered_at > $2
 ORDER BY req_id`

	markSentSQL = `UPDATE req_track SET status = 'SENT', out_msg_id = $2, sent_at = $3
 WHERE req_id = $1 AND status = 'REGISTERED'`

	// knownOutSQL is which of the coutmsgs ids a request records as its outbound row.
	knownOutSQL = `SELECT out_msg_id FROM req_track WHERE out_msg_id = ANY($1::bigint[])`

	// reMetaSQL gives a REGISTERED request another SEQN, DTTM and outbound text (the ones of the
	// outbound row it adopts, or a fresh SEQN).
	reMetaSQL = `UPDATE req_track SET seqn = $2, msg_dttm = $3, out_xml = $4 WHERE req_id = $1 AND status = 'REGISTERED'`

	// raiseSEQNSQL takes a SEQN above every one of $1 (the SEQNs the mailbox shows in use) and
	// the counter's: the counter lives in PostgreSQL and goes back with a lost tail.
	raiseSEQNSQL = `UPDATE req_seqn SET last = CASE WHEN greatest(last, $1) >= 999999 THEN 1 ELSE greatest(last, $1) + 1 END RETURNING last`

	markWaitingSQL = `UPDATE req_track SET status = 'WAITING', waiting_at = $2
 WHERE req_id = $1 AND status = 'SENT'`

	// completeSQL closes an answered open request DONE.
	completeSQL = `UPDATE req_track SET status = 'DONE', done_at = $3, closed_at = $3, close_reason = 'applied',
       response_msg_id = $2, match_kind = $4
 WHERE req_id = $1 AND status IN ('SENT', 'WAITING')`

	// expireDueSQL closes the open requests registered at or before the deadline (bounded) and
	// releases their days.
	expireDueSQL = `WITH expired AS (
  UPDATE req_track SET status = 'EXPIRED', closed_at = $2, close_reason = 'timeout'
   WHERE req_id IN (SELECT req_id FROM req_track
                     WHERE status IN ` + openStatuses + ` AND registered_at <= $1
                     ORDER BY req_id LIMIT $3 FOR UPDATE SKIP LOCKED)
  RETURNING req_id, req_type),
released AS (DELETE FROM req_open_day WHERE req_id IN (SELECT req_id FROM expired))
SELECT req_id, req_type FROM expired`

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
