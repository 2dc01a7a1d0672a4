package outbox

// Every statement of the msg_event store. Time is always a parameter (never now()).

// enqueueColumns are the msg_event columns Enqueue copies (the others take their defaults:
// event_id from msgx_event_id(), status QUEUED).
var enqueueColumns = []string{"target", "partition_key", "event_type", "state_version", "msg_id", "body", "created_at"}

// claimWindowSQL is the fast claim path: read the oldest $3 unsent KAFKA:msg events at or above
// event_id $4 in event order (msg_event_unsent_order). Every older unsent event of a FLID in that
// window is inside the window too, so the window holds each of its FLIDs' oldest unsent events
// in order. It claims, oldest first and at most $2, each FLID's run of due events from its head:
// its events in the window before the first one that is not due (DEAD, or PENDING and backing
// off at $1), which holds it and everything after it. $4 is a lower bound of every unsent event
// (ClaimHeadsFrom): the scan starts there instead of walking the index entries of the events
// sent since the last vacuum. The claimed rows are read back by the tuple the window saw (one
// statement, one snapshot: the same row version), not by a descent of the primary key each.
// With each row it returns whether the window was full (more unsent events exist beyond it),
// whether due events of the window were left out by $2, and the smallest event_id in the window.
const claimWindowSQL = `
WITH win AS (
    SELECT ctid AS tid, event_id, partition_key,
           status = 'PENDING' AND (next_attempt_at IS NULL OR next_attempt_at <= $1) AS due
      FROM msg_event
     WHERE target = 'KAFKA:msg' AND status IN ('PENDING', 'DEAD') AND event_id >= $4
     ORDER BY event_id
     LIMIT $3
), held AS (
    SELECT partition_key, min(event_id) AS from_id FROM win WHERE NOT due GROUP BY partition_key
), claim AS (
    SELECT w.tid, w.event_id FROM win w LEFT JOIN held h USING (partition_key)
     WHERE w.due AND (h.from_id IS NULL OR w.event_id < h.from_id)
)
SELECT e.event_id, e.partition_key, e.event_type, e.state_version, e.msg_id, COALESCE(e.body, e.payload::text), e.attempts, e.created_at,
       (SELECT count(*) FROM win) = $3,
       (SELECT count(*) FROM claim) > $2,
       (SELECT min(event_id) FROM win)
  FROM (SELECT tid FROM claim ORDER BY event_id LIMIT $2) c JOIN msg_event e ON e.ctid = c.tid
 ORDER BY e.event_id`

// claimQueuedSQL reads the oldest $1 QUEUED events above the delivery cursor in event order (the
// primary key), bodies included, and says of each whether it is due: its FLID has no PENDING or
// DEAD event (msg_event_unsent: a FLID with one is held, its events wait behind it); a held one
// comes without its body. The test is made on the window's rows only, above the LIMIT (OFFSET 0
// keeps it there): the planner then looks the window's FLIDs up one by one or hashes the held
// ones, whichever is cheaper for the window and the held set at hand; the held set is unbounded
// (a dead letter holds its FLID until it is replayed), so it must never be read whole for a
// window of a few. Claim keeps the window's events up to its limit-th due one. Every QUEUED event
// at or below the last one read was in the window: events commit in id order (PIPELINE_LOCK),
// so none can appear below it later.
const claimQueuedSQL = `
WITH cur AS MATERIALIZED (
    SELECT msgx_change_cursor() AS through
)
SELECT event_id, due, partition_key, event_type, state_version, msg_id,
       CASE WHEN due THEN COALESCE(body, payload::text) END, attempts, created_at, (SELECT through FROM cur)
  FROM (SELECT w.*,
               NOT EXISTS (SELECT 1 FROM msg_event u
                            WHERE u.target = 'KAFKA:msg' AND u.status IN ('PENDING', 'DEAD')
                              AND u.partition_key = w.partition_key) AS due
          FROM (SELECT e.* FROM msg_event e
                 WHERE e.event_id > (SELECT through FROM cur) AND e.target = 'KAFKA:msg' AND e.status = 'QUEUED'
                 ORDER BY e.event_id
                 LIMIT $1) w
        OFFSET 0) x
 ORDER BY event_id`

