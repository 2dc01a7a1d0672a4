package outbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/outbox"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)

type bundle struct {
	db    *testdb.DB
	store *outbox.Store
	lease leader.Lease
}

func setup(t *testing.T) bundle {
	t.Helper()
	db := testdb.New(t)
	store, err := outbox.New(db.Pool, outbox.Policy{MaxAttempts: 3, BackoffBase: time.Second, BackoffMax: 3 * time.Second})
	require.NoError(t, err)
	_, err = db.Pool.Exec(context.Background(),
		`INSERT INTO leader_lease (role, epoch, holder, backend_pid, acquired_at, renewed_at) VALUES ('dispatcher', 4, 'test', 0, $1, $1)`, t0)
	require.NoError(t, err)
	// Event ids without the timeline (timeline 0): the claims' tests name events by their
	// sequence number. TestEventIDsGrowAcrossALostTail raises it.
	_, err = db.Pool.Exec(context.Background(), `CREATE OR REPLACE FUNCTION msgx_timeline() RETURNS bigint LANGUAGE sql AS 'SELECT 0::bigint'`)
	require.NoError(t, err)
	return bundle{db: db, store: store, lease: leader.Lease{Role: "dispatcher", Epoch: 4}}
}

func msgEvent(flid, version int64) event.Event {
	return event.Event{Target: event.TargetMsg, FLID: flid, Type: event.Upsert, StateVersion: version, MsgID: 100 + version,
		Payload: json.RawMessage(fmt.Sprintf(`{"flid":%d,"state_version":%d}`, flid, version))}
}

// claimHeads claims as the dispatcher does (Store.Claim, a window of 1,000) and settles nothing.
func claimHeads(ctx context.Context, b bundle, now time.Time, limit int) ([]outbox.Claimed, bool, error) {
	c, _, err := b.store.Claim(ctx, now, limit, 1000, 0)
	return c.Events, c.More, err
}

func ids(cs []outbox.Claimed) []int64 {
	var out []int64
	for _, c := range cs {
		out = append(out, c.EventID)
	}
	return out
}

func TestEnqueueValidates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	for _, e := range []event.Event{
		{Target: "KAFKA:x", FLID: 1, Type: event.Upsert, StateVersion: 1, Payload: json.RawMessage(`{}`)},
		{Target: event.TargetMsg, FLID: 1, Type: "DELETE", StateVersion: 1, Payload: json.RawMessage(`{}`)},
		{Target: event.TargetMsg, FLID: 1, Type: event.Upsert, StateVersion: 0, Payload: json.RawMessage(`{}`)},
		{Target: event.TargetMsg, FLID: 1, Type: event.Upsert, StateVersion: 1},
	} {
		require.Error(t, outbox.Enqueue(ctx, b.db.Pool, t0, e))
	}
	// Inside the writer's transaction: a rollback leaves no event.
	tx, err := b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	require.NoError(t, outbox.Enqueue(ctx, tx, t0, msgEvent(1, 1), event.Event{Target: event.TargetSchd, FLID: 1, Type: event.Tombstone, StateVersion: 2}))
	require.NoError(t, tx.Rollback(ctx))
	heads, _, err := claimHeads(ctx, b, t0, 10)
	require.NoError(t, err)
	require.Empty(t, heads)
}

func TestClaimRunsEachFLIDInOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0,
		msgEvent(10, 1), msgEvent(20, 1), msgEvent(10, 2), msgEvent(30, 1), msgEvent(20, 2), msgEvent(10, 3)))

	claimed, behind, err := claimHeads(ctx, b, t0, 10)
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2, 3, 4, 5, 6}, ids(claimed), "every FLID's due run, in event order")
	require.False(t, behind, "nothing left out")
	require.Equal(t, "10", claimed[0].FLID)
	require.Equal(t, int64(101), claimed[0].MsgID)
	require.JSONEq(t, `{"flid":10,"state_version":1}`, string(claimed[0].Payload))
	require.Equal(t, []int64{1}, claimed[0].Represents)

	claimed, behind, err = claimHeads(ctx, b, t0, 2)
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2}, ids(claimed), "limit keeps the oldest")
	require.True(t, behind, "due events were left out by the limit")

	n, err := b.store.MarkSent(ctx, b.lease, []int64{1, 2, 4}, t0)
	require.NoError(t, err)
	require.Equal(t, int64(3), n)
	claimed, _, err = claimHeads(ctx, b, t0, 10)
	require.NoError(t, err)
	require.Equal(t, []int64{3, 5, 6}, ids(claimed))

	// A FLID backing off holds its whole run; the others go on.
	_, err = b.store.MarkFailed(ctx, b.lease, []outbox.Failure{{IDs: []int64{3}, Err: "boom"}}, t0)
	require.NoError(t, err)
	claimed, _, err = claimHeads(ctx, b, t0, 10)
	require.NoError(t, err)
	require.Equal(t, []int64{5}, ids(claimed), "FLID 10's events 3 and 6 wait for 3's backoff")
}

