package outbox_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/outbox"
)

// eventIDs is every event of msg_event by its id, as "FLID vVERSION".
func eventIDs(t *testing.T, b bundle) map[int64]string {
	t.Helper()
	out := map[int64]string{}
	for _, e := range published(t, b, "true") {
		out[e.EventID] = e.FLID + " v" + strconv.FormatInt(e.StateVersion, 10)
	}
	return out
}

// A standby promoted without the old primary's last transactions resumes the event sequence
// below the ids the lost tail used, on a higher timeline: the ids it assigns must still be
// higher than every id of the lost tail (they were published), so no id names two records.
func TestEventIDsGrowAcrossALostTail(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, msgEvent(1, 1), msgEvent(2, 1)))
	replicated := seqValue(t, b) // what the standby's sequence holds: the first two events only
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, msgEvent(1, 2), msgEvent(3, 1), msgEvent(2, 2)))
	published := eventIDs(t, b) // the old primary's ids, on Kafka

	// The failover: the tail after `replicated` is lost, the promoted standby is on the next
	// timeline.
	var timeline int64
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint`).Scan(&timeline))
	_, err := b.db.Pool.Exec(ctx, fmt.Sprintf(`
		DELETE FROM msg_event WHERE (partition_key, state_version) IN (('1', 2), ('3', 1), ('2', 2));
		SELECT setval('msg_event_event_id_seq', %d);
		CREATE OR REPLACE FUNCTION msgx_timeline() RETURNS bigint LANGUAGE sql AS 'SELECT %d::bigint';`,
		replicated, timeline+1))
	require.NoError(t, err)

	// The new primary derives other records (its processor takes the messages in another order).
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, msgEvent(3, 1), msgEvent(4, 1), msgEvent(1, 2)))
	after := eventIDs(t, b)
	maxPublished := int64(0)
	for id := range published {
		maxPublished = max(maxPublished, id)
	}
	for id, rec := range after {
		if old, ok := published[id]; ok {
			require.Equal(t, old, rec, "event id %d names two records", id)
			continue
		}
		require.Greater(t, id, maxPublished, "event id %d (%s) of the new timeline is not above the lost tail's", id, rec)
	}
}
