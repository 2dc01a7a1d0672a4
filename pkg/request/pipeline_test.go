package request_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/processor"
	"github.com/msgx/msgx/pkg/processor/plugins"
	"github.com/msgx/msgx/pkg/procstate"
	"github.com/msgx/msgx/pkg/request"
)

// The RESP guard and the self-healing trigger inside the real processor: the engine with the
// flight and reference-data handlers wired as cmd/processor wires them, PostgreSQL for the
// pipeline and the requests, MariaDB for coutmsgs (the jobs sweep sends), an injected clock.

type pipeline struct {
	*bundle
	hooks *request.Hooks
	pump  *processor.Engine
	lease leader.Lease
	next  int64
	seqn  int
}

func newPipeline(t *testing.T, mod func(*request.TriggerConfig)) *pipeline {
	t.Helper()
	b := setup(t)
	_, err := b.pg.Pool.Exec(ctx, `INSERT INTO leader_lease VALUES ('processor', 1, 'test', 0, $1, $1)`, t0)
	require.NoError(t, err)
	tc := request.DefaultTriggerConfig()
	tc.Location = shanghai
	if mod != nil {
		mod(&tc)
	}
	hooks, err := request.NewHooks(b.store, tc, b.metrics, zerolog.Nop())
	require.NoError(t, err)
	handlers := plugins.Handlers(hooks, nil)
	p := &pipeline{bundle: b, hooks: hooks, lease: leader.Lease{Role: "processor", Epoch: 1}}
	p.pump = processor.New(processor.Config{
		Batch: 10, MaxAttempts: 5, BackoffBase: time.Second, BackoffMax: time.Minute,
		HeadDeadline: 10 * time.Minute, IdlePoll: 10 * time.Millisecond, Location: shanghai,
	}, b.pg.Pool, handlers, nil, b.clock, nil, zerolog.Nop())
	return p
}

// run enqueues raws as ingest does, drains the engine and returns their outcomes.
func (p *pipeline) run(t *testing.T, raws ...string) []outcome {
	t.Helper()
	ids := p.enqueue(t, raws...)
	p.drain(t)
	out := make([]outcome, len(ids))
	for i, id := range ids {
		out[i] = p.outcome(t, id)
	}
	return out
}

// enqueue writes raws to proc_state as ingest does and returns their msg_ids.
func (p *pipeline) enqueue(t *testing.T, raws ...string) []int64 {
	t.Helper()
	ids := make([]int64, len(raws))
	for i := range raws {
		p.next++
		ids[i] = p.next
	}
	_, err := p.pg.Pool.Exec(ctx, `INSERT INTO proc_state (msg_id, raw, raw_sha256, enqueued_at)
		SELECT id, raw, sha256(convert_to(raw, 'UTF8')), $3 FROM unnest($1::bigint[], $2::text[]) AS u(id, raw)`, ids, raws, p.clock.Now())
	require.NoError(t, err)
	_, err = p.pg.Pool.Exec(ctx, `UPDATE inbox_cursor SET watermark = GREATEST(watermark, $1)`, p.next)
	require.NoError(t, err)
	return ids
}

// drain steps the engine until it is idle or its head waits (FAILED, not due yet).
func (p *pipeline) drain(t *testing.T) {
	t.Helper()
	for {
		res, err := p.pump.Step(ctx, p.lease)
		require.NoError(t, err)
		if res.Idle || res.Failed || !res.WaitUntil.IsZero() {
			return
		}
	}
}

func (p *pipeline) outcome(t *testing.T, id int64) outcome {
	t.Helper()
	o := outcome{ID: id}
	var reason *string
	require.NoError(t, p.pg.Pool.QueryRow(ctx, `SELECT status, reason FROM proc_state WHERE msg_id = $1`, id).Scan(&o.Status, &reason))
	if reason != nil {
		o.Reason = *reason
	}
	if o.Status == string(procstate.StatusSkipped) { // the processor writes only the reasons procstate reads
		s, err := procstate.ParseSkip(o.Reason)
		require.NoError(t, err, "message %d", id)
		require.Equal(t, o.Reason, s.String(), "message %d", id)
	}
	return o
}

