package console

import (
	"github.com/msgx/msgx/pkg/outbox"
	"github.com/msgx/msgx/pkg/procstate"
)

// The console's queries. Each page reads through an index or a small table, so a page costs the
// same with any length of history (BenchmarkPages).

const (
	// flightPurgedSQL is a purged flight's final state.
	flightPurgedSQL = `SELECT final_state, purge_reason, purged_at FROM flight_history WHERE flid = $1 ORDER BY state_version DESC LIMIT 1`

	// flightSearchSQL finds flights whose number as the console shows it (flightNumber: the
	// airline code once) contains $1, or whose registration or stand is $1, on operation day $2
	// (any day when null; every flight of the day when $1 is empty).
	flightSearchSQL = `
SELECT flid, COALESCE(alcd, ''), COALESCE(flno, ''), COALESCE(mvin, ''), operation_day, state, state_version, sodt,
       COALESCE(reno, ''), COALESCE(stnd, '')
  FROM flight
 WHERE ($1 = '' OR strpos(upper(CASE WHEN starts_with(COALESCE(flno, ''), COALESCE(alcd, '')) THEN COALESCE(flno, '')
                                     ELSE COALESCE(alcd, '') || COALESCE(flno, '') END), upper($1)) > 0
        OR upper(reno) = upper($1) OR upper(stnd) = upper($1))
   AND ($2::date IS NULL OR operation_day = $2)
 ORDER BY operation_day DESC NULLS LAST, sodt NULLS LAST, flid LIMIT $3`

	// flightExistsSQL: is there a flight (or a purged one) with this FLID.
	flightExistsSQL = `SELECT EXISTS (SELECT 1 FROM flight WHERE flid = $1) OR EXISTS (SELECT 1 FROM flight_history WHERE flid = $1)`

	// flightEventsSQL is a flight's version history: every event enqueued for it (key = FLID),
	// with the message that caused it and its Kafka acknowledgement; of the state topic, the
	// newest state (msg_state_out) and those not folded into it yet (msg_state_log).
	flightEventsSQL = `
SELECT e.event_id, e.target, e.event_type, e.state_version, e.msg_id, COALESCE(e.body, e.payload::text), e.status, e.attempts,
       e.created_at, e.sent_at, COALESCE(e.last_error, ''), COALESCE(p.msg_type, ''), COALESCE(p.msg_styp, '')
  FROM (SELECT * FROM ` + outbox.Events + `) e
  LEFT JOIN proc_state p ON p.msg_id = e.msg_id
 WHERE e.partition_key = $1
 ORDER BY e.state_version DESC, e.target LIMIT $2`

	// duplicatesSQL are the other messages of the same identity.
	duplicatesSQL = `
SELECT msg_id, status, content_differs FROM proc_state WHERE identity_key = $1 AND msg_id <> $2
 ORDER BY msg_id LIMIT 50`

	// identityOwnerSQL is the message an identity is bound to.
	identityOwnerSQL = `SELECT msg_id, bound_at FROM msg_identity WHERE identity_key = $1`

	// messageEvents are the events a message caused still on record: its msg_event rows, and
	// the newest states of the state topic that are its (a newer state replaces a flight's).
	messageEvents = `
SELECT event_id, target, partition_key, event_type, state_version, status, sent_at, last_error
  FROM ` + outbox.Events + ` WHERE msg_id = $1`

	// messageEventsSQL are one page of the events a message caused: $2 of them after the first $3.
	messageEventsSQL = `
SELECT event_id, target, partition_key, event_type, state_version, status, sent_at, COALESCE(last_error, '')
  FROM (` + messageEvents + `) e ORDER BY event_id LIMIT $2 OFFSET $3`

	// messageEventCountSQL is how many events a message caused.
	messageEventCountSQL = `SELECT count(*) FROM (` + messageEvents + `) e`

	// recentAuditSQL is the latest audit rows (the dead letters page shows what was done).
	recentAuditSQL = `SELECT action, actor, reason, selector, ids, at FROM replay_audit ORDER BY audit_id DESC LIMIT $1`

	// closedRequestsSQL are the latest closed requests, each with its answer (the message the
	// processor applied under it) and what the answer did to flights (answerCols).
	closedRequestsSQL = `
SELECT r.req_id, r.req_type, r.scope, r.status, r.origin, COALESCE(r.actor, ''), COALESCE(r.reason, ''), r.registered_at, r.closed_at,
       COALESCE(r.close_reason, ''), ` + answerCols + `
  FROM req_track r ` + answerJoin + `
 WHERE r.closed_at IS NOT NULL ORDER BY r.req_id DESC LIMIT $1`

	// requestAnswerSQL is one request's answer and what it did to flights.
	requestAnswerSQL = `SELECT ` + answerCols + ` FROM req_track r ` + answerJoin + ` WHERE r.req_id = $1`

	// answerCols are a request's answer message (0: none) and, from the schedule snapshot log the
	// processor writes with a schedule answer, the flights it created, changed and left as they
	// were (a reference list answer has no log row: not a schedule).
	answerCols = `COALESCE(r.response_msg_id, 0), s.msg_id IS NOT NULL, COALESCE(s.inserted, 0), COALESCE(s.updated, 0), COALESCE(s.unchanged, 0)`
	answerJoin = `LEFT JOIN LATERAL (SELECT msg_id, inserted, updated, unchanged FROM schd_snap_log l
                   WHERE l.msg_id = r.response_msg_id ORDER BY snap_id LIMIT 1) s ON true`

	// answerDeletedSQL counts the flights a message left DELETED (its change records' state);
	// a schedule answer never deletes (INV-15), so this is the proof rather than a figure.
	answerDeletedSQL = `
SELECT count(DISTINCT partition_key) FROM msg_event
 WHERE msg_id = $1 AND target = 'KAFKA:msg' AND COALESCE(body, payload::text)::jsonb #>> '{changed,state,new}' = 'DELETED'`
)