func TestFailureBackoffDeadHoldsFLID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, msgEvent(10, 1), msgEvent(20, 1), msgEvent(10, 2)))

	now := t0
	for attempt, wantWait := range []time.Duration{time.Second, 2 * time.Second} {
		out, err := b.store.MarkFailed(ctx, b.lease, []outbox.Failure{{IDs: []int64{1}, Err: "boom"}}, now)
		require.NoError(t, err)
		require.Len(t, out, 1)
		require.Equal(t, outbox.StatusPending, out[0].Status)
		require.Equal(t, attempt+1, out[0].Attempts)
		require.True(t, now.Add(wantWait).Equal(out[0].NextAttemptAt), "next attempt %s", out[0].NextAttemptAt)
		// Backing off: FLID 10 is held, FLID 20 is not.
		heads, _, err := claimHeads(ctx, b, now.Add(wantWait-time.Millisecond), 10)
		require.NoError(t, err)
		require.Equal(t, []int64{2}, ids(heads))
		now = now.Add(wantWait)
		heads, _, err = claimHeads(ctx, b, now, 10)
		require.NoError(t, err)
		require.Equal(t, []int64{1}, ids(heads), "due again: the event held on its row first, FLID 10's next one behind it")
	}
	out, err := b.store.MarkFailed(ctx, b.lease, []outbox.Failure{{IDs: []int64{1}, Err: "boom"}}, now)
	require.NoError(t, err)
	require.Equal(t, outbox.StatusDead, out[0].Status)
	require.Equal(t, 3, out[0].Attempts)

	// DEAD holds FLID 10's later event for ever.
	heads, _, err := claimHeads(ctx, b, now.Add(24*time.Hour), 10)
	require.NoError(t, err)
	require.Equal(t, []int64{2}, ids(heads))

	dead, err := b.store.ListDead(ctx, outbox.DeadFilter{})
	require.NoError(t, err)
	require.Len(t, dead, 1)
	require.Equal(t, int64(1), dead[0].EventID)
	require.Equal(t, int64(1), dead[0].Holding)
	require.Equal(t, "boom", dead[0].LastError)

	// Non-retryable: DEAD at once.
	out, err = b.store.MarkFailed(ctx, b.lease, []outbox.Failure{{IDs: []int64{2}, Err: "too large", Fatal: true}}, now)
	require.NoError(t, err)
	require.Equal(t, outbox.StatusDead, out[0].Status)
	require.Equal(t, 1, out[0].Attempts)

	// Dry run changes nothing.
	who := outbox.Admin{Actor: "ops", Reason: "broker fixed", DryRun: true}
	got, err := b.store.Replay(ctx, outbox.Selector{FLID: "10"}, who, now)
	require.NoError(t, err)
	require.Equal(t, []int64{1}, got)
	heads, _, err = claimHeads(ctx, b, now, 10)
	require.NoError(t, err)
	require.Empty(t, heads)

	who.DryRun = false
	got, err = b.store.Replay(ctx, outbox.Selector{FLID: "10"}, who, now)
	require.NoError(t, err)
	require.Equal(t, []int64{1}, got)
	heads, _, err = claimHeads(ctx, b, now, 10)
	require.NoError(t, err)
	require.Equal(t, []int64{1}, ids(heads), "the replayed dead letter (FLID 10's event it held follows once it is sent)")
	require.Equal(t, 0, heads[0].Attempts)

	_, err = b.store.Skip(ctx, []int64{2}, outbox.Admin{Actor: "ops"}, now)
	require.ErrorContains(t, err, "reason is required")
	got, err = b.store.Skip(ctx, []int64{2, 3}, outbox.Admin{Actor: "ops", Reason: "flight cancelled"}, now)
	require.NoError(t, err)
	require.Equal(t, []int64{2}, got, "only DEAD rows are skipped")
	var status string
	var sentAt *time.Time
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT status, sent_at FROM msg_event WHERE event_id = 2`).Scan(&status, &sentAt))
	require.Equal(t, outbox.StatusSkipped, status, "a skip is not a delivery")
	require.Nil(t, sentAt)
	dead, err = b.store.ListDead(ctx, outbox.DeadFilter{})
	require.NoError(t, err)
	for _, d := range dead {
		require.NotEqual(t, int64(2), d.EventID, "a skipped event is no dead letter")
	}
	all, err := b.store.ListDead(ctx, outbox.DeadFilter{All: true})
	require.NoError(t, err)
	var skipped []int64
	for _, d := range all {
		if d.Status == outbox.StatusSkipped {
			skipped = append(skipped, d.EventID)
			require.Contains(t, d.LastError, "skipped by ops: flight cancelled")
			require.Zero(t, d.Holding)
		}
	}
	require.Equal(t, []int64{2}, skipped)
	// A skipped head no longer holds its FLID.
	heads, _, err = claimHeads(ctx, b, now, 10)
	require.NoError(t, err)
	require.NotContains(t, ids(heads), int64(2))

	var audits []string
	rows, err := b.db.Pool.Query(ctx, `SELECT action || ' ' || actor || ' ' || reason || ' ' || selector || ' ' || ids::text FROM replay_audit ORDER BY audit_id`)
	require.NoError(t, err)
	audits, err = pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{
		"dlq-replay ops broker fixed flid=10 {1}",
		"dlq-skip ops flight cancelled ids=[2 3] {2}",
	}, audits)
}

func TestFencedMarkRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, msgEvent(10, 1)))
	old := leader.Lease{Role: "dispatcher", Epoch: 3}
	_, err := b.store.MarkSent(ctx, old, []int64{1}, t0)
	require.ErrorIs(t, err, leader.ErrFenced)
	_, err = b.store.MarkSent(ctx, leader.Lease{Role: "no-such-role", Epoch: b.lease.Epoch}, []int64{1}, t0)
	require.ErrorIs(t, err, leader.ErrFenced, "a role without a lease row is fenced")
	_, err = b.store.MarkFailed(ctx, old, []outbox.Failure{{IDs: []int64{1}, Err: "x"}}, t0)
	require.ErrorIs(t, err, leader.ErrFenced)
	heads, _, err := claimHeads(ctx, b, t0, 10)
	require.NoError(t, err)
	require.Equal(t, []int64{1}, ids(heads))
	require.Equal(t, 0, heads[0].Attempts)
}

// TestSettleMovesTheCursorUnderTheLease: a claim of QUEUED events is settled by one move of the
// delivery cursor, under the lease and only from the cursor the claim read: the acknowledged
// events are delivered without a write of their own, a failed one and the one held behind it
// are held on their rows with the attempt counted on the first.
func TestSettleMovesTheCursorUnderTheLease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, msgEvent(10, 1), msgEvent(20, 1), msgEvent(10, 2), msgEvent(30, 1)))
	c, _, err := b.store.Claim(ctx, t0, 10, 1000, 0)
	require.NoError(t, err)
	require.True(t, c.Queued)
	require.Equal(t, []int64{1, 2, 3, 4}, ids(c.Events))
	require.Equal(t, int64(4), c.Upto)

	delivery := func() []string {
		rows, err := b.db.Pool.Query(ctx, `SELECT event_id || ' ' || status || ' ' || attempts FROM msg_event_delivery ORDER BY event_id`)
		require.NoError(t, err)
		out, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return out
	}
	unsent := []string{"1 PENDING 0", "2 PENDING 0", "3 PENDING 0", "4 PENDING 0"}
	_, err = b.store.Settle(ctx, leader.Lease{Role: "dispatcher", Epoch: 3}, c, []int64{2, 4}, nil, t0)
	require.ErrorIs(t, err, leader.ErrFenced)
	require.Equal(t, unsent, delivery(), "a fenced settle changes nothing")

	out, err := b.store.Settle(ctx, b.lease, c, []int64{2, 4}, []outbox.Failure{{IDs: []int64{1}, Err: "boom"}}, t0)
	require.NoError(t, err)
	require.Len(t, out, 1)
	require.Equal(t, int64(1), out[0].EventID)
	require.Equal(t, outbox.StatusPending, out[0].Status)
	require.Equal(t, 1, out[0].Attempts)
	require.True(t, t0.Add(time.Second).Equal(out[0].NextAttemptAt))
	require.Equal(t, []string{"1 PENDING 1", "2 SENT 0", "3 PENDING 0", "4 SENT 0"}, delivery())
	require.Equal(t, int64(0), b.db.Int64s(t, `SELECT count(*) FROM msg_event WHERE status = 'SENT'`)[0],
		"delivered by the cursor, not by a write of their own")
	require.Equal(t, []int64{1, 3}, b.db.Int64s(t, `SELECT event_id FROM msg_event WHERE status = 'PENDING' ORDER BY 1`),
		"the failed event and the one behind it are held on their rows")

	_, err = b.store.Settle(ctx, b.lease, c, []int64{2, 4}, nil, t0)
	require.ErrorContains(t, err, "not 0", "a claim is settled once: the cursor moved since it was read")

	heads, _, err := claimHeads(ctx, b, t0.Add(time.Second), 10)
	require.NoError(t, err)
	require.Equal(t, []int64{1, 3}, ids(heads), "FLID 10's held events, in order, once due")
}

func TestClaimStatesNewestSettlesAll(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	var evs []event.Event
	for v := int64(1); v <= 10; v++ {
		evs = append(evs, event.Event{Target: event.TargetSchd, FLID: 7, Type: event.Upsert, StateVersion: v, Payload: json.RawMessage(fmt.Sprintf(`{"v":%d}`, v))})
	}
	evs = append(evs, event.Event{Target: event.TargetSchd, FLID: 8, Type: event.Upsert, StateVersion: 1, Payload: json.RawMessage(`{}`)},
		event.Event{Target: event.TargetSchd, FLID: 8, Type: event.Tombstone, StateVersion: 2})
	for _, e := range evs { // each its own transaction: one transaction writes only its newest state
		require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, e))
	}
	var rows int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM msg_state_log`).Scan(&rows))
	require.Equal(t, 12, rows, "every transaction's state is logged")
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM msg_event`).Scan(&rows))
	require.Zero(t, rows, "no state is written to msg_event")
	fold := func() {
		t.Helper()
		_, _, err := b.store.FoldStates(ctx, b.lease, 0, 1000)
		require.NoError(t, err)
	}
	fold()
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM msg_state_out`).Scan(&rows))
	require.Equal(t, 2, rows, "one row per flight, its newest state")
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM msg_state_log`).Scan(&rows))
	require.Zero(t, rows, "the fold empties the log")

	got, err := b.store.ClaimStates(ctx, t0, 10, "")
	require.NoError(t, err)
	require.Len(t, got.Due, 2)
	require.Equal(t, 2, got.Visited)
	require.Empty(t, got.Next, "the visit reached the end")
	require.Equal(t, "7", got.Due[0].FLID)
	require.Equal(t, int64(10), got.Due[0].StateVersion)
	require.JSONEq(t, `{"v":10}`, string(got.Due[0].Payload))
	require.Equal(t, []int64{got.Due[0].EventID}, got.Due[0].Represents)
	require.Equal(t, "8", got.Due[1].FLID)
	require.Equal(t, event.Tombstone, got.Due[1].Type)
	require.Nil(t, got.Due[1].Payload)

	// The limit bounds the FLIDs visited; the cursor carries on from the last one.
	got, err = b.store.ClaimStates(ctx, t0, 1, "")
	require.NoError(t, err)
	require.Len(t, got.Due, 1)
	require.Equal(t, "7", got.Next)
	got, err = b.store.ClaimStates(ctx, t0, 1, got.Next)
	require.NoError(t, err)
	require.Len(t, got.Due, 1)
	require.Equal(t, "8", got.Due[0].FLID)

	// A failure backs off the newest; the FLID waits until it is due or a newer version comes,
	// which starts afresh.
	out, err := b.store.MarkStatesFailed(ctx, b.lease, []outbox.StateFailure{{FLID: "7", Version: 10, Err: "x"}}, t0)
	require.NoError(t, err)
	require.Len(t, out, 1)
	require.Equal(t, outbox.StatusPending, out[0].Status)
	require.Equal(t, 1, out[0].Attempts)
	got, err = b.store.ClaimStates(ctx, t0, 10, "")
	require.NoError(t, err)
	require.Len(t, got.Due, 1)
	require.Equal(t, "8", got.Due[0].FLID)
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, event.Event{Target: event.TargetSchd, FLID: 7, Type: event.Upsert, StateVersion: 11, Payload: json.RawMessage(`{"v":11}`)}))
	fold()
	got, err = b.store.ClaimStates(ctx, t0, 10, "")
	require.NoError(t, err)
	require.Len(t, got.Due, 2)
	require.Equal(t, int64(11), got.Due[0].StateVersion)
	require.Zero(t, got.Due[0].Attempts)

	// A failure of the version claimed before a newer one was written counts against nothing.
	out, err = b.store.MarkStatesFailed(ctx, b.lease, []outbox.StateFailure{{FLID: "7", Version: 10, Err: "x", Fatal: true}}, t0)
	require.NoError(t, err)
	require.Empty(t, out)

	// Sending v11 settles the row; a v12 written between the claim and the mark stays unsent.
	n, err := b.store.MarkStatesSent(ctx, b.lease, got.Due[:1], t0)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	var status string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT status FROM msg_state_out WHERE partition_key = '7'`).Scan(&status))
	require.Equal(t, outbox.StatusSent, status)
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, event.Event{Target: event.TargetSchd, FLID: 8, Type: event.Upsert, StateVersion: 3, Payload: json.RawMessage(`{"v":3}`)}))
	fold()
	n, err = b.store.MarkStatesSent(ctx, b.lease, got.Due[1:], t0)
	require.NoError(t, err)
	require.Zero(t, n, "the newer state written after the claim is not settled by the older one's send")
	got, err = b.store.ClaimStates(ctx, t0, 10, "")
	require.NoError(t, err)
	require.Len(t, got.Due, 1)
	require.Equal(t, int64(3), got.Due[0].StateVersion)

	// An older version written later (a late writer) does not replace the newer one.
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, event.Event{Target: event.TargetSchd, FLID: 7, Type: event.Upsert, StateVersion: 5, Payload: json.RawMessage(`{"v":5}`)}))
	fold()
	var v int64
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT state_version, status FROM msg_state_out WHERE partition_key = '7'`).Scan(&v, &status))
	require.Equal(t, int64(11), v)
	require.Equal(t, outbox.StatusSent, status)

	// The same version written again (msgxctl kafka reseed after lowering msg_state_sent) is
	// unsent again; at or below the version already sent it is stale: settled, never due.
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, event.Event{Target: event.TargetSchd, FLID: 7, Type: event.Upsert, StateVersion: 11, Payload: json.RawMessage(`{"v":11}`)}))
	fold()
	got, err = b.store.ClaimStates(ctx, t0, 10, "")
	require.NoError(t, err)
	require.Len(t, got.Stale, 1)
	require.Equal(t, "7", got.Stale[0].FLID)
	_, err = b.store.MarkStatesSent(ctx, b.lease, got.Stale, t0)
	require.NoError(t, err)
	var hw int64
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT state_version FROM msg_state_sent WHERE partition_key = '7'`).Scan(&hw))
	require.Equal(t, int64(11), hw)
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT status FROM msg_state_out WHERE partition_key = '7'`).Scan(&status))
	require.Equal(t, outbox.StatusSent, status)
}

func TestStats(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, msgEvent(1, 1)))
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0.Add(time.Minute), msgEvent(1, 2), msgEvent(2, 1)))
	_, err := b.store.MarkFailed(ctx, b.lease, []outbox.Failure{{IDs: []int64{3}, Err: "x", Fatal: true}}, t0)
	require.NoError(t, err)
	st, err := b.store.Stats(ctx)
	require.NoError(t, err)
	require.Len(t, st, 1)
	require.Equal(t, event.TargetMsg, st[0].Target)
	require.Equal(t, int64(2), st[0].Pending)
	require.Equal(t, int64(1), st[0].Dead)
	require.True(t, t0.Equal(st[0].OldestPending))
}

func TestBackoffPolicy(t *testing.T) {
	t.Parallel()
	p := outbox.Policy{MaxAttempts: 5, BackoffBase: time.Second, BackoffMax: 60 * time.Second}
	var got []time.Duration
	for n := 1; n <= 8; n++ {
		got = append(got, p.Backoff(n))
	}
	require.Equal(t, []time.Duration{1, 2, 4, 8, 16, 32, 60, 60}, scale(got, time.Second))
}

func scale(ds []time.Duration, unit time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d / unit
	}
	return out
}

func TestClaimHeadsPastAHeldBacklog(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	// FLID 1's head dies and holds 1,500 later events: more than the fast path's window.
	var evs []event.Event
	for v := int64(1); v <= 1501; v++ {
		evs = append(evs, msgEvent(1, v))
	}
	evs = append(evs, msgEvent(2, 1), msgEvent(3, 1))
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, evs...))
	_, err := b.store.MarkFailed(ctx, b.lease, []outbox.Failure{{IDs: []int64{1}, Err: "poison", Fatal: true}}, t0)
	require.NoError(t, err)

	// The first claim's window is FLID 1's alone: settled, the cursor passes it, holding those
	// events on their rows behind their dead head; the next claim finds the others.
	c, _, err := b.store.Claim(ctx, t0, 10, 1000, 0)
	require.NoError(t, err)
	require.Empty(t, c.Events)
	require.Len(t, c.Held, 1000)
	_, err = b.store.Settle(ctx, b.lease, c, nil, nil, t0)
	require.NoError(t, err)
	heads, _, err := claimHeads(ctx, b, t0, 10)
	require.NoError(t, err)
	require.Equal(t, []int64{1502, 1503}, ids(heads))

	// A head backing off inside a full window: the others are still found.
	_, err = b.store.MarkFailed(ctx, b.lease, []outbox.Failure{{IDs: []int64{1502}, Err: "x"}}, t0)
	require.NoError(t, err)
	heads, _, err = claimHeads(ctx, b, t0, 10)
	require.NoError(t, err)
	require.Equal(t, []int64{1503}, ids(heads))
}

// Free text written to last_error (a failure's error, an operator's skip note) is bounded in
// characters, never cut inside one: PostgreSQL refuses a string that is not valid UTF-8, and the
// mark or the skip would be lost with it.
func TestFreeTextBoundedInCharacters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, msgEvent(10, 1), msgEvent(20, 1)))
	lastError := func(id int64) string {
		var s string
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT last_error FROM msg_event WHERE event_id = $1`, id).Scan(&s))
		require.True(t, utf8.ValidString(s), "last_error of %d is valid UTF-8", id)
		return s
	}

	// 700 characters of three bytes each: a cut at 2,000 bytes would fall inside a character.
	reason := strings.Repeat("航班取消", 175)
	out, err := b.store.MarkFailed(ctx, b.lease, []outbox.Failure{{IDs: []int64{1, 2}, Err: "kafka: " + reason, Fatal: true}}, t0)
	require.NoError(t, err)
	require.Len(t, out, 2)
	require.Equal(t, "kafka: "+reason, lastError(1), "707 characters are within the bound")

	got, err := b.store.Skip(ctx, []int64{1}, outbox.Admin{Actor: "ops", Reason: reason}, t0)
	require.NoError(t, err)
	require.Equal(t, []int64{1}, got)
	require.Equal(t, "skipped by ops: "+reason, lastError(1))

	// Past the bound of 2,000 characters: cut to it, ending in an ellipsis.
	long := strings.Repeat("航班取消", 750)
	got, err = b.store.Skip(ctx, []int64{2}, outbox.Admin{Actor: "ops", Reason: long}, t0)
	require.NoError(t, err)
	require.Equal(t, []int64{2}, got)
	note := lastError(2)
	require.Equal(t, 2000, utf8.RuneCountInString(note))
	require.True(t, strings.HasPrefix(note, "skipped by ops: 航班取消"))
	require.True(t, strings.HasSuffix(note, "…"))
}

