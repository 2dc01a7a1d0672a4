package processor_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/procstate"
	"github.com/msgx/msgx/pkg/sis"
)

func TestReplay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.cfg.MaxAttempts = 1
	ctx := context.Background()
	malformed := "<MSG>"
	b.enqueue(t, map[int64]*string{1: &malformed})
	b.enqueueSeq(t, 2, 3, func(id int64) string { return flop(int(id), 15, "S") })
	p := b.pump(t)
	b.drain(t, p) // no FLOP processor yet: 2 and 3 end DEAD EXHAUSTED (max 1 attempt)
	require.Equal(t, "EXHAUSTED", b.row(t, 2).Class)
	require.Equal(t, "EXHAUSTED", b.row(t, 3).Class)
	// A later message touched flight 15 after 2 died.
	_, err := b.db.Pool.Exec(ctx, `INSERT INTO msg_event (target, partition_key, event_type, state_version, msg_id, payload, created_at)
		VALUES ('KAFKA:msg', '15', 'UPSERT', 1, 3, '{}', $1)`, t0)
	require.NoError(t, err)

	_, err = procstate.Replay(ctx, b.db.Pool, procstate.ReplayRequest{Class: procstate.ClassProtocol, DryRun: true})
	require.ErrorContains(t, err, "class PROTOCOL is never replayed")

	dry, err := procstate.Replay(ctx, b.db.Pool, procstate.ReplayRequest{IDs: []int64{1, 2, 99}, DryRun: true})
	require.ErrorIs(t, err, procstate.ErrRefused, "a request naming a message that cannot be replayed is refused")
	require.Len(t, dry.Items, 1)
	require.Equal(t, int64(2), dry.Items[0].MsgID)
	require.Equal(t, []int64{15}, dry.Items[0].FLIDs)
	require.Equal(t, []int64{3}, dry.Items[0].LaterTouches)
	require.Equal(t, []procstate.ReplayRefusal{
		{MsgID: 1, Why: "class MALFORMED is never replayed"},
		{MsgID: 99, Why: "no such message in proc_state (archived or never ingested)"},
	}, dry.Refused)
	require.Equal(t, "DEAD", b.row(t, 2).Status, "a dry run changes nothing")
	_, err = procstate.Replay(ctx, b.db.Pool, procstate.ReplayRequest{IDs: []int64{1, 2}, Actor: "ops", Reason: "try", Now: t0})
	require.ErrorIs(t, err, procstate.ErrRefused)
	require.ErrorContains(t, err, "1: class MALFORMED is never replayed")
	require.Equal(t, "DEAD", b.row(t, 2).Status, "a refused request requeues nothing")
	_, err = procstate.Replay(ctx, b.db.Pool, procstate.ReplayRequest{Class: procstate.ClassMalformed, Actor: "ops", Reason: "try", Now: t0})
	require.ErrorIs(t, err, procstate.ErrRefused)

	_, err = procstate.Replay(ctx, b.db.Pool, procstate.ReplayRequest{Class: procstate.ClassExhausted})
	require.ErrorContains(t, err, "--actor and --reason are required")

	rep, err := procstate.Replay(ctx, b.db.Pool, procstate.ReplayRequest{Class: procstate.ClassExhausted, Actor: "ops", Reason: "FLOP processor deployed", Now: t0})
	require.NoError(t, err)
	require.Equal(t, int64(2), rep.Requeued)
	r := b.row(t, 2)
	require.Equal(t, "PENDING", r.Status)
	require.Equal(t, 0, r.Attempts)
	require.Equal(t, "EXHAUSTED", r.Class, "error history kept")
	require.False(t, r.Owed)
	var started *time.Time
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT processing_started_at FROM proc_state WHERE msg_id = 2`).Scan(&started))
	require.Nil(t, started, "replay resets the head deadline")
	var actor, selector string
	var ids []int64
	var errs []string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT actor, selector, ids, errors FROM replay_audit`).Scan(&actor, &selector, &ids, &errs))
	require.Equal(t, "ops", actor)
	require.Equal(t, "class=EXHAUSTED", selector)
	require.Equal(t, []int64{2, 3}, ids)
	require.Len(t, errs, 2)
	require.Contains(t, errs[0], "DEAD EXHAUSTED: after 1 attempts: UNSUPPORTED: no processor for", "the audit keeps the error text replayed")

	b.procs[sis.KindFlightUpdate] = &recorder{}
	b.drain(t, b.pump(t))
	require.Equal(t, "SUCCEEDED", b.row(t, 2).Status)
	require.Equal(t, "SUCCEEDED", b.row(t, 3).Status)
	require.Equal(t, "DEAD", b.row(t, 1).Status)
	// Every attempt's error survives the success: the class and reason of the DEAD attempt are in
	// the history, after the success cleared them on the row.
	require.Empty(t, b.row(t, 2).Class)
	as, err := procstate.Attempts(ctx, b.db.Pool, 2)
	require.NoError(t, err)
	require.Equal(t, []string{"DEAD EXHAUSTED", "SUCCEEDED"}, outcomes(t, b, 2))
	require.Contains(t, as[0].Reason, "UNSUPPORTED: no processor for")
}