// advanceSQL moves the cursor from $5 to $1 under the lease of role $3, epoch $4, in one
// statement: a msg_event_delivered row ($1, sent at $2), and every QUEUED event of $6 (those at
// or below $1 that were not delivered) becomes PENDING, held on its row. Nothing changes unless
// the lease is the caller's and the cursor is still $5. It returns the lease's epoch (NULL: no
// row) and the cursor before the statement.
const advanceSQL = `
WITH lease AS (
    SELECT epoch FROM leader_lease WHERE role = $3 FOR SHARE
), cur AS (
    SELECT coalesce(max(through), 0) AS through FROM msg_event_delivered
), ok AS (
    SELECT 1 WHERE (SELECT epoch FROM lease) = $4 AND (SELECT through FROM cur) = $5
), moved AS (
    INSERT INTO msg_event_delivered (through, sent_at) SELECT $1, $2 FROM ok WHERE $1 > $5
), held AS (
    UPDATE msg_event e SET status = 'PENDING'
      FROM unnest($6::bigint[]) AS u(id)
     WHERE e.event_id = u.id AND e.status = 'QUEUED' AND e.event_id <= $1 AND EXISTS (SELECT 1 FROM ok)
)
SELECT (SELECT epoch FROM lease), (SELECT through FROM cur)`

// countWindowSQL counts unsent KAFKA:msg events at or above event_id $2, up to $1.
const countWindowSQL = `
SELECT count(*) FROM (
    SELECT 1 FROM msg_event WHERE target = 'KAFKA:msg' AND status IN ('PENDING', 'DEAD') AND event_id >= $2
     ORDER BY event_id LIMIT $1) w`

// claimHeadsSQL returns the due heads of KAFKA:msg, oldest first. A FLID's head is its smallest
// unsent event_id (PENDING or DEAD): a DEAD head or one still backing off holds every later
// event of its FLID. The recursive part is a skip scan over msg_event_unsent (target,
// partition_key, event_id): one index descent per FLID with unsent events, however long its
// backlog.
const claimHeadsSQL = `
WITH RECURSIVE heads AS (
    (SELECT partition_key, event_id, status, next_attempt_at
       FROM msg_event
      WHERE target = 'KAFKA:msg' AND status IN ('PENDING', 'DEAD')
      ORDER BY partition_key, event_id
      LIMIT 1)
  UNION ALL
    SELECT n.partition_key, n.event_id, n.status, n.next_attempt_at
      FROM heads h
      CROSS JOIN LATERAL (
            SELECT partition_key, event_id, status, next_attempt_at
              FROM msg_event
             WHERE target = 'KAFKA:msg' AND status IN ('PENDING', 'DEAD') AND partition_key > h.partition_key
             ORDER BY partition_key, event_id
             LIMIT 1) n
), due AS (
    SELECT event_id FROM heads
     WHERE status = 'PENDING' AND (next_attempt_at IS NULL OR next_attempt_at <= $1)
     ORDER BY event_id
     LIMIT $2
)
SELECT e.event_id, e.partition_key, e.event_type, e.state_version, e.msg_id, COALESCE(e.body, e.payload::text), e.attempts, e.created_at
  FROM due JOIN msg_event e USING (event_id)
 ORDER BY e.event_id`

// stateColumns are the msg_state_log columns Enqueue copies states into (event_id takes its
// default).
var stateColumns = []string{"partition_key", "event_type", "state_version", "msg_id", "body", "created_at"}

