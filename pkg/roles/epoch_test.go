package roles_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/outbox"
	"github.com/msgx/msgx/pkg/roles"
)

// TestDispatcherRaisesTheRestoreEpoch: the dispatcher's role settles the restore epoch at a term
// start (msgx_raise_epoch rewrites msgx_event_id as its owner; the unsent events are renumbered),
// the processor then draws ids of the new generation; no other role can raise it; the operator's
// role confirms a restore and nothing else of db_epoch; the read-only role reads the identity.
func TestDispatcherRaisesTheRestoreEpoch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	lease := b.lead(t, roles.Dispatcher)
	ev := func(v int64) event.Event {
		return event.Event{Target: event.TargetMsg, FLID: 15, Type: event.Upsert, StateVersion: v, Payload: json.RawMessage(`{}`)}
	}
	require.NoError(t, outbox.Enqueue(ctx, b.pools[roles.Processor], t0, ev(1)))

	store, err := outbox.New(b.pools[roles.Dispatcher], outbox.Policy{MaxAttempts: 3, BackoffBase: time.Second, BackoffMax: 4 * time.Second})
	require.NoError(t, err)
	before, err := store.Identity(ctx)
	require.NoError(t, err)
	out, err := store.SettleEpoch(ctx, lease, outbox.EpochRequest{Now: t0, Kind: outbox.RestoreConfirmed, Detail: "test",
		Records: []outbox.KafkaEvent{{EventID: 1, Target: event.TargetMsg, FLID: "15", StateVersion: 1}}})
	require.NoError(t, err)
	require.True(t, out.Raised)
	require.Equal(t, int64(1), out.Renumbered)
	require.NoError(t, outbox.Enqueue(ctx, b.pools[roles.Processor], t0, ev(2)))
	require.Equal(t, int64(2), b.count(t, `SELECT count(*) FROM msg_event WHERE event_id >> 40 = $1`, before.Generation()+1))

	for _, r := range []roles.Role{roles.Ingest, roles.Processor, roles.Jobs, roles.Reader, roles.Admin, roles.Console} {
		requireDenied(t, exec(b.pools[r], `SELECT msgx_raise_epoch(7)`), r)
	}
	requireDenied(t, exec(b.pools[roles.Admin], `UPDATE db_epoch SET epoch = 7`))
	requireDenied(t, exec(b.pools[roles.Admin], `UPDATE db_epoch SET refused_at = now(), refused_kafka_event_id = 1`))
	require.NoError(t, store.RecordRefusal(ctx, lease, t0, 1))
	require.NoError(t, outbox.ConfirmRestore(ctx, b.pools[roles.Admin], outbox.Admin{Actor: "ops", Reason: "restored"}, t0))
	id, err := outbox.ReadIdentity(ctx, b.pools[roles.Reader])
	require.NoError(t, err)
	require.Equal(t, out.To, id.Epoch)
	require.NotNil(t, id.Confirmed)
}
