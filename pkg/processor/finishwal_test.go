package processor

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/testdb"
)

// The trigger proc_state_leave_debts costs the processor's terminal write nothing: a BEFORE row
// trigger would make PostgreSQL lock every row before testing its WHEN (a WAL record a message
// row, the cost INV-8d removed from the immediate marker); an AFTER trigger whose WHEN is false
// adds no record.
func TestTerminalWriteTakesNoRowLockForTheDebtTrigger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	const n = 1000
	_, err := db.Pool.Exec(ctx, `INSERT INTO proc_state (msg_id, raw, status, enqueued_at)
		SELECT g, 'x', 'PENDING', now() FROM generate_series(1, $1::bigint * 2) g`, n)
	require.NoError(t, err)
	_, err = db.Pool.Exec(ctx, `VACUUM ANALYZE proc_state`)
	require.NoError(t, err)

	finish := func(from int64) (records, bytes float64) {
		ids := make([]int64, n)
		st, empty, f := make([]string, n), make([]string, n), make([]bool, n)
		for i := range ids {
			ids[i], st[i] = from+int64(i), "SUCCEEDED"
		}
		var plan []byte
		require.NoError(t, db.Pool.QueryRow(ctx, `EXPLAIN (ANALYZE, WAL, FORMAT JSON) `+finishSQL,
			ids, st, empty, empty, empty, f, empty, empty, time.Now(), int64(1), empty).Scan(&plan))
		var out []struct {
			Plan map[string]any `json:"Plan"`
		}
		require.NoError(t, json.Unmarshal(plan, &out))
		return out[0].Plan["WAL Records"].(float64), out[0].Plan["WAL Bytes"].(float64)
	}
	withRecords, withBytes := finish(1)
	_, err = db.Pool.Exec(ctx, `DROP TRIGGER proc_state_leave_debts ON proc_state`)
	require.NoError(t, err)
	withoutRecords, withoutBytes := finish(n + 1)
	require.Less(t, withRecords-withoutRecords, float64(n)/10,
		"the trigger whose WHEN is false adds %v WAL records (%v bytes) to a %d-row terminal write",
		withRecords-withoutRecords, withBytes-withoutBytes, n)
}
