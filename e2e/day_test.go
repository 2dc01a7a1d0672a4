package e2e_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/simulate"
	"github.com/msgx/msgx/pkg/dev/stack"
	"github.com/msgx/msgx/pkg/dev/verify"
	"github.com/msgx/msgx/pkg/flight"
)

// TestSimulatedDayEndToEnd runs a small simulated day through the four binaries and checks
// that (1) every message got the outcome the simulator intended, (2) every flight's state in
// PostgreSQL equals the simulator's expected state field by field, and (3) the last record per
// FLID on msgx.flight.state is that state (a tombstone for a deleted flight). A few good FLOPs
// commit late (held past MSGX_MAX_COMMIT_DELAY, found by ingest's re-probe after later messages
// of their flights were applied): the state still equals the model (INV-24b), and they end as the
// model says (verify.Outcomes).
func TestSimulatedDayEndToEnd(t *testing.T) {
	t.Parallel()
	b := setup(t, "MSGX_MAX_COMMIT_DELAY=2s")
	ctx := context.Background()

	cfg := simulate.DefaultConfig()
	cfg.Seed, cfg.Flights, cfg.Additions = 32, 40, 2
	cfg.Date = airportToday(t)
	day := simulate.Generate(cfg)
	t.Logf("simulated day: %s", day.Summary())
	counts := day.Counts()
	for _, o := range simulate.Outcomes {
		require.Positive(t, counts[o], "the day should have %s messages (seed %d)", o, cfg.Seed)
	}

	start := time.Now()
	late := day.LateCandidates(3)
	require.Len(t, late, 3, "the day should have FLOPs whose units later messages set again")
	// 8 connections: the 3 late transactions keep theirs for LateFor while the day goes on.
	// LateFor covers the three gap windows (MSGX_MAX_COMMIT_DELAY each: ingest reaches one gap
	// after skipping the one before) with room for the polls.
	wr := b.write(t, ctx, simulate.WriterConfig{Conns: 8, Pace: simulate.PaceFast, HoldShare: 0.05, Seed: cfg.Seed,
		Late: late, LateFor: 9 * time.Second}, day.Messages)
	require.Empty(t, wr.Gaps, "no rolled-back inserts in this test")
	require.Positive(t, wr.OutOfOrder, "some commits should be out of order")
	t.Logf("wrote %d messages in %s (%d out-of-order commits)", len(wr.IDs), time.Since(start).Round(time.Millisecond), wr.OutOfOrder)

	b.waitDrained(t, maxOf(wr.IDs), 2*time.Minute)
	b.waitLate(t, wr, time.Minute)
	// The late rows may have been processed last: their markers, written after the commit, and
	// their events drain after that.
	b.waitDrained(t, maxOf(wr.IDs), time.Minute)
	t.Logf("drained %s after the first write", time.Since(start).Round(time.Millisecond))

	checkOutcomes(t, b, day, wr)
	checkMarkers(t, b, wr.IDs)
	states := loadAll(t, b)
	checkReadAPI(t, b, states)
	b.checkProductionShaped(t)
	checkFlights(t, day.Expected, states)
	checkStateTopic(t, b.consumer, states)
	checkChangesComplete(t, b.consumer, states)
	checkSentEvents(t, b)

	masters, deleted := 0, 0
	for _, s := range states {
		if len(s.MAFL) > 0 {
			masters++
		}
		if s.Status == flight.Deleted {
			deleted++
		}
	}
	require.Positive(t, masters, "the day should have code-share masters (MAFL compared)")
	t.Logf("compared %d flights (%d deleted, %d code-share masters); records read: %d on %s, %d on %s",
		len(states), deleted, masters, b.consumer.Count(topicChanges), topicChanges, b.consumer.Count(topicState), topicState)
}

