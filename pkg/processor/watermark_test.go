package processor_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/sis"
)

// TestOnlyDiscoveredRowsAreProcessed (INV-4): a row above W — the compat entry's, inserted while
// an older mailbox row is still hidden behind a gap — is never processed, however long the
// processor drains; discovery enqueues the hidden row and moves W over it, then over the compat
// row, and the two are processed in msg_id order, the older first.
func TestOnlyDiscoveredRowsAreProcessed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rec := &recorder{}
	b.procs[sis.KindFlightUpdate] = rec
	b.enqueueSeq(t, 1, 5, func(id int64) string { return flop(int(id), 15, "S1") }) // W = 5
	// Row 6 is not visible yet (the gap); the compat entry enqueued row 7 above W.
	compat := flop(7, 15, "C7")
	ctx := context.Background()
	_, err := b.db.Pool.Exec(ctx, `INSERT INTO proc_state (msg_id, raw, raw_sha256, enqueued_at)
		VALUES (7, $1, sha256(convert_to($1::text, 'UTF8')), $2)`, compat, b.clock.Now())
	require.NoError(t, err)

	p := b.pump(t)
	b.drain(t, p)
	res, err := p.Step(ctx, b.lease)
	require.NoError(t, err)
	require.True(t, res.Idle, "a row above W is no work for the processor")
	require.Equal(t, []int64{1, 2, 3, 4, 5}, rec.order)
	require.Equal(t, "PENDING", b.row(t, 7).Status, "the row above W waits for W")

	// Discovery finds row 6 and moves W to it: row 6 is processed, row 7 still waits.
	six := flop(6, 15, "S6")
	b.enqueue(t, map[int64]*string{6: &six})
	b.drain(t, p)
	require.Equal(t, []int64{1, 2, 3, 4, 5, 6}, rec.order)
	require.Equal(t, "PENDING", b.row(t, 7).Status)

	// Discovery reaches row 7 (the compat entry wrote it to the mailbox too): W passes it, and it
	// is processed in its place.
	_, err = b.db.Pool.Exec(ctx, `UPDATE inbox_cursor SET watermark = 7`)
	require.NoError(t, err)
	b.drain(t, p)
	require.Equal(t, []int64{1, 2, 3, 4, 5, 6, 7}, rec.order, "the older mailbox row first, then the compat row")
	require.Equal(t, "SUCCEEDED", b.row(t, 7).Status)
}
