package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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
	require.NoError(t, db.Pool.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+claimStatesSQL, t0, limit, "", 0).Scan(&plan))
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
	require.LessOrEqual(t, rows, float64(3*limit+1), "msg_event rows read by the claim (the +1: its lower bound): %v (plan %s)", rows, plan)

	// And the claim itself visits exactly the limit, then carries on after it.
	s := &Store{pool: db.Pool}
	got, err := s.ClaimStates(ctx, t0, limit, "", 0)
	require.NoError(t, err)
	require.Equal(t, limit, got.Visited)
	require.Len(t, got.Due, limit)
	require.Equal(t, "100000", got.Due[0].FLID)
	require.Equal(t, int64(2000), got.Due[0].StateVersion, "the newest version of the long backlog")
	require.Equal(t, "100499", got.Next)
	next, err := s.ClaimStates(ctx, t0, limit, got.Next, 0)
	require.NoError(t, err)
	require.Equal(t, "100500", next.Due[0].FLID)
}

type planNode struct {
	Type     string     `json:"Node Type"`
	Relation string     `json:"Relation Name"`
	Hit      float64    `json:"Shared Hit Blocks"`
	Read     float64    `json:"Shared Read Blocks"`
	Rows     float64    `json:"Actual Rows"`
	Loops    float64    `json:"Actual Loops"`
	Plans    []planNode `json:"Plans"`
}

// TestMarkStatesSentStartsAtTheBound: settling the states a flush sent walks the unsent
// KAFKA:schd events from the claim's lower bound, not every index entry of the events sent since
// the last vacuum. In a 1,000,000-message drain the update joined the whole target (a bitmap of
// 400,000 entries to settle 4,000 events, 1.2 s a flush; docs/benchmarks.md). Here 100,000
// events were sent and not vacuumed, then 10 FLIDs get 3 unsent versions each, the last two
// after the statistics were taken (which, as then, say almost nothing is unsent). From the
// bound the update reads at most a few msg_event pages per event it settles in either plan
// mode. Seen before the statement took its present shape: 500 to 14,884 pages, where the
// planner scanned a whole unsent index (priced at one page when ANALYZE finds at most one
// unsent row) by a hash join, as a nested loop's inner side, or to find ctids.
func TestMarkStatesSentStartsAtTheBound(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"force_generic_plan", "force_custom_plan"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			db := testdb.New(t)
			ctx := context.Background()
			t0 := time.Date(2026, 12, 15, 8, 0, 0, 0, time.UTC)
			insert := func(flids, versions string) string {
				return `INSERT INTO msg_event (target, partition_key, event_type, state_version, body, created_at)
				 SELECT 'KAFKA:schd', f::text, 'UPSERT', v, '{}', $1
				   FROM generate_series(` + versions + `) v, generate_series(` + flids + `) f ORDER BY v, f`
			}
			for _, sql := range []string{
				`ALTER TABLE msg_event SET (autovacuum_enabled = off)`,
				insert("100001, 102000", "1, 50"),
				`UPDATE msg_event SET status = 'SENT', sent_at = $1`,
				insert("200001, 200010", "1, 1"),
				`ANALYZE msg_event`,
				insert("200001, 200010", "2, 3"),
			} {
				var args []any
				if strings.Contains(sql, "$1") {
					args = []any{t0}
				}
				_, err := db.Pool.Exec(ctx, sql, args...)
				require.NoError(t, err, sql)
			}
			s := &Store{pool: db.Pool}
			claims, err := s.ClaimStates(ctx, t0, 500, "", 0)
			require.NoError(t, err)
			require.Len(t, claims.Due, 10)
			var first int64
			require.NoError(t, db.Pool.QueryRow(ctx, `SELECT min(event_id) FROM msg_event WHERE status = 'PENDING'`).Scan(&first))
			require.Equal(t, first, claims.From, "the bound is the smallest unsent id")

			// The claims as literals (EXECUTE takes no bound parameters).
			keys, versions := make([]string, len(claims.Due)), make([]string, len(claims.Due))
			for i, c := range claims.Due {
				keys[i], versions[i] = c.FLID, strconv.FormatInt(c.StateVersion, 10)
			}
			args := "'{" + strings.Join(keys, ",") + "}', '{" + strings.Join(versions, ",") + "}', '2026-12-15 08:00:00Z'"
			pages := func(from int64) (float64, string) {
				var read float64
				var shown string
				name := "mark_states_sent_" + strconv.FormatInt(from, 10) // PREPARE outlives the transaction
				require.EqualError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
					for _, sql := range []string{
						`SET LOCAL plan_cache_mode = ` + mode,
						`PREPARE ` + name + `(text[], bigint[], timestamptz, bigint) AS ` + markStatesSentSQL,
						`EXECUTE ` + name + `('{1}', '{1}', '2026-12-15 08:00:00Z', 0)`, // a generic plan is made here
					} {
						if _, err := tx.Exec(ctx, sql); err != nil {
							return err
						}
					}
					var plan []byte
					err := tx.QueryRow(ctx, `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE `+name+`(`+args+`, `+strconv.FormatInt(from, 10)+`)`).Scan(&plan)
					if err != nil {
						return err
					}
					var root []struct {
						Plan planNode `json:"Plan"`
					}
					require.NoError(t, json.Unmarshal(plan, &root))
					shown = string(plan)
					var walk func(p planNode)
					walk = func(p planNode) {
						if p.Relation == "msg_event" && p.Type != "ModifyTable" {
							require.NotEqual(t, "Seq Scan", p.Type, "msg_event is read by index only (plan %s)", plan)
							read += p.Hit + p.Read // the node's pages include its children's
							return
						}
						for _, c := range p.Plans {
							walk(c)
						}
					}
					walk(root[0].Plan)
					var unsent int
					if err := tx.QueryRow(ctx, `SELECT count(*) FROM msg_event WHERE status <> 'SENT'`).Scan(&unsent); err != nil {
						return err
					}
					require.Zero(t, unsent, "every event at or below the versions sent is settled")
					return errors.New("rolled back") // the next measure finds the same rows unsent
				}), "rolled back")
				return read, shown
			}
			read, plan := pages(claims.From)
			require.LessOrEqual(t, read, float64(5*30+10), "msg_event pages read from the bound to settle 30 events (plan %s)", plan)
		})
	}
}
