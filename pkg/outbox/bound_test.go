package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/testdb"
)

// TestStateClaimBoundedByFlushLimit: with 20,000 flights in msg_state_out, 18,000 of them sent
// (their index entries not vacuumed away), a flush's claim reads at most the flush limit of
// rows by index: EXPLAIN ANALYZE shows no sequential scan of msg_state_out, and the rows its
// nodes produce stay within the limit.
func TestStateClaimBoundedByFlushLimit(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	t0 := time.Date(2026, 12, 15, 8, 0, 0, 0, time.UTC)
	seedStates(t, db, t0, `partition_key::int % 10 <> 0`)

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
		if p.Relation == "msg_state_out" {
			require.NotEqual(t, "Seq Scan", p.Type, "msg_state_out is read by index only")
			rows += p.Rows * p.Loops
		}
		for _, c := range p.Plans {
			walk(c)
		}
	}
	walk(root[0].Plan)
	require.Positive(t, rows)
	require.LessOrEqual(t, rows, float64(limit), "msg_state_out rows read by the claim (plan %s)", plan)

	// And the claim itself visits exactly the limit, then carries on after it.
	s := &Store{pool: db.Pool}
	got, err := s.ClaimStates(ctx, t0, limit, "")
	require.NoError(t, err)
	require.Equal(t, limit, got.Visited)
	require.Len(t, got.Due, limit)
	require.Equal(t, "100000", got.Due[0].FLID)
	require.Equal(t, "104990", got.Next)
	next, err := s.ClaimStates(ctx, t0, limit, got.Next)
	require.NoError(t, err)
	require.Equal(t, "105000", next.Due[0].FLID)
}

// seedStates fills msg_state_out with the states of FLIDs 100000 to 119999 (version 7) and marks
// those matching sent SENT, with autovacuum off so the updates' dead entries stay.
func seedStates(t *testing.T, db *testdb.DB, t0 time.Time, sent string) {
	t.Helper()
	for _, sql := range []string{
		`ALTER TABLE msg_state_out SET (autovacuum_enabled = off)`,
		`INSERT INTO msg_state_out (partition_key, event_id, event_type, state_version, body, created_at, pending_since)
		 SELECT (100000 + f)::text, f + 1, 'UPSERT', 7, '{}', $1, $1 FROM generate_series(0, 19999) f`,
		`UPDATE msg_state_out SET status = 'SENT', sent_at = $1 WHERE ` + sent,
		`ANALYZE msg_state_out`,
	} {
		var args []any
		if strings.Contains(sql, "$1") {
			args = []any{t0}
		}
		_, err := db.Pool.Exec(context.Background(), sql, args...)
		require.NoError(t, err, sql)
	}
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

// eachNode calls f on every node of the plan under root, root first.
func eachNode(root planNode, f func(planNode)) {
	f(root)
	for _, c := range root.Plans {
		eachNode(c, f)
	}
}

// inPlanModes runs test once in each plan mode (plan_cache_mode), as parallel subtests, each on a
// database of its own.
func inPlanModes(t *testing.T, test func(t *testing.T, mode string, db *testdb.DB)) {
	for _, mode := range []string{"force_generic_plan", "force_custom_plan"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			test(t, mode, testdb.New(t))
		})
	}
}

// pagesReadByKey returns the pages a plan's reads of relation took (its changes aside), failing
// the test where one scans the whole table; plan is shown on failure.
func pagesReadByKey(t *testing.T, root planNode, relation, plan string) float64 {
	t.Helper()
	var read float64
	var walk func(p planNode)
	walk = func(p planNode) {
		if p.Relation == relation && p.Type != "ModifyTable" {
			require.NotEqual(t, "Seq Scan", p.Type, "%s is read by key (plan %s)", relation, plan)
			read += p.Hit + p.Read // the node's pages include its children's
			return
		}
		for _, c := range p.Plans {
			walk(c)
		}
	}
	walk(root)
	return read
}

