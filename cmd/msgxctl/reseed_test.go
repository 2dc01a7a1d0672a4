package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/cmdline"
	"github.com/msgx/msgx/pkg/dev/apachekafka"
	"github.com/msgx/msgx/pkg/dev/kafkatest"
	"github.com/msgx/msgx/pkg/dispatch"
	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/flightstore"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/outbox"
)

// checkKafkaReseed: the state topic of a consistent deployment (flight 100 ACTIVE at version 2,
// 101 deleted, 102 purged) is deleted and created again; kafka verify then finds flight 100's
// state missing. kafka reseed --dry-run changes nothing; kafka reseed --all enqueues the three
// states (the deleted and the purged flight as tombstones) with an audit row, the dispatcher's
// flush sends them, and kafka verify is clean; a second reseed finds nothing to do. Bad input
// (an unknown flag, both selections, a topic that does not exist) changes nothing.
func checkKafkaReseed(t *testing.T, c *apachekafka.Cluster) {
	ctx := context.Background()
	kcfg := kafkatest.Config(c.Addrs())
	kcfg.TopicChanges, kcfg.TopicState, kcfg.TopicHeartbeat = "reseed.changes", "reseed.state", "reseed.heartbeat"
	kcfg.TxnIDPrefix = "msgx-reseed"
	require.NoError(t, kafka.EnsureTopics(kcfg, kafkatest.Partitions))
	cfg, db := verifyDB(t, kcfg)
	_, err := db.Pool.Exec(ctx, `INSERT INTO msg_state_sent (partition_key, state_version, sent_at) VALUES ('102', 3, now())`)
	require.NoError(t, err)
	p := dialReady(t, kcfg)
	defer p.Close()
	change, state := changeRec, stateRec
	send(t, p, kcfg.TopicChanges, change(1, "100", 1, event.Upsert, `{"flid":100,"state_version":1}`),
		change(2, "100", 2, event.Upsert, `{"flid":100,"state_version":2}`), change(3, "101", 1, event.Tombstone, `{"flid":101,"state_version":1}`))
	f100, err := flightstore.Read(ctx, db.Pool, 100)
	require.NoError(t, err)
	send(t, p, kcfg.TopicState, state(11, "100", 2, event.Upsert, f100.AppendJSONIn(nil, cfg.Location())),
		state(12, "101", 1, event.Tombstone, nil), state(13, "102", 3, event.Tombstone, nil))

	run := func(args ...string) (int, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		code := cmdline.Exit(&errOut, "msgxctl", kafkaCmd(ctx, cfg, args, &out))
		return code, out.String() + errOut.String()
	}
	code, out := run("verify")
	require.Equal(t, 0, code, out)

	require.NoError(t, c.DeleteTopic(ctx, kcfg.TopicState))
	require.NoError(t, c.CreateTopic(ctx, kcfg.TopicState, kafkatest.Partitions, map[string]string{"cleanup.policy": "compact"}))
	code, out = run("verify")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "no record; PostgreSQL sent version 2")

	unchanged := snapshot(t, db.Pool)
	for _, bad := range [][]string{
		{"reseed", "--all", "--flids", "100"}, {"reseed"}, {"reseed", "--every"}, {"reseed", "--flids", "x"},
	} {
		code, out := run(bad...)
		require.Equal(t, 2, code, "%v: %s", bad, out)
	}
	missing := cfg
	missing.Kafka.TopicState = "reseed.nothing"
	var errOut bytes.Buffer
	require.Equal(t, 2, cmdline.Exit(&errOut, "msgxctl", kafkaCmd(ctx, missing, []string{"reseed", "--all"}, &bytes.Buffer{})))
	require.Contains(t, errOut.String(), "reseed.nothing")
	code, out = run("reseed", "--all", "--dry-run", "--reason", "state topic recreated")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "3 would be enqueued (dry run: nothing changed)")
	require.Equal(t, unchanged, snapshot(t, db.Pool), "bad input and a dry run change nothing")

	code, out = run("reseed", "--all", "--reason", "state topic recreated", "--actor", "ops")
	require.Equal(t, 0, code, out)
	t.Logf("kafka reseed --all:\n%s", out)
	require.Contains(t, out, "3 enqueued for the dispatcher, 0 already on the topic")
	require.Contains(t, out, "FLID 101: tombstone version 1 (the topic holds 0)")
	require.Contains(t, out, "FLID 102: tombstone version 3 (the topic holds 0)")
	var audited []int64
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT ids FROM replay_audit WHERE action = 'kafka-reseed' AND actor = 'ops'`).Scan(&audited))
	require.Equal(t, []int64{100, 101, 102}, audited)

	// The dispatcher sends them as any state: its flush, under its lease.
	_, err = db.Pool.Exec(ctx, `INSERT INTO leader_lease (role, epoch, holder, backend_pid, acquired_at, renewed_at) VALUES ('dispatcher', 1, 'test', 0, now(), now())`)
	require.NoError(t, err)
	store, err := outbox.New(db.Pool, outbox.Policy{MaxAttempts: 3, BackoffBase: time.Second, BackoffMax: time.Minute})
	require.NoError(t, err)
	disp, err := dispatch.New(dispatch.Config{Batch: 10, FlushPeriod: time.Second, FlushLimit: 10, TopicChanges: kcfg.TopicChanges, TopicState: kcfg.TopicState},
		store, p, clock.System{}, prometheus.NewRegistry(), zerolog.Nop())
	require.NoError(t, err)
	res, err := disp.FlushStates(ctx, leader.Lease{Role: "dispatcher", Epoch: 1})
	require.NoError(t, err)
	require.Equal(t, 3, res.Sent)

	code, out = run("verify")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "Kafka agrees with PostgreSQL: no difference")
	code, out = run("reseed", "--flids", "100,101,102,999")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "0 enqueued for the dispatcher, 3 already on the topic at their current version, 1 unknown")
}

// snapshot is what a reseed may change: the outbox, the record of what the state topic holds,
// and the audit.
func snapshot(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	var s string
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM msg_event)::text || ' ' ||
		coalesce((SELECT string_agg(partition_key || '=' || state_version, ',' ORDER BY partition_key) FROM msg_state_sent), '') || ' ' ||
		(SELECT count(*) FROM replay_audit)::text`).Scan(&s))
	return s
}
