package flights_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/procstate"
	"github.com/msgx/msgx/pkg/roles"
)

// A database that refuses the processor's role (a grant revoked, as the previous release's
// `roles apply` does during a rollback) is the environment's failure, not the message's: however
// long it lasts, the head is held, no attempt is charged, nothing behind it runs, and once the
// grant is back the messages apply in order.
func TestRefusedPrivilegeIsNotChargedToTheMessage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setupProduction(t, 10)
	e.run(t, schd("ADFT", matrixBase(5)))
	proc := pgx.Identifier{e.db.Roles(t).Name(roles.Processor)}.Sanitize()
	_, err := e.db.Pool.Exec(ctx, "REVOKE INSERT ON msg_state_log FROM "+proc)
	require.NoError(t, err)

	ids := e.enqueue(t, flop("STND", 5, `<STND>G12</STND>`), flop("STND", 5, `<STND>G13</STND>`))
	var last error
	for range 12 { // more than MSGX_MAX_ATTEMPTS, each after the longest backoff
		_, last = e.pump.Step(ctx, e.lease)
		e.clock.Advance(time.Minute)
	}
	require.ErrorContains(t, last, "permission denied for table msg_state_log", "the step says why it cannot go on")
	for _, id := range ids {
		o := e.outcome(t, id)
		require.Equal(t, "PENDING", o.Status, "message %d: %+v", id, o)
	}
	var attempts int
	require.NoError(t, e.db.Pool.QueryRow(ctx, `SELECT attempts FROM proc_state WHERE msg_id = $1`, ids[0]).Scan(&attempts))
	require.Zero(t, attempts, "no attempt was charged")
	as, err := procstate.Attempts(ctx, e.db.Pool, ids[0])
	require.NoError(t, err)
	require.NotEmpty(t, as)
	require.Equal(t, procstate.AttemptInterrupted, as[len(as)-1].Outcome)
	require.Contains(t, as[len(as)-1].Reason, "permission denied", "the history says why")

	_, err = e.db.Pool.Exec(ctx, "GRANT INSERT ON msg_state_log TO "+proc)
	require.NoError(t, err)
	e.drain(t)
	for _, id := range ids {
		require.Equal(t, "SUCCEEDED", e.outcome(t, id).Status)
	}
	require.Equal(t, "G13", publishedJSON(t, e.state(t, 5))["stnd"], "applied in order")
}
