package request_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/request"
)

// schdOn is a SCHD with one flight per entry of flights (FLID → day of December 2026).
func (p *pipeline) schdOn(styp string, dttm time.Time, flights map[int64]int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<SCHD><RECS>%d</RECS>", len(flights))
	for id, day := range flights {
		fmt.Fprintf(&b, `<FLTR><FLID>%d</FLID><ALCD>CA</ALCD><FLNO>CA%d</FLNO><MVIN>D</MVIN><SODT>%02dDEC261000</SODT><FLTY>W</FLTY><FLIN>D</FLIN><ACFT>733</ACFT></FLTR>`, id, id, day)
	}
	b.WriteString("</SCHD>")
	return p.msg("SCHD", styp, dttm, b.String())
}

// requireOneOpenPerDay checks the key of open schedule requests: each (sender, operation day) is
// held by at most one request (the primary key), only open requests hold days, every open RQFD
// holds at least one day, all inside the range it asked for.
func (p *pipeline) requireOneOpenPerDay(t *testing.T) {
	t.Helper()
	require.Zero(t, p.count(t, `SELECT count(*) FROM req_open_day d JOIN req_track t USING (req_id)
		WHERE t.status NOT IN ('REGISTERED', 'SENT', 'WAITING') OR d.operation_day NOT BETWEEN t.scope_from AND t.scope_to
		   OR d.sender <> t.sender`), "only open requests hold days, inside their range")
	require.Zero(t, p.count(t, `SELECT count(*) FROM req_track t WHERE t.req_type = 'RQFD'
		AND t.status IN ('REGISTERED', 'SENT', 'WAITING') AND NOT EXISTS (SELECT 1 FROM req_open_day d WHERE d.req_id = t.req_id)`),
		"every open RQFD holds a day")
	require.Zero(t, p.count(t, `SELECT count(*) FROM (SELECT 1 FROM req_open_day GROUP BY sender, operation_day HAVING count(*) > 1) x`))
}

// Two overlapping schedule requests: the wider one is narrowed to the day the newer one does not
// ask for, both answers apply whichever arrives first, and no request is left open. Self-heal
// asks only for a day no open request covers.
func TestOverlappingScheduleRequestsLoseNoAnswer(t *testing.T) {
	t.Parallel()
	for _, narrowFirst := range []bool{true, false} {
		p := newPipeline(t, func(c *request.TriggerConfig) { c.SelfHeal, c.SelfHealThreshold = true, 1 })
		wide := p.send(t, days(2, 3))
		p.requireOneOpenPerDay(t)
		p.clock.Advance(time.Minute)
		narrow := p.send(t, days(2, 2))
		p.requireOneOpenPerDay(t)
		require.Equal(t, request.Sent, p.get(t, wide.ID).Status, "narrowed, still open for 3 December")
		require.Equal(t, 1, p.count(t, `SELECT count(*) FROM req_open_day WHERE req_id = $1 AND operation_day = '2026-12-03'`, wide.ID))

		// Self-heal for a covered day asks nothing; for an uncovered one it asks that day.
		for _, d := range []int{2, 3, 4} {
			require.NoError(t, pgx.BeginFunc(ctx, p.pg.Pool, func(tx pgx.Tx) error {
				_, err := p.hooks.Triggers().UnknownFlightTx(ctx, tx, time.Date(2026, 12, d, 0, 0, 0, 0, time.UTC), p.clock.Now())
				return err
			}))
			p.requireOneOpenPerDay(t)
		}
		require.Equal(t, 1, p.count(t, `SELECT count(*) FROM req_track WHERE origin = 'self-heal'`))
		require.Equal(t, 1, p.count(t, `SELECT count(*) FROM req_track WHERE origin = 'self-heal' AND scope = '2026-12-04..2026-12-04'`))

		p.clock.Advance(time.Minute)
		oneDay := p.schdOn("RESP", p.clock.Now(), map[int64]int{1: 2, 2: 2})
		twoDays := p.schdOn("RESP", p.clock.Now(), map[int64]int{1: 2, 2: 2, 3: 3})
		answers := []string{oneDay, twoDays}
		if !narrowFirst {
			answers = []string{twoDays, oneDay}
		}
		for _, a := range answers {
			got := p.run(t, a)
			require.Equal(t, "SUCCEEDED", got[0].Status, got[0].Reason)
			p.requireOneOpenPerDay(t)
		}
		require.Equal(t, []int64{1, 2, 3}, p.flights(t), "both answers' flights exist")
		for _, r := range []request.Request{wide, narrow} {
			require.Equal(t, request.Done, p.get(t, r.ID).Status, "request %d (%s) answered", r.ID, r.Scope)
		}
		// The self-healing request for 4 December is sent and answered too.
		res, err := p.sweeper.Sweep(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, res.Sent)
		got := p.run(t, p.schdOn("RESP", p.clock.Now(), map[int64]int{4: 4}))
		require.Equal(t, "SUCCEEDED", got[0].Status, got[0].Reason)
		require.Contains(t, got[0].Reason, "(2026-12-04..2026-12-04, fallback match)")
		require.Zero(t, p.count(t, `SELECT count(*) FROM req_track WHERE status IN ('REGISTERED', 'SENT', 'WAITING')`), "no request left open")
		require.Zero(t, p.count(t, `SELECT count(*) FROM req_open_day`), "every day released")
	}
}