// The console's sessions (console_session): the cookie's id is stored as its SHA-256 only. A
// session of a revoked token (token_revoked) counts no more, on every replica. oidc_groups is
// NULL for a token's session, the mapped groups for a provider's user.
const (
	sessionInsertSQL = `INSERT INTO console_session (session_sha256, user_name, scope, token_sha256, created_at, expires_at, oidc_groups)
VALUES ($1, $2, $3, $4, $5, $6, $7)`
	sessionReadSQL = `SELECT user_name, token_sha256, expires_at, oidc_groups FROM console_session s
 WHERE session_sha256 = $1 AND revoked_at IS NULL AND expires_at > $2
   AND NOT EXISTS (SELECT 1 FROM token_revoked r WHERE r.token_sha256 = s.token_sha256)`
	// tokenRevokedSQL: was this token revoked (httpauth.Revoke)?
	tokenRevokedSQL         = `SELECT EXISTS (SELECT 1 FROM token_revoked WHERE token_sha256 = $1)`
	sessionRevokeSQL        = `UPDATE console_session SET revoked_at = $2 WHERE session_sha256 = $1 AND revoked_at IS NULL`
	sessionDeleteExpiredSQL = `DELETE FROM console_session WHERE expires_at < $1::timestamptz - interval '1 day'`
)