// foldStatesSQL moves at most $2 rows of msg_state_log, from event_id $1 in id order (a lower
// bound of the rows left: the index entries of the rows moved before are not walked), into
// msg_state_out, and with them every unsent KAFKA:schd event of msg_event (the previous release's
// processor writes its states there while the Deployments roll: msgx_take_legacy_states; one
// descent of msg_event_unsent when there is none). The newest state of each FLID (the highest
// version; of equal ones the highest id) becomes its row, new or rewritten in place with its
// event id, PENDING again with a fresh attempt budget, unless the row already holds a newer
// version. Not the highest id alone: a raise of the restore epoch renumbers in the old ids'
// order, and after a logical restore the states the processor wrote before the raise had ids
// below the restored ones. An equal version is written again (msgxctl kafka reseed re-enqueues
// the version the topic lost). pending_since, the oldest moved state's time for a new or sent
// row, stays while a newer state replaces an unsent one, so the backlog's age keeps growing while
// a flight's states fail. The rows of msg_state_out are written in key order, the order
// MarkStatesSent locks them in. The newest state of each FLID is chosen from the moved rows
// without their bodies, then only the chosen ones are read: sorting the bodies of a few thousand
// states spilled to disk. The log's rows are read by event_id as the statement's snapshot sees
// them (the sub-statements of a WITH share one snapshot and do not see each other's changes), so
// a log row must never be rewritten in place under its event_id, nor moved to another id inside
// the batch's range (the delete, rechecking a row updated meanwhile, would take it without its
// body): the one writer that updates the log, the restore epoch's renumbering, gives every row an
// id above every id in use. The batch is deleted as a range of the primary key up to its highest
// id (the rows the statement's snapshot sees in it are the batch): a generic plan of "event_id
// IN (the batch)", whose size it does not know, hashed the batch and scanned the whole log. It
// returns how many log rows it moved and the highest id among them (0: none).
const foldStatesSQL = `
WITH logged AS (
    DELETE FROM msg_state_log
     WHERE event_id >= $1
       AND event_id <= (SELECT max(event_id) FROM (SELECT event_id FROM msg_state_log WHERE event_id >= $1 ORDER BY event_id LIMIT $2) b)
    RETURNING event_id, partition_key, state_version, created_at
), legacy AS MATERIALIZED (
    SELECT * FROM msgx_take_legacy_states()
), newest AS (
    SELECT DISTINCT ON (partition_key) partition_key, event_id, legacy,
           min(created_at) OVER (PARTITION BY partition_key) AS since
      FROM (SELECT partition_key, event_id, state_version, created_at, false AS legacy FROM logged
            UNION ALL
            SELECT partition_key, event_id, state_version, created_at, true FROM legacy) m
     ORDER BY partition_key, state_version DESC, event_id DESC
), moved AS (
    SELECT l.event_id, l.partition_key, l.event_type, l.state_version, l.msg_id, l.body, l.created_at, n.since
      FROM newest n JOIN msg_state_log l ON l.event_id = n.event_id
     WHERE NOT n.legacy
    UNION ALL
    SELECT g.event_id, g.partition_key, g.event_type, g.state_version, g.msg_id, g.body, g.created_at, n.since
      FROM newest n JOIN legacy g ON g.event_id = n.event_id
     WHERE n.legacy
), fold AS (
    INSERT INTO msg_state_out AS o (partition_key, event_id, event_type, state_version, msg_id, body, created_at, pending_since)
    SELECT partition_key, event_id, event_type, state_version, msg_id, body, created_at, since FROM moved ORDER BY partition_key
    ON CONFLICT (partition_key) DO UPDATE
       SET event_id = EXCLUDED.event_id, event_type = EXCLUDED.event_type, state_version = EXCLUDED.state_version,
           msg_id = EXCLUDED.msg_id, body = EXCLUDED.body, created_at = EXCLUDED.created_at,
           pending_since = CASE WHEN o.status = 'PENDING' THEN o.pending_since ELSE EXCLUDED.pending_since END,
           status = 'PENDING', attempts = 0, next_attempt_at = NULL, sent_at = NULL, last_error = NULL
     WHERE EXCLUDED.state_version >= o.state_version
)
SELECT count(*), coalesce(max(event_id), 0) FROM logged`

// claimStatesSQL visits at most $2 FLIDs with an unsent state (msg_state_out_unsent), in
// partition_key order after the cursor $3. It returns one row per visited FLID: its newest state,
// whether it is due (PENDING and not backing off at $1) and the highest version already sent to
// the state topic (msg_state_sent; 0: none).
const claimStatesSQL = `
SELECT o.event_id, o.partition_key, o.event_type, o.state_version, o.msg_id, o.body, o.attempts, o.created_at,
       o.status = 'PENDING' AND (o.next_attempt_at IS NULL OR o.next_attempt_at <= $1),
       coalesce(s.state_version, 0)
  FROM (SELECT * FROM msg_state_out
         WHERE status IN ('PENDING', 'DEAD') AND partition_key > $3
         ORDER BY partition_key
         LIMIT $2) o
  LEFT JOIN msg_state_sent s ON s.partition_key = o.partition_key
 ORDER BY o.partition_key`

// markStatesSentSQL records that the state topic holds version $2[i] of FLID $1[i]: it raises the
// FLID's high-water mark (never lowers it) and settles the FLID's unsent state as SENT (PENDING or
// DEAD) unless it is newer than that version (written since the claim: the next flush sends it).
// It takes the rows of msg_state_sent, then those of msg_state_out, in key order: msgxctl kafka
// reseed locks msg_state_sent's in the same order, and the fold writes msg_state_out's in key
// order too, so none of them deadlock.
const markStatesSentSQL = `
WITH s AS (
    SELECT k, max(v) AS v FROM unnest($1::text[], $2::bigint[]) AS u(k, v) GROUP BY k
), hw AS (
    INSERT INTO msg_state_sent AS m (partition_key, state_version, sent_at)
    SELECT k, v, $3 FROM s ORDER BY k
    ON CONFLICT (partition_key) DO UPDATE
       SET state_version = greatest(m.state_version, EXCLUDED.state_version),
           sent_at = CASE WHEN EXCLUDED.state_version > m.state_version THEN EXCLUDED.sent_at ELSE m.sent_at END
), settle AS MATERIALIZED (
    SELECT o.partition_key FROM msg_state_out o JOIN s ON s.k = o.partition_key
     WHERE o.state_version <= s.v AND o.status IN ('PENDING', 'DEAD')
     ORDER BY o.partition_key
       FOR UPDATE OF o
)
UPDATE msg_state_out o
   SET status = 'SENT', sent_at = $3, next_attempt_at = NULL
  FROM settle
 WHERE o.partition_key = settle.partition_key`