// explainPrepared prepares sql as name(types) in tx under plan_cache_mode mode, runs it once
// with warm (a generic plan is made there), then returns the plan of EXPLAIN (ANALYZE, BUFFERS)
// of its run with run, and that plan as JSON text for failure messages. EXECUTE takes literals
// only: warm and run are parenthesized argument lists.
func explainPrepared(ctx context.Context, tx pgx.Tx, mode, nameTypes, sql, warm, run string) (planNode, string, error) {
	name, _, _ := strings.Cut(nameTypes, "(")
	for _, stmt := range []string{
		`SET LOCAL plan_cache_mode = ` + mode,
		`PREPARE ` + nameTypes + ` AS ` + sql,
		`EXECUTE ` + name + warm,
	} {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return planNode{}, "", err
		}
	}
	var plan []byte
	if err := tx.QueryRow(ctx, `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE `+name+run).Scan(&plan); err != nil {
		return planNode{}, "", err
	}
	var root []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal(plan, &root); err != nil || len(root) != 1 {
		return planNode{}, string(plan), fmt.Errorf("read the plan: %v (%d roots)", err, len(root))
	}
	return root[0].Plan, string(plan), nil
}

// TestMarkStatesSentReadsItsKeys: settling the states a flush sent reads the rows of their
// keys by index, in either plan mode, however many flights msg_state_out holds: with 20,000
// rows (their updates not vacuumed), settling 10 reads a few pages per key.
func TestMarkStatesSentReadsItsKeys(t *testing.T) {
	t.Parallel()
	inPlanModes(t, func(t *testing.T, mode string, db *testdb.DB) {
		ctx := context.Background()
		t0 := time.Date(2026, 12, 15, 8, 0, 0, 0, time.UTC)
		seedStates(t, db, t0, `partition_key::int >= 100010`)
		s := &Store{pool: db.Pool}
		claims, err := s.ClaimStates(ctx, t0, 500, "")
		require.NoError(t, err)
		require.Len(t, claims.Due, 10)

		// The claims as literals (EXECUTE takes no bound parameters).
		keys, versions := make([]string, len(claims.Due)), make([]string, len(claims.Due))
		for i, c := range claims.Due {
			keys[i], versions[i] = c.FLID, strconv.FormatInt(c.StateVersion, 10)
		}
		args := "'{" + strings.Join(keys, ",") + "}', '{" + strings.Join(versions, ",") + "}', '2026-12-15 08:00:00Z'"
		var read float64
		var shown string
		require.EqualError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
			root, plan, err := explainPrepared(ctx, tx, mode, `mark_states_sent(text[], bigint[], timestamptz)`, markStatesSentSQL,
				`('{1}', '{1}', '2026-12-15 08:00:00Z')`, `(`+args+`)`)
			if err != nil {
				return err
			}
			shown = plan
			read = pagesReadByKey(t, root, "msg_state_out", plan)
			var unsent int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM msg_state_out WHERE status <> 'SENT'`).Scan(&unsent); err != nil {
				return err
			}
			require.Zero(t, unsent, "every state sent is settled")
			return errors.New("rolled back")
		}), "rolled back")
		// Two index descents per key (the lock, the update): six pages each; a scan of the
		// table would read thousands.
		require.LessOrEqual(t, read, float64(10*10), "msg_state_out pages read to settle 10 states (plan %s)", shown)
	})
}

// TestAllEventsIsOutboxEvents: the tests' relation of every event is the readers' one.
func TestAllEventsIsOutboxEvents(t *testing.T) {
	t.Parallel()
	require.Equal(t, Events, testdb.AllEvents)
}

// TestBacklogCountsLegacyStates: a state a previous release's processor wrote to msg_event
// during a roll is pending until the fold takes it, in the gauges and in msgxctl status.
func TestBacklogCountsLegacyStates(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	at := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	_, err := db.Pool.Exec(ctx, `INSERT INTO msg_event (target, partition_key, event_type, state_version, body, created_at)
		VALUES ('KAFKA:schd', '15', 'UPSERT', 3, '{}', $1), ('KAFKA:msg', '15', 'UPSERT', 3, '{}', $1)`, at)
	require.NoError(t, err)
	got, err := Backlog(ctx, db.Pool)
	require.NoError(t, err)
	require.Equal(t, []TargetStats{{Target: "KAFKA:msg", Pending: 1, OldestPending: at}, {Target: "KAFKA:schd", Pending: 1, OldestPending: at}}, utc(got))
}

func utc(ts []TargetStats) []TargetStats {
	for i := range ts {
		ts[i].OldestPending = ts[i].OldestPending.UTC()
	}
	return ts
}

// TestClaimReadsClaimedRowsByTuple: the change claim reads each claimed row back by the tuple
// its window saw, in either plan mode: msg_event is visited once for the window's rows and once
// per claimed row by TID, never again through an index descent per row.
func TestClaimReadsClaimedRowsByTuple(t *testing.T) {
	t.Parallel()
	inPlanModes(t, func(t *testing.T, mode string, db *testdb.DB) {
		ctx := context.Background()
		_, err := db.Pool.Exec(ctx, `
INSERT INTO msg_event (event_id, target, partition_key, event_type, state_version, msg_id, body, created_at, status, sent_at)
SELECT g, 'KAFKA:msg', (g % 50)::text, 'UPSERT', g, g, '{}', '2026-12-15 08:00:00Z',
       CASE WHEN g <= 5000 THEN 'SENT' ELSE 'PENDING' END, CASE WHEN g <= 5000 THEN timestamptz '2026-12-15 08:00:00Z' END
  FROM generate_series(1, 6000) g;
ANALYZE msg_event`)
		require.NoError(t, err)
		var shown string
		var tid, byKey float64
		require.EqualError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
			root, plan, err := explainPrepared(ctx, tx, mode, `claim(timestamptz, int, int, bigint)`, claimWindowSQL,
				`('2026-12-15 08:00:00Z', 1, 4, 0)`, `('2026-12-15 08:00:00Z', 500, 2000, 5001)`)
			if err != nil {
				return err
			}
			shown = plan
			eachNode(root, func(p planNode) {
				if p.Relation == "msg_event" {
					switch p.Type {
					case "Tid Scan":
						tid += p.Rows * p.Loops
					case "Index Scan", "Index Only Scan", "Bitmap Heap Scan":
						if p.Loops > 1 {
							byKey += p.Rows * p.Loops
						}
					}
				}
			})
			return errors.New("rolled back")
		}), "rolled back")
		require.Equal(t, float64(500), tid, "the 500 claimed rows read back by tuple (plan %s)", shown)
		require.Zero(t, byKey, "no row read again through an index (plan %s)", shown)
	})
}

// TestFoldReadsItsBatchByKey: the state fold finds the batch it moves by the primary key, in
// either plan mode, however long msg_state_log is: with 50,000 states logged, folding 500 reads
// a few pages per state, never the whole log (about 5,000 pages of 800-byte states).
func TestFoldReadsItsBatchByKey(t *testing.T) {
	t.Parallel()
	inPlanModes(t, func(t *testing.T, mode string, db *testdb.DB) {
		ctx := context.Background()
		var from int64
		require.NoError(t, db.Pool.QueryRow(ctx, `
WITH ins AS (
    INSERT INTO msg_state_log (partition_key, event_type, state_version, msg_id, body, created_at)
    SELECT (g % 1200)::text, 'UPSERT', g, g, repeat('x', 800), '2026-12-15 08:00:00Z' FROM generate_series(1, 50000) g
    RETURNING event_id)
SELECT min(event_id) FROM ins`).Scan(&from))
		_, err := db.Pool.Exec(ctx, `ANALYZE msg_state_log`)
		require.NoError(t, err)
		var read float64
		var shown string
		require.EqualError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
			root, plan, err := explainPrepared(ctx, tx, mode, `fold(bigint, int)`, foldStatesSQL,
				`(0, 1)`, fmt.Sprintf(`(%d, 500)`, from+1))
			if err != nil {
				return err
			}
			shown = plan
			read = pagesReadByKey(t, root, "msg_state_log", plan)
			var left int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM msg_state_log`).Scan(&left); err != nil {
				return err
			}
			require.Equal(t, 50000-1-500, left, "the warm-up's state and the 500 folded")
			return errors.New("rolled back")
		}), "rolled back")
		// The batch's index entries and heap pages, then its rows by key (the delete, the
		// chosen bodies): a few pages a state (1,677 seen in either mode); the statement
		// before read 7,115 in the generic plan, 3,059 in the custom one.
		require.LessOrEqual(t, read, float64(500*8), "msg_state_log pages read to fold 500 states (plan %s)", shown)
	})
}

