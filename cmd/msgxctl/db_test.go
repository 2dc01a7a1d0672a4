package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/cmdline"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/outbox"
	"github.com/msgx/msgx/pkg/roles"
)

// msgxctl db restored, as the operator role, needs a reason and a refusal of the dispatcher's to
// answer, and records the confirmation with an audit row; the read-only role cannot confirm; db
// show prints the identity, the refusal, the raises and the confirmation, and --json the same.
func TestDBRestoredAndShow(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	r := db.Roles(t)
	admin := ctlConfig(r.URL(roles.Admin), "Asia/Shanghai")
	reader := ctlConfig(r.URL(roles.Reader), "Asia/Shanghai")
	var out bytes.Buffer

	require.ErrorContains(t, dbCmd(ctx, admin, []string{"restored"}, &out), "--reason is required")
	require.ErrorContains(t, dbCmd(ctx, admin, []string{"restored", "--reason", "  "}, &out), "--reason is required")
	require.ErrorContains(t, dbCmd(ctx, admin, []string{"show", "--reason", "x"}, &out), "--reason is for db restored")
	require.ErrorContains(t, dbCmd(ctx, admin, []string{"forget"}, &out), `unknown sub-command "forget"`)
	require.ErrorContains(t, dbCmd(ctx, reader, []string{"restored", "--reason", "x"}, &out), "permission denied")

	out.Reset()
	require.NoError(t, dbCmd(ctx, reader, []string{"show"}, &out))
	require.Contains(t, out.String(), "event ids: generation 1 (timeline 1 + restore epoch 0)")
	require.Contains(t, out.String(), "the restore epoch was never raised")

	err := dbCmd(ctx, admin, []string{"restored", "--reason", "restored the 03:00 base backup", "--actor", "ops"}, &out)
	require.ErrorIs(t, err, outbox.ErrNothingToConfirm, "the dispatcher does not refuse the database")
	require.ErrorContains(t, cmdline.WithHint(err, ""), "nothing to confirm")

	// The dispatcher refuses it (Kafka holds ids of generation 3).
	store, err := outbox.New(db.Pool, outbox.Policy{MaxAttempts: 1, BackoffBase: time.Second, BackoffMax: time.Second})
	require.NoError(t, err)
	_, err = db.Pool.Exec(ctx, `INSERT INTO leader_lease (role, epoch, holder, backend_pid, acquired_at, renewed_at) VALUES ('dispatcher', 1, 't', 0, now(), now())`)
	require.NoError(t, err)
	lease := leader.Lease{Role: "dispatcher", Epoch: 1}
	require.NoError(t, store.RecordRefusal(ctx, lease, time.Now(), int64(3)<<40))
	out.Reset()
	require.NoError(t, dbCmd(ctx, reader, []string{"show"}, &out))
	require.Contains(t, out.String(), "the dispatcher refuses to send from this database since ")
	require.Contains(t, out.String(), "Kafka holds event id 3298534883328 (generation 3)")

	out.Reset()
	require.NoError(t, dbCmd(ctx, admin, []string{"restored", "--reason", "restored the 03:00 base backup", "--actor", "ops"}, &out))
	require.Contains(t, out.String(), "restore confirmed: the dispatcher's next try")
	require.Equal(t, 1, count(t, db, `SELECT count(*) FROM replay_audit WHERE action = 'db-restored' AND actor = 'ops' AND reason = 'restored the 03:00 base backup'`))

	// The dispatcher's next try acts on it (here: the raise it then asks for).
	out.Reset()
	require.NoError(t, dbCmd(ctx, reader, []string{"show"}, &out))
	require.Contains(t, out.String(), "restore confirmed by ops at ")
	_, err = store.SettleEpoch(ctx, lease, outbox.EpochRequest{Now: time.Now(), Kind: outbox.RestoreConfirmed,
		Detail: "confirmed by ops", KafkaMax: int64(3) << 40})
	require.NoError(t, err)

	out.Reset()
	require.NoError(t, dbCmd(ctx, reader, []string{"show"}, &out))
	require.Contains(t, out.String(), "event ids: generation 4 (timeline 1 + restore epoch 3)")
	require.Contains(t, out.String(), "restore epoch 3 (was 0) raised ")
	require.Contains(t, out.String(), "confirmed: confirmed by ops; 0 unsent events renumbered; Kafka's highest event id then 3298534883328")
	require.NotContains(t, out.String(), "restore confirmed by")
	require.NotContains(t, out.String(), "refuses")

	out.Reset()
	require.NoError(t, dbCmd(ctx, reader, []string{"show", "--json"}, &out))
	var got struct {
		Epoch      int64            `json:"restore_epoch"`
		Generation int64            `json:"id_generation"`
		Restores   []outbox.Restore `json:"restores"`
		Confirm    *json.RawMessage `json:"confirmation"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	require.Equal(t, int64(3), got.Epoch)
	require.Equal(t, int64(4), got.Generation)
	require.Len(t, got.Restores, 1)
	require.Nil(t, got.Confirm)
}
