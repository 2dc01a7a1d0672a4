package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/msgx/msgx/pkg/dev/kafkatest"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/obs"
	"github.com/msgx/msgx/pkg/outbox"
	"github.com/msgx/msgx/pkg/status"
)

// TestFrozenBrokerIsNamedWithin15s: the dispatcher as the binary runs it sends to a broker that
// freezes (every request held unanswered, as a SIGSTOPped broker's are) while events wait. The
// status verdict, read from PostgreSQL as the console reads it, names the broker, the topic and
// the events waiting within 15 s of the freeze; once the broker answers again the events are
// sent and the verdict is healthy again.
func TestFrozenBrokerIsNamedWithin15s(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	broker, _ := kafkatest.Broker(t)
	addr := broker.Addrs()[0]
	var frozen atomic.Bool
	thawed := make(chan struct{})
	var thaw sync.Once
	thawNow := func() { thaw.Do(func() { frozen.Store(false); close(thawed) }) }
	t.Cleanup(thawNow) // before the broker closes
	broker.Cluster().Control(func(kmsg.Request) (kmsg.Response, error, bool) {
		if frozen.Load() {
			<-thawed // the broker's request loop holds this request and every later one
		}
		return nil, nil, false
	})
	cfg := testConfig(t, db, broker.Addrs())
	// The other pipeline roles lead too (their stages are not part of this test), so the verdict
	// is about the dispatcher alone; the lease bound is long for the same reason.
	_, err := db.Pool.Exec(context.Background(), `INSERT INTO leader_lease VALUES ('ingest', 1, 'test', 0, now(), now()), ('processor', 1, 'test', 0, now(), now())`)
	require.NoError(t, err)
	verdict := func() status.Verdict {
		s, err := status.ReadWith(context.Background(), db.Pool, time.Now(), status.Options{OpenOnly: true})
		require.NoError(t, err)
		return s.Verdict(time.Hour)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, zerolog.Nop(), obs.NewRegistry(), nil) }()
	defer func() {
		thawNow()
		cancel()
		require.NoError(t, <-done)
	}()
	sendEvents(t, db, 1, 20)
	require.Eventually(t, func() bool { return sentCount(t, db) == 20 }, 30*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool { return verdict().State == "healthy" }, 15*time.Second, 100*time.Millisecond,
		"healthy while the broker answers: %v", verdict().Reasons)

	frozen.Store(true)
	frozenAt := time.Now()
	sendEvents(t, db, 2, 30)
	want := fmt.Sprintf("Kafka broker %s not answering", addr)
	var v status.Verdict
	require.Eventually(t, func() bool {
		v = verdict()
		return v.State == "degraded" && len(v.Reasons) > 0 && strings.Contains(strings.Join(v.Reasons, "\n"), want)
	}, time.Until(frozenAt.Add(15*time.Second)), 100*time.Millisecond, "the verdict names the frozen broker within 15 s")
	t.Logf("named %s after the freeze: %s %q", time.Since(frozenAt).Round(100*time.Millisecond), v.State, v.Reasons)
	require.Contains(t, v.Reasons[0], "30 events waiting ("+cfg.Kafka.TopicChanges+")")

	thawNow()
	thawedAt := time.Now()
	require.Eventually(t, func() bool { return sentCount(t, db) == 50 }, time.Minute, 20*time.Millisecond, "sent after the thaw")
	require.Eventually(t, func() bool { v = verdict(); return v.State == "healthy" }, 30*time.Second, 100*time.Millisecond,
		"healthy again after the thaw: %v", v.Reasons)
	t.Logf("healthy %s after the thaw", time.Since(thawedAt).Round(100*time.Millisecond))
	require.Eventually(t, func() bool {
		s, err := status.Read(context.Background(), db.Pool, time.Now())
		require.NoError(t, err)
		return len(s.Sends) == 2 && s.Sends[0].BlockedFor == nil && s.Sends[0].LastSentAt != nil && s.Sends[1].BlockedFor == nil
	}, 15*time.Second, 100*time.Millisecond, "the dispatcher reports its sends unblocked")
}

// sendEvents enqueues n KAFKA:msg events of version v, one per FLID, created now.
func sendEvents(t *testing.T, db *testdb.DB, v, n int) {
	t.Helper()
	evs := make([]event.Event, n)
	for f := range evs {
		evs[f] = event.Event{Target: event.TargetMsg, FLID: int64(f + 1), Type: event.Upsert, StateVersion: int64(v), MsgID: int64(v),
			Payload: json.RawMessage(fmt.Sprintf(`{"flid":%d,"state_version":%d}`, f+1, v))}
	}
	require.NoError(t, outbox.Enqueue(context.Background(), db.Pool, time.Now(), evs...))
}
