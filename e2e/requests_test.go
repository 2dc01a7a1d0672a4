package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/simulate"
)

// TestSimulatedAODBRequestLoop runs the request loop through the four binaries and the
// simulated AODB: the processor starts on an empty flight table and its bootstrap trigger asks
// for today and tomorrow, the jobs stage writes the RQFD to coutmsgs, the AODB answers with a
// SCHD RESP from its model, the processor applies it and closes the request DONE — every flight
// then equals the model field by field. A burst of FLOPs for unknown flights of one operation
// day fires the self-healing trigger once for that day, and its answer closes it too.
func TestSimulatedAODBRequestLoop(t *testing.T) {
	t.Parallel()
	b := setup(t, "MSGX_REQUEST_BOOTSTRAP=true", "MSGX_REQUEST_SWEEP_INTERVAL=200ms",
		"MSGX_REQUEST_SELF_HEAL=true", "MSGX_REQUEST_SELF_HEAL_THRESHOLD=3")
	ctx := context.Background()

	cfg := simulate.DefaultConfig().Today()
	cfg.Seed, cfg.Flights, cfg.Additions = 17, 40, 2
	model := simulate.Generate(cfg).AODBModel()
	aodb, err := simulate.StartAODB(b.mailbox.DSN, model, simulate.AODBConfig{}, 100*time.Millisecond)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, aodb.Stop()) })

	// The bootstrap request, answered and applied.
	type req struct {
		id             int64
		scope, status  string
		from, to       time.Time
		responseMsgID  int64
		match, closeBy string
	}
	read := func(where string, args ...any) []req {
		rows, err := b.pg.Pool.Query(ctx, `SELECT req_id, scope, status, scope_from, scope_to, COALESCE(response_msg_id, 0),
			COALESCE(match_kind, ''), COALESCE(close_reason, '') FROM req_track WHERE `+where+` ORDER BY req_id`, args...)
		require.NoError(t, err)
		defer rows.Close()
		var out []req
		for rows.Next() {
			var r req
			require.NoError(t, rows.Scan(&r.id, &r.scope, &r.status, &r.from, &r.to, &r.responseMsgID, &r.match, &r.closeBy))
			out = append(out, r)
		}
		require.NoError(t, rows.Err())
		return out
	}
	require.Eventually(t, func() bool {
		rs := read(`origin = 'bootstrap'`)
		return len(rs) == 1 && rs[0].status == "DONE"
	}, time.Minute, 100*time.Millisecond, "the bootstrap request is sent, answered and DONE (logs in %s)", b.logDir)
	boot := read(`origin = 'bootstrap'`)[0]
	day := cfg.Date
	require.Equal(t, fmt.Sprintf("%s..%s", day.Format(time.DateOnly), day.AddDate(0, 0, 1).Format(time.DateOnly)), boot.scope,
		"today and tomorrow (MSGX_REQUEST_BOOTSTRAP_DAYS 1)")
	require.Equal(t, "fallback", boot.match)
	var status, reason string
	require.NoError(t, b.pg.Pool.QueryRow(ctx, `SELECT status, reason FROM proc_state WHERE msg_id = $1`, boot.responseMsgID).Scan(&status, &reason))
	require.Equal(t, "SUCCEEDED", status)
	require.Contains(t, reason, fmt.Sprintf("answers request %d", boot.id))

	b.waitDrained(t, boot.responseMsgID, time.Minute)
	want := model.Expected(boot.from, boot.to)
	require.NotEmpty(t, want.Flights)
	states := loadAll(t, b)
	require.Len(t, states, len(want.Flights), "exactly the model's flights of the requested days")
	checkFlights(t, want, states)

	// A burst of FLOPs for unknown flights of the day after tomorrow: one self-healing request
	// for that day, whatever the burst's size.
	heal := day.AddDate(0, 0, 2)
	var burst []simulate.Message
	at := time.Now()
	for i := range 30 {
		flid := int64(990000 + i)
		raw := fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<MSG><META><SNDR>AODB</SNDR><SEQN>%d</SEQN><DTTM>%s</DTTM><TYPE>FLOP</TYPE><STYP>STND</STYP></META><FLOP><FLID>%d</FLID><FFID>CA-CA%d-D-%s1000-D</FFID><STND>101</STND></FLOP></MSG>`,
			500+i, at.In(cfg.Location).Format("20060102150405"), flid, flid, strings.ToUpper(heal.Format("02Jan06")))
		burst = append(burst, simulate.Message{At: at, SNDR: "AODB", SEQN: int64(500 + i), Type: "FLOP", Subtype: "STND",
			FLID: flid, Raw: []byte(raw), Outcome: simulate.OutcomeApplied, DuplicateOf: -1})
	}
	wr := b.write(t, ctx, simulate.WriterConfig{Conns: 2, Pace: simulate.PaceFast}, burst)
	b.waitDrained(t, maxOf(wr.IDs), time.Minute)
	var skipped int
	require.NoError(t, b.pg.Pool.QueryRow(ctx, `SELECT count(*) FROM proc_state WHERE msg_id = ANY($1) AND status = 'SKIPPED' AND reason = 'no-match:FLID'`,
		wr.IDs).Scan(&skipped))
	require.Equal(t, len(burst), skipped, "every FLOP of the burst names an unknown flight")
	scope := heal.Format(time.DateOnly) + ".." + heal.Format(time.DateOnly)
	healed := read(`origin = 'self-heal'`)
	require.Len(t, healed, 1, "one self-healing request under the burst")
	require.Equal(t, scope, healed[0].scope)
	// The AODB knows no flight that day: its empty SCHD RESP answers the request.
	require.Eventually(t, func() bool { return read(`req_id = $1`, healed[0].id)[0].status == "DONE" },
		time.Minute, 100*time.Millisecond, "the self-healing request is answered (logs in %s)", b.logDir)
	require.Len(t, read(`origin = 'self-heal'`), 1, "still one")
	require.Len(t, loadAll(t, b), len(want.Flights), "an empty answer changes no flight")
}