// waitLate waits until the late rows (found by ingest's re-probe, every 10 s) are processed, and
// checks that at least one of them met a later message's value (INV-24b exercised, not only
// allowed).
func (b *bundle) waitLate(t *testing.T, wr simulate.Written, timeout time.Duration) {
	t.Helper()
	ids := make([]int64, 0, len(wr.Late))
	for _, i := range wr.Late {
		ids = append(ids, wr.IDs[i])
	}
	var done, late, stale int
	require.Eventually(t, func() bool {
		err := b.pg.Pool.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE status IN ('SUCCEEDED', 'SKIPPED', 'DEAD')),
			count(*) FILTER (WHERE late), count(*) FILTER (WHERE reason LIKE 'stale:late%')
			FROM proc_state WHERE msg_id = ANY($1)`, ids).Scan(&done, &late, &stale)
		return err == nil && done == len(ids)
	}, timeout, 200*time.Millisecond, "late rows %v not processed (logs in %s)", ids, b.logDir)
	require.Equal(t, len(ids), late, "every held row should have been enqueued by the re-probe")
	require.Positive(t, stale, "a late row should have met a value a later message set (stale:late)")
	t.Logf("%d late rows, %d of them stale in whole or in part", late, stale)
}

// checkReadAPI reads every operation day through ingest's authenticated read API (ingest's
// role, its own pool, over TLS): each flight is served exactly as stored.
func checkReadAPI(t *testing.T, b *bundle, states map[int64]*flight.State) {
	t.Helper()
	days := map[string]int{}
	for _, s := range states {
		days[s.OperationDay]++
	}
	served := 0
	for d, n := range days {
		req, err := http.NewRequest(http.MethodGet, "http://"+b.stack.Proc("ingest").APIAddr+"/all/flights?day="+d, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+b.stack.APIToken)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
		var got []json.RawMessage
		require.NoError(t, json.Unmarshal(body, &got))
		require.Len(t, got, n, "day %s", d)
		for _, raw := range got {
			var id struct {
				FLID int64 `json:"flid"`
			}
			require.NoError(t, json.Unmarshal(raw, &id))
			require.JSONEq(t, string(states[id.FLID].AppendJSONIn(nil, airport(t))), string(raw), "flight %d", id.FLID)
			served++
		}
	}
	require.Equal(t, len(states), served)
}

// --- the comparison (pkg/dev/verify, shared with the chaos suite) ----------------------------

// checkOutcomes: applied → SUCCEEDED, duplicate → SKIPPED duplicate-of:<original's id>,
// malformed → DEAD MALFORMED, protocol → DEAD PROTOCOL, for every message by its mailbox id, and
// no other proc_state row.
func checkOutcomes(t *testing.T, b *bundle, day simulate.Day, wr simulate.Written) {
	t.Helper()
	bad, err := verify.Outcomes(context.Background(), b.pg.Pool, day, wr, nil)
	require.NoError(t, err)
	noProblems(t, bad, "%d of %d messages did not get their intended outcome", len(bad), len(day.Messages))
}

// checkMarkers: every written mailbox row carries its processed marker.
func checkMarkers(t *testing.T, b *bundle, ids []int64) {
	t.Helper()
	bad, err := verify.Markers(context.Background(), b.mailbox.SQL, ids)
	require.NoError(t, err)
	noProblems(t, bad, "%d of %d mailbox rows have no processed marker", len(bad), len(ids))
}

// loadAll loads every stored flight with flightstore.Load.
func loadAll(t *testing.T, b *bundle) map[int64]*flight.State {
	t.Helper()
	states, err := verify.LoadStates(context.Background(), b.pg.Pool)
	require.NoError(t, err)
	return states
}

// checkFlights compares every expected flight with its stored state, field by field (the
// mapping and the deliberate differences: verify.ExpectedState), and requires no stored flight
// the simulator does not know.
func checkFlights(t *testing.T, exp simulate.Expected, states map[int64]*flight.State) {
	t.Helper()
	bad := verify.Flights(exp, states)
	noProblems(t, bad, "%d differences between the simulator's expected flights (%d) and PostgreSQL (FLID field: want, got)",
		len(bad), len(exp.Flights))
}

// checkStateTopic: once the consumer has read the stored version of every flight (bounded wait:
// the dispatcher sent it, the consumer may still be fetching), the last msgx.flight.state record
// per FLID is the flight's stored state, or a tombstone for a deleted flight.
func checkStateTopic(t *testing.T, c *stack.Consumer, states map[int64]*flight.State) {
	t.Helper()
	behind := verify.Poll(context.Background(), 100*time.Millisecond, 30*time.Second, func() []string { return verify.Consumed(c.Records(), states) })
	noProblems(t, behind, "msgx.flight.state has not delivered the stored version of %d FLIDs within 30s", len(behind))
	noProblems(t, verify.StateTopic(c.Records(), states, airport(t)), "msgx.flight.state differs from PostgreSQL (FLID key: want = PostgreSQL, got = Kafka)")
	noProblems(t, verify.Malformed(c.Records()), "records whose headers do not follow docs/events.md")
	instants, n := verify.Instants(c.Records(), airport(t))
	noProblems(t, instants, "instants that are not the wall-clock times in the airport's zone")
	require.Positive(t, n.Named, "the records carry instants")
	invalid, validated := verify.Contract(c.Records())
	noProblems(t, invalid, "records that do not validate against docs/contract's JSON Schemas")
	require.Positive(t, validated)
	noProblems(t, verify.VersionsNeverDecrease(c.Records()), "a FLID's state_version went down on a topic")
}

// checkChangesComplete: per FLID, msgx.flight.changes holds every state_version from 1 to the
// stored one, in order, once duplicates (same flid and state_version) are dropped.
func checkChangesComplete(t *testing.T, c *stack.Consumer, states map[int64]*flight.State) {
	t.Helper()
	bad := verify.Poll(context.Background(), 200*time.Millisecond, 30*time.Second, func() []string { return verify.ChangesProblems(c.Records(), states) })
	noProblems(t, bad, "msgx.flight.changes is incomplete or out of order per FLID")
}

// checkSentEvents: the records on Kafka are exactly the events marked SENT.
func checkSentEvents(t *testing.T, b *bundle) {
	t.Helper()
	bad, dups, _, err := verify.SentEvents(context.Background(), b.pg.Pool, b.consumer.Records())
	require.NoError(t, err)
	noProblems(t, bad, "Kafka records and SENT events differ")
	t.Logf("%d duplicate records (producer allowance)", dups)
}
