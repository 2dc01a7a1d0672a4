package simulate

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/mailboxtest"
)

type mailboxRow struct {
	raw, sndr, styp, typ, status string
	seqn                         int64
	received, sent               time.Time
}

func readMailbox(t *testing.T, mb *mailboxtest.DB) map[int64]mailboxRow {
	t.Helper()
	rows, err := mb.SQL.QueryContext(context.Background(), `SELECT CMINMSGS_ID, CMINMSGS_CLOB_MSG, CMINMSGS_SUBSYSTEM_NAME,
  CMINMSGS_SUBSYSTEM_SEQUENCE, CMINMSGS_SUBSYSTEM_SUBTYPE, CMINMSGS_SUBSYSTEM_TYPE, CMINMSGS_STATUS,
  CMINMSGS_DATE_RECEIVED, CMINMSGS_SUBSYSTEM_DATE_SENT FROM cminmsgs`)
	require.NoError(t, err)
	defer rows.Close()
	out := map[int64]mailboxRow{}
	for rows.Next() {
		var id int64
		var r mailboxRow
		require.NoError(t, rows.Scan(&id, &r.raw, &r.sndr, &r.seqn, &r.styp, &r.typ, &r.status, &r.received, &r.sent))
		out[id] = r
	}
	require.NoError(t, rows.Err())
	return out
}

func TestWriterOutOfOrderCommitsAndGaps(t *testing.T) {
	t.Parallel()
	for _, batch := range []int{1, 3} {
		t.Run("batch"+string(rune('0'+batch)), func(t *testing.T) {
			t.Parallel()
			mb := mailboxtest.New(t)
			d := Generate(Config{Seed: 21, Flights: 30, Additions: 2, BadShare: 0.1})
			w, err := NewWriter(mb.SQL, WriterConfig{Conns: 4, Batch: batch, HoldShare: 0.2, HoldFor: 4, RollbackShare: 0.05, Seed: 9})
			require.NoError(t, err)
			res, err := w.Write(context.Background(), d.Messages)
			require.NoError(t, err)
			require.NotEmpty(t, res.Gaps, "some inserts roll back")
			require.Positive(t, res.OutOfOrder, "some commits overtake a held lower id")

			rows := readMailbox(t, mb)
			require.Len(t, rows, len(d.Messages), "every message lands exactly once")
			for i, m := range d.Messages {
				id := res.IDs[i]
				if i > 0 {
					require.Greater(t, id, res.IDs[i-1], "ids follow send order")
				}
				r, ok := rows[id]
				require.True(t, ok, "message %d (id %d)", i, id)
				require.Equal(t, string(m.Raw), r.raw)
				require.Equal(t, m.SNDR, r.sndr)
				require.Equal(t, m.SEQN, r.seqn)
				require.Equal(t, m.Type, r.typ)
				require.Equal(t, m.Subtype, r.styp)
				require.Equal(t, "VALID", r.status)
				require.Equal(t, m.At.Format(wallLayout), r.received.Format(wallLayout))
				require.Equal(t, m.At.Format(wallLayout), r.sent.Format(wallLayout))
			}
			for _, gap := range res.Gaps {
				_, ok := rows[gap]
				require.False(t, ok, "rolled-back id %d is a gap", gap)
			}
		})
	}
}

// TestWriterLateRows: a message named in Late commits LateFor after its insert, after the later
// messages written meanwhile (the next 20; its id is lower: ingest sees a gap that fills only
// after the commit delay), and held transactions do not wait for it.
func TestWriterLateRows(t *testing.T) {
	t.Parallel()
	mb := mailboxtest.New(t)
	d := Generate(Config{Seed: 21, Flights: 10, Additions: 1})
	late := []int{5, len(d.Messages) / 2}
	var mu sync.Mutex
	commits := map[int64]time.Time{}
	w, err := NewWriter(mb.SQL, WriterConfig{Conns: 4, HoldShare: 0.2, HoldFor: 3, Seed: 3, Late: late, LateFor: 2 * time.Second,
		Committed: func(first int64, n int, at time.Time) {
			mu.Lock()
			defer mu.Unlock()
			for k := range int64(n) {
				commits[first+k] = at
			}
		}})
	require.NoError(t, err)
	res, err := w.Write(context.Background(), d.Messages)
	require.NoError(t, err)
	require.Equal(t, late, res.Late)
	require.Len(t, readMailbox(t, mb), len(d.Messages))
	for _, i := range late {
		at := commits[res.IDs[i]]
		for j := i + 1; j < min(i+20, len(d.Messages)) && !slices.Contains(late, j); j++ {
			require.True(t, commits[res.IDs[j]].Before(at), "message %d commits before the late message %d", j, i)
		}
	}
	_, err = NewWriter(mb.SQL, WriterConfig{Late: late})
	require.Error(t, err, "late rows need LateFor")
}

func TestWriterConfigValidate(t *testing.T) {
	t.Parallel()
	require.Error(t, WriterConfig{Pace: PaceSteady}.Validate())
	require.Error(t, WriterConfig{Pace: PaceTimeline}.Validate())
	require.Error(t, WriterConfig{Pace: "slow"}.Validate())
	require.NoError(t, WriterConfig{Pace: PaceSteady, Rate: 200}.Validate())
	require.Error(t, Config{BadShare: 0.9}.Validate())
	require.NoError(t, DefaultConfig().Validate())
}
