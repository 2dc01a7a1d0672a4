package request_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/request"
	"github.com/msgx/msgx/pkg/sis"
)

func TestGuardChecksAndCloses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	g := request.NewGuard(b.store, b.metrics, zerolog.Nop())
	try := func(resp request.Response, msgID int64) (request.Verdict, error) {
		var v request.Verdict
		err := pgx.BeginFunc(ctx, b.pg.Pool, func(tx pgx.Tx) error {
			var err error
			if v, err = g.Check(ctx, tx, resp, b.clock.Now()); err != nil || !v.Matched {
				return err
			}
			return g.Close(ctx, tx, v, msgID, b.clock.Now())
		})
		return v, err
	}
	check := func(resp request.Response, msgID int64) request.Verdict {
		v, err := try(resp, msgID)
		require.NoError(t, err)
		return v
	}
	slst := request.Response{Kind: request.List, ListCode: "SLST", DTTM: b.clock.Now()}
	require.Equal(t, "no-open-request", check(slst, 1).Skip, "unsolicited")

	reg, err := b.store.Register(ctx, request.Spec{Kind: request.List, ListCode: "SLST", Origin: request.Operator}, b.clock.Now())
	require.NoError(t, err)
	_, err = try(slst, 2)
	require.ErrorIs(t, err, request.ErrAwaitingSend, "registered, its send not confirmed: the answer waits")
	b.clock.Advance(time.Minute)
	_, err = b.sender.Send(ctx, reg.Request.ID)
	require.NoError(t, err)
	require.Equal(t, "no-open-request:before-sent", check(slst, 3).Skip, "DTTM before the request's sent time")

	slst.DTTM = b.clock.Now()
	v := check(slst, 4)
	require.True(t, v.Matched)
	got, err := b.store.Get(ctx, reg.Request.ID)
	require.NoError(t, err)
	require.Equal(t, request.Done, got.Status)
	require.Equal(t, int64(4), got.ResponseID)
	require.Equal(t, "no-open-request", check(slst, 5).Skip, "a second answer finds the request closed")
	require.Equal(t, 1.0, testutil.ToFloat64(b.metrics.Responses.WithLabelValues("RQRD", "matched")))
	require.Equal(t, 3.0, testutil.ToFloat64(b.metrics.Responses.WithLabelValues("RQRD", request.SkipNoOpenRequest)))
	require.Equal(t, 1.0, testutil.ToFloat64(b.metrics.Responses.WithLabelValues("RQRD", string(request.AwaitingSend))))
}

func TestResponsesFromMessages(t *testing.T) {
	t.Parallel()
	raw := []byte(`<?xml version="1.0" encoding="UTF-8"?><MSG><META><SNDR>AODB</SNDR><SEQN>1</SEQN><DTTM>20261202080000</DTTM><TYPE>SCHD</TYPE><STYP>RESP</STYP></META>
<SCHD><RECS>2</RECS>
<FLTR><FLID>1</FLID><ALCD>CA</ALCD><FLNO>CA1</FLNO><MVIN>A</MVIN><SODT>02DEC262330</SODT><FLTY>W</FLTY><FLIN>D</FLIN><ACFT>320</ACFT></FLTR>
<FLTR><FLID>2</FLID><ALCD>CA</ALCD><FLNO>CA2</FLNO><MVIN>D</MVIN><SODT>03DEC260010</SODT><FLTY>W</FLTY><FLIN>D</FLIN><ACFT>320</ACFT></FLTR>
</SCHD></MSG>`)
	m, err := sis.Decode(raw, sis.Options{Location: shanghai})
	require.NoError(t, err)
	resp := request.ScheduleResponse(m, shanghai)
	require.Equal(t, request.Schedule, resp.Kind)
	require.Equal(t, []time.Time{time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)}, resp.Days)
	require.True(t, resp.DTTM.Equal(time.Date(2026, 12, 2, 8, 0, 0, 0, shanghai)))

	d, ok := request.OperationDayFromFFID("CA-CA101-A-12DEC031345-D", shanghai)
	require.True(t, ok)
	require.Equal(t, time.Date(2003, 12, 12, 0, 0, 0, 0, time.UTC), d)
	_, ok = request.OperationDayFromFFID("CA-CA101-A", shanghai)
	require.False(t, ok)
}