// TestQueuedClaimReadsEachRowOnce: the claim of QUEUED events reads its window's rows once,
// bodies included (not again by tuple), and only as much of the held set as its window needs, in
// either plan mode. Above the delivery cursor 2,000 queued events of 50 FLIDs; below it 100,000
// PENDING events of 1,000 held FLIDs, FLID 1 among them: the claim returns FLID 1's queued events
// not due and the others due, and msg_event gives it at most two rows per window row (the row,
// and a held event of its FLID), never the held set whole.
func TestQueuedClaimReadsEachRowOnce(t *testing.T) {
	t.Parallel()
	inPlanModes(t, func(t *testing.T, mode string, db *testdb.DB) {
		ctx := context.Background()
		_, err := db.Pool.Exec(ctx, `
ALTER TABLE msg_event SET (autovacuum_enabled = off);
INSERT INTO msg_event (event_id, target, partition_key, event_type, state_version, msg_id, body, created_at, status, attempts)
SELECT g, 'KAFKA:msg', CASE WHEN g % 1000 = 0 THEN '1' ELSE 'held' || g % 1000 END, 'UPSERT', g, g, '{}', '2026-12-15 08:00:00Z', 'PENDING', 1
  FROM generate_series(1, 100000) g;
INSERT INTO msg_event_delivered (through, sent_at) VALUES (100000, '2026-12-15 08:00:00Z');
INSERT INTO msg_event (event_id, target, partition_key, event_type, state_version, msg_id, body, created_at)
SELECT g, 'KAFKA:msg', (g % 50)::text, 'UPSERT', g, g, '{}', '2026-12-15 08:00:00Z'
  FROM generate_series(100001, 102000) g;
ANALYZE msg_event`)
		require.NoError(t, err)
		var shown string
		var tid []string
		var read float64
		var due, held int
		require.EqualError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
			root, plan, err := explainPrepared(ctx, tx, mode, `claim_queued(int)`, claimQueuedSQL, `(1)`, `(2000)`)
			if err != nil {
				return err
			}
			shown = plan
			eachNode(root, func(p planNode) {
				if p.Relation == "msg_event" {
					read += p.Rows * p.Loops
					if p.Type == "Tid Scan" {
						tid = append(tid, fmt.Sprintf("%s × %.0f", p.Type, p.Loops))
					}
				}
			})
			rows, err := tx.Query(ctx, claimQueuedSQL, 2000)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				v, err := rows.Values()
				if err != nil {
					return err
				}
				if v[1].(bool) {
					due++
				} else {
					held++
				}
			}
			if rows.Err() != nil {
				return rows.Err()
			}
			return errors.New("rolled back")
		}), "rolled back")
		require.Empty(t, tid, "no row read again by its tuple (plan %s)", shown)
		require.LessOrEqual(t, read, float64(2*2000), "msg_event rows read for a window of 2,000 (plan %s)", shown)
		require.Equal(t, 40, held, "FLID 1's queued events (100,001, 100,051, …)")
		require.Equal(t, 2000-40, due)
	})
}
