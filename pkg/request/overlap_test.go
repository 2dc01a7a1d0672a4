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
// held by at most one request (the primary key), only open requests hold days, and every open
// RQFD holds every day of the range it asked for (none is open over days another holds).
func (p *pipeline) requireOneOpenPerDay(t *testing.T) {
	t.Helper()
	require.Zero(t, p.count(t, `SELECT count(*) FROM req_open_day d JOIN req_track t USING (req_id)
		WHERE t.status NOT IN ('REGISTERED', 'SENT', 'WAITING') OR d.operation_day NOT BETWEEN t.scope_from AND t.scope_to
		   OR d.sender <> t.sender`), "only open requests hold days, inside their range")
	require.Zero(t, p.count(t, `SELECT count(*) FROM req_track t WHERE t.req_type = 'RQFD'
		AND t.status IN ('REGISTERED', 'SENT', 'WAITING')
		AND (SELECT count(*) FROM req_open_day d WHERE d.req_id = t.req_id) <> t.scope_to - t.scope_from + 1`),
		"every open RQFD holds every day of its range")
	require.Zero(t, p.count(t, `SELECT count(*) FROM (SELECT 1 FROM req_open_day GROUP BY sender, operation_day HAVING count(*) > 1) x`))
}

// An RQFD for days an open request holds expires that request first (superseded) and asks for
// every day the expired one asked for too, so one request is open per day and no day is left
// unasked; the expired request's answer, made before the new request was sent, changes nothing.
// A widened range longer than 31 days is refused. Self-heal asks only for a day no open request
// holds.
func TestNewScheduleRequestExpiresTheOpenOnesFirst(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, func(c *request.TriggerConfig) { c.SelfHeal, c.SelfHealThreshold = true, 1 })
	wide := p.send(t, days(2, 3))
	p.clock.Advance(time.Minute)
	reg, err := p.store.Register(ctx, days(2, 2), p.clock.Now())
	require.NoError(t, err)
	require.Equal(t, []int64{wide.ID}, reg.Superseded, "the open request of its days is expired first")
	old := p.get(t, wide.ID)
	require.Equal(t, request.Expired, old.Status)
	require.Equal(t, request.ReasonSuperseded, old.CloseReason)
	require.Equal(t, "2026-12-02..2026-12-03", reg.Request.Scope, "it asks for 3 December too, which only the expired one asked for")
	p.requireOneOpenPerDay(t)

	// Self-heal for a held day asks nothing; for a free one it asks that day.
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
	res, err := p.sweeper.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, res.Sent)

	// The expired request's answer (made before the new one was sent) is refused; the new one's
	// answer applies; a second answer for one of its days finds nothing open.
	got := p.run(t, p.schdOn("RESP", wide.SentAt.Add(30*time.Second), map[int64]int{1: 2, 2: 3}))
	require.Equal(t, outcome{ID: got[0].ID, Status: "SKIPPED", Reason: "no-open-request:before-sent"}, got[0])
	require.Empty(t, p.flights(t))
	got = p.run(t, p.schdOn("RESP", p.clock.Now(), map[int64]int{1: 2, 3: 3}))
	require.Equal(t, "SUCCEEDED", got[0].Status, got[0].Reason)
	require.Contains(t, got[0].Reason, fmt.Sprintf("answers request %d (2026-12-02..2026-12-03, fallback match)", reg.Request.ID))
	got = p.run(t, p.schdOn("RESP", p.clock.Now(), map[int64]int{5: 2}))
	require.Equal(t, "no-open-request:other-days", got[0].Reason, "3 December's answer is in; only 4 December is open")
	got = p.run(t, p.schdOn("RESP", p.clock.Now(), map[int64]int{4: 4}))
	require.Equal(t, "SUCCEEDED", got[0].Status, got[0].Reason)
	require.Equal(t, []int64{1, 3, 4}, p.flights(t))
	require.Zero(t, p.count(t, `SELECT count(*) FROM req_track WHERE status IN ('REGISTERED', 'SENT', 'WAITING')`), "no request left open")
	require.Zero(t, p.count(t, `SELECT count(*) FROM req_open_day`), "every day released")

	// An RQFD that would have to ask for more than 31 days to cover the request it replaces is
	// refused, and nothing changes.
	month := p.send(t, days(1, 20))
	jan := request.Spec{Kind: request.Schedule, Origin: request.Operator, Actor: "test",
		From: time.Date(2026, 12, 15, 0, 0, 0, 0, time.UTC), To: time.Date(2027, 1, 14, 0, 0, 0, 0, time.UTC)}
	_, err = p.store.Register(ctx, jan, p.clock.Now())
	require.ErrorIs(t, err, request.ErrBadSpec)
	require.ErrorContains(t, err, fmt.Sprintf("would replace the open request(s) [%d] and ask for their days too, 2026-12-01..2027-01-14: 45 days, at most 31", month.ID))
	require.Equal(t, request.Sent, p.get(t, month.ID).Status)
	p.requireOneOpenPerDay(t)
}

