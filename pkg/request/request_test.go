package request_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/request"
)

func TestNextSEQNWraps(t *testing.T) {
	t.Parallel()
	require.Equal(t, 1, request.NextSEQN(0))
	require.Equal(t, 43, request.NextSEQN(42))
	require.Equal(t, 999999, request.NextSEQN(999998))
	require.Equal(t, 1, request.NextSEQN(999999), "after 999999 the counter wraps to 1")
}

func TestSpecScopeAndValidate(t *testing.T) {
	t.Parallel()
	d := func(s string) time.Time { v, err := time.Parse(time.DateOnly, s); require.NoError(t, err); return v }
	s := request.Spec{Kind: request.Schedule, From: d("2026-12-02"), To: d("2026-12-04"), Origin: request.Operator}
	require.NoError(t, s.Validate())
	require.Equal(t, "2026-12-02..2026-12-04", s.Scope())
	require.Equal(t, "SLST", request.Spec{Kind: request.List, ListCode: "SLST"}.Scope())
	for _, bad := range []request.Spec{
		{Kind: request.Schedule, From: d("2026-12-04"), To: d("2026-12-02"), Origin: request.Operator},
		{Kind: request.Schedule, From: d("2026-12-01"), To: d("2027-01-15"), Origin: request.Operator},
		{Kind: request.Schedule, Origin: request.Operator},
		{Kind: request.List, Origin: request.Operator},
		{Kind: "XXXX", Origin: request.Operator},
		{Kind: request.List, ListCode: "SLST", Origin: "robot"},
	} {
		require.ErrorIs(t, bad.Validate(), request.ErrBadSpec, "%+v", bad)
	}
}

func TestMatch(t *testing.T) {
	t.Parallel()
	sent := time.Date(2026, 12, 2, 8, 0, 0, 500_000_000, time.UTC)
	day := func(n int) time.Time { return time.Date(2026, 12, n, 0, 0, 0, 0, time.UTC) }
	rqfd := request.Request{ID: 1, Kind: request.Schedule, Status: request.Sent, From: day(2), To: day(3), SentAt: sent}
	rqrd := request.Request{ID: 2, Kind: request.List, Scope: "SLST", Status: request.Waiting, SentAt: sent}
	reg := request.Request{ID: 3, Kind: request.List, Scope: "GLST", Status: request.Registered}
	open := []request.Request{rqfd, rqrd, reg}

	// DTTM has seconds: a response in the request's second matches (same unit).
	r, _, ok := request.Match(request.Response{Kind: request.Schedule, Days: []time.Time{day(2), day(3)}, DTTM: sent.Truncate(time.Second)}, open)
	require.True(t, ok)
	require.Equal(t, int64(1), r.Request.ID)
	r, _, ok = request.Match(request.Response{Kind: request.List, ListCode: "SLST", DTTM: sent.Add(time.Minute)}, open)
	require.True(t, ok)
	require.Equal(t, int64(2), r.Request.ID)
	_, ok2 := matchOK(request.Response{Kind: request.Schedule, DTTM: sent.Add(time.Minute)}, open)
	require.True(t, ok2, "an empty schedule answers an open RQFD")

	for name, tc := range map[string]struct {
		resp request.Response
		want request.Refusal
	}{
		"before sent":       {request.Response{Kind: request.List, ListCode: "SLST", DTTM: sent.Add(-time.Second)}, request.DTTMBeforeSent},
		"other list":        {request.Response{Kind: request.List, ListCode: "BLST", DTTM: sent.Add(time.Minute)}, request.NoCandidate},
		"registered only":   {request.Response{Kind: request.List, ListCode: "GLST", DTTM: sent.Add(time.Minute)}, request.AwaitingSend},
		"day outside range": {request.Response{Kind: request.Schedule, Days: []time.Time{day(2), day(4)}, DTTM: sent.Add(time.Minute)}, request.OutOfRequestDays},
	} {
		_, why, ok := request.Match(tc.resp, open)
		require.False(t, ok, name)
		require.Equal(t, tc.want, why, name)
	}
	_, _, ok = request.Match(request.Response{Kind: request.List, ListCode: "SLST", DTTM: sent.Add(time.Minute)},
		[]request.Request{{ID: 9, Kind: request.List, Scope: "SLST", Status: request.Done, SentAt: sent}})
	require.False(t, ok, "a closed request is never matched")
}

func matchOK(resp request.Response, open []request.Request) (request.Request, bool) {
	r, _, ok := request.Match(resp, open)
	return r.Request, ok
}

func TestGaps(t *testing.T) {
	t.Parallel()
	day := func(n int) time.Time { return time.Date(2026, 12, n, 0, 0, 0, 0, time.UTC) }
	require.Equal(t, [][2]time.Time{{day(2), day(2)}, {day(4), day(5)}}, request.Gaps(day(2), day(5), []time.Time{day(3), day(9)}))
	require.Empty(t, request.Gaps(day(2), day(3), []time.Time{day(2), day(3)}))
	require.Equal(t, [][2]time.Time{{day(2), day(4)}}, request.Gaps(day(2), day(4), nil))
}

// The narrowest covering open request wins; a superseded request takes no answer; a DTTM one
// second before the send is refused, one in the send's second is not.
func TestMatchNarrowestAndBeforeSent(t *testing.T) {
	t.Parallel()
	sent := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	day := func(n int) time.Time { return time.Date(2026, 12, n, 0, 0, 0, 0, time.UTC) }
	wide := request.Request{ID: 1, Kind: request.Schedule, Status: request.Sent, From: day(2), To: day(3), SentAt: sent}
	narrow := request.Request{ID: 2, Kind: request.Schedule, Status: request.Waiting, From: day(2), To: day(2), SentAt: sent.Add(time.Minute)}
	resp := request.Response{Kind: request.Schedule, Days: []time.Time{day(2)}, DTTM: sent.Add(2 * time.Minute)}
	m, _, ok := request.Match(resp, []request.Request{wide, narrow})
	require.True(t, ok)
	require.Equal(t, int64(2), m.Request.ID, "the one-day request, though sent later")
	superseded := narrow
	superseded.Status, superseded.CloseReason = request.Expired, request.ReasonSuperseded
	m, _, ok = request.Match(resp, []request.Request{wide, superseded})
	require.True(t, ok)
	require.Equal(t, int64(1), m.Request.ID, "a superseded request takes no answer")

	resp.DTTM = sent.Add(-time.Second)
	_, why, ok := request.Match(resp, []request.Request{wide})
	require.False(t, ok)
	require.Equal(t, request.DTTMBeforeSent, why)
	wide.SentAt, resp.DTTM = sent.Add(900*time.Millisecond), sent
	_, _, ok = request.Match(resp, []request.Request{wide})
	require.True(t, ok, "DTTM has whole seconds: the send's own second is not before it")
}
