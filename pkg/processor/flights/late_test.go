package flights_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/sisbuild"
	"github.com/msgx/msgx/pkg/flight"
)

// headerAt is header with the message's creation time (META DTTM, yyyyMMddHHmmss).
func headerAt(typ, styp, dttm string) string {
	at, err := time.Parse("20060102150405", dttm)
	if err != nil {
		panic("headerAt: " + err.Error())
	}
	return sisbuild.Header(seq.Next(), at, typ, styp)
}

// esttAt is a FLOP ESTT for flid created at dttm.
func esttAt(flid int64, dttm, estt string) string {
	return headerAt("FLOP", "ESTT", dttm) + fmt.Sprintf(`<FLOP><FLID>%d</FLID><FFID>YG-YG9028-D-02DEC260535-D</FFID><ESTT>%s</ESTT></FLOP></MSG>`, flid, estt)
}

// enqueueLate inserts a row below the watermark the way ingest's re-probe does (late = true):
// its id was skipped as a gap and later messages were processed meanwhile.
func (e *env) enqueueLate(t testing.TB, id int64, raw string) {
	t.Helper()
	_, err := e.queue.Exec(context.Background(), `INSERT INTO proc_state (msg_id, raw, raw_sha256, enqueued_at, late)
		VALUES ($1, $2, sha256(convert_to($2, 'UTF8')), $3, true)`, id, raw, e.clock.Now())
	require.NoError(t, err)
}

// skip leaves an id unused (the gap a late row fills).
func (e *env) skip() int64 { e.next++; return e.next }

// msgEvents returns the KAFKA:msg events of a flight.
func (e *env) msgEvents(t testing.TB, flid int64) []event {
	t.Helper()
	var out []event
	for _, ev := range e.events(t, flid) {
		if ev.Target == "KAFKA:msg" { // event.TargetMsg
			out = append(out, ev)
		}
	}
	return out
}

// TestLateRowNeverRegresses reproduces a late row (INV-24b): a departure estimate sent at
// 09:11 whose row committed after its gap window (found by the re-probe) reaches the head after
// one sent at 10:22 was applied. The 10:22 value stays, the late message is SKIPPED stale:late
// naming the field, and no event regresses the field.
func TestLateRowNeverRegresses(t *testing.T) {
	t.Parallel()
	e := setup(t, 10)
	const flid = 7001
	e.run(t, headerAt("SCHD", "DNLD", "20261202060000")+fmt.Sprintf(`<SCHD><RECS>1</RECS><FLTR>%s</FLTR></SCHD></MSG>`,
		fltr(flid, "YG9028", "02DEC261135", "<ESTT>02DEC261135</ESTT>")))
	lateID := e.skip() // the 09:11 row: inserted, committed only after ingest skipped its id
	newer := e.run(t, esttAt(flid, "20261202102200", "02DEC261240"))[0]
	require.Equal(t, "SUCCEEDED", e.outcome(t, newer).Status)
	before := e.msgEvents(t, flid)

	e.enqueueLate(t, lateID, esttAt(flid, "20261202091100", "02DEC261205"))
	e.drain(t)

	require.Equal(t, outcome{Status: "SKIPPED", Reason: "stale:late: estt"}, e.outcome(t, lateID))
	s := e.state(t, flid)
	require.Equal(t, "2026-12-02T12:40:00", stateJSON(t, s)["estt"], "the value sent at 10:22 stays")
	require.Equal(t, newer, s.LastMsgID)
	after := e.msgEvents(t, flid)
	require.Equal(t, before, after, "the late message published nothing")
	last := after[len(after)-1]
	require.Equal(t, newer, last.MsgID)
	require.Equal(t, "2026-12-02T12:40:00", last.Payload["changed"].(map[string]any)["estt"].(map[string]any)["new"])

	// A later message in mailbox order applies even with an earlier DTTM (an AODB clock step
	// backwards never makes a fresh message stale).
	back := e.run(t, esttAt(flid, "20261202080000", "02DEC261300"))[0]
	require.Equal(t, outcome{Status: "SUCCEEDED"}, e.outcome(t, back))
	require.Equal(t, "2026-12-02T13:00:00", stateJSON(t, e.state(t, flid))["estt"])
}

