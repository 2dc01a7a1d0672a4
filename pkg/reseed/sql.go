package reseed

// allSQL lists every flight a reseed of all publishes: the stored ones and the purged ones the
// dispatcher sent a state of (their tombstone).
const allSQL = `
SELECT flid FROM flight
UNION
SELECT partition_key::bigint FROM msg_state_sent WHERE partition_key ~ '^[0-9]+$'`

// sentSQL reads the version the dispatcher records the state topic holds, per FLID ($1), and
// locks the rows until the reseed commits: a flush that acknowledges a state meanwhile raises
// the record after the reseed lowered it, never before (the lowering would undo the raise and
// let an older version out).
const sentSQL = `SELECT partition_key, state_version FROM msg_state_sent WHERE partition_key = ANY ($1::text[]) ORDER BY partition_key FOR UPDATE`

// purgedSQL reads the newest version the writers enqueued of each FLID ($1): a purged flight's
// tombstone version, which the dispatcher may not have sent yet.
const purgedSQL = `SELECT partition_key, max(state_version) FROM msg_event WHERE partition_key = ANY ($1::text[]) GROUP BY partition_key`

// lowerSentSQL lowers the dispatcher's record of what the state topic holds of FLID $1[i] to
// what it holds, version $2[i] (0: nothing: the row goes), so that the dispatcher sends the
// reseed's event. It only lowers.
const lowerSentSQL = `
WITH h AS (
    SELECT k, v FROM unnest($1::text[], $2::bigint[]) AS u(k, v)
), gone AS (
    DELETE FROM msg_state_sent s USING h WHERE s.partition_key = h.k AND h.v = 0
)
UPDATE msg_state_sent s SET state_version = h.v
  FROM h
 WHERE s.partition_key = h.k AND h.v > 0 AND s.state_version > h.v`
