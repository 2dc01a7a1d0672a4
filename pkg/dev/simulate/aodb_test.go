package simulate

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/mailboxtest"
	"github.com/msgx/msgx/pkg/sis"
)

func TestSimulatedAODBAnswers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := DefaultConfig()
	cfg.Seed, cfg.Flights, cfg.Additions = 5, 20, 1
	day := Generate(cfg)
	model := day.AODBModel()
	loc := day.Config.Location
	require.Len(t, model.Schedule, 21, "the snapshot's flights and the addition")
	require.Contains(t, model.Lists, "SLST")

	mb := mailboxtest.New(t)
	now := day.Config.Date.Add(8 * time.Hour)
	aodb := NewAODB(mb.SQL, model, AODBConfig{Now: func() time.Time { return now }})
	h := sis.RequestHeader{SNDR: "MSGX", SEQN: 1, DTTM: now, RoutingID: "AODB"}
	d := day.Config.Date
	rqfd, err := sis.EncodeRQFD(h, d, d.Add(24*time.Hour-time.Minute))
	require.NoError(t, err)
	rqrd, err := sis.EncodeRQRD(h, "SLST")
	require.NoError(t, err)
	insertOut := func(text []byte) {
		_, err := mb.SQL.ExecContext(ctx, `INSERT INTO coutmsgs (COUTMSGS_CLOB_MSG, COUTMSGS_DATE_INSERTED, ROUTINGID) VALUES (?, ?, 'AODB')`,
			string(text), now.Format(wallLayout))
		require.NoError(t, err)
	}
	insertOut(rqfd.Text)
	insertOut(rqrd.Text)

	answers, err := aodb.Poll(ctx)
	require.NoError(t, err)
	require.Len(t, answers, 2)
	var unsent int
	require.NoError(t, mb.SQL.QueryRowContext(ctx, `SELECT count(*) FROM coutmsgs WHERE COUTMSGS_DATE_SENT IS NULL`).Scan(&unsent))
	require.Zero(t, unsent, "the transport marks every request sent")

	got := readMailbox(t, mb)
	require.Len(t, got, 2)
	for _, r := range got {
		m, err := sis.Decode([]byte(r.raw), sis.Options{Location: loc})
		require.NoError(t, err)
		require.Equal(t, "RESP", m.Meta.STYP)
		require.True(t, m.Meta.DTTM.Equal(now), "the answer's DTTM is when it was written")
		switch m.Meta.TYPE {
		case "SCHD":
			require.Len(t, m.Schedule.Records, len(model.Expected(d, d).Flights), "the requested day's schedule")
			require.Positive(t, len(m.Schedule.Records))
		case "SLST":
			require.Len(t, m.RefList.Records, len(model.RefKeys["SLST"]))
		default:
			t.Fatalf("unexpected answer %s", m.Meta.TYPE)
		}
	}

	// Never: picked up, not answered. Twice: two answers with distinct SEQN.
	aodb.SetAnswer(AnswerNever)
	insertOut(rqrd.Text)
	answers, err = aodb.Poll(ctx)
	require.NoError(t, err)
	require.Empty(t, answers)
	require.Equal(t, 3, aodb.Stats().Requests)
	aodb.SetAnswer(AnswerTwice)
	insertOut(rqrd.Text)
	answers, err = aodb.Poll(ctx)
	require.NoError(t, err)
	require.Len(t, answers, 2)
	require.NotEqual(t, answers[0].SEQN, answers[1].SEQN)

	// Late: held until its time comes on the injected clock.
	aodb.SetAnswer(AnswerLate)
	insertOut(rqrd.Text)
	answers, err = aodb.Poll(ctx)
	require.NoError(t, err)
	require.Empty(t, answers)
	require.Equal(t, 1, aodb.Stats().Held)
	now = now.Add(time.Hour)
	answers, err = aodb.Poll(ctx)
	require.NoError(t, err)
	require.Len(t, answers, 1)
	require.Equal(t, 5, aodb.Stats().Answers, "2 + none + 2 + 1 late")
}