// markSentSQL marks a batch SENT in one statement, fenced by the lease of role $3, epoch $4, in
// its own implicit transaction: one round trip instead of begin, check, update and commit. The
// fence is leader.Lease.Check's, inside the statement: the share lock on the role's lease row
// (taken before any row changes, held until the statement commits) holds off a takeover, and
// when the row's epoch is not $4 nothing changes. It returns the row's epoch (NULL: no row) and
// how many rows changed. Only PENDING and QUEUED rows change (a QUEUED one above the cursor is
// then delivered out of cursor order): a row an operator skipped meanwhile stays as it is.
const markSentSQL = `
WITH lease AS (
    SELECT epoch FROM leader_lease WHERE role = $3 FOR SHARE
), upd AS (
    UPDATE msg_event e
       SET status = 'SENT', sent_at = $2, next_attempt_at = NULL
      FROM unnest($1::bigint[]) AS u(id)
     WHERE e.event_id = u.id AND e.status IN ('PENDING', 'QUEUED')
       AND (SELECT epoch FROM lease) = $4
    RETURNING 1
)
SELECT (SELECT epoch FROM lease), (SELECT count(*) FROM upd)`

// markFailedSQL counts one failed attempt per unsent row (PENDING; a QUEUED one above the cursor
// is held on its row by it, as Settle holds the events it passes before counting their failures); DEAD when the attempts reach the maximum or the failure is fatal
// (non-retryable), else due again after the n-th attempt's delay, taken from $6 (delays[n-1] in
// microseconds, computed by package backoff: one rule everywhere).
const markFailedSQL = `
UPDATE msg_event e
   SET attempts = e.attempts + 1,
       last_error = f.err,
       status = CASE WHEN f.fatal OR e.attempts + 1 >= $5 THEN 'DEAD' ELSE 'PENDING' END,
       next_attempt_at = CASE WHEN f.fatal OR e.attempts + 1 >= $5 THEN NULL
                         ELSE $4::timestamptz + ($6::float8[])[e.attempts + 1] * interval '1 microsecond'
                         END
  FROM unnest($1::bigint[], $2::text[], $3::bool[]) AS f(id, err, fatal)
 WHERE e.event_id = f.id
   AND (e.status = 'PENDING'
        OR (e.status = 'QUEUED' AND NOT msgx_passed(e.event_id, msgx_change_cursor())))
RETURNING e.event_id, e.status, e.attempts, e.next_attempt_at`

// markStatesFailedSQL is markFailedSQL for KAFKA:schd: a failed state record of version $7[i]
// counts against FLID $1[i]'s unsent state if it is still PENDING at or below that version (a
// newer one written since is a new attempt).
const markStatesFailedSQL = `
UPDATE msg_state_out e
   SET attempts = e.attempts + 1,
       last_error = f.err,
       status = CASE WHEN f.fatal OR e.attempts + 1 >= $5 THEN 'DEAD' ELSE 'PENDING' END,
       next_attempt_at = CASE WHEN f.fatal OR e.attempts + 1 >= $5 THEN NULL
                         ELSE $4::timestamptz + ($6::float8[])[e.attempts + 1] * interval '1 microsecond'
                         END
  FROM unnest($1::text[], $2::text[], $3::bool[], $7::bigint[]) AS f(k, err, fatal, v)
 WHERE e.partition_key = f.k AND e.status = 'PENDING' AND e.state_version <= f.v
RETURNING e.event_id, e.status, e.attempts, e.next_attempt_at`

// progressSQL reads what the dispatcher's heartbeat reports: the lease's epoch of role $1 (NULL:
// no row), ingest's watermark and the oldest unsent event of each target (KAFKA:msg by the
// partial index msg_event_unsent_order; KAFKA:schd of msg_state_log and the unsent rows of
// msg_state_out), in one snapshot. The epoch is read without a lock: the statement
// writes nothing for a share lock to hold a takeover off from, and the report is sent to Kafka
// after the statement ended, where the new leader's producer fences it; a takeover committed
// before the read shows its epoch all the same. A lock would only make each beat wait behind a
// lease renewal or takeover in flight, and hold them up in turn.
const progressSQL = `
WITH lease AS (
    SELECT epoch FROM leader_lease WHERE role = $1
)
SELECT (SELECT epoch FROM lease),
       coalesce((SELECT watermark FROM inbox_cursor), 0),
       coalesce(least((SELECT min(event_id) FROM msg_event WHERE target = 'KAFKA:msg' AND status IN ('PENDING', 'DEAD')),
                      (SELECT min(event_id) FROM msg_event
                        WHERE event_id > msgx_change_cursor()
                          AND target = 'KAFKA:msg' AND status = 'QUEUED')), 0),
       coalesce(least((SELECT min(event_id) FROM msg_state_log),
                      (SELECT min(event_id) FROM msg_state_out WHERE status IN ('PENDING', 'DEAD'))), 0)`

