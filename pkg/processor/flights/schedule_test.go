package flights_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/flight"
)

// dump is every flight-related row as text: the byte-identical comparison of INV-19.
func (e *env) dump(t testing.TB) string {
	t.Helper()
	var out string
	for _, q := range []string{
		`SELECT coalesce(string_agg(to_jsonb(f)::text, E'\n' ORDER BY flid), '') FROM flight f`,
		`SELECT coalesce(string_agg(to_jsonb(r)::text, E'\n' ORDER BY flid, kind, rtno), '') FROM flight_route r`,
		`SELECT coalesce(string_agg(to_jsonb(s)::text, E'\n' ORDER BY flid, psno), '') FROM flight_stand s`,
		`SELECT coalesce(string_agg(to_jsonb(d)::text, E'\n' ORDER BY flid, code), '') FROM flight_delay d`,
		`SELECT count(*)::text FROM ` + testdb.AllEvents,
		`SELECT count(*)::text FROM schd_snap_log`,
	} {
		var s string
		require.NoError(t, e.db.Pool.QueryRow(context.Background(), q).Scan(&s))
		out += s + "\n--\n"
	}
	return out
}

func TestScheduleSnapshot(t *testing.T) {
	t.Parallel()
	e := setup(t, 10)
	rec1 := fltr(1, "CA101", "23JAN210535", `<STND>504</STND><PSDT PSNO="1"><PSST>504</PSST></PSDT><PSDT PSNO="2"><PSST>505</PSST></PSDT><DELY CODE="AA" DURA="0010"></DELY>`)
	rec2 := fltr(2, "CA102", "23JAN212330", `<TRML>T2</TRML>`)
	id := e.run(t, schd("DNLD", rec1, rec2))[0]
	require.Equal(t, outcome{"SUCCEEDED", "", ""}, e.outcome(t, id))
	require.Equal(t, int64(1), e.state(t, 1).Version)
	require.Equal(t, "2021-01-23", e.state(t, 2).OperationDay)

	var ins, upd, unch int
	var start, end string
	require.NoError(t, e.db.Pool.QueryRow(context.Background(),
		`SELECT inserted, updated, unchanged, scope_start::text, scope_end::text FROM schd_snap_log WHERE msg_id = $1`, id).
		Scan(&ins, &upd, &unch, &start, &end))
	require.Equal(t, []any{2, 0, 0, "2021-01-23", "2021-01-23"}, []any{ins, upd, unch, start, end})

	// A FLOP-only field (CNCL) survives a later snapshot that does not carry it (INV-14).
	e.run(t, flop("CNCL", 1, `<CNCL>23JAN210600</CNCL>`))
	require.Equal(t, int64(2), e.state(t, 1).Version)

	// The same package again (a new message): nothing changes, no bump, no event; a log row.
	before := e.countEvents(t)
	id = e.run(t, schd("DNLD", rec1, rec2))[0]
	require.Equal(t, "SUCCEEDED", e.outcome(t, id).Status)
	require.Equal(t, before, e.countEvents(t))
	s1 := e.state(t, 1)
	require.Equal(t, int64(2), s1.Version)
	require.True(t, s1.F[flight.CNCL].Valid, "CNCL kept")
	require.NoError(t, e.db.Pool.QueryRow(context.Background(),
		`SELECT inserted, updated, unchanged FROM schd_snap_log WHERE msg_id = $1`, id).Scan(&ins, &upd, &unch))
	require.Equal(t, []int{0, 0, 2}, []int{ins, upd, unch})

	// A snapshot without flight 2 leaves it untouched (INV-15); a carried collection replaces,
	// a carried empty element clears, an uncarried field stays.
	rec1b := fltr(1, "CA101", "23JAN210540", `<PSDT PSNO="2"><PSST>506</PSST></PSDT><TRML></TRML><REMC></REMC>`)
	id = e.run(t, schd("RESP", rec1b))[0]
	require.Equal(t, "SUCCEEDED", e.outcome(t, id).Status)
	s1 = e.state(t, 1)
	require.Equal(t, int64(3), s1.Version)
	require.Equal(t, []flight.Row{{flight.Int(2), flight.Text("506")}}, s1.C[flight.PSDT])
	require.Equal(t, flight.Text("504"), s1.F[flight.STND], "STND not carried: kept")
	require.Len(t, s1.C[flight.DELY], 1, "DELY not carried: kept")
	require.Equal(t, flight.Text(""), s1.F[flight.REMC], "empty free text is stored empty")
	require.Equal(t, flight.Text(""), s1.F[flight.TRML])
	require.True(t, s1.F[flight.CNCL].Valid)
	s2 := e.state(t, 2)
	require.Equal(t, flight.Active, s2.Status)
	require.Equal(t, int64(1), s2.Version)

	// Replay of the same succeeded message id: audit only.
	_, err := e.db.Pool.Exec(context.Background(), `UPDATE proc_state SET status = 'PENDING', finished_at = NULL,
		backfill_next_at = NULL, identity_key = NULL WHERE msg_id = $1`, id)
	require.NoError(t, err)
	before = e.countEvents(t)
	dump := e.dump(t)
	e.drain(t)
	require.Equal(t, outcome{"SUCCEEDED", "", "replay: snapshot already applied"}, e.outcome(t, id))
	require.Equal(t, before, e.countEvents(t))
	var logs int
	require.NoError(t, e.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM schd_snap_log WHERE msg_id = $1`, id).Scan(&logs))
	require.Equal(t, 2, logs)
	require.NotEqual(t, dump, e.dump(t)) // only the audit row differs
}

// TestScheduleRejectsWholePackage: one bad record → DEAD PROTOCOL, every row byte-identical.
func TestScheduleRejectsWholePackage(t *testing.T) {
	t.Parallel()
	e := setup(t, 10)
	e.run(t, schd("DNLD",
		fltr(1, "CA101", "23JAN210535", `<PSDT PSNO="1"><PSST>504</PSST></PSDT>`),
		fltr(2, "CA102", "23JAN210600", "")))
	good := fltr(1, "CA101", "23JAN210535", `<STND>999</STND><PSDT PSNO="1"><PSST>999</PSST></PSDT>`)
	cases := map[string]string{
		"required field missing": schd("DNLD", good, `<FLID>3</FLID><ALCD>CA</ALCD><FLNO>CA3</FLNO><MVIN>D</MVIN><SODT>23JAN210600</SODT><FLTY>W</FLTY><FLIN>D</FLIN>`),
		"bad date":               schd("DNLD", good, fltr(3, "CA103", "30FEB210600", "")),
		"RECS mismatch": header("SCHD", "DNLD") + "<SCHD><RECS>3</RECS><FLTR>" + good + "</FLTR><FLTR>" +
			fltr(3, "CA103", "23JAN210600", "") + "</FLTR></SCHD></MSG>",
		"stored operation day":     schd("DNLD", good, fltr(2, "CA102", "24JAN210600", "")),
		"FLID twice, two days":     schd("DNLD", good, fltr(3, "CA103", "23JAN210600", ""), fltr(3, "CA103", "24JAN210600", "")),
		"duplicate PSNO in record": schd("DNLD", good, fltr(3, "CA103", "23JAN210600", `<PSDT PSNO="1"><PSST>1</PSST></PSDT><PSDT PSNO="1"><PSST>2</PSST></PSDT>`)),
		"ADFT stored day":          schd("ADFT", good, fltr(2, "CA102", "22JAN212359", "")),
	}
	for name, raw := range cases {
		before := e.dump(t)
		id := e.run(t, raw)[0]
		o := e.outcome(t, id)
		require.Equal(t, "DEAD", o.Status, name)
		require.Equal(t, "PROTOCOL", o.Class, "%s: %s", name, o.Reason)
		require.Equal(t, before, e.dump(t), name)
	}
	// The operation day is immutable, also for a plain time change on the same day: allowed.
	id := e.run(t, schd("ADFT", fltr(2, "CA102", "23JAN212359", "")))[0]
	require.Equal(t, "SUCCEEDED", e.outcome(t, id).Status)
	require.Equal(t, "2021-01-23", e.state(t, 2).OperationDay)
}

func children(s *flight.State) []flight.Child { return s.MAFL }

// TestMAFL: the master's projection and versions as INV-21/22.
func TestMAFL(t *testing.T) {
	t.Parallel()
	e := setup(t, 10)
	child := func(flid int64, flno string, maid int64) string {
		return fltr(flid, flno, "23JAN210800", fmt.Sprintf("<CSOP>CA</CSOP><CSFT>CA100</CSFT><MAID>%d</MAID>", maid))
	}
	// Master and two children in one package: the master is created with its MAFL, version 1.
	e.run(t, schd("DNLD", fltr(100, "CA100", "23JAN210800", ""), child(102, "ZH102", 100), child(101, "MU101", 100)))
	m := e.state(t, 100)
	require.Equal(t, int64(1), m.Version)
	require.Equal(t, []flight.Child{{FLID: 101, FLNO: "MU101"}, {FLID: 102, FLNO: "ZH102"}}, children(m))
	evs := e.events(t, 100)
	require.Len(t, evs, 2)
	require.Equal(t, []any{map[string]any{"flid": 101.0, "flno": "MU101"}, map[string]any{"flid": 102.0, "flno": "ZH102"}}, evs[1].Payload["mafl"])

	// Child added: master bumped once, its events carry the new MAFL.
	e.run(t, schd("ADFT", child(103, "3U103", 100)))
	m = e.state(t, 100)
	require.Equal(t, int64(2), m.Version)
	require.Equal(t, []flight.Child{{FLID: 101, FLNO: "MU101"}, {FLID: 102, FLNO: "ZH102"}, {FLID: 103, FLNO: "3U103"}}, children(m))
	evs = e.events(t, 100)
	require.Len(t, evs, 4)
	require.Equal(t, []string{"mafl"}, keys(evs[2].Payload["changed"]))
	require.Equal(t, "ADFT", evs[2].Payload["styp"])

	// Child deleted (FDEL): leaves the projection.
	e.run(t, flop("FDEL", 102, "<FDEL/>"))
	m = e.state(t, 100)
	require.Equal(t, int64(3), m.Version)
	require.Equal(t, []flight.Child{{FLID: 101, FLNO: "MU101"}, {FLID: 103, FLNO: "3U103"}}, children(m))

	// A FLOP on a child that does not touch MAID/FLNO leaves the master alone.
	e.run(t, flop("STND", 101, "<STND>1</STND>"))
	require.Equal(t, int64(3), e.state(t, 100).Version)

	// MAID moved: both masters bumped in the same transaction.
	e.run(t, schd("ADFT", fltr(200, "CA200", "23JAN210800", "")))
	id := e.run(t, schd("ADFT", child(103, "3U103", 200)))[0]
	m, m2 := e.state(t, 100), e.state(t, 200)
	require.Equal(t, int64(4), m.Version)
	require.Equal(t, []flight.Child{{FLID: 101, FLNO: "MU101"}}, children(m))
	require.Equal(t, int64(2), m2.Version)
	require.Equal(t, []flight.Child{{FLID: 103, FLNO: "3U103"}}, children(m2))
	require.Equal(t, id, m.LastMsgID)
	require.Equal(t, id, m2.LastMsgID)

	// Child's FLNO changed: the element changes, the master is bumped.
	e.run(t, schd("ADFT", child(101, "MU111", 100)))
	m = e.state(t, 100)
	require.Equal(t, int64(5), m.Version)
	require.Equal(t, []flight.Child{{FLID: 101, FLNO: "MU111"}}, children(m))

	// Self-reference: never in the projection, no extra bump.
	e.run(t, schd("ADFT", child(300, "CA300", 300)))
	s := e.state(t, 300)
	require.Equal(t, int64(1), s.Version)
	require.Empty(t, children(s))
	require.Len(t, e.events(t, 300), 2)

	// Dangling reference: no master, nothing projected; the master created later derives it.
	e.run(t, schd("ADFT", child(401, "MU401", 400)))
	require.Nil(t, e.state(t, 400))
	require.Empty(t, e.events(t, 400))
	e.run(t, schd("ADFT", fltr(400, "CA400", "23JAN210800", "")))
	require.Equal(t, []flight.Child{{FLID: 401, FLNO: "MU401"}}, children(e.state(t, 400)))
	require.Equal(t, int64(1), e.state(t, 400).Version)

	// A DELETED master is not bumped by its children (no UPSERT after its TOMBSTONE).
	e.run(t, flop("FDEL", 400, "<FDEL/>"))
	e.run(t, schd("ADFT", child(402, "MU402", 400)))
	require.Equal(t, int64(2), e.state(t, 400).Version)

	// A deleted child re-activated by schedule comes back into the projection.
	e.run(t, schd("ADFT", child(102, "ZH102", 100)))
	m = e.state(t, 100)
	require.Equal(t, int64(6), m.Version)
	require.Equal(t, []flight.Child{{FLID: 101, FLNO: "MU111"}, {FLID: 102, FLNO: "ZH102"}}, children(m))
}

func keys(v any) []string {
	var out []string
	for k := range v.(map[string]any) {
		out = append(out, k)
	}
	return out
}
