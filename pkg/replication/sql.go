package replication

// Every statement of the standby rule. They read the primary's own state (its WAL position, its
// WAL senders), never msgx's tables, with bound parameters only.

const (
	// positionSQL is the WAL insert position, in bytes from 0/0: at or past the end of every
	// commit record inserted so far, so of every commit the reading session (or anyone it heard
	// from) has seen, whether that commit waited for its WAL flush or not (the write and flush
	// positions may lag an asynchronous commit). The walsenders send only flushed WAL, so a
	// standby that replayed past it has those commits on its disk and the primary has them on
	// its own. At a page boundary the insert position points past the page header (24 bytes;
	// 40 on the first page of a segment), where no record ends: it is taken back to the page
	// start, which a standby's replay position reaches when the last record ends there.
	positionSQL = `
SELECT (CASE WHEN p % seg = 40 THEN p - 40 WHEN p % blk = 24 THEN p - 24 ELSE p END)::bigint
  FROM (SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn AS p,
               pg_size_bytes(current_setting('wal_segment_size'))::numeric AS seg,
               current_setting('wal_block_size')::numeric AS blk) AS s`

	// replayedSQL counts the physical standbys that have replayed WAL up to position $1 (bytes
	// from 0/0). It reads the WAL senders through pg_stat_get_wal_senders(), which is what
	// pg_stat_replication shows, because that view joins the backend status, which a transaction
	// reads once: the backfill sweep polls inside its transaction. A logical replication sender
	// (an active logical slot) is not a standby. Without pg_read_all_stats a role sees every
	// column but the pid as NULL, and counts none.
	replayedSQL = `
SELECT count(*)::int
  FROM pg_stat_get_wal_senders() w
 WHERE w.replay_lsn - '0/0'::pg_lsn >= $1::bigint
   AND NOT EXISTS (SELECT 1 FROM pg_replication_slots s WHERE s.active_pid = w.pid AND s.slot_type = 'logical')`

	// sendersSQL counts the WAL senders whose state this role cannot read (it lacks
	// pg_read_all_stats) and the physical standbys connected (streaming or catching up; a base
	// backup's sender is not one), for the start-up check.
	sendersSQL = `
SELECT count(*) FILTER (WHERE w.state IS NULL)::int,
       count(*) FILTER (WHERE w.state IS NOT NULL AND w.state <> 'backup'
                          AND NOT EXISTS (SELECT 1 FROM pg_replication_slots s
                                           WHERE s.active_pid = w.pid AND s.slot_type = 'logical'))::int
  FROM pg_stat_get_wal_senders() w`
)
