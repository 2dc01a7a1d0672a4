package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/status"
)

// msgxctl status shows each leader's renewal age and marks one not renewed within the session
// timeout as stale.
func TestStatusShowsRenewalAgeAndStaleLeader(t *testing.T) {
	t.Parallel()
	db, cfg := ctlDB(t, "")
	ctx := context.Background()
	now := time.Now()
	_, err := db.Pool.Exec(ctx, `INSERT INTO leader_lease (role, epoch, holder, backend_pid, acquired_at, renewed_at) VALUES
	  ('processor', 3, 'live:1', 0, $1, $2), ('dispatcher', 2, 'gone:2', 0, $1, $3)`,
		now.Add(-time.Hour), now.Add(-time.Second), now.Add(-40*time.Second))
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, statusCmd(ctx, cfg, nil, &out))
	lines := map[string]string{}
	for _, l := range bytes.Split(out.Bytes(), []byte("\n")) {
		for _, role := range []string{"processor", "dispatcher"} {
			if bytes.HasPrefix(l, []byte("leader "+role)) {
				lines[role] = string(l)
			}
		}
	}
	require.Regexp(t, `epoch 3, live:1 since .*, renewed 1\.\ds ago$`, lines["processor"])
	require.Regexp(t, `epoch 2, gone:2 since .*, renewed 40\.\ds ago STALE`, lines["dispatcher"])
}

// On an empty schema status --json has [] for every list and marks each leader stale or not;
// the text names the dispatcher lag although the outbox is empty.
func TestStatusEmptyListsAndStale(t *testing.T) {
	t.Parallel()
	db, cfg := ctlDB(t, "Asia/Shanghai")
	ctx := context.Background()
	var out bytes.Buffer
	require.NoError(t, statusCmd(ctx, cfg, []string{"--json"}, &out))
	var doc map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc), out.String())
	require.Equal(t, []any{}, doc["leaders"])
	require.Equal(t, []any{}, doc["outbox"])
	require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+08:00$`, doc["at"], "the airport's offset")

	out.Reset()
	require.NoError(t, statusCmd(ctx, cfg, nil, &out))
	require.Regexp(t, `(?m)^dispatcher lag\s+none \(the outbox holds no pending or dead event\)$`, out.String())

	_, err := db.Pool.Exec(ctx, `INSERT INTO leader_lease (role, epoch, holder, backend_pid, acquired_at, renewed_at) VALUES
	  ('processor', 3, 'live:1', 0, now(), now()), ('dispatcher', 2, 'gone:2', 0, now() - interval '1 hour', now() - interval '1 minute')`)
	require.NoError(t, err)
	out.Reset()
	require.NoError(t, statusCmd(ctx, cfg, []string{"--json"}, &out))
	var st struct {
		Leaders []struct {
			Role  string `json:"role"`
			Stale *bool  `json:"stale"`
		} `json:"leaders"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &st))
	require.Len(t, st.Leaders, 2)
	for _, l := range st.Leaders {
		require.NotNil(t, l.Stale, l.Role)
		require.Equal(t, l.Role == "dispatcher", *l.Stale, l.Role)
	}
}

// status shows the verdict the console shows and the dispatcher's report of its sends: a
// blocked target names its brokers, and the verdict says why it is degraded.
func TestStatusShowsBlockedSends(t *testing.T) {
	t.Parallel()
	db, cfg := ctlDB(t, "")
	ctx := context.Background()
	_, err := db.Pool.Exec(ctx, `INSERT INTO leader_lease (role, epoch, holder, backend_pid, acquired_at, renewed_at) VALUES
	  ('ingest', 1, 'a', 0, now(), now()), ('processor', 1, 'b', 0, now(), now()), ('dispatcher', 1, 'c', 0, now(), now())`)
	require.NoError(t, err)
	_, err = db.Pool.Exec(ctx, `INSERT INTO msg_event (target, partition_key, event_type, state_version, payload, created_at)
		VALUES ('KAFKA:msg', '7', 'UPSERT', 1, '{}', now())`)
	require.NoError(t, err)
	_, err = db.Pool.Exec(ctx, `INSERT INTO dispatch_send (target, topic, epoch, blocked_since, error_class, error, brokers, brokers_silent,
		stall_after, report_every, reported_at)
		VALUES ('KAFKA:msg', 'msgx.flight.changes', 1, now() - interval '20 seconds', 'unreachable', 'kafka not reachable: i/o timeout',
		        '{10.0.0.5:9093}', true, '5s', '5s', now())`)
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, statusCmd(ctx, cfg, nil, &out))
	require.Regexp(t, `(?m)^verdict\s+degraded\n\s+because\s+Kafka broker 10\.0\.0\.5:9093 not answering for 2\ds: 1 events waiting \(msgx\.flight\.changes\): kafka not reachable: i/o timeout$`, out.String())
	require.Regexp(t, `(?m)^kafka sends KAFKA:msg\s+BLOCKED \(msgx\.flight\.changes\) for 2\ds, unreachable, brokers 10\.0\.0\.5:9093: kafka not reachable: i/o timeout; last sent none since the dispatcher started$`, out.String())

	out.Reset()
	require.NoError(t, statusCmd(ctx, cfg, []string{"--json"}, &out))
	var doc struct {
		Verdict status.Verdict `json:"verdict"`
		Sends   []status.Send  `json:"dispatcher_sends"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc), out.String())
	require.Equal(t, "degraded", doc.Verdict.State)
	require.Len(t, doc.Sends, 1)
	require.Equal(t, []string{"10.0.0.5:9093"}, doc.Sends[0].Brokers)
}
