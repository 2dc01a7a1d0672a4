package dispatch_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/kafkatest"
	"github.com/msgx/msgx/pkg/dev/verify"
	"github.com/msgx/msgx/pkg/dispatch"
	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/flight"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/outbox"
	"github.com/msgx/msgx/pkg/reseed"
)

// reseedRuns is how many reseeds of every flight the traffic case runs while flights change.
const reseedRuns = 12

// msgxctl kafka reseed --all, run again and again while a running dispatcher sends the states
// the processor keeps committing and the history sweep purges flights: a read_committed
// consumer of the state topic sees each flight's versions never go back, one value per
// version, and the last record of each flight is PostgreSQL's state (none for a purged one).
// First, a purged flight whose tombstone the dispatcher has not sent yet is reseeded at the
// tombstone's version, not at the version of the state sent before it.
func confReseedDuringTraffic(t *testing.T, b *confBroker) {
	cfg := b.topics(t, "reseed", nil, nil)
	st := newConfStage(t, cfg, dispatch.Config{Batch: 200, FlushPeriod: 20 * time.Millisecond, FlushLimit: 200})
	ctx := context.Background()
	states := map[int64]*flight.State{}
	live := make([]int64, 40)
	for i := range live {
		live[i] = int64(i + 1)
	}
	writeFlights(t, st.db, states, live, 1)
	for {
		res, err := st.disp.FlushStates(ctx, st.lease)
		require.NoError(t, err)
		if res.Claimed == 0 {
			break
		}
	}
	versions := map[int64]int64{}
	for _, flid := range live {
		versions[flid] = 1
	}
	purgeFlights(t, st.db, states, live[39:])
	live = live[:39]
	checkPendingTombstoneReseed(t, b, st, cfg)

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- st.disp.Run(runCtx, st.lease) }()
	type outcome struct {
		enqueued int
		err      error
	}
	reseeds := make(chan outcome, reseedRuns)
	go func() {
		for range reseedRuns {
			rep, err := reseed.Run(ctx, st.db.Pool, cfg, reseed.Request{All: true, Who: outbox.Admin{Actor: "test", Reason: "during traffic"}, Loc: time.UTC, Now: time.Now()})
			reseeds <- outcome{rep.Count(reseed.Enqueued), err}
			if err != nil {
				return
			}
		}
	}()
	// Traffic until the reseeds are done: each round a new version of a quarter of the flights,
	// every tenth a flight purged right after a new version (its tombstone then races a reseed).
	enqueued, runs, rounds := 0, 0, 0
	for runs < reseedRuns {
		select {
		case o := <-reseeds:
			require.NoError(t, o.err, "reseed --all during traffic")
			enqueued += o.enqueued
			runs++
			continue
		default:
		}
		rounds++
		var some []int64
		for i, flid := range live {
			if (i+rounds)%4 == 0 {
				some = append(some, flid)
			}
		}
		for _, flid := range some {
			versions[flid]++
		}
		writeFlightsAt(t, st, states, some, versions)
		if rounds%10 == 0 && len(live) > 10 {
			purgeFlights(t, st.db, states, some[:1])
			live = slices.DeleteFunc(live, func(f int64) bool { return f == some[0] })
		}
	}
	waitUntil(t, 2*time.Minute, 50*time.Millisecond, "the outbox drained", func() bool { return st.unsent(t) == 0 })
	stop()
	require.NoError(t, <-done)
	t.Logf("%d rounds of traffic, %d flights left; %d reseeds enqueued %d states", rounds, len(live), reseedRuns, enqueued)
	require.Positive(t, enqueued, "the reseeds found the topic behind the traffic")
	checkStateTopicAgainst(t, st, b.read(t, cfg.TopicState))
}

// checkPendingTombstoneReseed: flight 40 was purged at version 2, its tombstone still waits in
// the outbox; a reseed of a topic that lost everything (a fresh one) republishes it at version
// 2, not at the version of the state sent before it.
func checkPendingTombstoneReseed(t *testing.T, b *confBroker, st *confStage, cfg kafka.Config) {
	t.Helper()
	lost := cfg
	lost.TopicState = cfg.TopicState + ".lost"
	require.NoError(t, b.create(lost.TopicState, kafkatest.Partitions, map[string]string{"cleanup.policy": "compact"}))
	rep, err := reseed.Run(context.Background(), st.db.Pool, lost, reseed.Request{FLIDs: []int64{40}, Who: outbox.Admin{Actor: "test", DryRun: true}, Loc: time.UTC, Now: time.Now()})
	require.NoError(t, err)
	require.Equal(t, []reseed.Flight{{FLID: 40, Version: 2, Tombstone: true, Outcome: reseed.Enqueued}}, rep.Flights,
		"a purged flight is reseeded at its tombstone's version")
}

// writeFlightsAt writes each flight of flids at its version in versions (writeFlights writes
// one version for all).
func writeFlightsAt(t *testing.T, st *confStage, states map[int64]*flight.State, flids []int64, versions map[int64]int64) {
	t.Helper()
	by := map[int64][]int64{}
	for _, flid := range flids {
		by[versions[flid]] = append(by[versions[flid]], flid)
	}
	for v, some := range by {
		writeFlights(t, st.db, states, some, v)
	}
}

// checkStateTopicAgainst checks the state topic's records: per flight, versions never go back
// and a version repeated (a re-send) has the same value; the last record is PostgreSQL's state,
// a purged flight's a tombstone.
func checkStateTopicAgainst(t *testing.T, st *confStage, recs []kafkatest.Record) {
	t.Helper()
	slices.SortStableFunc(recs, func(a, b kafkatest.Record) int {
		if a.Partition != b.Partition {
			return int(a.Partition - b.Partition)
		}
		return int(a.Offset - b.Offset)
	})
	last := map[string]kafkatest.Record{}
	for _, r := range recs {
		prev, ok := last[r.Key]
		v := r.Int("state_version")
		if ok {
			pv := prev.Int("state_version")
			require.GreaterOrEqual(t, v, pv, "flight %s: version %d after %d (offset %d)", r.Key, v, pv, r.Offset)
			if v == pv {
				require.Equal(t, prev.Headers["event_type"], r.Headers["event_type"], "flight %s version %d sent twice as different types", r.Key, v)
				require.True(t, sameJSON(t, prev.Value, r.Value), "flight %s version %d sent twice with different values:\n%s\n%s", r.Key, v, prev.Value, r.Value)
			}
		}
		last[r.Key] = r
	}
	stored, err := verify.LoadStates(context.Background(), st.db.Pool)
	require.NoError(t, err)
	var current []kafkatest.Record
	for key, r := range last {
		flid, err := strconv.ParseInt(key, 10, 64)
		require.NoError(t, err)
		if stored[flid] == nil {
			require.Equal(t, event.Tombstone, r.Headers["event_type"], "flight %s is purged: its last record is a tombstone", key)
			continue
		}
		current = append(current, r)
	}
	require.Len(t, current, len(stored), "every stored flight is on the state topic")
	require.Empty(t, verify.StateTopic(asStack(t, verify.TopicState, current), stored, time.UTC))
}

// sameJSON reports whether a and b are the same JSON value (both null: the same).
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var x, y any
	require.NoError(t, json.Unmarshal(a, &x))
	require.NoError(t, json.Unmarshal(b, &y))
	return reflect.DeepEqual(x, y)
}