// statsSQL feeds the backlog gauges. A state not folded yet is pending, one a previous release
// wrote to msg_event during a roll included (the fold takes it); one at or below the version
// the state topic holds is not (the next flush settles it without sending: a replayed older
// state, or one a previous release republished after a rollback).
const statsSQL = `
SELECT 'KAFKA:msg',
       count(*) FILTER (WHERE status <> 'DEAD'),
       count(*) FILTER (WHERE status = 'DEAD'),
       min(created_at) FILTER (WHERE status <> 'DEAD')
  FROM (SELECT status, created_at FROM msg_event WHERE target = 'KAFKA:msg' AND status IN ('PENDING', 'DEAD')
        UNION ALL
        SELECT status, created_at FROM msg_event
         WHERE event_id > msgx_change_cursor()
           AND target = 'KAFKA:msg' AND status = 'QUEUED') m
HAVING count(*) > 0
UNION ALL
SELECT 'KAFKA:schd',
       count(*) FILTER (WHERE status = 'PENDING'),
       count(*) FILTER (WHERE status = 'DEAD'),
       min(since) FILTER (WHERE status = 'PENDING')
  FROM (SELECT o.status, o.pending_since AS since, o.partition_key, o.state_version
          FROM msg_state_out o WHERE o.status IN ('PENDING', 'DEAD')
        UNION ALL
        SELECT 'PENDING', created_at, partition_key, state_version FROM msg_state_log
        UNION ALL
        SELECT CASE WHEN status = 'DEAD' THEN 'DEAD' ELSE 'PENDING' END, created_at, partition_key, state_version
          FROM msg_event WHERE target = 'KAFKA:schd' AND status IN ('QUEUED', 'PENDING', 'DEAD')) u
  LEFT JOIN msg_state_sent s USING (partition_key)
 WHERE u.state_version > coalesce(s.state_version, 0)
HAVING count(*) > 0
 ORDER BY 1`

// listDeadSQL lists dead letters (with $4 also the skipped ones) with the number of later
// events each holds back (a state holds none: a newer one replaces it).
const listDeadSQL = `
SELECT * FROM (
    SELECT d.event_id, d.target, d.partition_key, d.event_type, d.state_version, d.msg_id, d.attempts,
           coalesce(d.last_error, ''), d.created_at, d.status,
           CASE WHEN d.status = 'SKIPPED' THEN 0 ELSE (SELECT count(*) FROM msg_event w
             WHERE w.target = d.target AND w.partition_key = d.partition_key AND w.event_id > d.event_id
               AND (w.status = 'PENDING'
                    OR (w.status = 'QUEUED' AND NOT msgx_passed(w.event_id, msgx_change_cursor())))) END
      FROM msg_event d
     WHERE (d.status = 'DEAD' OR ($4 AND d.status = 'SKIPPED'))
       AND ($1::text = '' OR d.target = $1)
       AND ($2::text = '' OR d.partition_key = $2)
    UNION ALL
    SELECT d.event_id, 'KAFKA:schd', d.partition_key, d.event_type, d.state_version, d.msg_id, d.attempts,
           coalesce(d.last_error, ''), d.created_at, d.status, 0
      FROM msg_state_out d
     WHERE (d.status = 'DEAD' OR ($4 AND d.status = 'SKIPPED'))
       AND ($1::text = '' OR $1 = 'KAFKA:schd')
       AND ($2::text = '' OR d.partition_key = $2)
) d
 ORDER BY event_id
 LIMIT $3`

// replaySQL puts dead letters back to PENDING with a fresh attempt budget (the last error is
// kept until the next attempt overwrites it).
const replaySQL = `
WITH e AS (
    UPDATE msg_event
       SET status = 'PENDING', attempts = 0, next_attempt_at = NULL
     WHERE status = 'DEAD'
       AND (event_id = ANY($1::bigint[]) OR ($2::text <> '' AND partition_key = $2 AND ($3::text = '' OR target = $3)))
    RETURNING event_id
), s AS (
    UPDATE msg_state_out
       SET status = 'PENDING', attempts = 0, next_attempt_at = NULL
     WHERE status = 'DEAD'
       AND (event_id = ANY($1::bigint[]) OR ($2::text <> '' AND partition_key = $2 AND ($3::text = '' OR $3 = 'KAFKA:schd')))
    RETURNING event_id
)
SELECT event_id FROM e UNION ALL SELECT event_id FROM s`

// skipSQL gives up on dead letters: they become SKIPPED (never sent, no longer holding their
// FLID, kept past the SENT retention) with the reason in last_error.
const skipSQL = `
WITH e AS (
    UPDATE msg_event
       SET status = 'SKIPPED', next_attempt_at = NULL, last_error = $2
     WHERE status = 'DEAD' AND event_id = ANY($1::bigint[])
    RETURNING event_id
), s AS (
    UPDATE msg_state_out
       SET status = 'SKIPPED', next_attempt_at = NULL, last_error = $2
     WHERE status = 'DEAD' AND event_id = ANY($1::bigint[])
    RETURNING event_id
)
SELECT event_id FROM e UNION ALL SELECT event_id FROM s`

