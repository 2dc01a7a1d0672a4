package jobs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/jobs"
	"github.com/msgx/msgx/pkg/processor"
)

func TestRetention(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := t0.Add(400 * 24 * time.Hour)
	b.clock.Set(now)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	exec := func(q string, args ...any) {
		t.Helper()
		_, err := b.db.Pool.Exec(ctx, q, args...)
		require.NoError(t, err)
	}
	// proc_state: 1 old settled (archived), 2 old abandoned (archived, still listed), 3 old with
	// the marker owed (kept), 4 recent settled (kept), 5 PENDING (kept), 6 settled very old
	// (archived and its raw cleared).
	for id, c := range map[int64]struct {
		finished        time.Duration
		done, abandoned bool
	}{1: {31 * 24 * time.Hour, true, false}, 2: {40 * 24 * time.Hour, false, true}, 3: {60 * 24 * time.Hour, false, false},
		4: {29 * 24 * time.Hour, true, false}, 6: {91 * 24 * time.Hour, true, false}} {
		var done, abandoned *time.Time
		if c.done {
			done = ptr(ago(c.finished))
		}
		if c.abandoned {
			abandoned = ptr(ago(c.finished))
		}
		exec(`INSERT INTO proc_state (msg_id, raw, status, attempts, identity_key, enqueued_at, finished_at, backfill_next_at, backfill_done_at, backfill_abandoned_at, backfill_outcome)
			VALUES ($1, 'raw', 'SUCCEEDED', 1, 'K|' || $1::bigint, $2, $2, $2, $3, $4, CASE WHEN $3::timestamptz IS NOT NULL THEN 'MARKED' WHEN $4::timestamptz IS NOT NULL THEN 'OVERDUE' END)`,
			id, ago(c.finished), done, abandoned)
	}
	exec(`INSERT INTO proc_state (msg_id, raw, status, enqueued_at) VALUES (5, 'raw', 'PENDING', $1)`, ago(100*24*time.Hour))
	// 7 old, its marker paid with its batch (no debt of its own, none in marker_debt): archived;
	// 8 old, its batch's debt still unpaid: kept.
	exec(`INSERT INTO proc_state (msg_id, raw, status, attempts, enqueued_at, finished_at) VALUES
		(7, 'raw', 'SUCCEEDED', 1, $1, $1), (8, 'raw', 'SUCCEEDED', 1, $1, $1)`, ago(31*24*time.Hour))
	exec(`INSERT INTO marker_debt (ids, finished_at) VALUES ('{8}', $1)`, ago(31*24*time.Hour))
	exec(`INSERT INTO schd_snap_log (msg_id, applied_at) VALUES (1, $1), (2, $2)`, ago(91*24*time.Hour), ago(89*24*time.Hour))
	// By (scope_end, recv_at): a season-long scope still running is kept though applied long ago;
	// one whose scope ended and that was received beyond the retention goes.
	exec(`INSERT INTO schd_snap_log (msg_id, scope_start, scope_end, recv_at, applied_at) VALUES
		(3, $1::timestamptz::date, $2::timestamptz::date, $1::timestamptz::timestamp, $1),
		(4, $3::timestamptz::date, $3::timestamptz::date, $3::timestamptz::timestamp, $3)`,
		ago(120*24*time.Hour), ago(-30*24*time.Hour), ago(95*24*time.Hour))
	exec(`INSERT INTO msg_event (target, partition_key, event_type, state_version, payload, status, created_at, sent_at) VALUES
		('KAFKA:msg', '1', 'UPSERT', 1, '{}', 'SENT', $1, $1), ('KAFKA:msg', '1', 'UPSERT', 2, '{}', 'SENT', $2, $2)`, ago(8*24*time.Hour), ago(6*24*time.Hour))
	exec(`INSERT INTO msg_event (target, partition_key, event_type, state_version, payload, status, created_at) VALUES ('KAFKA:msg', '1', 'UPSERT', 3, '{}', 'PENDING', $1)`, ago(30*24*time.Hour))
	// A skipped dead letter (msgxctl dlq skip) is no delivery: it outlives the SENT retention.
	exec(`INSERT INTO msg_event (target, partition_key, event_type, state_version, payload, status, created_at, last_error) VALUES ('KAFKA:msg', '2', 'UPSERT', 9, '{}', 'SKIPPED', $1, 'skipped by ops: x')`, ago(400*24*time.Hour))
	exec(`INSERT INTO req_track (req_type, scope, sender, status, registered_at, sent_at, done_at, closed_at) VALUES
		('RQFD', 'a', 'MSGX', 'DONE', $1, $1, $1, $1), ('RQFD', 'b', 'MSGX', 'EXPIRED', $2, NULL, NULL, $2), ('RQFD', 'c', 'MSGX', 'SENT', $1, $1, NULL, NULL)`,
		ago(31*24*time.Hour), ago(29*24*time.Hour))
	exec(`INSERT INTO flight_history (flid, state_version, final_state, purge_reason, purged_at) VALUES (1, 1, '{}', 'quiet', $1), (2, 1, '{}', 'quiet', $2)`,
		ago(366*24*time.Hour), ago(364*24*time.Hour))

	j := b.jobs(t)
	res, err := j.RunOnce(ctx, jobs.Retention, b.lease)
	require.NoError(t, err)
	require.False(t, res.More)

	ids := func(q string) []int64 { return b.db.Int64s(t, q) }
	require.Equal(t, []int64{3, 4, 5, 8}, ids(`SELECT msg_id FROM proc_state ORDER BY 1`))
	require.Equal(t, []int64{1, 2, 6, 7}, ids(`SELECT msg_id FROM proc_state_hst WHERE archived_at = '`+now.Format(time.RFC3339)+`' ORDER BY 1`))
	require.Equal(t, []int64{6}, ids(`SELECT msg_id FROM proc_state_hst WHERE raw IS NULL AND raw_cleared_at IS NOT NULL ORDER BY 1`))
	require.Equal(t, []int64{2, 3}, ids(`SELECT msg_id FROM schd_snap_log ORDER BY 1`))
	require.Equal(t, []int64{2, 3, 9}, ids(`SELECT state_version FROM msg_event ORDER BY 1`))
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM req_track`))
	require.Equal(t, []int64{2}, ids(`SELECT flid FROM flight_history`))

	// An archived abandoned marker is still listed, and a retry brings it back to proc_state.
	list, err := jobs.ListAbandoned(ctx, b.db.Pool, 10)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.True(t, list[0].Archived)
	rep, err := jobs.RetryBackfill(ctx, b.db.Pool, jobs.RetryRequest{IDs: []int64{2}, Actor: "ops", Reason: "reconciled", Now: now})
	require.NoError(t, err)
	require.Equal(t, []int64{2}, rep.Retried)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM proc_state WHERE msg_id = 2 AND backfill_abandoned_at IS NULL AND backfill_next_at = $1`, now))
	require.Zero(t, b.count(t, `SELECT count(*) FROM proc_state_hst WHERE msg_id = 2`))
}

