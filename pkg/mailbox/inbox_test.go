package mailbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/msgx/msgx/pkg/dev/mailboxtest"
	"github.com/msgx/msgx/pkg/mailbox"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func setup(t *testing.T) (*mailboxtest.DB, *mailbox.Mailbox) {
	t.Helper()
	db := mailboxtest.New(t)
	mb, err := mailbox.Open(db.DSN)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, mb.Close()) })
	return db, mb
}

func TestInsertAndReadAfter(t *testing.T) {
	t.Parallel()
	db, mb := setup(t)
	ctx := context.Background()
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	require.NoError(t, err)

	id1, err := mb.Insert(ctx, mailbox.NewMessage{
		Text:     "<MSG>\t中文\n</MSG>\n\n",
		Received: time.Date(2026, 12, 2, 16, 30, 5, 999, shanghai),
		Subsystem: mailbox.Subsystem{Name: "AODB", Type: "FLOP", Subtype: "ABTM", Sequence: 92643, HasSequence: true,
			DateSent: time.Date(2006, 12, 10, 9, 3, 11, 0, time.UTC)},
	})
	require.NoError(t, err)
	id2, err := mb.Insert(ctx, mailbox.NewMessage{Text: "<MSG/>"})
	require.NoError(t, err)
	require.Greater(t, id2, id1)

	got, err := mb.ReadAfter(ctx, 0, 10)
	require.NoError(t, err)
	require.Equal(t, []mailbox.Message{
		{ID: id1, Text: "<MSG>\t中文\n</MSG>\n\n", ReceivedAt: time.Date(2026, 12, 2, 16, 30, 5, 0, time.UTC)},
		{ID: id2, Text: "<MSG/>"},
	}, got)
	got, err = mb.ReadAfter(ctx, id1, 10)
	require.NoError(t, err)
	require.Len(t, got, 1)
	got, err = mb.ReadAfter(ctx, 0, 1)
	require.NoError(t, err)
	require.Len(t, got, 1)

	var (
		name, status  string
		seq           int64
		sent          time.Time
		subtype, typ  string
		nullName, nul *string
	)
	require.NoError(t, db.SQL.QueryRow(`SELECT CMINMSGS_SUBSYSTEM_NAME, CMINMSGS_SUBSYSTEM_SEQUENCE, CMINMSGS_SUBSYSTEM_DATE_SENT,
		CMINMSGS_SUBSYSTEM_SUBTYPE, CMINMSGS_SUBSYSTEM_TYPE, CMINMSGS_STATUS FROM cminmsgs WHERE CMINMSGS_ID = ?`, id1).
		Scan(&name, &seq, &sent, &subtype, &typ, &status))
	require.Equal(t, []any{"AODB", int64(92643), "ABTM", "FLOP", "VALID"}, []any{name, seq, subtype, typ, status})
	require.Equal(t, time.Date(2006, 12, 10, 9, 3, 11, 0, time.UTC), sent)
	require.NoError(t, db.SQL.QueryRow(`SELECT CMINMSGS_SUBSYSTEM_NAME, CMINMSGS_DATE_RECEIVED FROM cminmsgs WHERE CMINMSGS_ID = ?`, id2).Scan(&nullName, &nul))
	require.Nil(t, nullName)
	require.Nil(t, nul)
}

func TestProbe(t *testing.T) {
	t.Parallel()
	_, mb := setup(t)
	ctx := context.Background()
	for range 10 {
		_, err := mb.Insert(ctx, mailbox.NewMessage{Text: "<MSG/>"})
		require.NoError(t, err)
	}
	ids := func(ms []mailbox.Message) []int64 {
		var out []int64
		for _, m := range ms {
			out = append(out, m.ID)
		}
		return out
	}
	got, err := mb.Probe(ctx, []mailbox.IDRange{{From: 2, To: 3}, {From: 7, To: 7}, {From: 20, To: 30}}, 10)
	require.NoError(t, err)
	require.Equal(t, []int64{2, 3, 7}, ids(got))
	got, err = mb.Probe(ctx, []mailbox.IDRange{{From: 1, To: 10}}, 4)
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2, 3, 4}, ids(got))
	got, err = mb.Probe(ctx, nil, 4)
	require.NoError(t, err)
	require.Empty(t, got)
	_, err = mb.Probe(ctx, []mailbox.IDRange{{From: 5, To: 4}}, 4)
	require.ErrorIs(t, err, mailbox.ErrBadRange)
}