// A request superseded before its answer came still takes that answer (its flights apply, the
// row records it and stays EXPIRED); the superseding request takes its own; reference lists alike.
func TestSupersededRequestsKeepTheirAnswers(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, nil)
	day := p.send(t, days(2, 2))
	p.clock.Advance(time.Minute)
	wider := p.send(t, days(2, 3))
	p.requireOneOpenPerDay(t)
	old := p.get(t, day.ID)
	require.Equal(t, request.Expired, old.Status)
	require.Equal(t, request.ReasonSuperseded, old.CloseReason)

	// The one-day answer goes to the one-day request although the wider one covers its day.
	got := p.run(t, p.schdOn("RESP", p.clock.Now(), map[int64]int{1: 2}))
	require.Equal(t, "SUCCEEDED", got[0].Status)
	require.Contains(t, got[0].Reason, fmt.Sprintf("answers superseded request %d (2026-12-02..2026-12-02, fallback match)", day.ID))
	old = p.get(t, day.ID)
	require.Equal(t, request.Expired, old.Status, "a superseded request stays EXPIRED")
	require.Equal(t, got[0].ID, old.ResponseID)
	require.Equal(t, request.Sent, p.get(t, wider.ID).Status)

	got = p.run(t, p.schdOn("RESP", p.clock.Now(), map[int64]int{1: 2, 4: 3}))
	require.Equal(t, "SUCCEEDED", got[0].Status, got[0].Reason)
	require.Equal(t, request.Done, p.get(t, wider.ID).Status)
	require.Equal(t, []int64{1, 4}, p.flights(t))

	// Lists: the answer of the superseded RQRD applies, then the newer one's.
	first := p.send(t, request.Spec{Kind: request.List, ListCode: "ABDG", Origin: request.Operator, Actor: "test"})
	p.clock.Advance(time.Second)
	second := p.send(t, request.Spec{Kind: request.List, ListCode: "ABDG", Origin: request.Operator, Actor: "test"})
	got = p.run(t, p.abdg("RESP", p.clock.Now(), "A1", "A2"), p.abdg("RESP", p.clock.Now(), "A2", "A3"))
	require.Equal(t, "SUCCEEDED", got[0].Status, got[0].Reason)
	require.Contains(t, got[0].Reason, fmt.Sprintf("answers superseded request %d (ABDG", first.ID))
	require.Equal(t, "SUCCEEDED", got[1].Status, got[1].Reason)
	require.Contains(t, got[1].Reason, fmt.Sprintf("answers request %d (ABDG", second.ID))
	require.Equal(t, []string{"A2", "A3"}, p.refKeys(t), "the newest answer is the list")

	// Past its timeout a superseded request takes no answer any more.
	third := p.send(t, request.Spec{Kind: request.List, ListCode: "ABDG", Origin: request.Operator, Actor: "test"})
	p.clock.Advance(time.Second)
	p.send(t, request.Spec{Kind: request.List, ListCode: "ABDG", Origin: request.Operator, Actor: "test"})
	p.clock.Advance(31 * time.Minute)
	got = p.run(t, p.abdg("RESP", p.clock.Now(), "A9"))
	require.Equal(t, "SUCCEEDED", got[0].Status, "the open one (not swept yet) takes it")
	got = p.run(t, p.abdg("RESP", p.clock.Now(), "A9"))
	require.Equal(t, "no-open-request", got[0].Reason)
	require.Zero(t, p.get(t, third.ID).ResponseID)
}

