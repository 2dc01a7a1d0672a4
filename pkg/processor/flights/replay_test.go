package flights_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/procstate"
)

// A FLOP for a flight not known yet ends SKIPPED no-match:FLID; replayed by id once the schedule
// brought the flight, it applies. The dry run says whether the flight exists now; the audit and
// the attempt history keep the first outcome.
func TestReplayedNoMatchAppliesOnceItsFlightExists(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setup(t, 10)
	cncl := flop("CNCL", 8, `<CNCL>`+T1+`</CNCL>`)
	id := e.run(t, cncl)[0]
	require.Equal(t, outcome{"SKIPPED", "", "no-match:FLID"}, e.outcome(t, id))

	dry, err := procstate.Replay(ctx, e.db.Pool, procstate.ReplayRequest{IDs: []int64{id}, DryRun: true})
	require.NoError(t, err)
	require.Len(t, dry.Items, 1)
	require.Equal(t, []int64{8}, dry.Items[0].FLIDs)
	require.Equal(t, []int64{8}, dry.Items[0].UnknownFLIDs, "the dry run shows the flight is still unknown")

	e.run(t, schd("ADFT", matrixBase(8)))
	require.Equal(t, int64(1), e.state(t, 8).Version)
	dry, err = procstate.Replay(ctx, e.db.Pool, procstate.ReplayRequest{IDs: []int64{id}, DryRun: true})
	require.NoError(t, err)
	require.Empty(t, dry.Items[0].UnknownFLIDs, "the flight exists now")

	rep, err := procstate.Replay(ctx, e.db.Pool, procstate.ReplayRequest{IDs: []int64{id}, Actor: "ops", Reason: "schedule arrived", Now: t0})
	require.NoError(t, err)
	require.Equal(t, int64(1), rep.Requeued)
	e.drain(t)
	require.Equal(t, outcome{"SUCCEEDED", "", ""}, e.outcome(t, id))
	require.Equal(t, int64(2), e.state(t, 8).Version, "the FLOP applied")
	evs := e.events(t, 8)
	require.Equal(t, id, evs[len(evs)-1].MsgID)

	as, err := procstate.Attempts(ctx, e.db.Pool, id)
	require.NoError(t, err)
	require.Len(t, as, 2)
	require.Equal(t, "SKIPPED", as[0].Outcome)
	require.Equal(t, "no-match:FLID", as[0].Reason)
	require.Equal(t, "SUCCEEDED", as[1].Outcome)
	var errs []string
	require.NoError(t, e.db.Pool.QueryRow(ctx, `SELECT errors FROM replay_audit WHERE $1 = ANY(ids)`, id).Scan(&errs))
	require.Equal(t, []string{"SKIPPED: no-match:FLID"}, errs)

	// Other SKIPPED outcomes are not replayed: the request is refused.
	dup := e.run(t, cncl)[0]
	require.Equal(t, "SKIPPED", e.outcome(t, dup).Status)
	_, err = procstate.Replay(ctx, e.db.Pool, procstate.ReplayRequest{IDs: []int64{dup}, DryRun: true})
	require.ErrorIs(t, err, procstate.ErrRefused)
	require.ErrorContains(t, err, "is not replayed (only SKIPPED no-match:*)")
}

// The attempt history is written by the processor's own role (pkg/roles): outcomes, and the
// death a previous process left behind (the start mark naming the message alone).
func TestAttemptsAsTheProcessorRole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setupProduction(t, 10)
	ids := e.enqueue(t, schd("ADFT", matrixBase(5)), "<MSG><META>")
	_, err := e.db.Pool.Exec(ctx, `UPDATE proc_state SET processing_started_at = $2, processing_through = $1 WHERE msg_id = $1`, ids[0], t0)
	require.NoError(t, err)
	e.drain(t)
	as, err := procstate.Attempts(ctx, e.db.Pool, ids[0])
	require.NoError(t, err)
	require.Len(t, as, 2)
	require.Equal(t, procstate.AttemptDied, as[0].Outcome)
	require.Equal(t, "SUCCEEDED", as[1].Outcome)
	as, err = procstate.Attempts(ctx, e.db.Pool, ids[1])
	require.NoError(t, err)
	require.Len(t, as, 1)
	require.Equal(t, "DEAD", as[0].Outcome)
	require.Equal(t, "MALFORMED", as[0].Class)
}
