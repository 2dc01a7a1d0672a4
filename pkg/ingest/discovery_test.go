package ingest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDiscoveryIgnoresTheMarker (INV-5): discovery reads id > W and never looks at the processed
// marker. While a transaction holds a mailbox row locked and writes its marker (as the marker
// writers do, the backfill sweep with SELECT … FOR UPDATE), discovery still finds the rows after
// it and moves W over them, and a rescan from W = 0 reads the locked row itself; a row whose
// marker is already set is discovered like any other.
func TestDiscoveryIgnoresTheMarker(t *testing.T) {
	t.Parallel()
	b := setup(t, testConfig)
	var ids []int64
	for range 3 {
		ids = append(ids, b.insert(t, "<MSG/>"))
	}
	b.drain(t, b.ing)
	requireCursor(t, cursor{W: ids[2]}, b.cursor(t))

	ctx := context.Background()
	tx, err := b.mb.SQL.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	_, err = tx.ExecContext(ctx, `SELECT CMINMSGS_ID FROM cminmsgs WHERE CMINMSGS_ID = ? FOR UPDATE`, ids[1])
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, `UPDATE cminmsgs SET CMINMSGS_DATE_PROCESSED = ? WHERE CMINMSGS_ID = ?`, "2026-12-02 09:00:02", ids[1])
	require.NoError(t, err)

	for range 3 {
		ids = append(ids, b.insert(t, "<MSG/>"))
	}
	_, err = b.mb.SQL.ExecContext(ctx, `UPDATE cminmsgs SET CMINMSGS_DATE_PROCESSED = ? WHERE CMINMSGS_ID = ?`, "2026-12-02 09:00:03", ids[4])
	require.NoError(t, err)

	// Blocked on the row lock, a step would wait for MySQL's lock timeout: the guard ends it first.
	guard, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	progressed, err := b.ing.Step(guard)
	require.NoError(t, err, "discovery waited for the locked row")
	require.True(t, progressed)
	requireCursor(t, cursor{W: ids[5]}, b.cursor(t))
	require.Equal(t, ids, b.ids(t), "the marked row and the rows after the locked one are enqueued")

	// A rescan from W = 0 reads the locked row itself without waiting.
	_, err = b.pg.Pool.Exec(ctx, `UPDATE inbox_cursor SET watermark = 0`)
	require.NoError(t, err)
	rescan := b.newIngester(t)
	for progressed := true; progressed; {
		progressed, err = rescan.Step(guard)
		require.NoError(t, err, "the rescan waited for the locked row")
	}
	requireCursor(t, cursor{W: ids[5]}, b.cursor(t))
	require.NoError(t, tx.Rollback())
}