const auditSQL = `
INSERT INTO replay_audit (action, actor, reason, selector, ids, at)
VALUES ($1, $2, $3, $4, $5, $6)`

// originTimesSQL is when ingest enqueued each message — its first sight of the committed
// mailbox row, at most one poll interval after the commit: the start of the end-to-end lag.
// Messages already archived to proc_state_hst are not looked up (the lag is not observed).
// Each id is probed by the primary key in a LATERAL subquery (OFFSET 0 keeps it one), whatever
// plan the statistics give (lockIdentitiesSQL in package processor says what "= ANY" cost there).
const originTimesSQL = `
SELECT u.id, p.enqueued_at
  FROM unnest($1::bigint[]) AS u(id)
  CROSS JOIN LATERAL (SELECT enqueued_at FROM proc_state WHERE msg_id = u.id OFFSET 0) p`

// changeEventsSQL is every KAFKA:msg event with the SHA-256 of the value the dispatcher sends
// for it (the claim's COALESCE(body, payload::text); NULL: none), for msgxctl kafka verify.
const changeEventsSQL = `
SELECT event_id, partition_key, state_version, status, sha256(convert_to(COALESCE(body, payload::text), 'UTF8'))
  FROM msg_event_delivery
 WHERE target = 'KAFKA:msg'
 ORDER BY partition_key, state_version, event_id`

// stateSentSQL is the highest version sent to the state topic, per FLID.
const stateSentSQL = `SELECT partition_key, state_version FROM msg_state_sent`

// unsentStatesSQL is the newest unsent KAFKA:schd version, per FLID (folded or not).
const unsentStatesSQL = `
SELECT partition_key, max(state_version) FROM (
    SELECT partition_key, state_version FROM msg_state_out WHERE status IN ('PENDING', 'DEAD')
    UNION ALL
    SELECT partition_key, state_version FROM msg_state_log) s
 GROUP BY partition_key`

// timelineSQL is the database's current timeline (msgx_timeline: every promotion raises it)
// and the highest one recorded before; it records the current one.
const timelineSQL = `
WITH prev AS (SELECT max(timeline) AS t FROM db_timeline),
cur AS (SELECT msgx_timeline() AS t),
ins AS (INSERT INTO db_timeline (timeline, first_seen_at) SELECT t, $1 FROM cur ON CONFLICT DO NOTHING)
SELECT (SELECT t FROM cur), coalesce((SELECT t FROM prev), 0)`

// tailFromSQL is the time of the dispatcher's newest commit this database kept: the newest SENT
// mark (msg_event_sent) or state topic version (msg_state_sent). Only the dispatcher writes them,
// and a term writes them only after its tail read, so after a failover or a restore this is a
// commit of the old server's: every record Kafka took that the database does not know as sent
// was produced after about then (the caller subtracts a margin for sends in flight). The other
// roles' lease renewals are no such bound: the processes on a restored database renew theirs at
// once. NULL: nothing sent yet.
const tailFromSQL = `
SELECT greatest((SELECT max(sent_at) FROM msg_event WHERE status = 'SENT'),
                (SELECT max(sent_at) FROM msg_event_delivered WHERE sent_at > '-infinity'),
                (SELECT max(sent_at) FROM msg_state_sent))`

// recordHeldSQL records the change records read from the topic ($1 FLID, $2 version, $3
// event_id, $4 SHA-256 of the value, $5 record time) of which the database has no SENT
// KAFKA:msg event, with whether it has the record's own event (its event_id for that FLID and
// version: a crash after the broker's acknowledgement) or not (the database lost it, even if it
// derived the version again since, or a restored database gave the id to another event); it
// returns one row per new record with that flag.
const recordHeldSQL = `
INSERT INTO msg_kafka_held AS h (partition_key, state_version, event_id, value_sha256, record_time, stored)
SELECT u.k, u.v, u.id, u.sha, u.ts,
       EXISTS (SELECT 1 FROM msg_event e WHERE e.event_id = u.id AND e.target = 'KAFKA:msg'
                  AND e.partition_key = u.k AND e.state_version = u.v)
  FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bytea[], $5::timestamptz[]) AS u(k, v, id, sha, ts)
 WHERE NOT EXISTS (SELECT 1 FROM msg_event e WHERE e.target = 'KAFKA:msg' AND e.partition_key = u.k
                      AND e.state_version = u.v
                      AND (e.status = 'SENT'
                           OR (e.status = 'QUEUED' AND msgx_passed(e.event_id, msgx_change_cursor()))))
ON CONFLICT (partition_key, state_version) DO NOTHING
RETURNING h.stored`

