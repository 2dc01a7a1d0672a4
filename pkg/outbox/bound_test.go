package outbox

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/testdb"
)

// TestStateClaimBoundedByFlushLimit: after a 100,000-event KAFKA:schd backlog (an
// outage: 2,000 FLIDs with 49 versions each, and one FLID with 2,000), a flush's claim reads at
// most the flush limit of FLIDs by index, whatever the backlog: EXPLAIN ANALYZE shows no
// sequential scan of msg_event, and the msg_event rows its nodes produce stay within a small
// multiple of the limit.
func TestStateClaimBoundedByFlushLimit(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	t0 := time.Date(2026, 12, 15, 8, 0, 0, 0, time.UTC)
	_, err := db.Pool.Exec(ctx, `
INSERT INTO msg_event (target, partition_key, event_type, state_version, payload, created_at)
SELECT 'KAFKA:schd', (100000 + f)::text, 'UPSERT', v, '{}'::jsonb, $1
  FROM generate_series(1, 49) v, generate_series(1, 2000) f
 ORDER BY v, f`, t0)
	require.NoError(t, err)
	_, err = db.Pool.Exec(ctx, `
INSERT INTO msg_event (target, partition_key, event_type, state_version, payload, created_at)
SELECT 'KAFKA:schd', '100000', 'UPSERT', v, '{}'::jsonb, $1 FROM generate_series(1, 2000) v`, t0)
	require.NoError(t, err)
	_, err = db.Pool.Exec(ctx, `ANALYZE msg_event`)
	require.NoError(t, err)
	var n int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM msg_event`).Scan(&n))
	require.Equal(t, 100000, n)

	const limit = 500
	var plan []byte
	require.NoError(t, db.Pool.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+claimStatesSQL, t0, limit, "").Scan(&plan))
	var root []struct {
		Plan planNode `json:"Plan"`
	}
	require.NoError(t, json.Unmarshal(plan, &root))
	rows := 0.0
	var walk func(p planNode)
	walk = func(p planNode) {
		if p.Relation == "msg_event" {
			require.NotEqual(t, "Seq Scan", p.Type, "msg_event is read by index only")
			rows += p.Rows * p.Loops
		}
		for _, c := range p.Plans {
			walk(c)
		}
	}
	walk(root[0].Plan)
	require.Positive(t, rows)
	require.LessOrEqual(t, rows, float64(3*limit), "msg_event rows read by the claim: %v (plan %s)", rows, plan)

	// And the claim itself visits exactly the limit, then carries on after it.
	s := &Store{pool: db.Pool}
	got, err := s.ClaimStates(ctx, t0, limit, "")
	require.NoError(t, err)
	require.Equal(t, limit, got.Visited)
	require.Len(t, got.Due, limit)
	require.Equal(t, "100000", got.Due[0].FLID)
	require.Equal(t, int64(2000), got.Due[0].StateVersion, "the newest version of the long backlog")
	require.Equal(t, "100499", got.Next)
	next, err := s.ClaimStates(ctx, t0, limit, got.Next)
	require.NoError(t, err)
	require.Equal(t, "100500", next.Due[0].FLID)
}

type planNode struct {
	Type     string     `json:"Node Type"`
	Relation string     `json:"Relation Name"`
	Rows     float64    `json:"Actual Rows"`
	Loops    float64    `json:"Actual Loops"`
	Plans    []planNode `json:"Plans"`
}
