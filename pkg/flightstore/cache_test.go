package flightstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/flight"
	"github.com/msgx/msgx/pkg/flightstore"
	"github.com/msgx/msgx/pkg/roles"
)

var t0 = time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)

// newFlight is a stored-to-be flight with a stand.
func newFlight(flid int64, stand string) *flight.State {
	s := &flight.State{FLID: flid, Status: flight.Active, Version: 1, OperationDay: "2026-12-02", LastMsgID: 1}
	s.F[flight.FLNO] = flight.Text("CA1234")
	s.F[flight.STND] = flight.Text(stand)
	s.P.F[flight.STND] = flight.Stamp{DTTM: t0.Unix(), MsgID: 1}
	return s
}

// in runs fn in a transaction of the processor role and commits it (or rolls back on error).
func in(t *testing.T, db *testdb.DB, fn func(tx pgx.Tx) error) error {
	t.Helper()
	return pgx.BeginFunc(context.Background(), db.Roles(t).Pool(t, roles.Processor), fn)
}

func load(t *testing.T, db *testdb.DB, c *flightstore.Cache, flid int64) *flight.State {
	t.Helper()
	var s *flight.State
	require.NoError(t, in(t, db, func(tx pgx.Tx) error {
		st, err := flightstore.Loader{Tx: tx, Cache: c}.Load(context.Background(), []int64{flid})
		s = st.States[flid]
		return err
	}))
	return s
}

func save(t *testing.T, db *testdb.DB, c *flightstore.Cache, old, next *flight.State) error {
	t.Helper()
	return in(t, db, func(tx pgx.Tx) error {
		return flightstore.Loader{Tx: tx, Cache: c}.Save(context.Background(), []flight.Transition{{Old: old, Next: next}}, nil, t0)
	})
}

// TestCacheNeverHandsOutAStaleFlight: whatever changes a flight row behind the processor's back
// (another leader, an operator, the purge) and whatever the processor wrote in a transaction
// that rolled back, a load through the cache returns what is stored.
func TestCacheNeverHandsOutAStaleFlight(t *testing.T) {
	ctx := context.Background()
	db := testdb.New(t)
	c := flightstore.NewCache(10)

	// Written and committed by the processor: kept, and handed out as it is stored.
	v1 := newFlight(7, "215")
	require.NoError(t, save(t, db, c, nil, v1))
	require.Equal(t, 1, c.Len())
	require.Equal(t, "215", load(t, db, c, 7).F[flight.STND].S)

	// Changed by someone else: the row's xmin moved, the entry is not used.
	_, err := db.Pool.Exec(ctx, `UPDATE flight SET stnd = '216', state_version = 2 WHERE flid = 7`)
	require.NoError(t, err)
	got := load(t, db, c, 7)
	require.Equal(t, "216", got.F[flight.STND].S, "an entry older than the row was used")
	require.Equal(t, int64(2), got.Version)

	// Written by a transaction that rolled back: the kept state names an xid no row carries.
	v3 := got.Clone()
	v3.Version, v3.F[flight.STND] = 3, flight.Text("217")
	require.Error(t, in(t, db, func(tx pgx.Tx) error {
		if err := (flightstore.Loader{Tx: tx, Cache: c}).Save(ctx, []flight.Transition{{Old: got, Next: &v3}}, nil, t0); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `SELECT 1/0`) // the batch fails after the flights were written
		return err
	}))
	got = load(t, db, c, 7)
	require.Equal(t, "216", got.F[flight.STND].S, "the state of a rolled-back transaction was used")

	// Purged (deleted) and created again by someone else: a new row, loaded in full.
	_, err = db.Pool.Exec(ctx, `DELETE FROM flight WHERE flid = 7`)
	require.NoError(t, err)
	require.Nil(t, load(t, db, c, 7))
	require.NoError(t, save(t, db, nil, nil, newFlight(7, "218")))
	require.Equal(t, "218", load(t, db, c, 7).F[flight.STND].S)

	require.NoError(t, in(t, db, func(tx pgx.Tx) error { return c.Verify(ctx, tx) }))
}

// TestCacheIsBounded: past its bound the cache drops entries (they reload).
func TestCacheIsBounded(t *testing.T) {
	db := testdb.New(t)
	c := flightstore.NewCache(4)
	for id := int64(1); id <= 9; id++ {
		require.NoError(t, save(t, db, c, nil, newFlight(id, "215")))
		require.LessOrEqual(t, c.Len(), 4)
	}
	for id := int64(1); id <= 9; id++ {
		require.Equal(t, id, load(t, db, c, id).FLID)
	}
}