// heldSQL is every held change record.
const heldSQL = `SELECT partition_key, state_version, event_id, value_sha256, record_time, NOT stored FROM msg_kafka_held`

// timelinesSQL is every recorded timeline (0 when none) with the current one (0 on a standby,
// where msgx_timeline() cannot be called).
const timelinesSQL = `
SELECT coalesce(d.timeline, 0), CASE WHEN pg_is_in_recovery() THEN 0 ELSE msgx_timeline() END
  FROM (SELECT 1) one LEFT JOIN db_timeline d ON true
 ORDER BY d.timeline`

// identitySQL is what the dispatcher compares at the start of a term: the server's system
// identifier (0: withheld) and timeline, the restore epoch, the system identifier and timeline a
// term last saw and when (0, 0, NULL: none), the highest timeline recorded, the highest event id
// msg_event holds (0: none), the dispatcher's last refusal (NULL, 0: none since its last term
// start) and an operator's confirmation of a restore not acted on yet. The highest event id is
// that of msg_event, msg_state_log or msg_state_out (ids of one sequence), or the delivery
// cursor: after retention it may be the only trace of a generation the database published.
const identitySQL = `
SELECT coalesce(msgx_system_identifier(), 0), msgx_timeline(), d.epoch,
       coalesce(d.system_identifier, 0), coalesce(d.timeline, 0), d.seen_at,
       coalesce((SELECT max(timeline) FROM db_timeline), 0), greatest(coalesce((SELECT max(event_id) FROM msg_event), 0), coalesce((SELECT max(event_id) FROM msg_state_log), 0),
                coalesce((SELECT max(event_id) FROM msg_state_out), 0), msgx_change_cursor()),
       d.refused_at, coalesce(d.refused_kafka_event_id, 0), d.confirmed_by, d.confirmed_reason, d.confirmed_at
  FROM db_epoch d`

// lockEpochSQL reads the restore epoch and the server's timeline and system identifier (0:
// withheld), locking db_epoch's row until the transaction ends.
const lockEpochSQL = `
SELECT d.epoch, msgx_timeline(), coalesce(msgx_system_identifier(), 0), greatest(coalesce((SELECT max(event_id) FROM msg_event), 0), coalesce((SELECT max(event_id) FROM msg_state_log), 0),
                coalesce((SELECT max(event_id) FROM msg_state_out), 0), msgx_change_cursor())
  FROM db_epoch d FOR UPDATE`

// foreignIDsSQL counts the records Kafka holds ($1 event_id, $2 target, $3 FLID, $4 version) of
// the id generation $5 that are not this database's: an id beyond what its sequence has drawn, or
// one msg_event, msg_state_log or msg_state_out gives to another event. Either means it went back behind ids it published (a
// restore that kept the timeline), so the ids it draws next would name two records. An id the
// sequence passed that msg_event does not hold is not: the database will never draw it again
// (its event was deleted after MSGX_EVENT_RETENTION, or its transaction rolled back). It returns
// the count and the highest such id (0: none).
const foreignIDsSQL = `
SELECT count(*), coalesce(max(u.id), 0)
  FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[]) AS u(id, t, k, v)
  LEFT JOIN (SELECT event_id, partition_key, state_version FROM msg_state_log
             UNION ALL
             SELECT event_id, partition_key, state_version FROM msg_state_out) s ON s.event_id = u.id
 WHERE u.id >> 40 = $5
   AND ((u.id & 1099511627775) > coalesce(pg_sequence_last_value('msg_event_event_id_seq'::regclass), 0)
        OR EXISTS (SELECT 1 FROM msg_event e
                    WHERE e.event_id = u.id AND (e.target, e.partition_key, e.state_version) <> (u.t, u.k, u.v))
        OR (s.event_id IS NOT NULL AND ('KAFKA:schd', s.partition_key, s.state_version) <> (u.t, u.k, u.v)))`

// raiseEpochSQL raises the restore epoch to $1 (db_epoch and msgx_event_id's constant, in this
// transaction; the function refuses anything but a raise).
const raiseEpochSQL = `SELECT msgx_raise_epoch($1)`

