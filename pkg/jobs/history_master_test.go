package jobs_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/jobs"
)

// INV-22b on purge: purging an ACTIVE child changes its master's MAFL, so the master gets its
// next version and one change event (a pair: KAFKA:msg and KAFKA:schd) in the purge's
// transaction. A DELETED child was no part of the MAFL (nothing to do); a master purged with its
// child gets its TOMBSTONE only.
func TestPurgedChildBumpsItsMaster(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.clock.Set(sweepAt)
	old, recent := sweepAt.Add(-48*time.Hour), sweepAt.Add(-time.Hour)
	b.flight(t, 10, day(2026, 12, 9), "ACTIVE", 3, recent) // master, kept
	b.flight(t, 11, day(2026, 12, 6), "ACTIVE", 5, old)    // its quiet child: purged
	b.flight(t, 12, day(2026, 12, 9), "ACTIVE", 2, recent) // its recent child: kept
	b.flight(t, 13, day(2026, 12, 6), "DELETED", 4, old)   // its deleted child: purged
	b.flight(t, 20, day(2026, 12, 6), "ACTIVE", 6, old)    // a quiet master, purged with
	b.flight(t, 21, day(2026, 12, 6), "ACTIVE", 2, old)    // its quiet child
	_, err := b.db.Pool.Exec(ctx, `UPDATE flight SET maid = CASE WHEN flid < 20 THEN 10 ELSE 20 END,
		flno = 'CA' || flid WHERE flid IN (11, 12, 13, 21)`)
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `DELETE FROM flight_vip WHERE flid = 10`) // b.flight's vipt is no VIPT list
	require.NoError(t, err)

	res, err := b.jobs(t).RunOnce(ctx, jobs.History, b.lease)
	require.NoError(t, err)
	require.Equal(t, 4, res.Done)

	var version int64
	var updated time.Time
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT state_version, updated_at FROM flight WHERE flid = 10`).Scan(&version, &updated))
	require.Equal(t, int64(4), version, "the master's version is bumped once")
	require.True(t, updated.Equal(sweepAt), "%s", updated)
	rows, err := b.db.Pool.Query(ctx, `SELECT target, event_type, state_version, COALESCE(body, payload::text) FROM `+testdb.AllEvents+` WHERE partition_key = '10' ORDER BY event_id`)
	require.NoError(t, err)
	type ev struct {
		Target, Type string
		Version      int64
		Payload      json.RawMessage
	}
	evs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ev])
	require.NoError(t, err)
	require.Len(t, evs, 2, "one change: one event per topic")
	require.Equal(t, []string{"KAFKA:msg", "KAFKA:schd"}, []string{evs[0].Target, evs[1].Target})
	var state struct {
		MAFL []struct {
			FLID int64  `json:"flid"`
			FLNO string `json:"flno"`
		} `json:"mafl"`
	}
	for _, e := range evs {
		require.Equal(t, "UPSERT", e.Type)
		require.Equal(t, int64(4), e.Version)
	}
	require.NoError(t, json.Unmarshal(evs[1].Payload, &state))
	require.Len(t, state.MAFL, 1, "%s", evs[1].Payload)
	require.Equal(t, int64(12), state.MAFL[0].FLID, "the MAFL lost the purged child")
	var change struct {
		MsgID   *int64 `json:"msg_id"`
		Reason  string `json:"reason"`
		Changed map[string]json.RawMessage
	}
	require.NoError(t, json.Unmarshal(evs[0].Payload, &change))
	require.Nil(t, change.MsgID, "no message caused it")
	require.Equal(t, "child-purged", change.Reason)
	require.Contains(t, string(evs[0].Payload), `"mafl"`)

	// The master purged with its child: TOMBSTONEs only, no change event.
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM `+testdb.AllEvents+` WHERE partition_key = '20'`))
	require.Equal(t, 2, b.tombstones(t, 20))
}
