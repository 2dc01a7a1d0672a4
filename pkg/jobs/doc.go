// Package jobs is the jobs stage (cmd/jobs, leader only): the backfill sweep, the history sweep
// and retention/archive (docs/spec.md §10; INV-7, INV-8c, INV-18, CLM-4, CLM-9).
//
// One scheduler goroutine (Run) wakes every Tick, reads the injected clock and runs what is due,
// one job at a time. Every run is bounded: transactions of at most Batch rows (HistoryBatch
// flights), at most RunTxs of them per task, and no new transaction once RunBudget has passed.
// RunOnce runs one bounded pass of a job whatever the schedule (tests; the scheduler).
//
// # Backfill sweep — every BackfillInterval (30s)
//
// Works on terminal rows (SUCCEEDED, SKIPPED, DEAD) that owe their mailbox marker:
// backfill_next_at set, neither done nor abandoned. The processor's terminal statement writes
// the batch's debt as one marker_debt row (INV-8c) and makes one immediate attempt, which deletes
// the row when it wrote every marker, or moves the debt onto the rows when it failed. A debt it
// has not paid BackoffBase after finished_at (a partial write, busy writers, shadow mode, a
// processor that died between commit and marker) is moved onto its rows first (moveDebts), due
// since finished_at. An immediate attempt still running then (bounded by MarkerTimeout) holds
// its debt row locked, and the move, in a transaction of its own that holds nothing in the
// mailbox, waits for it; what it wrote the sweep then finds written (a marker is written only
// where it is NULL). The two never wait for each other across the databases: the sweep locks its
// PostgreSQL rows, then the mailbox rows; the immediate marker locks the mailbox rows, then skips
// its batch's debt row if someone holds it (pkg/processor, markers.go; INV-8d). Between selecting its rows and writing the mailbox,
// the sweep waits, bounded, until the standbys the rule asks for (MSGX_MARKER_STANDBYS,
// pkg/replication) have replayed the WAL position read after the selection, which is past the
// rows' terminal commits (INV-8c); when they have not, the run writes and records nothing and the
// rows stay due for the next run (no attempt is charged, nothing is abandoned for it).
//
//	owed ──mailbox: NULL → written──────────▶ MARKED          (done)
//	  │  ──mailbox: already set────────────▶ ALREADY_MARKED  (done; the value is never overwritten)
//	  │  ──mailbox: no such row────────────▶ MISSING_ROW     (abandoned at once, error log + metric)
//	  └──mailbox call fails──┬─ now < enqueued_at + R ─▶ owed, due at now + 30s·2^(attempts-1) ≤ 15m
//	                         └─ now ≥ enqueued_at + R ─▶ OVERDUE         (abandoned, listed)
//	abandoned ──msgxctl backfill retry (audited)──▶ owed, due now (archived rows come back)
//
// R (MSGX_OVERDUE_BACKFILL) counts from enqueued_at, the local clock: the mailbox's
// DATE_RECEIVED (which may be NULL) plays no part. PENDING and FAILED rows are never selected
// (and by the proc_state_marker_terminal CHECK cannot owe a marker). The claimed rows stay locked
// (FOR UPDATE SKIP LOCKED) while the mailbox is written, so a replay cannot turn one back to
// PENDING under the marker. Each mailbox call (mailbox.MarkEach: one short MySQL transaction that
// reads the rows FOR UPDATE and writes only NULL markers, INV-7) is bounded by MarkTimeout. A
// failing call ends the run; the rest stays due. Shadow mode writes nothing to MySQL: the sweep
// does nothing and the markers stay owed.
//
// # History sweep — daily after HistorySweepAt (03:30) airport time, and on demand
//
// Candidates: flights whose operation day is older than HistoryRetention (relative to the
// airport day) and that are DELETED or not updated for HistoryQuiet. They are read without locks,
// then each batch is purged in one transaction:
//
//	lease check → flight_history rows (flight + every detail table as jsonb, for the flights
//	still at their selected state_version and updated_at) → PIPELINE_LOCK → re-check (same
//	state_version and updated_at, criteria still met; FOR UPDATE) → the history rows of flights
//	not confirmed dropped → TOMBSTONE pair (KAFKA:msg + KAFKA:schd, flight.PurgeVersion) for an
//	ACTIVE flight → the masters of purged ACTIVE children: MAFL derived again, version+1, change
//	events (INV-22b) → DELETE flight (details cascade) → commit
//
// A flight the processor changed after selection is kept (INV-18); any failure rolls back the
// history row, the TOMBSTONE and the delete together. The daily sweep is done for the day once a
// run finds nothing left (job_state.done_day, so a restart or takeover does not repeat it);
// until then it continues at every tick. msgxctl history sweep sets job_state.requested_at; the
// leader runs the sweep at its next tick. HistoryEnabled=false: the sweep deletes nothing.
//
// # Retention and archive — every RetentionInterval
//
//	proc_state (terminal, finished before ProcStateRetention, marker done or abandoned; in
//	shadow mode any terminal row) ─DELETE … RETURNING → INSERT (one statement per batch)─▶
//	proc_state_hst
//	proc_state_hst raw copy, finished before RawRetention ─▶ raw = NULL, raw_cleared_at
//	proc_state_hst archived before ProcStateHstRetention (not abandoned-unreconciled),
//	msg_event delivered (SENT, or QUEUED and passed by the cursor) and msg_state_out SENT before EventRetention, schd_snap_log applied before
//	SnapLogRetention, req_track closed before ReqTrackRetention, flight_history purged before
//	FlightHistoryRetention, msg_identity bound before the stored identity window +
//	IdentityMargin ─▶ deleted
//
// msg_identity is not archived with proc_state, so a message whose row moved to proc_state_hst
// still makes a later copy within the identity window a duplicate (pkg/identity).
//
// # Metrics
//
// msgx_pipeline_job_heartbeat_age_seconds{task}, msgx_pipeline_job_ticks_total{task},
// msgx_pipeline_job_failures_total{task}, msgx_pipeline_job_last_sweep_selected{task},
// msgx_pipeline_job_rows_total{task,step}, msgx_pipeline_backfill_oldest_unmarked_seconds,
// msgx_pipeline_backfill_abandoned_markers (gauge) and msgx_pipeline_backfill_abandoned_total{outcome}.
package jobs
