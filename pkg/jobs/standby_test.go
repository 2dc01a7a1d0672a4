package jobs_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/jobs"
	"github.com/msgx/msgx/pkg/replication"
)

// runDriven is one backfill run while the fake clock moves on by step whenever a standby wait
// sleeps on it: the wait's whole bound makes the wait run out; its longest poll pause (20 ms)
// lets a standby that replays be met at the next poll.
func runDriven(t *testing.T, b *bundle, j *jobs.Jobs, step time.Duration) jobs.Result {
	t.Helper()
	type out struct {
		res jobs.Result
		err error
	}
	done, ran := make(chan struct{}), out{}
	go func() {
		defer close(done)
		ran.res, ran.err = j.RunOnce(ctx, jobs.Backfill, b.lease)
	}()
	require.True(t, b.clock.AdvanceWhileWaiting(done, step, 30*time.Second), "the backfill run did not end")
	require.NoError(t, ran.err)
	return ran.res
}

// No marker for a commit the standby lacks (INV-8c): the sweep selects the due rows, then waits
// for the standby to replay past them; with the WAL senders paused the wait runs out on the clock
// and the run writes and records nothing (the rows stay due, no attempt charged); with the
// senders resumed, the next run marks them once the standby has replayed their commits.
func TestNoBackfillMarkerBeforeTheStandbyHasTheCommit(t *testing.T) {
	t.Parallel()
	primary := testdb.PrimaryWithStandby(t)
	b := setupOn(t, testdb.NewAt(t, primary.AdminURL()))
	const wait = time.Hour
	b.cfg.Standbys = replication.NewWaiter(replication.Config{Standbys: 1, Wait: wait}, b.clock, nil)
	resume, err := primary.PauseWALSenders(ctx)
	require.NoError(t, err)
	t.Cleanup(resume)
	b.terminal(t, 1, t0, t0, nil)
	b.mailboxRow(t, 1, nil)
	j := b.jobs(t)
	b.clock.Advance(time.Minute)

	res := runDriven(t, b, j, wait)
	require.Equal(t, 1, res.Selected)
	require.Zero(t, res.Done)
	require.True(t, res.More, "the owed markers are left for the next run")
	at, _ := b.mark(t, 1)
	require.Nil(t, at, "marked before the standby has the commit")
	r := b.backfillRow(t, 1)
	require.Nil(t, r.Outcome)
	require.Zero(t, r.Attempts, "waiting for the standby is not a failed attempt")
	require.Nil(t, r.Error)
	require.Equal(t, t0, r.NextAt.UTC(), "still due")

	resume()
	res = runDriven(t, b, j, 20*time.Millisecond)
	require.Equal(t, 1, res.Done)
	require.Equal(t, jobs.OutcomeMarked, *b.backfillRow(t, 1).Outcome)
	at, _ = b.mark(t, 1)
	require.NotNil(t, at, "the standby replayed the commit: the marker is written")
}
