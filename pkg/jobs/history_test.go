package jobs_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/flight"
	"github.com/msgx/msgx/pkg/flightstore"
	"github.com/msgx/msgx/pkg/jobs"
	"github.com/msgx/msgx/pkg/processor"
)

// day is an operation day.
func day(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

// flight inserts a flight with a few detail rows.
func (b *bundle) flight(t *testing.T, flid int64, opDay time.Time, state string, version int64, updated time.Time) {
	t.Helper()
	_, err := b.db.Pool.Exec(ctx, `INSERT INTO flight (flid, alcd, flno, mvin, operation_day, state, state_version, stnd, created_at, updated_at)
		VALUES ($1, 'CA', 'CA101', 'A', $2, $3, $4, 'S1', $5, $5)`, flid, opDay, state, version, updated)
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `INSERT INTO flight_route (flid, kind, rtno, ord, apcd) VALUES ($1, 'ROUT', 1, 1, 'PEK'), ($1, 'ROUT', 2, 2, 'SHA')`, flid)
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `INSERT INTO flight_gate (flid, gtno, ord, gate) VALUES ($1, 1, 1, 'G1')`, flid)
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `INSERT INTO flight_vip (flid, vpcd, ord, vipt) VALUES ($1, 'V1', 1, '[{"vscd":"a"}]')`, flid)
	require.NoError(t, err)
}

func (b *bundle) flightExists(t *testing.T, flid int64) bool {
	return b.count(t, `SELECT count(*) FROM flight WHERE flid = $1`, flid) == 1
}

func (b *bundle) tombstones(t *testing.T, flid int64) int {
	return b.count(t, `SELECT count(*) FROM `+testdb.AllEvents+` WHERE partition_key = $1 AND event_type = 'TOMBSTONE'`, strconv.FormatInt(flid, 10))
}

// The sweep at 2026-12-10 03:30: retention 3 days → operation days before 12-07 are old.
var sweepAt = time.Date(2026, 12, 10, 3, 30, 0, 0, time.UTC)

func TestHistorySweepPurges(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.clock.Set(sweepAt)
	old := sweepAt.Add(-48 * time.Hour)
	b.flight(t, 1, day(2026, 12, 5), "DELETED", 4, sweepAt.Add(-time.Hour)) // deleted: purged, no TOMBSTONE
	b.flight(t, 2, day(2026, 12, 6), "ACTIVE", 7, old)                      // quiet: purged with a TOMBSTONE pair
	b.flight(t, 3, day(2026, 12, 6), "ACTIVE", 2, sweepAt.Add(-time.Hour))  // not quiet: kept
	b.flight(t, 4, day(2026, 12, 7), "DELETED", 3, old)                     // operation day too recent: kept
	j := b.jobs(t)
	published, err := flightstore.Read(ctx, b.db.Pool, 2)
	require.NoError(t, err)
	require.Len(t, published.C[flight.ROUT], 2)

	res, err := j.RunOnce(ctx, jobs.History, b.lease)
	require.NoError(t, err)
	require.Equal(t, 2, res.Selected)
	require.Equal(t, 2, res.Done)
	require.False(t, b.flightExists(t, 1))
	require.False(t, b.flightExists(t, 2))
	require.True(t, b.flightExists(t, 3))
	require.True(t, b.flightExists(t, 4))
	require.Zero(t, b.count(t, `SELECT count(*) FROM flight_route WHERE flid IN (1, 2)`), "details cascade")

	var doc []byte
	var reason string
	var version int64
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT final_state, purge_reason, state_version FROM flight_history WHERE flid = 2`).Scan(&doc, &reason, &version))
	require.Equal(t, "quiet", reason)
	require.Equal(t, int64(7), version)
	require.JSONEq(t, string(published.AppendJSONIn(nil, b.cfg.Location)), string(doc), "the document is the state as published")
	require.Equal(t, "deleted", func() string {
		var r string
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT purge_reason FROM flight_history WHERE flid = 1`).Scan(&r))
		return r
	}())

	require.Zero(t, b.tombstones(t, 1))
	rows, err := b.db.Pool.Query(ctx, `SELECT target, event_type, state_version, msg_id, COALESCE(body, payload::text) FROM `+testdb.AllEvents+` WHERE partition_key = '2' ORDER BY event_id`)
	require.NoError(t, err)
	type ev struct {
		Target, Type string
		Version      int64
		MsgID        *int64
		Payload      json.RawMessage
	}
	evs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ev])
	require.NoError(t, err)
	require.Len(t, evs, 2)
	require.Equal(t, "KAFKA:msg", evs[0].Target)
	require.Equal(t, "TOMBSTONE", evs[0].Type)
	require.Equal(t, int64(8), evs[0].Version)
	require.Nil(t, evs[0].MsgID)
	require.JSONEq(t, `{"flid":2,"event":"TOMBSTONE","reason":"purged","state_version":8}`, string(evs[0].Payload))
	require.Equal(t, "KAFKA:schd", evs[1].Target)
	require.Equal(t, int64(8), evs[1].Version)
	require.Nil(t, evs[1].Payload)

	// Idempotent: a second run finds nothing.
	res, err = j.RunOnce(ctx, jobs.History, b.lease)
	require.NoError(t, err)
	require.Zero(t, res.Selected)
}

func TestHistoryDisabledDeletesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.clock.Set(sweepAt)
	b.flight(t, 1, day(2026, 12, 1), "DELETED", 1, sweepAt.Add(-72*time.Hour))
	b.cfg.HistoryEnabled = false
	res, err := b.jobs(t).RunOnce(ctx, jobs.History, b.lease)
	require.NoError(t, err)
	require.Zero(t, res.Done)
	require.True(t, b.flightExists(t, 1))
	require.Zero(t, b.count(t, `SELECT count(*) FROM flight_history`))
}

// INV-18: the processor updates a selected flight (under PIPELINE_LOCK) and commits between the
// sweep's selection and its deleting transaction: the flight is kept and no TOMBSTONE is sent.
// Flight 2's update leaves updated_at as it was: the state_version comparison alone keeps it.
func TestHistorySweepRacesProcessor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.clock.Set(sweepAt)
	old := sweepAt.Add(-48 * time.Hour)
	for flid := int64(1); flid <= 3; flid++ {
		b.flight(t, flid, day(2026, 12, 5), "ACTIVE", 5, old)
	}
	proc := procFunc(func(ctx context.Context, tx pgx.Tx, m processor.Message) (processor.Outcome, error) {
		flid := m.Decoded.Flop.FLID
		q := `UPDATE flight SET stnd = $2, state_version = state_version + 1, updated_at = $3 WHERE flid = $1`
		if flid == 2 {
			q = `UPDATE flight SET stnd = $2, state_version = state_version + 1 WHERE flid = $1 AND $3::timestamptz IS NOT NULL`
		}
		_, err := tx.Exec(ctx, q, flid, "S9", m.Now)
		return processor.Outcome{}, err
	})
	p := b.pump(proc, nil)
	b.enqueue(t, 1, flop(1, 1, "S9"))
	b.enqueue(t, 2, flop(2, 2, "S9"))
	j := b.jobs(t)
	// The processor changes flights 1 and 2 after the sweep selected them: the test holds
	// flight_history, so the sweep waits on its first write after the selection, and the
	// processor's batch (which does not touch flight_history) commits meanwhile.
	hold, err := b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = hold.Rollback(ctx) }()
	var holder int32
	require.NoError(t, hold.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&holder))
	_, err = hold.Exec(ctx, `LOCK TABLE flight_history IN SHARE MODE`)
	require.NoError(t, err)
	type ran struct {
		res jobs.Result
		err error
	}
	done := make(chan ran, 1)
	go func() { res, err := j.RunOnce(ctx, jobs.History, b.lease); done <- ran{res, err} }()
	require.Eventually(t, func() bool {
		var waiting bool
		err := b.db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid)))`, holder).Scan(&waiting)
		return err == nil && waiting
	}, 10*time.Second, 5*time.Millisecond, "the sweep waits on its history write")
	stepped, err := p.Step(ctx, b.please)
	require.NoError(t, err)
	require.Equal(t, 2, stepped.Processed)
	require.NoError(t, hold.Rollback(ctx))
	r := <-done
	res, err := r.res, r.err
	require.NoError(t, err)
	require.Equal(t, 3, res.Selected)
	require.Equal(t, 1, res.Done)
	for flid := int64(1); flid <= 2; flid++ {
		require.True(t, b.flightExists(t, flid))
		require.Zero(t, b.tombstones(t, flid))
		require.Zero(t, b.count(t, `SELECT count(*) FROM flight_history WHERE flid = $1`, flid))
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM flight_route WHERE flid = $1 AND rtno = 2`, flid))
	}
	require.False(t, b.flightExists(t, 3))
	require.Equal(t, 2, b.tombstones(t, 3))
}

