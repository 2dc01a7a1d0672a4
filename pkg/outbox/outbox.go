// Package outbox is the msg_event, msg_state_log and msg_state_out store: the transactional
// outbox between the flight writers (processor, history sweep) and the dispatcher.
//
// Writers call Enqueue inside their own transaction, so an event exists if and only if the
// change it describes committed. The dispatcher claims work (Claim for KAFKA:msg, ClaimStates for
// KAFKA:schd), produces it, and records the outcome (Settle; MarkStatesSent / MarkStatesFailed)
// fenced by its leader lease. Operators list, replay and skip dead letters (ListDead, Replay,
// Skip), each with an audit row.
//
// A KAFKA:msg event is written QUEUED and never written again once it is delivered: the
// dispatcher moves a delivery cursor (msg_event_delivered) over each claim after the broker's
// acknowledgement (Settle), and a QUEUED event the cursor passed is delivered (msgx_passed). An
// event the cursor passes unacknowledged becomes PENDING, held on its row as below; the claim
// sends those first, each FLID's in order, and a FLID with one holds its QUEUED events. The view
// msg_event_delivery shows every event with its delivery as the states below.
//
// Event states:
//
//	QUEUED ──the cursor passes it, acknowledged──▶ (delivered; SENT in msg_event_delivery)
//	QUEUED ──the cursor passes it, not acknowledged──▶ PENDING
//	PENDING ──acknowledged──▶ SENT
//	   │ ▲
//	   │ └── failed, attempts < max: next_attempt_at = now + min(base·2^(attempts-1), cap)
//	   └──── attempts = max, or rejected as non-retryable ──▶ DEAD ──replay──▶ PENDING
//	                                                          └────skip───▶ SKIPPED (never sent;
//	                                                                        last_error "skipped by …")
//
// A FLID's unsent events (PENDING or DEAD) are delivered in event_id order: a DEAD event keeps
// holding the FLID's later KAFKA:msg events until it is replayed or skipped.
//
// KAFKA:schd events live apart. Writers append them to msg_state_log; each flush first moves
// that log into msg_state_out (FoldStates): one row per FLID, its newest state, which each newer
// state rewrites in place, PENDING again with the newer event id and a fresh attempt budget (it
// represents the older ones, sent or not). When a FLID's state version v reaches the state
// topic, the row becomes SENT unless a newer state replaced it meanwhile, and msg_state_sent
// remembers v, so no flush ever sends a version at or below it (a replayed older dead letter
// is settled, not sent).
//
// Ordering assumes event_id order is commit order per FLID: every writer holds PIPELINE_LOCK
// (INV-18), so flight-writing transactions never overlap. A raise of the restore epoch at a
// dispatcher term's start (SettleEpoch, after a restore) gives the unsent events new ids above
// every id in use, in their old order, under the same lock: the order holds across it.
package outbox

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/leader"
)

// Statuses.
const (
	StatusPending = "PENDING"
	StatusSent    = "SENT"
	StatusDead    = "DEAD"
	StatusSkipped = "SKIPPED" // a dead letter an operator gave up on: never sent
)

// Beginner is what Enqueue needs: a pgx.Tx (the writer's own transaction) or a pool (Enqueue
// then runs a transaction of its own).
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Enqueue writes events in the given order, each target with one COPY: the KAFKA:msg events
// into msg_event, and of the KAFKA:schd events the newest of each flight (event.Latest) into
// msg_state_log; event_id follows their order. It is the one writer of both. Call it inside the
// transaction that makes the change, so events commit with it. Build events with package event.
// COPY rather than an INSERT of unnested arrays: the same rows for less server work (no array
// parsing, no ordering step; docs/benchmarks.md) and no batch-sized parameter buffers in the
// writer, and event_id's default is evaluated row by row in the order sent. It takes
// PIPELINE_LOCK (held already by the processor's and the purge's transactions) before the rows
// take their ids, so events commit in id order: the claims' and the fold's lower bounds rest on
// it (ClaimHeadsFrom, FoldStates).
func Enqueue(ctx context.Context, db Beginner, now time.Time, events ...event.Event) error {
	events = event.Latest(events) // one state per flight
	if len(events) == 0 {
		return nil
	}
	n := 0 // the states, to size both lists at once
	for i := range events {
		if err := events[i].Validate(); err != nil {
			return fmt.Errorf("enqueue events: %w", err)
		}
		if events[i].Target == event.TargetSchd {
			n++
		}
	}
	changes, states := make([]event.Event, 0, len(events)-n), make([]event.Event, 0, n)
	for _, e := range events {
		if e.Target == event.TargetSchd {
			states = append(states, e)
		} else {
			changes = append(changes, e)
		}
	}
	write := func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, leader.PipelineLockSQL); err != nil {
			return fmt.Errorf("enqueue events: take pipeline lock: %w", err)
		}
		if len(changes) > 0 {
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"msg_event"}, enqueueColumns, &eventRows{events: changes, now: now}); err != nil {
				return fmt.Errorf("enqueue events: %w", err)
			}
		}
		if len(states) > 0 {
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"msg_state_log"}, stateColumns, &eventRows{events: states, now: now, state: true}); err != nil {
				return fmt.Errorf("enqueue states: %w", err)
			}
		}
		return nil
	}
	if tx, ok := db.(pgx.Tx); ok {
		return write(tx)
	}
	return pgx.BeginFunc(ctx, db, write)
}

// eventRows is a COPY source of Enqueue: one row per event (enqueueColumns; with state,
// stateColumns), each body rendered into one buffer that the copy encodes before it asks for the
// next row.
type eventRows struct {
	events []event.Event
	now    time.Time
	state  bool
	next   int
	body   []byte
	// row holds the values of the current row: the copy encodes them before it asks for the
	// next row, as it does the body. at is now as a value, boxed once for every row; the other
	// columns are passed as pointers to the fields below, which an interface holds without
	// allocating a copy of each value for every row.
	row                 []any
	at                  any
	target, key, typ    pgtype.Text
	stateVersion, msgID pgtype.Int8
}

func (r *eventRows) Next() bool { r.next++; return r.next <= len(r.events) }

func (r *eventRows) Err() error { return nil }

func (r *eventRows) Values() ([]any, error) {
	e := &r.events[r.next-1]
	var body any
	if r.body = e.AppendBody(r.body[:0]); len(r.body) > 0 {
		body = r.body
	}
	if r.at == nil {
		r.at = r.now
	}
	r.target = pgtype.Text{String: e.Target, Valid: true}
	r.key = pgtype.Text{String: strconv.FormatInt(e.FLID, 10), Valid: true}
	r.typ = pgtype.Text{String: e.Type, Valid: true}
	r.stateVersion = pgtype.Int8{Int64: e.StateVersion, Valid: true}
	r.msgID = pgtype.Int8{Int64: e.MsgID, Valid: e.MsgID != 0} // 0: NULL
	r.row = r.row[:0]
	if !r.state {
		r.row = append(r.row, &r.target)
	}
	r.row = append(r.row, &r.key, &r.typ, &r.stateVersion, &r.msgID, body, r.at)
	return r.row, nil
}