// A send interrupted after its coutmsgs insert is recovered with the row's insert time as its
// sent time; an answer that arrives before the recovery waits (FAILED, retried) and applies once
// the request is SENT. An answer whose DTTM lies within the clock-skew allowance before the send
// applies and records its skew.
func TestRecoveredSendTakesItsAnswer(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, nil)
	reg, err := p.store.Register(ctx, days(2, 2), p.clock.Now()) // 08:00
	require.NoError(t, err)
	crashing, err := request.NewSender(p.store, p.box, p.clock, false)
	require.NoError(t, err)
	crashing.SetStep(func(name string) error {
		if name == request.StepInserted {
			return errKilled
		}
		return nil
	})
	_, err = crashing.Send(ctx, reg.Request.ID) // coutmsgs row inserted at 08:00, no local commit
	require.ErrorIs(t, err, errKilled)

	p.clock.Advance(time.Minute)
	ids := p.enqueue(t, p.schdOn("RESP", p.clock.Now(), map[int64]int{1: 2})) // the AODB answers at 08:01
	p.drain(t)
	o := p.outcome(t, ids[0])
	require.Equal(t, "FAILED", o.Status, "the answer waits while its request is REGISTERED")
	require.Contains(t, o.Reason, "send to be confirmed")
	require.Empty(t, p.flights(t))

	p.clock.Advance(4 * time.Minute) // 08:05: the jobs sweep recovers the send
	res, err := p.sweeper.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, res.Sent)
	r := p.get(t, reg.Request.ID)
	require.Equal(t, request.Sent, r.Status)
	require.True(t, r.SentAt.Equal(t0), "sent_at is the outbound row's insert time, not the recovery's: %s", r.SentAt)

	p.drain(t)
	o = p.outcome(t, ids[0])
	require.Equal(t, "SUCCEEDED", o.Status, o.Reason)
	require.Contains(t, o.Reason, fmt.Sprintf("answers request %d (2026-12-02..2026-12-02, fallback match)", r.ID))
	require.Equal(t, []int64{1}, p.flights(t))
	require.Equal(t, request.Done, p.get(t, r.ID).Status)

	// The AODB's clock runs 2 s behind: its answer's DTTM lies before the send, within 5 s.
	p.clock.Advance(time.Minute)
	skewed := p.send(t, days(3, 3))
	got := p.run(t, p.schdOn("RESP", p.clock.Now().Add(-2*time.Second), map[int64]int{2: 3}))
	require.Equal(t, "SUCCEEDED", got[0].Status, got[0].Reason)
	require.Contains(t, got[0].Reason, "fallback match, DTTM 2s before sent")
	done := p.get(t, skewed.ID)
	require.Equal(t, request.Done, done.Status)
	require.Equal(t, 2*time.Second, done.MatchSkew, "the skew used is recorded")
	require.Zero(t, r.MatchSkew)
}

