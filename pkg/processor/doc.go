// Package processor is the processor stage of cmd/processor. Its Engine drains proc_state in
// strict msg_id order (the head is the smallest open msg_id ≤ the ingest watermark W), decodes
// each message, binds its business identity (pkg/identity), hands it to the Handler of its kind
// (handler.go: the plug-in contract; the flight handler is package processor/flights, the
// reference-data handler package refdata, the table of which serves which kind package
// processor/plugins) and commits the business change, its outbox events, the terminal status and
// the backfill intent in one PostgreSQL transaction. Files: engine.go (the Engine, Step, the head
// and decoding), run.go (the run loop), batch.go (a batch's transaction and careful mode),
// identity.go (reading and storing identity bindings), lookahead.go (the next batch read ahead), outcome.go (outcomes and their writes),
// attempts.go (the attempt rule), markers.go (the immediate marker), gauges.go, config.go,
// handler.go (the contract), classify.go (classified errors), sql.go. What the readers of
// proc_state share with the engine — statuses, error classes, the SKIPPED reasons, replay and
// the attempt history — is package procstate's.
//
// States of a proc_state row (procstate.Status; error classes procstate.Class):
//
//	          ┌──────── replay (procstate.Replay; not MALFORMED/PROTOCOL) ─────────┐
//	          ▼                                                                      │
//	ingest ─▶ PENDING ──ok──▶ SUCCEEDED | SKIPPED (duplicate-of, ignored, no-match)   │
//	          │  ▲                                                                   │
//	          │  └─due── FAILED ◀─ CODEC_ERROR | UNSUPPORTED | INFRA (attempts+1,    │
//	          │            │        next_attempt_at = now + 1,2,4,8,16 s … cap 60 s) │
//	          │            └─ attempts ≥ max or head deadline ─▶ DEAD EXHAUSTED ─────┤
//	          └─ MALFORMED | PROTOCOL ─▶ DEAD (never replayed)                         │
//	                                                      DEAD CODEC/UNSUPPORTED/INFRA┘
//
// Strict FIFO: a FAILED head whose next_attempt_at is in the future blocks every later
// message; nothing overtakes it. A late row (ingested below W after its gap was skipped) sorts
// before every open row above its id, so it is taken before them (a batch read ahead is read
// again: markStartedSQL): FIFO holds for everything still open.
//
// Batching: up to Batch consecutive head messages share one transaction, one savepoint each;
// the batch stops at the first message that fails (FAILED), whose savepoint is rolled back.
// Terminal rows of the batch are written by one statement that also writes the batch's marker
// debt, one marker_debt row (INV-8c: the marker is owed exactly when the status is terminal).
// PIPELINE_LOCK and the leader epoch check open every batch transaction.
//
// Attempts (INV-23d, attemptMark): before a batch, the start mark of its first message
// (processing_started_at and processing_through = the batch's last msg_id) is committed in its
// own transaction; every other message gets its own start mark with its outcome. A head found
// with processing_through set was being processed when an attempt ended without an outcome: if
// this engine saw it end (cancelled, database lost) nothing is charged; otherwise the process died
// or lost its lease, and a message that ran alone is charged one death. Either way the mark is
// re-stamped and the engine works carefully, one message per transaction, up to the end of the
// batch that ended (its processing_through), so a message that kills the process is isolated;
// the messages after that batch are batched again. A panic is logged with the message id,
// charged to it (crashes) and re-raised: it is a bug, never a business outcome. PoisonCrashes
// panics (or 3×PoisonCrashes silent deaths) in a row end the message DEAD EXHAUSTED "poison".
// HeadDeadline bounds the retries of a FAILED head, counting only time the engine was running.
// A batch that fails as a whole charges nobody: careful mode, up to its last message, finds the
// message that causes it.
//
// Read-ahead (lookahead.go; Config.ReadAhead, where the memory limit leaves room for a second
// batch): while the transaction of a batch of more than one message runs, the run after it is
// read and decoded on another connection, and the next Step starts from it instead of a head
// read, so the database's work and the decoding overlap. Never beside a message alone: a death
// during its attempt is charged to it. It stands for the head read only when the batch before it
// ended with every message terminal and its head is an untouched PENDING row, and the start
// mark, in the same statement, finds no open row below it (a late row or a replay that came
// meanwhile); otherwise the head is read again.
//
// After commit, one immediate attempt writes the mailbox marker for the batch's terminal rows
// (only NULL → value, INV-7), off the FIFO path: in its own goroutine (at most markerWriters in
// flight, else skipped), bounded by MarkerTimeout, so a mailbox row lock or a half-open
// connection never stalls processing. It never marks a row that is not terminal when the
// mailbox write commits (INV-8c; a replay may reopen a row meanwhile): with the mailbox rows
// locked, it locks the rows still terminal in PostgreSQL (skipping any locked by someone else)
// and writes only those, holding their locks until the mailbox commit (markers.go: mark).
// Before any of that it waits, bounded, until the standbys the rule asks for (MSGX_MARKER_STANDBYS,
// pkg/replication) have replayed the batch's commit (INV-8c): the AODB purges marked rows, and a
// promoted standby without the commit would need them; short of that it writes nothing.
// Anything it leaves owed is the jobs stage's backfill sweep's (the guarantee).
package processor