// The change events the delivery cursor passed go with the cursor move that passed them, once
// it is older than the retention; an event above the cursor stays, whatever its age, and so does
// the newest move (the cursor itself).
func TestRetentionOfEventsTheCursorPassed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := t0.Add(100 * 24 * time.Hour)
	b.clock.Set(now)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	exec := func(q string, args ...any) {
		t.Helper()
		_, err := b.db.Pool.Exec(ctx, q, args...)
		require.NoError(t, err)
	}
	exec(`INSERT INTO msg_event (event_id, target, partition_key, event_type, state_version, body, created_at)
	      SELECT g, 'KAFKA:msg', '1', 'UPSERT', g, '{}', $1 FROM generate_series(1, 4) g`, ago(30*24*time.Hour))
	exec(`INSERT INTO msg_event_delivered (through, sent_at) VALUES (2, $1), (3, $2)`, ago(8*24*time.Hour), ago(6*24*time.Hour))

	res, err := b.jobs(t).RunOnce(ctx, jobs.Retention, b.lease)
	require.NoError(t, err)
	require.False(t, res.More)
	require.Equal(t, []int64{3, 4}, b.db.Int64s(t, `SELECT event_id FROM msg_event ORDER BY 1`),
		"passed 8 days ago: gone; 6 days ago: kept; not passed: kept")
	require.Equal(t, []int64{3}, b.db.Int64s(t, `SELECT through FROM msg_event_delivered ORDER BY 1`))

	b.clock.Set(now.Add(30 * 24 * time.Hour))
	_, err = b.jobs(t).RunOnce(ctx, jobs.Retention, b.lease)
	require.NoError(t, err)
	require.Equal(t, []int64{4}, b.db.Int64s(t, `SELECT event_id FROM msg_event ORDER BY 1`))
	require.Equal(t, []int64{3}, b.db.Int64s(t, `SELECT through FROM msg_event_delivered ORDER BY 1`), "the cursor itself stays")
}