// Random sequences of registrations (operator ranges and self-heal days), sends, answers, clock
// moves and expiry sweeps. At every step each (sender, operation day) has one open schedule
// request at most, holding all its range; an answer to a request still open applies, and an
// answer to a closed one applies only as the answer of the open request that replaced it. At the
// end, after the last sends and answers, every day any request asked for was answered, or is in
// a request that timed out (the alert): none is dropped by a supersession.
func TestPropertyOneOpenRequestPerDayAndNoDayLost(t *testing.T) {
	t.Parallel()
	for seed := range uint64(10) {
		rng := rand.New(rand.NewPCG(seed, 29))
		p := newPipeline(t, func(c *request.TriggerConfig) {
			c.SelfHeal, c.SelfHealThreshold, c.Cooldown, c.MaxPerHour = true, 1, time.Millisecond, 3600
		})
		dec := func(d int) time.Time { return time.Date(2026, 12, d, 0, 0, 0, 0, time.UTC) }
		answered := map[int64]bool{} // requests the AODB answered
		want := []int64{}
		flid := int64(0)
		answer := func(step int, r request.Request) {
			answered[r.ID] = true
			now := p.get(t, r.ID)
			open := now.Status.Open() && !request.Due(now, p.clock.Now(), 30*time.Minute) // within its timeout
			flights := map[int64]int{}
			var ids []int64
			for d := r.From; !d.After(r.To); d = d.AddDate(0, 0, 1) {
				flid++
				flights[flid] = d.Day()
				ids = append(ids, flid)
			}
			o := p.answer(t, p.schdOn("RESP", p.clock.Now(), flights))
			if open {
				require.Equal(t, "SUCCEEDED", o.Status, "seed %d step %d: answer to open request %d (%s): %s", seed, step, r.ID, r.Scope, o.Reason)
			}
			if o.Status == "SUCCEEDED" {
				want = append(want, ids...)
			} else {
				require.Equal(t, "SKIPPED", o.Status, o.Reason)
				require.Contains(t, o.Reason, request.SkipNoOpenRequest)
			}
		}
		for step := range 60 {
			switch rng.IntN(5) {
			case 0:
				from := 2 + rng.IntN(5)
				_, err := p.store.Register(ctx, days(from, from+rng.IntN(7-from)), p.clock.Now())
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
				if r, ok := p.pickUnanswered(t, rng, answered); ok {
					answer(step, r)
				}
			case 4:
				p.clock.Advance(time.Duration(rng.IntN(12*60)) * time.Second)
			}
			p.requireOneOpenPerDay(t)
		}
		// The last sends, the AODB answers every open request, the sweep expires what timed out.
		_, err := p.sweeper.Sweep(ctx)
		require.NoError(t, err)
		for _, id := range p.pg.Int64s(t, `SELECT req_id FROM req_track WHERE req_type = 'RQFD' AND status IN ('SENT', 'WAITING') ORDER BY req_id`) {
			if r := p.get(t, id); r.Status.Open() {
				answer(-1, r)
			}
		}
		_, err = p.sweeper.Sweep(ctx)
		require.NoError(t, err)
		require.Zero(t, p.count(t, `SELECT count(*) FROM req_track a WHERE a.req_type = 'RQFD' AND a.close_reason = 'superseded'
			AND NOT EXISTS (SELECT 1 FROM req_track c WHERE c.req_type = 'RQFD' AND c.req_id > a.req_id
			                   AND c.registered_at = a.closed_at AND c.scope_from <= a.scope_from AND c.scope_to >= a.scope_to)`),
			"seed %d: a superseded request asked for a day the request that replaced it does not ask for", seed)
		require.Zero(t, p.count(t, `SELECT count(*) FROM generate_series('2026-12-01'::date, '2026-12-31'::date, interval '1 day') AS d
			WHERE EXISTS (SELECT 1 FROM req_track a WHERE a.req_type = 'RQFD' AND d BETWEEN a.scope_from AND a.scope_to)
			  AND NOT EXISTS (SELECT 1 FROM req_track c WHERE c.req_type = 'RQFD' AND d BETWEEN c.scope_from AND c.scope_to
			                     AND (c.status = 'DONE' OR c.close_reason = 'timeout'))`),
			"seed %d: a day was asked for and neither answered nor in a request that timed out", seed)
		slices.Sort(want)
		require.Equal(t, want, p.flightsOrEmpty(t), "seed %d: the applied answers' flights exist, no other", seed)
		t.Logf("seed %d: %d requests, %d answers, %d superseded, %d timed out", seed,
			p.count(t, `SELECT count(*) FROM req_track`), len(answered),
			p.count(t, `SELECT count(*) FROM req_track WHERE close_reason = 'superseded'`),
			p.count(t, `SELECT count(*) FROM req_track WHERE close_reason = 'timeout'`))
	}
}

// answer runs one answer through the engine. An answer that waits for its request's send
// (FAILED, retried) is retried after the jobs sweep sent it, as the engine's backoff would.
func (p *pipeline) answer(t *testing.T, raw string) outcome {
	t.Helper()
	o := p.run(t, raw)[0]
	if o.Status == "FAILED" {
		_, err := p.sweeper.Sweep(ctx)
		require.NoError(t, err)
		p.clock.Advance(time.Minute)
		p.drain(t)
		o = p.outcome(t, o.ID)
	}
	return o
}

func (p *pipeline) flightsOrEmpty(t *testing.T) []int64 {
	t.Helper()
	if f := p.flights(t); f != nil {
		return f
	}
	return []int64{}
}

// pickUnanswered picks a random schedule request the AODB received (it was sent) and has not
// answered, registered less than the timeout ago.
func (p *pipeline) pickUnanswered(t *testing.T, rng *rand.Rand, answered map[int64]bool) (request.Request, bool) {
	t.Helper()
	ids := p.pg.Int64s(t, `SELECT req_id FROM req_track WHERE req_type = 'RQFD' AND sent_at IS NOT NULL
		AND registered_at > $1 ORDER BY req_id`, p.clock.Now().Add(-30*time.Minute))
	ids = slices.DeleteFunc(ids, func(id int64) bool { return answered[id] })
	if len(ids) == 0 {
		return request.Request{}, false
	}
	return p.get(t, ids[rng.IntN(len(ids))]), true
}
