package processor_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/sisbuild"
	"github.com/msgx/msgx/pkg/processor"
	"github.com/msgx/msgx/pkg/sis"
)

// flopAt is flop with its DTTM.
func flopAt(seqn int, dttm time.Time, flid int64, stand string) string {
	return sisbuild.Stand(int64(seqn), dttm, flid, stand)
}

// binding is msg_identity's owner of key.
func (b *bundle) binding(t *testing.T, key string) (id int64, dttm time.Time) {
	t.Helper()
	require.NoError(t, b.db.Pool.QueryRow(context.Background(),
		`SELECT msg_id, dttm FROM msg_identity WHERE identity_key = $1`, key).Scan(&id, &dttm))
	return id, dttm
}

// A key names the same message only within the identity window (PRE-7b): within
// it a copy is a duplicate and a different content is content-differs; outside it the key was
// reused (SEQN reset or wrap) and the message is a new one, counted, its key bound to it when it
// is the newer; an older message with a reused key is processed and leaves the binding alone.
func TestIdentityLifetime(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rec := &recorder{}
	b.procs[sis.KindFlightUpdate] = rec
	metrics := processor.NewMetrics(prometheus.NewRegistry())
	p := processor.New(b.cfg, b.db.Pool, b.procs, nil, b.clock, metrics, zerolog.Nop())
	reusedTotal := metrics.IdentityReused()
	const key = "AODB|FLOP|STND|7"
	day := 24 * time.Hour

	first := flopAt(7, t0, 15, "S1")
	b.enqueue(t, map[int64]*string{1: &first})
	b.drain(t, p)
	require.Equal(t, "SUCCEEDED", b.row(t, 1).Status)

	// One hour later: the identical text again, and the same key with other content.
	b.clock.Advance(time.Hour)
	other := flopAt(7, t0.Add(time.Hour), 15, "S2")
	b.enqueue(t, map[int64]*string{2: &first, 3: &other})
	b.drain(t, p)
	require.Equal(t, row{Status: "SKIPPED", Reason: "duplicate-of:1", Attempts: 1, Owed: true}, b.row(t, 2))
	r3 := b.row(t, 3)
	require.Equal(t, "SKIPPED", r3.Status)
	require.Equal(t, "duplicate-of:1 content-differs", r3.Reason)
	require.True(t, r3.Differs)
	require.Zero(t, testutil.ToFloat64(reusedTotal))

	// Eight days later the AODB reused SEQN 7 (a reset): a new message, processed and bound; its
	// resend in the same batch is its duplicate. A message of the first generation, arriving
	// late, is outside the window of the new binding: processed, the binding stays. In the same
	// batch a key never bound before is bound too (a key bound again and a new one are stored
	// by different statements).
	b.clock.Advance(8 * day)
	reused := flopAt(7, t0.Add(8*day), 15, "S3")
	older := flopAt(7, t0.Add(-day), 15, "S4")
	fresh := flopAt(8, t0.Add(8*day), 16, "S5")
	b.enqueue(t, map[int64]*string{4: &reused, 5: &reused, 6: &older, 7: &fresh})
	b.drain(t, p)
	freshID, _ := b.binding(t, "AODB|FLOP|STND|8")
	require.Equal(t, int64(7), freshID)
	r4 := b.row(t, 4)
	require.Equal(t, "SUCCEEDED", r4.Status, "%+v", r4)
	require.Equal(t, key, *r4.Identity)
	require.Equal(t, "duplicate-of:4", b.row(t, 5).Reason)
	r6 := b.row(t, 6)
	require.Equal(t, "SUCCEEDED", r6.Status, "%+v", r6)
	require.Equal(t, key, *r6.Identity)
	require.Equal(t, key, *b.row(t, 1).Identity, "the first generation keeps its key")
	id, dttm := b.binding(t, key)
	require.Equal(t, int64(4), id)
	require.True(t, dttm.Equal(t0.Add(8*day)), "%s", dttm)
	require.Equal(t, []int64{1, 4, 6, 7}, rec.order)
	require.Equal(t, 2.0, testutil.ToFloat64(reusedTotal), "messages 4 and 6 reused the key")

	// Its own binding: a retry of the bound message is no duplicate and no reuse (replay).
	_, err := b.db.Pool.Exec(context.Background(), `UPDATE proc_state SET status = 'PENDING', finished_at = NULL,
		backfill_next_at = NULL WHERE msg_id = 4`)
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(context.Background(), `DELETE FROM effect WHERE msg_id = 4`)
	require.NoError(t, err)
	b.drain(t, p)
	require.Equal(t, "SUCCEEDED", b.row(t, 4).Status)
	require.Equal(t, 2.0, testutil.ToFloat64(reusedTotal))
}