// Each run is bounded: Batch rows per transaction, RunTxs transactions per task.
func TestRetentionBounded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.cfg.Batch, b.cfg.RunTxs = 2, 2
	_, err := b.db.Pool.Exec(ctx, `INSERT INTO schd_snap_log (msg_id, applied_at) SELECT g, $1 FROM generate_series(1, 7) g`, t0)
	require.NoError(t, err)
	b.clock.Set(t0.Add(100 * 24 * time.Hour))
	j := b.jobs(t)
	res, err := j.RunOnce(ctx, jobs.Retention, b.lease)
	require.NoError(t, err)
	require.True(t, res.More)
	require.Equal(t, 4, res.Done)
	res, err = j.RunOnce(ctx, jobs.Retention, b.lease)
	require.NoError(t, err)
	require.False(t, res.More)
	require.Equal(t, 3, res.Done)
}

// A message whose proc_state row moved to proc_state_hst is still a duplicate for the pump.
func TestArchivedIdentityStillDuplicate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	proc := procFunc(func(ctx context.Context, tx pgx.Tx, m processor.Message) (processor.Outcome, error) {
		return processor.Outcome{}, nil
	})
	b.mailboxRow(t, 1, nil)
	b.mailboxRow(t, 2, nil)
	b.enqueue(t, 1, flop(42, 15, "S1"))
	_, err := b.pump(proc, nil).Step(ctx, b.please)
	require.NoError(t, err)

	j := b.jobs(t)
	b.clock.Advance(time.Minute)
	_, err = j.RunOnce(ctx, jobs.Backfill, b.lease)
	require.NoError(t, err)
	b.clock.Advance(31 * 24 * time.Hour)
	res, err := j.RunOnce(ctx, jobs.Retention, b.lease)
	require.NoError(t, err)
	require.Equal(t, 1, res.Done)
	require.Zero(t, b.count(t, `SELECT count(*) FROM proc_state`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM proc_state_hst WHERE msg_id = 1 AND identity_key = 'AODB|FLOP|STND|42'`))

	// The same message again (same identity), a month later.
	b.enqueue(t, 2, flop(42, 15, "S1"))
	step, err := b.pump(proc, nil).Step(ctx, b.please)
	require.NoError(t, err)
	require.Equal(t, 1, step.Processed)
	var status, reason string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT status, reason FROM proc_state WHERE msg_id = 2`).Scan(&status, &reason))
	require.Equal(t, "SKIPPED", status)
	require.True(t, strings.HasPrefix(reason, "duplicate-of:1"), reason)
}

// The archive moves every column of proc_state.
func TestArchiveColumnsComplete(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rows, err := b.db.Pool.Query(ctx, `SELECT column_name::text FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'proc_state' ORDER BY ordinal_position`)
	require.NoError(t, err)
	cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	var listed []string
	for _, c := range strings.Split(jobs.ProcStateColumns, ",") {
		listed = append(listed, strings.TrimSpace(c))
	}
	require.Equal(t, cols, listed)
}
