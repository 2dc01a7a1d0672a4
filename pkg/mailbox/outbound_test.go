package mailbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/mailbox/outbound"
)

func TestOutbound(t *testing.T) {
	t.Parallel()
	db, mb := setup(t)
	ctx := context.Background()
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	require.NoError(t, err)
	at := time.Date(2026, 12, 2, 8, 30, 5, 0, shanghai)

	_, ok, err := mb.FindOutbound(ctx, "AODB", "<MSG>1</MSG>", at.Add(-time.Hour))
	require.NoError(t, err)
	require.False(t, ok)

	id, err := mb.InsertOutbound(ctx, outbound.Message{Text: "<MSG>1</MSG>", RoutingID: "AODB", Inserted: at})
	require.NoError(t, err)
	var routing, inserted string
	var flags int
	var sent any
	require.NoError(t, db.SQL.QueryRowContext(ctx, `SELECT ROUTINGID, DATE_FORMAT(COUTMSGS_DATE_INSERTED, '%Y-%m-%d %H:%i:%s'),
		COUTMSGS_TRUEFALS_GROUP + COUTMSGS_FINAL_GROUP_IND + COUTMSGS_ACK_REQD + COUTMSGS_ACK_RESEND_TIMES + COUTMSGS_ENCRYPT + COUTMSGS_ERROR,
		COUTMSGS_DATE_SENT FROM coutmsgs WHERE COUTMSGS_ID = ?`, id).Scan(&routing, &inserted, &flags, &sent))
	require.Equal(t, "AODB", routing)
	require.Equal(t, "2026-12-02 08:30:05", inserted, "DATE_INSERTED is the airport wall clock")
	require.Zero(t, flags, "the six flag columns are 0")
	require.Nil(t, sent, "DATE_SENT is the transport's")

	got, ok, err := mb.FindOutbound(ctx, "AODB", "<MSG>1</MSG>", at.Add(-time.Hour))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, id, got.ID)
	require.Equal(t, time.Date(2026, 12, 2, 8, 30, 5, 0, time.UTC), got.Inserted, "DATE_INSERTED as written (wall clock, UTC fields)")
	_, ok, err = mb.FindOutbound(ctx, "OTHER", "<MSG>1</MSG>", at.Add(-time.Hour))
	require.NoError(t, err)
	require.False(t, ok, "another ROUTINGID is another message")
	_, ok, err = mb.FindOutbound(ctx, "AODB", "<MSG>1</MSG>", at.Add(time.Second))
	require.NoError(t, err)
	require.False(t, ok, "rows inserted before the bound are not looked at")

	sentMap, err := mb.OutboundSent(ctx, []int64{id, id + 100})
	require.NoError(t, err)
	require.Empty(t, sentMap)
	_, err = db.SQL.ExecContext(ctx, `UPDATE coutmsgs SET COUTMSGS_DATE_SENT = '2026-12-02 08:31:00' WHERE COUTMSGS_ID = ?`, id)
	require.NoError(t, err)
	sentMap, err = mb.OutboundSent(ctx, []int64{id, id + 100})
	require.NoError(t, err)
	require.Equal(t, map[int64]time.Time{id: time.Date(2026, 12, 2, 8, 31, 0, 0, time.UTC)}, sentMap)
}