// The dead letters' triage: DEAD and FAILED messages and SKIPPED no-match ones (replayable once
// their flight exists), each part through its partial index (proc_state_dead, proc_state_open,
// proc_state_no_match, whose pattern is procstate.NoMatchLike), filtered by $1 class (” all;
// NO-MATCH for the skipped), $2 type, $3 reason text, $4 FLID (in the message's text), $5/$6
// time range, $7 group and, unless $8, without the acknowledged ones. A group is the class and
// the reason without its offending value ($9: sis.ValuePattern) and with its numbers as N.
const deadFilteredSQL = `
WITH d AS (
  SELECT msg_id, status, COALESCE(error_class, '` + noMatchClass + `') AS class, COALESCE(reason, '') AS reason, attempts,
         COALESCE(msg_type, '') AS msg_type, COALESCE(msg_styp, '') AS msg_styp, COALESCE(finished_at, enqueued_at) AS at, raw,
         EXISTS (SELECT 1 FROM console_note c WHERE c.msg_id = proc_state.msg_id AND c.acknowledged) AS acked
    FROM proc_state
   WHERE status = 'DEAD' OR (status IN ('PENDING', 'FAILED') AND status = 'FAILED')
      OR (status = 'SKIPPED' AND reason LIKE '` + procstate.NoMatchLike + `')
), a AS (
  SELECT d.*, d.class || ': ' || regexp_replace(left(regexp_replace(d.reason, $9, '', 'g'), 160), '[0-9]+', 'N', 'g') AS grp
    FROM d
   WHERE ($1 = '' OR d.class = $1) AND ($2 = '' OR d.msg_type = $2)
     AND ($3 = '' OR strpos(lower(d.reason), lower($3)) > 0)
     AND ($4 = '' OR strpos(d.raw, '<FLID>' || $4 || '</FLID>') > 0)
     AND ($5::timestamptz IS NULL OR d.at >= $5) AND ($6::timestamptz IS NULL OR d.at < $6)
), f AS (SELECT * FROM a WHERE $8 OR NOT a.acked),
g AS (SELECT * FROM f WHERE $7 = '' OR f.grp = $7)
`

const (
	// deadGroupsSQL counts the filtered messages by group (before the group filter).
	deadGroupsSQL = deadFilteredSQL + `
SELECT grp, min(class), count(*), max(at) FROM f GROUP BY grp ORDER BY count(*) DESC, grp LIMIT 100`

	// deadAckedSQL counts the acknowledged messages of the filter, shown or hidden.
	deadAckedSQL = deadFilteredSQL + `SELECT count(*) FROM a WHERE a.acked AND ($7 = '' OR a.grp = $7)`

	// deadPageSQL is one page of the filtered messages, newest first, each with the flight its
	// text names, whether it is acknowledged, and the total.
	deadPageSQL = deadFilteredSQL + `
SELECT g.msg_id, g.status, g.class, g.reason, g.attempts, g.msg_type, g.msg_styp, g.at, g.grp,
       COALESCE(substring(g.raw from '<FLID>\s*([0-9]+)\s*</FLID>'), ''), g.acked, (SELECT count(*) FROM g)
  FROM g ORDER BY g.msg_id DESC LIMIT $10 OFFSET $11`

	// deadIDsSQL are the ids of the filtered messages (a whole group's or filter's, for one
	// action): at most $10.
	deadIDsSQL = deadFilteredSQL + `SELECT msg_id FROM g ORDER BY msg_id LIMIT $10`

	// notesOfSQL are the notes and acknowledgements of messages, oldest first.
	notesOfSQL = `SELECT msg_id, note, actor, acknowledged, at FROM console_note WHERE msg_id = ANY($1::bigint[]) ORDER BY msg_id, note_id`

	// noteInsertSQL adds an operator's note (and acknowledgement) to messages.
	noteInsertSQL = `INSERT INTO console_note (msg_id, actor, note, acknowledged, at) SELECT unnest($1::bigint[]), $2, $3, $4, $5`

	// triageAuditSQL audits an action on a whole group or filter ($1 acknowledge or note).
	triageAuditSQL = `INSERT INTO replay_audit (action, actor, reason, selector, ids, at) VALUES ($1, $2, $3, $4, $5, $6)`

	// flightDaySQL is a flight's operation day (for a schedule request about it).
	flightDaySQL = `SELECT operation_day FROM flight WHERE flid = $1 AND operation_day IS NOT NULL`
)