// A failure in the delete step rolls back the history rows and the TOMBSTONEs with it.
func TestHistoryDeleteFailureRollsBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.clock.Set(sweepAt)
	old := sweepAt.Add(-48 * time.Hour)
	b.flight(t, 1, day(2026, 12, 5), "ACTIVE", 1, old)
	b.flight(t, 2, day(2026, 12, 5), "ACTIVE", 1, old)
	_, err := b.db.Pool.Exec(ctx, `
		CREATE FUNCTION refuse_delete() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF OLD.flid = 2 THEN RAISE EXCEPTION 'injected delete failure'; END IF; RETURN OLD; END $$;
		CREATE TRIGGER refuse_delete BEFORE DELETE ON flight FOR EACH ROW EXECUTE FUNCTION refuse_delete();`)
	require.NoError(t, err)
	j := b.jobs(t)
	_, err = j.RunOnce(ctx, jobs.History, b.lease)
	require.ErrorContains(t, err, "injected delete failure")
	require.True(t, b.flightExists(t, 1))
	require.True(t, b.flightExists(t, 2))
	require.Zero(t, b.count(t, `SELECT count(*) FROM flight_history`))
	require.Zero(t, b.count(t, `SELECT count(*) FROM `+testdb.AllEvents))

	_, err = b.db.Pool.Exec(ctx, `DROP TRIGGER refuse_delete ON flight`)
	require.NoError(t, err)
	res, err := j.RunOnce(ctx, jobs.History, b.lease)
	require.NoError(t, err)
	require.Equal(t, 2, res.Done)
	require.Equal(t, 4, b.count(t, `SELECT count(*) FROM `+testdb.AllEvents))
}

// The history document is a state as flightstore loads it: its collections cover every table
// that references flight.
func TestDetailTablesComplete(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rows, err := b.db.Pool.Query(ctx, `
		SELECT c.conrelid::regclass::text FROM pg_constraint c
		 WHERE c.contype = 'f' AND c.confrelid = 'flight'::regclass AND c.confdeltype = 'c' ORDER BY 1`)
	require.NoError(t, err)
	refs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.ElementsMatch(t, refs, flight.DetailTables())
}

// The daily schedule: nothing before 03:30 airport time, once after it, again the next day;
// msgxctl's request runs it at once.
func TestHistorySchedule(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.cfg.Location = time.FixedZone("airport", 8*3600)
	// 03:29 airport time on 12-10 is 19:29 UTC on 12-09.
	b.clock.Set(time.Date(2026, 12, 9, 19, 29, 0, 0, time.UTC))
	j := b.jobs(t)
	ticks := func() int {
		return b.count(t, `SELECT count(*) FROM job_state WHERE job = 'history' AND last_finished_at = $1`, b.clock.Now())
	}
	require.NoError(t, j.Tick(ctx, b.lease))
	require.Zero(t, ticks())

	b.clock.Advance(time.Minute)
	require.NoError(t, j.Tick(ctx, b.lease))
	require.Equal(t, 1, ticks())
	var done time.Time
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT done_day FROM job_state WHERE job = 'history'`).Scan(&done))
	require.Equal(t, day(2026, 12, 10), done)

	b.clock.Advance(time.Hour)
	require.NoError(t, j.Tick(ctx, b.lease))
	require.Zero(t, ticks(), "swept twice the same day")

	require.NoError(t, jobs.Request(ctx, b.db.Pool, jobs.History, "ops", b.clock.Now()))
	st, err := jobs.State(ctx, b.db.Pool, jobs.History)
	require.NoError(t, err)
	require.True(t, st.Pending)
	b.clock.Advance(time.Second)
	require.NoError(t, j.Tick(ctx, b.lease))
	require.Equal(t, 1, ticks())
	st, err = jobs.State(ctx, b.db.Pool, jobs.History)
	require.NoError(t, err)
	require.False(t, st.Pending)

	b.clock.Advance(24 * time.Hour)
	require.NoError(t, j.Tick(ctx, b.lease))
	require.Equal(t, 1, ticks())
}