// Random sequences of registrations (operator ranges and self-heal days), sends, answers, clock
// moves and expiry sweeps: at every step each (sender, operation day) has at most one open
// schedule request, and every answer the AODB gives to a request it received, within that
// request's timeout, applies (all its flights exist at the end).
func TestPropertyOneOpenRequestPerDayAndNoAnswerLost(t *testing.T) {
	t.Parallel()
	for seed := range uint64(10) {
		rng := rand.New(rand.NewPCG(seed, 29))
		p := newPipeline(t, func(c *request.TriggerConfig) {
			c.SelfHeal, c.SelfHealThreshold, c.Cooldown, c.MaxPerHour = true, 1, time.Millisecond, 3600
		})
		dec := func(d int) time.Time { return time.Date(2026, 12, d, 0, 0, 0, 0, time.UTC) }
		answered := map[int64]bool{} // requests the AODB answered
		var want []int64
		flid := int64(0)
		for step := range 60 {
			switch rng.IntN(5) {
			case 0:
				from := 2 + rng.IntN(5)
				spec := days(from, from+rng.IntN(7-from))
				_, err := p.store.Register(ctx, spec, p.clock.Now())
				require.NoError(t, err)
			case 1:
				require.NoError(t, pgx.BeginFunc(ctx, p.pg.Pool, func(tx pgx.Tx) error {
					_, err := p.hooks.Triggers().UnknownFlightTx(ctx, tx, dec(2+rng.IntN(5)), p.clock.Now())
					return err
				}))
			case 2:
				_, err := p.sweeper.Sweep(ctx)
				require.NoError(t, err)
			case 3:
				r, ok := p.pickUnanswered(t, rng, answered)
				if !ok {
					continue
				}
				answered[r.ID] = true
				flights := map[int64]int{}
				for d := r.From; !d.After(r.To); d = d.AddDate(0, 0, 1) {
					flid++
					flights[flid] = d.Day()
					want = append(want, flid)
				}
				got := p.run(t, p.schdOn("RESP", p.clock.Now(), flights))
				require.Equal(t, "SUCCEEDED", got[0].Status, "seed %d step %d: answer to request %d (%s): %s", seed, step, r.ID, r.Scope, got[0].Reason)
			case 4:
				p.clock.Advance(time.Duration(rng.IntN(12*60)) * time.Second)
			}
			p.requireOneOpenPerDay(t)
		}
		slices.Sort(want)
		if want == nil {
			want = []int64{}
		}
		got := p.flights(t)
		if got == nil {
			got = []int64{}
		}
		require.Equal(t, want, got, "seed %d: every answer's flights exist", seed)
		t.Logf("seed %d: %d requests, %d answers, %d superseded (%d of them answered), %d timed out", seed,
			p.count(t, `SELECT count(*) FROM req_track`), len(answered),
			p.count(t, `SELECT count(*) FROM req_track WHERE close_reason = 'superseded'`),
			p.count(t, `SELECT count(*) FROM req_track WHERE close_reason = 'superseded' AND response_msg_id IS NOT NULL`),
			p.count(t, `SELECT count(*) FROM req_track WHERE close_reason = 'timeout'`))
	}
}

// pickUnanswered picks a random schedule request the AODB received (it was sent) and has not
// answered, registered less than the timeout ago.
func (p *pipeline) pickUnanswered(t *testing.T, rng *rand.Rand, answered map[int64]bool) (request.Request, bool) {
	t.Helper()
	rows, err := p.pg.Pool.Query(ctx, `SELECT req_id FROM req_track WHERE req_type = 'RQFD' AND sent_at IS NOT NULL
		AND registered_at > $1 ORDER BY req_id`, p.clock.Now().Add(-30*time.Minute))
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	ids = slices.DeleteFunc(ids, func(id int64) bool { return answered[id] })
	if len(ids) == 0 {
		return request.Request{}, false
	}
	return p.get(t, ids[rng.IntN(len(ids))]), true
}