// renumberSQL gives every unsent event (PENDING, DEAD, QUEUED above the cursor) below the id
// generation $1 a new id of the current one, in the order of the old ids, so each FLID's events
// keep their order and every unsent event stays above every sent one and the cursor; then every row of msg_state_log (in order: the fold
// takes the highest id of a FLID as its newest) and every unsent state of msg_state_out. The new
// ids are above every id in use (the generation is above every generation in these tables), so
// no row ever meets another's id. The CTE sorts before msgx_event_id runs (a volatile target is
// computed after the sort). It returns how many rows it renumbered.
const renumberSQL = `
WITH n AS MATERIALIZED (
    SELECT event_id, msgx_event_id() AS new_id
      FROM msg_event
     WHERE (status IN ('PENDING', 'DEAD')
            OR (status = 'QUEUED' AND NOT msgx_passed(event_id, msgx_change_cursor())))
       AND event_id < ($1::bigint << 40)
     ORDER BY event_id
), e AS (
    UPDATE msg_event e SET event_id = n.new_id FROM n WHERE e.event_id = n.event_id RETURNING 1
), l AS MATERIALIZED (
    SELECT event_id, msgx_event_id() AS new_id
      FROM msg_state_log
     WHERE event_id < ($1::bigint << 40)
     ORDER BY event_id
), lu AS (
    UPDATE msg_state_log g SET event_id = l.new_id FROM l WHERE g.event_id = l.event_id RETURNING 1
), s AS (
    UPDATE msg_state_out SET event_id = msgx_event_id()
     WHERE status IN ('PENDING', 'DEAD') AND event_id < ($1::bigint << 40)
    RETURNING 1
)
SELECT (SELECT count(*) FROM e) + (SELECT count(*) FROM lu) + (SELECT count(*) FROM s)`

// restoreLogSQL records a raise of the restore epoch.
const restoreLogSQL = `
INSERT INTO db_restore (epoch, previous_epoch, raised_at, kind, detail, system_identifier, timeline, kafka_event_id, renumbered)
VALUES ($1, $2, $3, $4, $5, nullif($6::bigint, 0), $7, $8, $9)`

// seenSQL records the server a dispatcher term started on ($1 system identifier, 0: withheld;
// $2 timeline; $3 when) and clears the last refusal and an operator's confirmation: the term
// start acted on it.
const seenSQL = `
UPDATE db_epoch
   SET system_identifier = coalesce(nullif($1::bigint, 0), system_identifier), timeline = $2, seen_at = $3,
       refused_at = NULL, refused_kafka_event_id = NULL,
       confirmed_by = NULL, confirmed_reason = NULL, confirmed_at = NULL`

// refusedSQL records that the dispatcher refused to send from the database ($1 when, $2 the
// highest event id Kafka held).
const refusedSQL = `UPDATE db_epoch SET refused_at = $1, refused_kafka_event_id = $2`

// confirmRestoreSQL records an operator's word that the database was restored on purpose, only
// while the dispatcher refuses it (a word given before would wait for a later refusal, which
// could be an old primary's).
const confirmRestoreSQL = `
UPDATE db_epoch SET confirmed_by = $1, confirmed_reason = $2, confirmed_at = $3 WHERE refused_at IS NOT NULL`

// restoresSQL is every raise of the restore epoch, oldest first.
const restoresSQL = `
SELECT epoch, previous_epoch, raised_at, kind, detail, coalesce(system_identifier, 0), timeline, kafka_event_id, renumbered
  FROM db_restore ORDER BY epoch`

// reportSendSQL writes the dispatcher's report of one target's sends (ReportSends).
const reportSendSQL = `
INSERT INTO dispatch_send AS d (target, topic, epoch, blocked_since, error_class, error, brokers, brokers_silent,
                                last_sent_at, stall_after, report_every, reported_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
ON CONFLICT (target) DO UPDATE
   SET topic = EXCLUDED.topic, epoch = EXCLUDED.epoch, blocked_since = EXCLUDED.blocked_since,
       error_class = EXCLUDED.error_class, error = EXCLUDED.error, brokers = EXCLUDED.brokers,
       brokers_silent = EXCLUDED.brokers_silent,
       last_sent_at = COALESCE(EXCLUDED.last_sent_at, d.last_sent_at), stall_after = EXCLUDED.stall_after,
       report_every = EXCLUDED.report_every, reported_at = EXCLUDED.reported_at`

// Events is every event on record as one relation named msg_event with msg_event's columns:
// msg_event's rows and the state topic's, folded into msg_state_out (one per flight) or not yet
// (msg_state_log, PENDING). Readers select from it (`FROM ` + Events + ` WHERE ...`); PostgreSQL
// pushes their conditions into each branch, so each branch still uses its table's indexes.
const Events = `(
    SELECT event_id, target, partition_key, event_type, state_version, msg_id, payload, body, status, attempts,
           next_attempt_at, created_at, sent_at, last_error
      FROM msg_event_delivery
    UNION ALL
    SELECT event_id, 'KAFKA:schd', partition_key, event_type, state_version, msg_id, NULL::jsonb, body, status, attempts,
           next_attempt_at, created_at, sent_at, last_error
      FROM msg_state_out
    UNION ALL
    SELECT event_id, 'KAFKA:schd', partition_key, event_type, state_version, msg_id, NULL::jsonb, body, 'PENDING', 0,
           NULL::timestamptz, created_at, NULL::timestamptz, NULL::text
      FROM msg_state_log) AS msg_event`