// TestLateRowAppliesItsFreshPart: a late schedule record carrying a field a later-created message
// set (ESTT) and one nobody set since (ACFT) writes only ACFT; the reason names ESTT and the event
// carries only the ACFT change.
func TestLateRowAppliesItsFreshPart(t *testing.T) {
	t.Parallel()
	e := setup(t, 10)
	const flid = 7002
	e.run(t, headerAt("SCHD", "DNLD", "20261202060000")+fmt.Sprintf(`<SCHD><RECS>1</RECS><FLTR>%s</FLTR></SCHD></MSG>`,
		fltr(flid, "YG9028", "02DEC261135", "")))
	lateID := e.skip()
	newer := e.run(t, esttAt(flid, "20261202102200", "02DEC261240"))[0]
	stored := e.state(t, flid)

	// The record carries ESTT (set since by the 10:22 message) and ACFT 320 (stored: 733).
	rec := strings.Replace(fltr(flid, "YG9028", "02DEC261135", "<ESTT>02DEC261205</ESTT>"), "<ACFT>733</ACFT>", "<ACFT>320</ACFT>", 1)
	e.enqueueLate(t, lateID, headerAt("SCHD", "ADFT", "20261202091100")+fmt.Sprintf(`<SCHD><RECS>1</RECS><FLTR>%s</FLTR></SCHD></MSG>`, rec))
	e.drain(t)

	o := e.outcome(t, lateID)
	require.Equal(t, "SUCCEEDED", o.Status)
	require.Equal(t, "stale:late (applied in part; not written): estt", o.Reason)
	s := e.state(t, flid)
	j := stateJSON(t, s)
	require.Equal(t, "2026-12-02T12:40:00", j["estt"])
	require.Equal(t, "320", j["acft"])
	require.Equal(t, stored.Version+1, s.Version)
	evs := e.msgEvents(t, flid)
	last := evs[len(evs)-1]
	require.Equal(t, lateID, last.MsgID)
	require.Equal(t, []string{"acft"}, keys(last.Payload["changed"]))
	require.Equal(t, newer, evs[len(evs)-2].MsgID)
}

// TestFIFOProvenanceIsSaved: a message that changes no value still records that it set the
// field (no version, no event), so a late row older than it is stale.
func TestFIFOProvenanceIsSaved(t *testing.T) {
	t.Parallel()
	e := setup(t, 10)
	const flid = 7003
	e.run(t, headerAt("SCHD", "DNLD", "20261202060000")+fmt.Sprintf(`<SCHD><RECS>1</RECS><FLTR>%s</FLTR></SCHD></MSG>`,
		fltr(flid, "YG9028", "02DEC261135", "<ESTT>02DEC261240</ESTT>")))
	lateID := e.skip()
	v := e.state(t, flid).Version
	n := e.countEvents(t)
	same := e.run(t, esttAt(flid, "20261202102200", "02DEC261240"))[0] // re-confirms the value
	s := e.state(t, flid)
	require.Equal(t, v, s.Version)
	require.Equal(t, n, e.countEvents(t))
	require.Equal(t, same, s.P.F[flight.ESTT].MsgID, "the re-confirmation is recorded")

	e.enqueueLate(t, lateID, esttAt(flid, "20261202091100", "02DEC261205"))
	e.drain(t)
	require.Equal(t, outcome{Status: "SKIPPED", Reason: "stale:late: estt"}, e.outcome(t, lateID))
	require.Equal(t, "2026-12-02T12:40:00", stateJSON(t, e.state(t, flid))["estt"])
}
