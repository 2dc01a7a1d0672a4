package processor_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/privdb"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/processor"
	"github.com/msgx/msgx/pkg/replication"
)

// onPrimaryWithStandby is setupMailbox on a private primary with an asynchronous streaming
// standby (the test pauses its WAL senders), the immediate marker waiting for that standby for
// at most an hour of the fake clock. It returns the primary.
func onPrimaryWithStandby(t *testing.T, n int) (*bundle, *privdb.Postgres) {
	t.Helper()
	primary := testdb.PrimaryWithStandby(t)
	b := withMailbox(t, setupOn(t, testdb.NewAt(t, primary.AdminURL())), n)
	b.cfg.Standbys = replication.NewWaiter(replication.Config{Standbys: 1, Wait: time.Hour}, b.clock, nil)
	return b, primary
}

// waitMarkers is p.WaitMarkers while the fake clock moves on in steps of the waiter's longest
// poll pause whenever a wait sleeps on it, so a marker waiting for a standby that replays meets
// it at its next poll.
func waitMarkers(t *testing.T, b *bundle, p *processor.Engine) {
	t.Helper()
	done := make(chan struct{})
	go func() { p.WaitMarkers(); close(done) }()
	require.True(t, b.clock.AdvanceWhileWaiting(done, 20*time.Millisecond, 30*time.Second), "the immediate markers did not end")
}

// No marker for a commit the standby lacks (INV-8c): with the WAL senders paused, a batch's
// immediate marker waits for the standby and, when its wait runs out on the clock, writes
// nothing and leaves the batch's debt (the sweep's once its grace is over); with the senders
// resumed, the next batch's marker is written as soon as the standby has replayed its commit.
func TestNoImmediateMarkerBeforeTheStandbyHasTheCommit(t *testing.T) {
	t.Parallel()
	b, primary := onPrimaryWithStandby(t, 3)
	resume, err := primary.PauseWALSenders(context.Background())
	require.NoError(t, err)
	t.Cleanup(resume)
	b.enqueueSeq(t, 1, 2, func(id int64) string { return flop(int(id), 15, "S") })
	p := b.pump(t)
	b.drain(t, p)
	require.Equal(t, "SUCCEEDED", b.row(t, 2).Status)

	require.Eventually(t, b.clock.Waiting, 10*time.Second, time.Millisecond, "the marker waits for the standby")
	require.Nil(t, markedAt(t, b, 1), "marked before the standby has the commit")
	b.clock.Advance(time.Hour)
	p.WaitMarkers()
	require.Nil(t, markedAt(t, b, 1))
	require.Nil(t, markedAt(t, b, 2))
	require.True(t, b.row(t, 1).Owed, "the markers stay owed")
	var debts int
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM marker_debt WHERE ids = '{1,2}'`).Scan(&debts))
	require.Equal(t, 1, debts, "the batch's debt is left for the sweep")

	resume()
	b.enqueueSeq(t, 3, 3, func(id int64) string { return flop(int(id), 15, "S") })
	b.drain(t, p)
	waitMarkers(t, b, p)
	require.NotNil(t, markedAt(t, b, 3), "the standby replayed the commit: the marker is written")
	require.False(t, b.row(t, 3).Owed)
	require.Nil(t, markedAt(t, b, 1), "the earlier batch is the sweep's")
}