// behind is false when every claimed FLID's head is its only unsent event, and a FLID held by a
// head backing off does not count (its next event is not claimable yet).
func TestClaimHeadsBehindOnlyForClaimedFLIDs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, msgEvent(10, 1), msgEvent(20, 1)))
	heads, behind, err := claimHeads(ctx, b, t0, 10)
	require.NoError(t, err)
	require.Len(t, heads, 2)
	require.False(t, behind)
	_, err = b.db.Pool.Exec(ctx, `UPDATE msg_event SET status = 'PENDING', next_attempt_at = $1 WHERE partition_key = '10'`, t0.Add(time.Hour))
	require.NoError(t, err)
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, msgEvent(10, 2)))
	heads, behind, err = claimHeads(ctx, b, t0, 10)
	require.NoError(t, err)
	require.Equal(t, "20", heads[0].FLID)
	require.False(t, behind, "FLID 10's next event waits behind a head that is not due")
}

// TestProgressWaitsForNoLeaseWrite: the heartbeat's progress read does not queue behind a write
// of the lease row in flight (a renewal, a takeover): it reads the committed epoch. A takeover
// once committed fences it.
func TestProgressWaitsForNoLeaseWrite(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()

	tx, err := b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `UPDATE leader_lease SET epoch = epoch + 1 WHERE role = 'dispatcher'`)
	require.NoError(t, err)
	// Bounded only so that a read that does wait fails the test instead of hanging it.
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = b.store.Progress(rctx, b.lease)
	require.NoError(t, err, "the committed epoch is still the lease's")

	require.NoError(t, tx.Commit(ctx))
	_, err = b.store.Progress(ctx, b.lease)
	require.ErrorIs(t, err, leader.ErrFenced)
}

