// Package ingest is msgx's discovery stage (docs/spec.md §4; INV-2, INV-4, INV-5): it
// copies new rows of the legacy mailbox table cminmsgs into PostgreSQL as PENDING proc_state rows,
// with a verbatim copy of the raw text and its SHA-256, and it serves the compat entry
// POST /cminmsgs/send. It never parses a message (the compat entry only checks that the body is
// well-formed XML and reads META for the mailbox's SUBSYSTEM_* columns; the copy reads only the
// XML declaration, to store bytes in a declared GB2312, GBK or GB18030 charset as UTF-8, see
// rawCopy) and never writes the processed marker.
//
// # Watermark W and gaps
//
// MySQL allocates AUTO_INCREMENT ids at insert time, not at commit, so id 101 can become visible
// before id 100 (or 100 may never appear: a rolled-back insert). W is the single number "every
// mailbox id ≤ W is enqueued or recorded as skipped"; it lives in inbox_cursor and moves only in
// the transaction that enqueues the rows it passes (INV-2). One step (Ingester.Step):
//
//	read rows id > W in id order, LIMIT claim-batch      (the marker is never a predicate: INV-5)
//	        │
//	        ▼
//	first visible id == W+1 ? ──yes──▶ RUN: take W+1, W+2, … while contiguous
//	        │ no                              │
//	        ▼                                 ▼
//	GAP [W+1, first-1] holds W          another id missing after the run?
//	  its age: since the id was first       │ yes: GAP at W'+1, aged since it was first seen
//	  seen missing (observations)           │ no : no gap
//	        │                                 ▼
//	  age < MSGX_MAX_COMMIT_DELAY ──▶ WAIT   ONE PG transaction (leader only, Lease.Check first):
//	        │ age ≥ delay                       INSERT proc_state … ON CONFLICT DO NOTHING (run)
//	        ▼                                   INSERT inbox_gap (skipped ids, if any)
//	SKIP exactly W+1 … first-1                  UPDATE inbox_cursor (W', gap) WHERE watermark = W
//	(never the existing row first),
//	record them in inbox_gap, then RUN
//
// Cursor states, as stored in inbox_cursor:
//
//	           rows contiguous after W                      missing id below a visible one
//	  ┌──────────────────────────────┐          ┌────────────────────────────────────────┐
//	  ▼                              │          │                                        ▼
//	OPEN (gap_start NULL) ───────────┴──────────┘                     HELD (gap_start = W+1,
//	  ▲   ▲                                                                 gap_first_seen_at)
//	  │   └── missing id commits: run passes it, any next gap is NEW ───────┤
//	  └────── age ≥ max-commit-delay: ids skipped into inbox_gap, W passes ─┘
//
// Every missing id gets its own full window, counted from when it was first seen missing. Ids
// are allocated in increasing order, so an id below a visible id was allocated before that id
// became visible: each step records an observation (the highest visible id, now), and a missing
// id's first-seen time is that of the first observation whose highest id is above it. When W
// reaches an id whose window already ran out (it was seen missing together with the gap before
// it), it is skipped at once instead of waiting a window of its own; a gap that appears only
// after an older one filled is first seen then and gets its full window (docs/spec.md §4). Observations
// live in memory; inbox_cursor keeps the open gap's (gap_horizon, gap_first_seen_at), so a
// restarted ingester keeps that gap's window and gives newer gaps a fresh one (never shorter).
// A huge permanent gap (an AUTO_INCREMENT jump) is skipped MaxSkip ids per step.
//
// # Proving a gap permanent
//
// Where the mailbox account may read InnoDB's list of open transactions (PROCESS), a gap is also
// skipped before its window runs out, as soon as no open transaction can still commit its ids
// (proof.go; the argument is in docs/ingest.md): while a gap holds W, each step may read the list
// (Deps.Transactions, at most every mailbox.TrxListIdle), and a read that proves a horizon lets
// the next step skip the ids below it that are still missing, recorded in inbox_gap with
// passed_by 'proved' ('aged' for the window). Any doubt leaves the gap to age.
//
// Idempotence and crashes: proc_state inserts are ON CONFLICT DO NOTHING and the cursor update is
// guarded by the watermark the step started from, so a crash between the mailbox read and the PG
// commit leaves W where it was and the next step (or the next leader) re-reads the same rows:
// nothing duplicated, nothing lost.
//
// # Late rows (re-probe)
//
// Skipped ids stay in the inbox_gap ledger for MSGX_GAP_REPROBE_WINDOW (default 24h). Every
// ReprobeEvery the Ingester probes them (islands of consecutive ids, one BETWEEN each) in the
// mailbox. A row found there committed after W passed it: it is enqueued PENDING with late=true
// in the same transaction that sets inbox_gap.found_at, counted (msgx_ingest_late_rows_total)
// and logged as a warning. It is never silently lost.
//
// How the pump treats a late row: its head is the smallest open (PENDING or FAILED) msg_id ≤ W,
// so a late row, being below W, becomes the head at once and is processed before anything not yet
// processed. FIFO therefore holds for everything still open; messages that were already
// processed before the late row appeared went ahead of it, but what they set (when created no
// earlier than the late row) is not overwritten by it (INV-24b, package flight: SKIPPED
// stale:late or applied in part). The late flag tells operators and the processor's logs why an
// old id was processed out of sequence.
//
// # Compat entry
//
// Compat inserts into cminmsgs (STATUS 'VALID', DATE_RECEIVED = now as the airport's wall clock,
// SUBSYSTEM_* from META) and then enqueues the new id with its raw copy; the id is above W, which
// is fine because the pump claims only msg_id ≤ W (INV-4). The two writes are not atomic: mailbox
// failure → 503 and nothing written; enqueue failure after the insert → still 200, the poller
// enqueues the row when W reaches it. A retry by the client is a new mailbox row; the processor's
// identity dedup marks it SKIPPED duplicate-of. Shadow mode answers 503 and writes nothing.
//
// # Metrics
//
// msgx_ingest_watermark, msgx_ingest_rows_enqueued_total{source=poll|late|compat},
// msgx_ingest_open_gaps{state=blocking|reprobing}, msgx_ingest_oldest_gap_age_seconds{state},
// msgx_ingest_gap_ids_skipped_total, msgx_ingest_gap_ids_passed_total{by=aged|proved},
// msgx_ingest_gap_proof_reads_total{outcome}, msgx_ingest_late_rows_total, msgx_ingest_poll_errors_total{store},
// msgx_ingest_last_success_poll_age_seconds, msgx_ingest_unstorable_rows_total,
// msgx_ingest_declared_charset_rows_total{declared,bytes}, msgx_ingest_compat_requests_total{code}.
package ingest
