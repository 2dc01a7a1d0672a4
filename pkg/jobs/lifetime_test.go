package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/identity"
	"github.com/msgx/msgx/pkg/jobs"
	"github.com/msgx/msgx/pkg/processor"
)

// Identity bindings live for the stored identity window plus MSGX_IDENTITY_MARGIN: the
// retention job deletes older ones (none before a rule is stored); a key whose binding is gone
// binds again to the next message that carries it.
func TestIdentityRetention(t *testing.T) {
	t.Parallel()
	b := setup(t)
	day := 24 * time.Hour
	proc := procFunc(func(context.Context, pgx.Tx, processor.Message) (processor.Outcome, error) {
		return processor.Outcome{}, nil
	})
	b.enqueue(t, 1, flop(42, 15, "S1")) // bound at t0
	_, err := b.pump(proc, nil).Step(ctx, b.please)
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `INSERT INTO msg_identity (identity_key, msg_id, raw_sha256, dttm, bound_at)
		VALUES ('K|2', 2, '\x00', $1, $1), ('K|3', 3, '\x00', $2, $2)`, t0.Add(23*time.Hour), t0.Add(2*day))
	require.NoError(t, err)
	keys := func() []string {
		rows, err := b.db.Pool.Query(ctx, `SELECT identity_key FROM msg_identity ORDER BY identity_key`)
		require.NoError(t, err)
		out, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return out
	}
	b.clock.Set(t0.Add(8*day + time.Hour)) // the window (7 days) and the margin (1 day) passed for t0
	j := b.jobs(t)
	_, err = j.RunOnce(ctx, jobs.Retention, b.lease)
	require.NoError(t, err)
	require.Equal(t, []string{"AODB|FLOP|STND|42", "K|2", "K|3"}, keys(), "no rule stored: every binding is kept")

	require.NoError(t, identity.Ensure(ctx, b.db.Pool, identity.Rule{Window: 7 * day}, "processor", t0))
	res, err := j.RunOnce(ctx, jobs.Retention, b.lease)
	require.NoError(t, err)
	require.Equal(t, 1, res.Done)
	require.Equal(t, []string{"K|2", "K|3"}, keys(), "bound 8d1h ago: gone; 7d23h+ ago: kept")

	// The key is free: the same SEQN binds the next message that carries it.
	b.enqueue(t, 4, flop(42, 15, "S2"))
	_, err = b.pump(proc, nil).Step(ctx, b.please)
	require.NoError(t, err)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM msg_identity WHERE identity_key = 'AODB|FLOP|STND|42' AND msg_id = 4`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM proc_state WHERE msg_id = 4 AND status = 'SUCCEEDED'`))
}

// proc_state_hst rows are deleted MSGX_PROC_STATE_HST_RETENTION after they were archived, in
// bounded batches; abandoned markers not reconciled yet are kept.
func TestProcStateHstRetention(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.cfg.Batch = 2
	now := t0.Add(800 * 24 * time.Hour)
	b.clock.Set(now)
	keep := b.cfg.ProcStateHstRetention
	insert := func(id int64, archived time.Time, abandoned bool) {
		t.Helper()
		var ab *time.Time
		if abandoned {
			ab = &archived
		}
		_, err := b.db.Pool.Exec(ctx, `INSERT INTO proc_state_hst (msg_id, status, enqueued_at, finished_at, backfill_next_at, backfill_abandoned_at, archived_at)
			VALUES ($1, 'SUCCEEDED', $2, $2, $2, $3, $2)`, id, archived, ab)
		require.NoError(t, err)
	}
	for id := int64(1); id <= 5; id++ {
		insert(id, now.Add(-keep-time.Duration(id)*time.Hour), false) // past the retention
	}
	insert(6, now.Add(-keep+time.Hour), false)    // not yet
	insert(7, now.Add(-keep-100*time.Hour), true) // abandoned, not reconciled
	res, err := b.jobs(t).RunOnce(ctx, jobs.Retention, b.lease)
	require.NoError(t, err)
	require.Equal(t, 5, res.Done)
	left := b.db.Int64s(t, `SELECT msg_id FROM proc_state_hst ORDER BY 1`)
	require.Equal(t, []int64{6, 7}, left)
}

// Shadow mode writes no markers, so its terminal rows never settle one: they are archived after
// MSGX_PROC_STATE_RETENTION all the same. Outside shadow mode the owed marker keeps a row.
func TestShadowRowsArchived(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := t0.Add(40 * 24 * time.Hour)
	b.clock.Set(now)
	b.terminal(t, 1, t0, t0, nil)                                   // marker owed, past the retention
	b.terminal(t, 2, now.Add(-time.Hour), now.Add(-time.Hour), nil) // recent
	res, err := b.jobs(t).RunOnce(ctx, jobs.Retention, b.lease)
	require.NoError(t, err)
	require.Zero(t, res.Done, "a marker owed keeps the row outside shadow mode")

	b.cfg.Shadow = true
	res, err = b.jobs(t).RunOnce(ctx, jobs.Retention, b.lease)
	require.NoError(t, err)
	require.Equal(t, 1, res.Done)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM proc_state_hst WHERE msg_id = 1 AND archived_at = $1 AND backfill_done_at IS NULL`, now))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM proc_state WHERE msg_id = 2`))
}