// TestFoldStates: the fold moves the state log into one row per FLID, in id order from its
// bound and at most its limit at a time, each FLID's newest state winning; an older state folded
// later does not replace a newer one. A state not folded yet counts as pending.
func TestFoldStates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	state := func(flid, v int64) event.Event {
		return event.Event{Target: event.TargetSchd, FLID: flid, Type: event.Upsert, StateVersion: v, Payload: json.RawMessage(fmt.Sprintf(`{"v":%d}`, v))}
	}
	for _, e := range []event.Event{state(1, 1), state(1, 2), state(2, 1), state(3, 1)} {
		require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, e))
	}
	st, err := b.store.Stats(ctx)
	require.NoError(t, err)
	require.Len(t, st, 1)
	require.Equal(t, event.TargetSchd, st[0].Target)
	require.Equal(t, int64(4), st[0].Pending)
	require.True(t, st[0].OldestPending.Equal(t0))
	rows, err := b.db.Pool.Query(ctx, `SELECT event_id FROM msg_state_log ORDER BY event_id`)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	require.Len(t, ids, 4)

	n, next, err := b.store.FoldStates(ctx, b.lease, 0, 3)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.Equal(t, ids[2]+1, next)
	folded := func() map[string]int64 {
		t.Helper()
		rows, err := b.db.Pool.Query(ctx, `SELECT partition_key, state_version FROM msg_state_out`)
		require.NoError(t, err)
		out := map[string]int64{}
		var k string
		var v int64
		_, err = pgx.ForEachRow(rows, []any{&k, &v}, func() error { out[k] = v; return nil })
		require.NoError(t, err)
		return out
	}
	require.Equal(t, map[string]int64{"1": 2, "2": 1}, folded())

	n, next, err = b.store.FoldStates(ctx, b.lease, next, 10)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, ids[3]+1, next)
	n, again, err := b.store.FoldStates(ctx, b.lease, next, 10)
	require.NoError(t, err)
	require.Zero(t, n)
	require.Equal(t, next, again, "nothing moved: the bound stays")
	require.Equal(t, map[string]int64{"1": 2, "2": 1, "3": 1}, folded())

	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, state(1, 1)))
	_, _, err = b.store.FoldStates(ctx, b.lease, next, 10)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"1": 2, "2": 1, "3": 1}, folded(), "an older state does not replace a newer one")

	// The fold is the dispatcher's: fenced by its lease.
	_, _, err = b.store.FoldStates(ctx, leader.Lease{Role: "dispatcher", Epoch: 99}, 0, 10)
	require.ErrorIs(t, err, leader.ErrFenced)
}

