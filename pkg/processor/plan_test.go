package processor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/testdb"
)

// TestIdentityLockProbesTheKeysWhateverThePlan: msg_identity grows by a row per message, and its
// statistics may lag (a new table; autovacuum not run yet, or off). Whatever the plan — a
// generic plan made on the empty table and cached by the prepared statement, or a custom plan on
// a table never analyzed — the batch's keys are probed by index: with "identity_key = ANY($1)"
// the custom plan scanned the whole table comparing every row with every key
// (docs/benchmarks.md). 100,000 bindings, 2,000 keys: no sequential scan of msg_identity.
func TestIdentityLockProbesTheKeysWhateverThePlan(t *testing.T) {
	t.Parallel()
	// 2,000 keys of a batch (MSGX_PUMP_BATCH's default), as a literal (EXECUTE takes neither bound
	// parameters nor subqueries).
	var b strings.Builder
	for g := 98001; g <= 100000; g++ {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "AODB|FLOP|STND|%d", g)
	}
	keys := "'{" + b.String() + "}'"
	eachPlanMode(t, func(t *testing.T, db *testdb.DB, mode string) {
		ctx := context.Background()
		t0 := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
		require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
			for _, sql := range []string{
				`SET LOCAL plan_cache_mode = ` + mode,
				`PREPARE lock_identities(text[]) AS ` + lockIdentitiesSQL,
				`EXECUTE lock_identities('{AODB|FLOP|STND|1}')`, // a generic plan is made here, on the empty table
			} {
				if _, err := tx.Exec(ctx, sql); err != nil {
					return err
				}
			}
			if _, err := tx.Exec(ctx, `INSERT INTO msg_identity (identity_key, msg_id, raw_sha256, dttm, bound_at)
					SELECT 'AODB|FLOP|STND|' || g, g, '\x00', $1, $1 FROM generate_series(1, 100000) g`, t0); err != nil {
				return err
			}
			var plan []byte
			if err := tx.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE lock_identities(`+keys+`)`).Scan(&plan); err != nil {
				return err
			}
			requireNoSeqScan(t, plan, "msg_identity")
			rows, err := tx.Query(ctx, `EXECUTE lock_identities(`+keys+`)`)
			if err != nil {
				return err
			}
			n := 0
			for rows.Next() {
				n++
			}
			require.Equal(t, 2000, n, "every key's binding")
			return rows.Err()
		}))
	})
}

type planNode struct {
	Type     string     `json:"Node Type"`
	Relation string     `json:"Relation Name"`
	Plans    []planNode `json:"Plans"`
}

// TestStartMarkGuardFindsTheHeadByIndex: the read-ahead's start mark asks whether an open row
// appeared below the head it read. In a 1,000,000-message drain the generic plan of that check
// scanned all of proc_state (0.66 s a batch, docs/benchmarks.md): half a million terminal rows
// below the head and as many open above it made "an open row below $1" look common. Whatever
// the plan, the check reads the open index, never the table.
func TestStartMarkGuardFindsTheHeadByIndex(t *testing.T) {
	t.Parallel()
	eachPlanMode(t, func(t *testing.T, db *testdb.DB, mode string) {
		ctx := context.Background()
		t0 := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
		// 60,000 rows: the first half terminal, the rest open; the head is 30001.
		_, err := db.Pool.Exec(ctx, `INSERT INTO proc_state (msg_id, raw, status, enqueued_at, finished_at)
				SELECT g, '<x/>', CASE WHEN g <= 30000 THEN 'SUCCEEDED' ELSE 'PENDING' END, $1,
				       CASE WHEN g <= 30000 THEN $1::timestamptz END
				  FROM generate_series(1, 60000) g`, t0)
		require.NoError(t, err)
		_, err = db.Pool.Exec(ctx, `ANALYZE proc_state`)
		require.NoError(t, err)
		require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
			for _, sql := range []string{
				`SET LOCAL plan_cache_mode = ` + mode,
				`PREPARE mark_started(bigint, timestamptz, bigint, int, bool) AS ` + markStartedSQL,
			} {
				if _, err := tx.Exec(ctx, sql); err != nil {
					return err
				}
			}
			var plan []byte
			err := tx.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE mark_started(30001, '2026-12-03 08:00:00Z', 30500, 0, true)`).Scan(&plan)
			if err != nil {
				return err
			}
			requireNoSeqScan(t, plan, "proc_state")
			var started bool
			if err := tx.QueryRow(ctx, `SELECT processing_started_at IS NOT NULL FROM proc_state WHERE msg_id = 30001`).Scan(&started); err != nil {
				return err
			}
			require.True(t, started, "no open row below the head: the mark is set")
			return nil
		}))
	})
}

// requireNoSeqScan fails when the EXPLAIN (FORMAT JSON) output plan reads relation sequentially,
// or not at all.
func requireNoSeqScan(t *testing.T, plan []byte, relation string) {
	t.Helper()
	var root []struct {
		Plan planNode `json:"Plan"`
	}
	require.NoError(t, json.Unmarshal(plan, &root))
	read := false
	var walk func(p planNode)
	walk = func(p planNode) {
		if p.Relation == relation {
			require.NotEqual(t, "Seq Scan", p.Type, "%s is read by index (plan %s)", relation, plan)
			read = true
		}
		for _, c := range p.Plans {
			walk(c)
		}
	}
	walk(root[0].Plan)
	require.True(t, read, "the plan reads %s (plan %s)", relation, plan)
}

// eachPlanMode runs test on a fresh database once with generic plans forced and once with
// custom plans: a statement's plan must not depend on which one PostgreSQL picks.
func eachPlanMode(t *testing.T, test func(t *testing.T, db *testdb.DB, mode string)) {
	for _, mode := range []string{"force_generic_plan", "force_custom_plan"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			test(t, testdb.New(t), mode)
		})
	}
}