// A request form's one-time id (console_form).
const (
	formTakeSQL    = `INSERT INTO console_form (form_id, created_at) VALUES ($1, $2) ON CONFLICT DO NOTHING`
	formReadSQL    = `SELECT req_id FROM console_form WHERE form_id = $1`
	formReleaseSQL = `DELETE FROM console_form WHERE form_id = $1 AND req_id IS NULL`
	formDoneSQL    = `UPDATE console_form SET req_id = $2 WHERE form_id = $1`
)

// messageNotesSQL are a message's notes and acknowledgements, newest first.
const messageNotesSQL = `SELECT note, actor, acknowledged, at FROM console_note WHERE msg_id = $1 ORDER BY note_id DESC LIMIT 50`

// finishedIn selects, from proc_state, the given columns of the rows finished in ($1, $2]: every
// finished row is in exactly one of two partial indexes, so no scan of proc_state —
// proc_state_settled (finished_at; its marker written, abandoned, or owed with its batch) and
// proc_state_marker_owed (its marker owed on the row; few). A window longer than
// MSGX_PROC_STATE_RETENTION misses the rows archived since.
func finishedIn(cols string) string {
	return `
  SELECT ` + cols + ` FROM proc_state
   WHERE finished_at > $1 AND finished_at <= $2
     AND (backfill_done_at IS NOT NULL OR backfill_abandoned_at IS NOT NULL OR (backfill_next_at IS NULL AND finished_at IS NOT NULL))
  UNION ALL
  SELECT ` + cols + ` FROM proc_state
   WHERE backfill_next_at IS NOT NULL AND backfill_done_at IS NULL AND backfill_abandoned_at IS NULL
     AND finished_at > $1 AND finished_at <= $2`
}

// rateSQL counts the messages finished in ($1, $2] by outcome (a terminal status), and as
// "ingested" the messages enqueued in it: each is either finished since (so among the finished)
// or still open (proc_state_open).
var rateSQL = `WITH f AS (` + finishedIn("status, enqueued_at") + `
)
SELECT status, count(*) FROM f WHERE status IN ('SUCCEEDED', 'SKIPPED', 'DEAD') GROUP BY status
UNION ALL
SELECT 'ingested', (SELECT count(*) FROM f WHERE enqueued_at > $1)
     + (SELECT count(*) FROM proc_state WHERE status IN ('PENDING', 'FAILED') AND enqueued_at > $1 AND enqueued_at <= $2)`

// messageSearchSQL finds the messages finished in ($1, $2] (or enqueued then and still open) of
// type $3 and subtype $4 (” any), SEQN $5 (its identity key's, or its text's when it has no
// key: it failed to decode), naming flight $6 in its text: newest first, $7 of them after the
// first $8, each with the FLID its text names and the number found.
var messageSearchSQL = `WITH m AS (` + finishedIn(searchCols) + `
  UNION ALL
  SELECT ` + searchCols + ` FROM proc_state WHERE status IN ('PENDING', 'FAILED') AND enqueued_at > $1 AND enqueued_at <= $2
)
SELECT msg_id, status, class, reason, typ, styp, split_part(ikey, '|', 4), at,
       COALESCE(substring(raw from '<FLID>\s*([0-9]+)\s*</FLID>'), ''), count(*) OVER ()
  FROM m
 WHERE ($3 = '' OR typ = $3) AND ($4 = '' OR styp = $4)
   AND ($5 = '' OR split_part(ikey, '|', 4) = $5 OR (ikey = '' AND strpos(raw, '<SEQN>' || $5 || '</SEQN>') > 0))
   AND ($6 = '' OR strpos(raw, '<FLID>' || $6 || '</FLID>') > 0)
 ORDER BY msg_id DESC LIMIT $7 OFFSET $8`

const searchCols = `msg_id, status, COALESCE(error_class, '') AS class, COALESCE(reason, '') AS reason, COALESCE(msg_type, '') AS typ,
       COALESCE(msg_styp, '') AS styp, COALESCE(identity_key, '') AS ikey, COALESCE(finished_at, enqueued_at) AS at, raw`