// TestFoldTakesAPreviousReleasesStates: while the Deployments roll, the previous release's
// processor writes its states to msg_event; the fold moves them, newest of each FLID, with the
// log's. A state that keeps being replaced while unsent keeps the age of the first.
func TestFoldTakesAPreviousReleasesStates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.db.Pool.Exec(ctx, `INSERT INTO msg_event (target, partition_key, event_type, state_version, body, created_at) VALUES
		('KAFKA:schd', '5', 'UPSERT', 1, '{"v":1}', $1), ('KAFKA:schd', '5', 'UPSERT', 2, '{"v":2}', $1),
		('KAFKA:schd', '7', 'UPSERT', 1, '{"w":1}', $1), ('KAFKA:schd', '7', 'UPSERT', 2, '{"w":2}', $1)`, t0)
	require.NoError(t, err)
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0.Add(time.Minute),
		event.Event{Target: event.TargetSchd, FLID: 5, Type: event.Upsert, StateVersion: 3, Payload: json.RawMessage(`{"v":3}`)},
		event.Event{Target: event.TargetSchd, FLID: 6, Type: event.Upsert, StateVersion: 1, Payload: json.RawMessage(`{"v":1}`)}))
	n, _, err := b.store.FoldStates(ctx, b.lease, 0, 100)
	require.NoError(t, err)
	require.Equal(t, 2, n, "the log's rows (msg_event's are not counted against the bound)")
	var legacy int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM msg_event`).Scan(&legacy))
	require.Zero(t, legacy)
	got, err := b.store.ClaimStates(ctx, t0.Add(time.Minute), 10, "")
	require.NoError(t, err)
	require.Len(t, got.Due, 3)
	require.Equal(t, int64(3), got.Due[0].StateVersion, "the newest of FLID 5, from the log")
	require.JSONEq(t, `{"v":3}`, string(got.Due[0].Payload))
	require.Equal(t, "7", got.Due[2].FLID)
	require.Equal(t, int64(2), got.Due[2].StateVersion, "the newest of FLID 7, from msg_event")
	require.JSONEq(t, `{"w":2}`, string(got.Due[2].Payload))

	st, err := b.store.Stats(ctx)
	require.NoError(t, err)
	require.Len(t, st, 1)
	require.True(t, st[0].OldestPending.Equal(t0), "FLID 5 has waited since its first unsent state: %v", st[0].OldestPending)

	// Sent, then a newer state: it waits from its own time.
	_, err = b.store.MarkStatesSent(ctx, b.lease, got.Due, t0.Add(time.Minute))
	require.NoError(t, err)
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0.Add(2*time.Minute),
		event.Event{Target: event.TargetSchd, FLID: 5, Type: event.Upsert, StateVersion: 4, Payload: json.RawMessage(`{"v":4}`)}))
	_, _, err = b.store.FoldStates(ctx, b.lease, 0, 100)
	require.NoError(t, err)
	st, err = b.store.Stats(ctx)
	require.NoError(t, err)
	require.Len(t, st, 1)
	require.True(t, st[0].OldestPending.Equal(t0.Add(2*time.Minute)), "%v", st[0].OldestPending)
}

// TestStaleStateIsNotPending: a state at or below the version the state topic holds (a
// previous release republished it after a rollback) is not pending; the next flush settles it
// without sending.
func TestStaleStateIsNotPending(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0,
		event.Event{Target: event.TargetSchd, FLID: 5, Type: event.Upsert, StateVersion: 3, Payload: json.RawMessage(`{"v":3}`)}))
	_, err := b.db.Pool.Exec(ctx, `INSERT INTO msg_state_sent (partition_key, state_version, sent_at) VALUES ('5', 3, $1)`, t0)
	require.NoError(t, err)
	st, err := b.store.Stats(ctx)
	require.NoError(t, err)
	require.Empty(t, st, "logged, not folded, and already on the topic")
	_, _, err = b.store.FoldStates(ctx, b.lease, 0, 100)
	require.NoError(t, err)
	st, err = b.store.Stats(ctx)
	require.NoError(t, err)
	require.Empty(t, st, "folded, unsent, and already on the topic")
	got, err := b.store.ClaimStates(ctx, t0, 10, "")
	require.NoError(t, err)
	require.Empty(t, got.Due)
	require.Len(t, got.Stale, 1)
}

// TestFoldTakesTheHighestVersion: the fold keeps each FLID's highest version, whatever the ids
// say: after a logical restore and the raise of the restore epoch, the states written before the
// raise are renumbered below the restored ones (chaos pg-restore-logical).
func TestFoldTakesTheHighestVersion(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.db.Pool.Exec(ctx, `INSERT INTO msg_state_log (event_id, partition_key, event_type, state_version, body, created_at) VALUES
		(50, '9', 'UPSERT', 7, '{"v":7}', $1), (100, '9', 'UPSERT', 5, '{"v":5}', $1)`, t0)
	require.NoError(t, err)
	_, _, err = b.store.FoldStates(ctx, b.lease, 0, 100)
	require.NoError(t, err)
	got, err := b.store.ClaimStates(ctx, t0, 10, "")
	require.NoError(t, err)
	require.Len(t, got.Due, 1)
	require.Equal(t, int64(7), got.Due[0].StateVersion)
	require.Equal(t, int64(50), got.Due[0].EventID)
}

// TestFoldChoosesAcrossTheLogAndAPreviousRelease: each FLID's newest state wins wherever it was
// written, with its own body: a previous release's state newer than the log's, equal versions
// decided by the higher id, a previous release's TOMBSTONE (no body) and its state kept as a
// JSON payload only (the oldest releases' column).
func TestFoldChoosesAcrossTheLogAndAPreviousRelease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.db.Pool.Exec(ctx, `INSERT INTO msg_state_log (event_id, partition_key, event_type, state_version, body, created_at) VALUES
		(10, '1', 'UPSERT', 4, '{"log":4}', $1),
		(11, '2', 'UPSERT', 3, '{"id":11}', $1), (12, '2', 'UPSERT', 3, '{"id":12}', $1),
		(13, '3', 'UPSERT', 2, '{"log":2}', $1),
		(14, '4', 'UPSERT', 1, '{"log":1}', $1)`, t0)
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `INSERT INTO msg_event (event_id, target, partition_key, event_type, state_version, body, payload, created_at) VALUES
		(5, 'KAFKA:schd', '1', 'UPSERT', 5, '{"legacy":5}', NULL, $1),
		(6, 'KAFKA:schd', '3', 'TOMBSTONE', 3, NULL, NULL, $1),
		(7, 'KAFKA:schd', '4', 'UPSERT', 2, NULL, '{"payload": 2}', $1)`, t0)
	require.NoError(t, err)
	n, _, err := b.store.FoldStates(ctx, b.lease, 0, 100)
	require.NoError(t, err)
	require.Equal(t, 5, n)

	rows, err := b.db.Pool.Query(ctx, `SELECT partition_key, event_id, event_type, state_version, COALESCE(body, '') FROM msg_state_out ORDER BY partition_key`)
	require.NoError(t, err)
	type out struct {
		FLID    string
		EventID int64
		Type    string
		Version int64
		Body    string
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[out])
	require.NoError(t, err)
	require.Equal(t, []out{
		{"1", 5, "UPSERT", 5, `{"legacy":5}`},
		{"2", 12, "UPSERT", 3, `{"id":12}`},
		{"3", 6, "TOMBSTONE", 3, ""},
		{"4", 7, "UPSERT", 2, `{"payload": 2}`},
	}, got)
	var left int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM msg_state_log) + (SELECT count(*) FROM msg_event)`).Scan(&left))
	require.Zero(t, left, "every moved row is gone from where it was written")
}