type outcome struct {
	ID             int64
	Status, Reason string
}

// msg renders an AODB message with its META DTTM (airport wall clock).
func (p *pipeline) msg(typ, styp string, dttm time.Time, body string) string {
	p.seqn++
	return fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<MSG><META><SNDR>AODB</SNDR><SEQN>%d</SEQN><DTTM>%s</DTTM><TYPE>%s</TYPE><STYP>%s</STYP></META>%s</MSG>`,
		p.seqn, dttm.In(shanghai).Format("20060102150405"), typ, styp, body)
}

// schd is a SCHD of one flight per FLID, all on 2 December (airport calendar).
func (p *pipeline) schd(styp string, dttm time.Time, flids ...int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<SCHD><RECS>%d</RECS>", len(flids))
	for _, id := range flids {
		fmt.Fprintf(&b, `<FLTR><FLID>%d</FLID><ALCD>CA</ALCD><FLNO>CA%d</FLNO><MVIN>D</MVIN><SODT>02DEC261000</SODT><FLTY>W</FLTY><FLIN>D</FLIN><ACFT>733</ACFT></FLTR>`, id, id)
	}
	b.WriteString("</SCHD>")
	return p.msg("SCHD", styp, dttm, b.String())
}

// abdg is an ABDG list message with the keys.
func (p *pipeline) abdg(styp string, dttm time.Time, keys ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<RECS>%d</RECS>", len(keys))
	for _, k := range keys {
		fmt.Fprintf(&b, "<ABDG><ABCD>%s</ABCD><DESC>bridge %s</DESC></ABDG>", k, k)
	}
	return p.msg("ABDG", styp, dttm, b.String())
}

func (p *pipeline) flights(t *testing.T) []int64 {
	t.Helper()
	return p.pg.Int64s(t, `SELECT flid FROM flight ORDER BY flid`)
}

func (p *pipeline) refKeys(t *testing.T) []string {
	t.Helper()
	rows, err := p.pg.Pool.Query(ctx, `SELECT rkey FROM ref_master WHERE rtype = 'ABDG'`)
	require.NoError(t, err)
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	sort.Strings(keys)
	return keys
}

// send registers spec and lets the jobs sweep write it to coutmsgs at the clock's time.
func (p *pipeline) send(t *testing.T, spec request.Spec) request.Request {
	t.Helper()
	reg, err := p.store.Register(ctx, spec, p.clock.Now())
	require.NoError(t, err)
	res, err := p.sweeper.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, res.Sent)
	r, err := p.store.Get(ctx, reg.Request.ID)
	require.NoError(t, err)
	require.Equal(t, request.Sent, r.Status)
	return r
}

func (p *pipeline) get(t *testing.T, id int64) request.Request {
	t.Helper()
	r, err := p.store.Get(ctx, id)
	require.NoError(t, err)
	return r
}

func TestResponseGuardInTheProcessor(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, nil)

	// Unsolicited SCHD RESP and list RESP: SKIPPED no-open-request, nothing changes (the list
	// RESP in particular deletes no key).
	got := p.run(t, p.abdg("DNLD", t0, "A1", "A2", "A3"))
	require.Equal(t, "SUCCEEDED", got[0].Status)
	got = p.run(t, p.schd("RESP", t0, 1, 2), p.abdg("RESP", t0, "A1"))
	for _, o := range got {
		require.Equal(t, outcome{ID: o.ID, Status: "SKIPPED", Reason: "no-open-request"}, o)
	}
	require.Empty(t, p.flights(t), "an unsolicited SCHD RESP creates no flight")
	require.Equal(t, []string{"A1", "A2", "A3"}, p.refKeys(t), "an unsolicited list RESP deletes nothing")
	require.Zero(t, p.count(t, `SELECT count(*) FROM `+testdb.AllEvents), "no event from a skipped response")

	// An RQFD for 2 December, sent at t0+1m.
	p.clock.Advance(time.Minute)
	rqfd := p.send(t, days(2, 2))
	sent := p.clock.Now()

	// A RESP with DTTM before the request was sent is refused; the request stays open.
	got = p.run(t, p.schd("RESP", sent.Add(-time.Second), 1, 2))
	require.Equal(t, "SKIPPED", got[0].Status)
	require.Equal(t, "no-open-request:before-sent", got[0].Reason)
	require.Empty(t, p.flights(t))
	require.Equal(t, request.Sent, p.get(t, rqfd.ID).Status)
	// A RESP for another day does not answer it either.
	got = p.run(t, strings.Replace(p.schd("RESP", sent, 9), "02DEC26", "05DEC26", 1))
	require.Equal(t, "no-open-request:other-days", got[0].Reason)

	// The answer, DTTM in the same second as the send: applied, the request DONE with it.
	p.clock.Advance(time.Minute)
	got = p.run(t, p.schd("RESP", sent, 1, 2))
	require.Equal(t, "SUCCEEDED", got[0].Status)
	require.Contains(t, got[0].Reason, fmt.Sprintf("answers request %d (2026-12-02..2026-12-02, fallback match)", rqfd.ID),
		"the outcome names the request and the fallback match")
	require.Equal(t, []int64{1, 2}, p.flights(t))
	done := p.get(t, rqfd.ID)
	require.Equal(t, request.Done, done.Status)
	require.Equal(t, got[0].ID, done.ResponseID)
	require.Equal(t, request.MatchFallback, done.MatchKind)
	require.True(t, done.ClosedAt.Equal(p.clock.Now()), "DONE in the transaction that applied it, at the engine's time")

	// The same answer again (the AODB answered twice): the request is closed, the second changes
	// nothing and does not touch the request.
	got = p.run(t, p.schd("RESP", sent.Add(time.Minute), 1, 2, 3))
	require.Equal(t, "SKIPPED", got[0].Status)
	require.Equal(t, "no-open-request", got[0].Reason)
	require.Equal(t, []int64{1, 2}, p.flights(t))
	require.Equal(t, done, p.get(t, rqfd.ID), "a late response never changes a closed request")

	// An RQRD that expires: its late answer changes neither the request nor the data.
	rqrd := p.send(t, request.Spec{Kind: request.List, ListCode: "ABDG", Origin: request.Operator, Actor: "test"})
	p.clock.Advance(31 * time.Minute)
	res, err := p.sweeper.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, res.Expired)
	expired := p.get(t, rqrd.ID)
	require.Equal(t, request.Expired, expired.Status)
	got = p.run(t, p.abdg("RESP", p.clock.Now(), "A1"))
	require.Equal(t, outcome{ID: got[0].ID, Status: "SKIPPED", Reason: "no-open-request"}, got[0])
	require.Equal(t, []string{"A1", "A2", "A3"}, p.refKeys(t), "a late list RESP deletes nothing")
	require.Equal(t, expired, p.get(t, rqrd.ID))

	// A matching list RESP with missing keys deletes them, and closes its request DONE.
	rqrd = p.send(t, request.Spec{Kind: request.List, ListCode: "ABDG", Origin: request.Operator, Actor: "test"})
	p.clock.Advance(5 * time.Second)
	got = p.run(t, p.abdg("RESP", p.clock.Now(), "A1", "A4"))
	require.Equal(t, "SUCCEEDED", got[0].Status)
	require.Contains(t, got[0].Reason, fmt.Sprintf("answers request %d (ABDG, fallback match)", rqrd.ID))
	require.Equal(t, []string{"A1", "A4"}, p.refKeys(t), "the matching RESP removes the keys it does not carry")
	done = p.get(t, rqrd.ID)
	require.Equal(t, request.Done, done.Status)
	require.Equal(t, got[0].ID, done.ResponseID)
	require.Equal(t, 2.0, testutil.ToFloat64(p.metrics.Responses.WithLabelValues("RQRD", request.SkipNoOpenRequest)),
		"two list RESP skipped: the unsolicited one and the late one")
	require.Equal(t, 4.0, testutil.ToFloat64(p.metrics.Responses.WithLabelValues("RQFD", request.SkipNoOpenRequest)),
		"unsolicited, before-sent, other-days, twice")
}

// A failing answer leaves its request open: DONE only with the applied data.
func TestResponseThatFailsLeavesTheRequestOpen(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, nil)
	rqfd := p.send(t, days(2, 2))
	// FLID 1 twice with two operation days: DEAD PROTOCOL before anything is written.
	bad := p.msg("SCHD", "RESP", p.clock.Now(), `<SCHD><RECS>2</RECS>`+
		`<FLTR><FLID>1</FLID><ALCD>CA</ALCD><FLNO>CA1</FLNO><MVIN>D</MVIN><SODT>02DEC261000</SODT><FLTY>W</FLTY><FLIN>D</FLIN></FLTR>`+
		`<FLTR><FLID>1</FLID><ALCD>CA</ALCD><FLNO>CA1</FLNO><MVIN>D</MVIN><SODT>03DEC261000</SODT><FLTY>W</FLTY><FLIN>D</FLIN></FLTR></SCHD>`)
	got := p.run(t, bad)
	require.Equal(t, "DEAD", got[0].Status)
	require.Equal(t, request.Sent, p.get(t, rqfd.ID).Status, "a response that was not applied closes nothing")
	got = p.run(t, p.schd("RESP", p.clock.Now(), 7))
	require.Equal(t, "SUCCEEDED", got[0].Status)
	require.Equal(t, request.Done, p.get(t, rqfd.ID).Status)
}

// FLOPs for unknown flights feed the self-healing trigger with the operation day of their FFID:
// one request per day under a burst, none when the trigger is off.
func TestSelfHealingFromUnknownFlightFLOPs(t *testing.T) {
	t.Parallel()
	flop := func(p *pipeline, flid int64, ffidDay string) string {
		return p.msg("FLOP", "STND", p.clock.Now(), fmt.Sprintf(
			`<FLOP><FLID>%d</FLID><FFID>CA-CA%d-D-%s1000-D</FFID><STND>101</STND></FLOP>`, flid, flid, ffidDay))
	}
	for _, on := range []bool{true, false} {
		p := newPipeline(t, func(c *request.TriggerConfig) { c.SelfHeal, c.SelfHealThreshold = on, 3 })
		var raws []string
		for i := range 40 {
			raws = append(raws, flop(p, int64(100+i), "02DEC26"))
			if i%4 == 0 {
				raws = append(raws, flop(p, int64(500+i), "03DEC26"))
			}
		}
		for _, o := range p.run(t, raws...) {
			require.Equal(t, "SKIPPED", o.Status, o.Reason)
			require.Equal(t, "no-match:FLID", o.Reason)
		}
		n := p.count(t, `SELECT count(*) FROM req_track WHERE origin = 'self-heal' AND scope = '2026-12-02..2026-12-02' AND actor = 'msgx:self-heal'`)
		m := p.count(t, `SELECT count(*) FROM req_track WHERE origin = 'self-heal' AND scope = '2026-12-03..2026-12-03'`)
		if on {
			require.Equal(t, 1, n, "one request for the day under the burst")
			require.Equal(t, 1, m, "another operation day is another scope")
			require.Equal(t, 2.0, testutil.ToFloat64(p.metrics.Triggers.WithLabelValues("self-heal", request.TriggerFired)))
		} else {
			require.Zero(t, n+m, "the trigger is off")
			require.Zero(t, p.count(t, `SELECT count(*) FROM req_heal_tally`), "off: nothing counted")
		}
	}
}