// TestEnqueueWritesEachRowAsGiven: one Enqueue's rows, read back in event order, are the events
// as given: the COPY source's row and body buffers, reused from row to row, carry nothing of a
// previous row (a shorter body after a longer one, no message or body after one).
func TestEnqueueWritesEachRowAsGiven(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	long := json.RawMessage(`{"flid":1,"pad":"` + strings.Repeat("x", 300) + `"}`)
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0,
		event.Event{Target: event.TargetMsg, FLID: 1, Type: event.Upsert, StateVersion: 3, MsgID: 7, Payload: long},
		event.Event{Target: event.TargetSchd, FLID: 1, Type: event.Upsert, StateVersion: 3, MsgID: 7, Payload: long},
		event.Event{Target: event.TargetMsg, FLID: 22, Type: event.Upsert, StateVersion: 1, Payload: json.RawMessage(`{"a":1}`)},
		event.Event{Target: event.TargetSchd, FLID: 22, Type: event.Tombstone, StateVersion: 1},
		event.Event{Target: event.TargetMsg, FLID: 333, Type: event.Tombstone, StateVersion: 9, MsgID: 8},
		event.Event{Target: event.TargetSchd, FLID: 333, Type: event.Upsert, StateVersion: 9, MsgID: 8, Payload: json.RawMessage(`{}`)},
	))
	read := func(sql string) []string {
		rows, err := b.db.Pool.Query(ctx, sql)
		require.NoError(t, err)
		out, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return out
	}
	row := `concat_ws('|', partition_key, event_type, state_version, coalesce(msg_id::text, 'null'), coalesce(body, 'null'), created_at = '2026-12-02T08:00:00Z')`
	require.Equal(t, []string{
		"KAFKA:msg|1|UPSERT|3|7|" + string(long) + "|t",
		`KAFKA:msg|22|UPSERT|1|null|{"a":1}|t`,
		"KAFKA:msg|333|TOMBSTONE|9|8|null|t",
	}, read(`SELECT target || '|' || `+row+` FROM msg_event ORDER BY event_id`))
	require.Equal(t, []string{
		"1|UPSERT|3|7|" + string(long) + "|t",
		"22|TOMBSTONE|1|null|null|t",
		"333|UPSERT|9|8|{}|t",
	}, read(`SELECT `+row+` FROM msg_state_log ORDER BY event_id`))
}
