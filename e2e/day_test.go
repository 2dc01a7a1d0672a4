package e2e_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/simulate"
	"github.com/msgx/msgx/pkg/dev/stack"
	"github.com/msgx/msgx/pkg/flight"
	"github.com/msgx/msgx/pkg/flightstore"
)

// TestSimulatedDayEndToEnd runs a small simulated day through the four binaries and checks
// that (1) every message got the outcome the simulator intended, (2) every flight's state in
// PostgreSQL equals the simulator's expected state field by field, and (3) the last record per
// FLID on msgx.flight.state is that state (a tombstone for a deleted flight).
func TestSimulatedDayEndToEnd(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()

	cfg := simulate.DefaultConfig()
	cfg.Seed, cfg.Flights, cfg.Additions = 32, 40, 2
	cfg.Date = airportToday(t)
	day := simulate.Generate(cfg)
	t.Logf("simulated day: %s", day.Summary())
	counts := day.Counts()
	for _, o := range simulate.Outcomes {
		require.Positive(t, counts[o], "the day should have %s messages (seed %d)", o, cfg.Seed)
	}

	start := time.Now()
	wr := b.write(t, ctx, simulate.WriterConfig{Conns: 4, Pace: simulate.PaceFast, HoldShare: 0.05, Seed: cfg.Seed}, day.Messages)
	require.Empty(t, wr.Gaps, "no rolled-back inserts in this test")
	require.Positive(t, wr.OutOfOrder, "some commits should be out of order")
	t.Logf("wrote %d messages in %s (%d out-of-order commits)", len(wr.IDs), time.Since(start).Round(time.Millisecond), wr.OutOfOrder)

	b.waitDrained(t, maxOf(wr.IDs), 2*time.Minute)
	t.Logf("drained %s after the first write", time.Since(start).Round(time.Millisecond))

	checkOutcomes(t, b, day, wr)
	states := loadAll(t, b)
	checkReadAPI(t, b, states)
	b.checkProductionShaped(t)
	checkFlights(t, day.Expected, states)
	checkStateTopic(t, b.consumer, states)
	checkChangesComplete(t, b.consumer, states)

	masters, deleted := 0, 0
	for _, s := range states {
		if len(s.MAFL) > 0 {
			masters++
		}
		if s.Status == flight.Deleted {
			deleted++
		}
	}
	require.Positive(t, masters, "the day should have code-share masters (MAFL compared)")
	t.Logf("compared %d flights (%d deleted, %d code-share masters); records read: %d on %s, %d on %s",
		len(states), deleted, masters, b.consumer.Count(topicChanges), topicChanges, b.consumer.Count(topicState), topicState)
}

// checkReadAPI reads every operation day through ingest's authenticated read API (ingest's
// role, its own pool, over TLS): each flight is served exactly as stored.
func checkReadAPI(t *testing.T, b *bundle, states map[int64]*flight.State) {
	t.Helper()
	days := map[string]int{}
	for _, s := range states {
		days[s.OperationDay]++
	}
	served := 0
	for d, n := range days {
		req, err := http.NewRequest(http.MethodGet, "http://"+b.stack.Proc("ingest").APIAddr+"/all/flights?day="+d, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+b.stack.APIToken)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
		var got []json.RawMessage
		require.NoError(t, json.Unmarshal(body, &got))
		require.Len(t, got, n, "day %s", d)
		for _, raw := range got {
			var id struct {
				FLID int64 `json:"flid"`
			}
			require.NoError(t, json.Unmarshal(raw, &id))
			require.JSONEq(t, string(states[id.FLID].AppendJSON(nil)), string(raw), "flight %d", id.FLID)
			served++
		}
	}
	require.Equal(t, len(states), served)
}

// --- outcomes -------------------------------------------------------------------------------

type procRow struct {
	status, class, reason string
}

func procStates(t *testing.T, b *bundle) map[int64]procRow {
	t.Helper()
	rows, err := b.pg.Pool.Query(context.Background(),
		`SELECT msg_id, status, COALESCE(error_class, ''), COALESCE(reason, '') FROM proc_state`)
	require.NoError(t, err)
	out := map[int64]procRow{}
	var id int64
	var r procRow
	_, err = pgx.ForEachRow(rows, []any{&id, &r.status, &r.class, &r.reason}, func() error {
		out[id] = r
		return nil
	})
	require.NoError(t, err)
	return out
}

// checkOutcomes: applied → SUCCEEDED, duplicate → SKIPPED duplicate-of:<original's id>,
// malformed → DEAD MALFORMED, protocol → DEAD PROTOCOL, for every message by its mailbox id.
func checkOutcomes(t *testing.T, b *bundle, day simulate.Day, wr simulate.Written) {
	t.Helper()
	got := procStates(t, b)
	require.Len(t, got, len(day.Messages), "one proc_state row per written message")
	var bad []string
	for i, m := range day.Messages {
		id := wr.IDs[i]
		r, ok := got[id]
		if !ok {
			bad = append(bad, fmt.Sprintf("message %d (mailbox id %d, %s/%s): no proc_state row", i, id, m.Type, m.Subtype))
			continue
		}
		var want procRow
		switch m.Outcome {
		case simulate.OutcomeApplied:
			want = procRow{status: "SUCCEEDED"}
		case simulate.OutcomeDuplicate:
			want = procRow{status: "SKIPPED", reason: "duplicate-of:" + strconv.FormatInt(wr.IDs[m.DuplicateOf], 10)}
		case simulate.OutcomeMalformed:
			want = procRow{status: "DEAD", class: "MALFORMED"}
		case simulate.OutcomeProtocol:
			want = procRow{status: "DEAD", class: "PROTOCOL"}
		}
		// The reason is checked for duplicates only: it is free text for the other outcomes.
		if r.status != want.status || r.class != want.class || (want.reason != "" && r.reason != want.reason) {
			bad = append(bad, fmt.Sprintf("message %d (mailbox id %d, %s/%s FLID %d, intended %s %s): want %s %s %s, got %s %s %q",
				i, id, m.Type, m.Subtype, m.FLID, m.Outcome, m.Bad, want.status, want.class, want.reason, r.status, r.class, r.reason))
		}
	}
	noProblems(t, bad, "%d of %d messages did not get their intended outcome", len(bad), len(day.Messages))
}

// --- flights --------------------------------------------------------------------------------

// loadAll loads every stored flight with flightstore.Load.
func loadAll(t *testing.T, b *bundle) map[int64]*flight.State {
	t.Helper()
	ctx := context.Background()
	tx, err := b.pg.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	rows, err := tx.Query(ctx, `SELECT flid FROM flight ORDER BY flid`)
	require.NoError(t, err)
	flids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	loaded, err := flightstore.Load(ctx, tx, flids)
	require.NoError(t, err)
	require.Len(t, loaded.States, len(flids))
	return loaded.States
}

// expectedState maps the simulator's model of a flight onto the processor's state.
//
// Mapping (model field → state field; a zero model value is NULL, see model.go's conventions):
// scalar fields one to one (Airline→alcd, FlightNumber→flno, Movement→mvin, Scheduled→sodt,
// FlightType→flty, Indicator→flin, AircraftType→acft, Registration→reno, Terminal→trml,
// MaxPax→maxp, LinkedAirline/LinkedFlight/LinkedFLID→taop/tafl/taid,
// MasterAirline/MasterFlight/MasterFLID→csop/csft/maid, PaxHandler/FieldHandler/MaintHandler→
// phag/fhag/mhag, ExtStatus/ExtRemark→exsc/exsr, Status→ftss, Stand→stnd, Estimated→estt,
// Actual→actt, Cancelled→cncl, BoardingOpen→botm, LastCall→lacl, EstOffBlock→eobt,
// TargetOffBlock→tobt, Diversion→fdiv_ddes/fdiv_ddir/fdiv_reason, Return→fret_reid/fret_reason);
// operation_day is the calendar day of Scheduled; collections row by row (Route→rout,
// FullRoute→erut, Stands→psdt with the PSHT/TIPT columns NULL, Gates→gtdt, Checkins→ckdt,
// Carousels→cldt, Chutes→chdt, Chocks→chot, Airbridges→abtm, Delays→dely with DURA in minutes).
// Every state field the model does not record (ffid, alsc, flab_*, appt, fint, …, srvt, vipf)
// must be NULL/empty: the simulator never sends them.
//
// Where the model and the processor deliberately differ:
//   - Collection order: the processor keeps rows in input order (a new DELY code is appended),
//     the model sorts them by sequence number or code. Rows are compared as sorted by their key.
//   - CodeShares vs MAFL: the model derives CodeShares for every master, the processor projects
//     MAFL only for an ACTIVE master (INV-21: "only an ACTIVE master has a projection"). A
//     DELETED master is expected with an empty MAFL; for an ACTIVE master CodeShares = MAFL.
func expectedState(f simulate.Flight) flight.State {
	s := flight.State{FLID: f.FLID, Status: string(f.State), OperationDay: flight.OperationDay(f.Scheduled)}
	set := func(fl flight.F, v flight.Value) { s.F[fl] = v }
	set(flight.ALCD, text(f.Airline))
	set(flight.FLNO, text(f.FlightNumber))
	set(flight.MVIN, text(f.Movement))
	set(flight.SODT, tm(f.Scheduled))
	set(flight.FLTY, text(f.FlightType))
	set(flight.FLIN, text(f.Indicator))
	set(flight.ACFT, text(f.AircraftType))
	set(flight.RENO, text(f.Registration))
	set(flight.TRML, text(f.Terminal))
	set(flight.MAXP, num(int64(f.MaxPax)))
	set(flight.TAOP, text(f.LinkedAirline))
	set(flight.TAFL, text(f.LinkedFlight))
	set(flight.TAID, num(f.LinkedFLID))
	set(flight.CSOP, text(f.MasterAirline))
	set(flight.CSFT, text(f.MasterFlight))
	set(flight.MAID, num(f.MasterFLID))
	set(flight.PHAG, num(f.PaxHandler))
	set(flight.FHAG, num(f.FieldHandler))
	set(flight.MHAG, num(f.MaintHandler))
	set(flight.EXSC, text(f.ExtStatus))
	set(flight.EXSR, text(f.ExtRemark))
	set(flight.FTSS, text(f.Status))
	set(flight.STND, text(f.Stand))
	set(flight.ESTT, tm(f.Estimated))
	set(flight.ACTT, tm(f.Actual))
	set(flight.CNCL, tm(f.Cancelled))
	set(flight.BOTM, tm(f.BoardingOpen))
	set(flight.LACL, tm(f.LastCall))
	set(flight.EOBT, tm(f.EstOffBlock))
	set(flight.TOBT, tm(f.TargetOffBlock))
	if d := f.Diversion; d != nil {
		set(flight.FDIVDDES, text(d.Airport))
		set(flight.FDIVDDIR, text(d.Direction))
		set(flight.FDIVReason, text(d.Reason))
	}
	if r := f.Return; r != nil {
		set(flight.FRETREID, text(r.Type))
		set(flight.FRETReason, text(r.Reason))
	}
	route := func(rs []simulate.RouteStop) []flight.Row {
		return conv(rs, func(r simulate.RouteStop) flight.Row {
			return flight.Row{seqv(r.Seq), text(r.Airport), tm(r.Arrival), tm(r.Departure)}
		})
	}
	s.C[flight.ROUT] = route(f.Route)
	s.C[flight.ERUT] = route(f.FullRoute)
	s.C[flight.PSDT] = conv(f.Stands, func(r simulate.StandAlloc) flight.Row {
		return flight.Row{seqv(r.Seq), text(r.Stand), tm(r.Start), tm(r.End)}
	})
	s.C[flight.GTDT] = conv(f.Gates, func(r simulate.GateAlloc) flight.Row {
		return flight.Row{seqv(r.Seq), text(r.Gate), tm(r.PlannedOpen), tm(r.PlannedClose), tm(r.Open), tm(r.Close), text(r.Type)}
	})
	s.C[flight.CKDT] = conv(f.Checkins, func(r simulate.CheckinAlloc) flight.Row {
		return flight.Row{seqv(r.Seq), text(r.Desk), text(r.Class), tm(r.PlannedOpen), tm(r.PlannedClose), tm(r.Open), tm(r.Close), text(r.Type)}
	})
	s.C[flight.CLDT] = conv(f.Carousels, func(r simulate.CarouselAlloc) flight.Row {
		return flight.Row{seqv(r.Seq), text(r.Belt), text(r.Class), tm(r.PlannedOpen), tm(r.PlannedClose), tm(r.FirstBag), tm(r.LastBag), text(r.Type)}
	})
	s.C[flight.CHDT] = conv(f.Chutes, func(r simulate.ChuteAlloc) flight.Row {
		return flight.Row{seqv(r.Seq), text(r.Chute), text(r.Class), tm(r.PlannedBegin), tm(r.PlannedEnd), tm(r.Begin), tm(r.End), text(r.Type)}
	})
	s.C[flight.CHOT] = conv(f.Chocks, func(r simulate.Chock) flight.Row {
		return flight.Row{seqv(r.Seq), tm(r.Time), text(r.Indicator), text(r.Stand)}
	})
	s.C[flight.ABTM] = conv(f.Airbridges, func(r simulate.AirbridgeOp) flight.Row {
		return flight.Row{seqv(r.Seq), text(r.Airbridge), text(r.Op), tm(r.Time)}
	})
	s.C[flight.DELY] = conv(f.Delays, func(r simulate.Delay) flight.Row {
		return flight.Row{text(r.Code), tm(r.Start), num(int64(r.Minutes)), text(r.Comment)}
	})
	if f.State == simulate.StateActive {
		for _, c := range f.CodeShares {
			s.MAFL = append(s.MAFL, flight.Child{FLID: c.FLID, FLNO: c.FlightNumber})
		}
	}
	return s
}

func text(s string) flight.Value {
	if s == "" {
		return flight.Null
	}
	return flight.Text(s)
}

func num(i int64) flight.Value {
	if i == 0 {
		return flight.Null
	}
	return flight.Int(i)
}

func seqv(i int) flight.Value { return flight.Int(int64(i)) }

func tm(t time.Time) flight.Value {
	if t.IsZero() {
		return flight.Null
	}
	return flight.Time(t)
}

func conv[T any](in []T, f func(T) flight.Row) []flight.Row {
	if len(in) == 0 {
		return nil
	}
	out := make([]flight.Row, len(in))
	for i, e := range in {
		out[i] = f(e)
	}
	return out
}

// byKey returns rows sorted by their key (first column): the comparison ignores input order.
func byKey(rows []flight.Row) []flight.Row {
	out := slices.Clone(rows)
	slices.SortStableFunc(out, func(a, b flight.Row) int {
		if c := cmp.Compare(a[0].I, b[0].I); c != 0 {
			return c
		}
		return cmp.Compare(a[0].S, b[0].S)
	})
	return out
}

// mismatch is one difference between the expected and the stored state of a flight.
type mismatch struct {
	flid      int64
	field     string
	want, got string
}

func (m mismatch) String() string {
	return fmt.Sprintf("FLID %d %s: want %s, got %s", m.flid, m.field, m.want, m.got)
}

// diffState lists every field where got differs from want.
func diffState(want, got *flight.State) []mismatch {
	var out []mismatch
	add := func(field, w, g string) { out = append(out, mismatch{flid: want.FLID, field: field, want: w, got: g}) }
	if want.Status != got.Status {
		add("state", want.Status, got.Status)
	}
	if want.OperationDay != got.OperationDay {
		add("operation_day", want.OperationDay, got.OperationDay)
	}
	for f := range flight.NumFields {
		if want.F[f] != got.F[f] {
			k := flight.Fields[f].Kind
			add(flight.Fields[f].Name, valueText(want.F[f], k), valueText(got.F[f], k))
		}
	}
	for c := range flight.NumColls {
		w, g := byKey(want.C[c]), byKey(got.C[c])
		if !slices.Equal(w, g) {
			add(flight.Collections[c].Name, rowsText(c, w), rowsText(c, g))
		}
	}
	if !slices.Equal(want.MAFL, got.MAFL) {
		add("mafl (CodeShares)", fmt.Sprint(want.MAFL), fmt.Sprint(got.MAFL))
	}
	return out
}

func valueText(v flight.Value, k flight.Kind) string {
	if !v.Valid {
		return "null"
	}
	switch k {
	case flight.KindInt:
		return strconv.FormatInt(v.I, 10)
	case flight.KindTime:
		return v.T.Format(flight.TimeLayout)
	}
	return strconv.Quote(v.S)
}

func rowsText(c flight.C, rows []flight.Row) string {
	cols := flight.Collections[c].Cols
	parts := make([]string, len(rows))
	for i, r := range rows {
		cells := make([]string, len(cols))
		for j, col := range cols {
			cells[j] = col.Name + "=" + valueText(r[j], col.Kind)
		}
		parts[i] = "{" + strings.Join(cells, " ") + "}"
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// checkFlights compares every expected flight with its stored state, field by field, and
// requires no stored flight the simulator does not know.
func checkFlights(t *testing.T, exp simulate.Expected, states map[int64]*flight.State) {
	t.Helper()
	var bad []string
	for _, f := range exp.Flights {
		got, ok := states[f.FLID]
		if !ok {
			bad = append(bad, fmt.Sprintf("FLID %d: not stored (want %s)", f.FLID, f.State))
			continue
		}
		want := expectedState(f)
		for _, m := range diffState(&want, got) {
			bad = append(bad, m.String())
		}
	}
	for flid := range states {
		if _, ok := exp.Flight(flid); !ok {
			bad = append(bad, fmt.Sprintf("FLID %d: stored, but the simulator never created it", flid))
		}
	}
	sort.Strings(bad)
	noProblems(t, bad, "%d differences between the simulator's expected flights (%d) and PostgreSQL (FLID field: want, got)",
		len(bad), len(exp.Flights))
}

// --- Kafka ----------------------------------------------------------------------------------

// lastPerFLID returns the last record of topic per FLID, in consumption (partition) order.
func lastPerFLID(recs []stack.Record, topic string) map[int64]stack.Record {
	out := map[int64]stack.Record{}
	for _, r := range recs {
		if r.Topic != topic {
			continue
		}
		flid, err := strconv.ParseInt(r.FLID, 10, 64)
		if err != nil {
			continue
		}
		out[flid] = r
	}
	return out
}

// waitConsumed waits (bounded) until the consumer's last msgx.flight.state record of every stored
// flight carries the flight's state_version: the dispatcher sent it (the outbox is empty) but
// the consumer may still be fetching.
func waitConsumed(t *testing.T, c *stack.Consumer, states map[int64]*flight.State) map[int64]stack.Record {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		last := lastPerFLID(c.Records(), topicState)
		var behind []string
		for flid, s := range states {
			if r, ok := last[flid]; !ok || r.StateVersion < s.Version {
				behind = append(behind, fmt.Sprintf("%d (v%d, last read v%d)", flid, s.Version, r.StateVersion))
			}
		}
		if len(behind) == 0 || time.Now().After(deadline) {
			sort.Strings(behind)
			noProblems(t, behind, "msgx.flight.state has not delivered the stored version of %d FLIDs within 30s", len(behind))
			return last
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkStateTopic: the last msgx.flight.state record per FLID is the flight's stored state, as
// flight.State.AppendJSON writes it, or a tombstone (nil value) for a deleted flight. The outbox
// payload is jsonb, so the record's JSON is compared as JSON (key order and spacing differ).
func checkStateTopic(t *testing.T, c *stack.Consumer, states map[int64]*flight.State) {
	t.Helper()
	last := waitConsumed(t, c, states)
	var bad []string
	for flid, s := range states {
		r := last[flid]
		if r.StateVersion != s.Version {
			bad = append(bad, fmt.Sprintf("FLID %d: last record state_version %d, stored %d", flid, r.StateVersion, s.Version))
			continue
		}
		if s.Status == flight.Deleted {
			if r.Value != nil || r.EventType != "TOMBSTONE" {
				bad = append(bad, fmt.Sprintf("FLID %d: deleted, but the last record is %s with value %s", flid, r.EventType, r.Value))
			}
			continue
		}
		if r.EventType != "UPSERT" {
			bad = append(bad, fmt.Sprintf("FLID %d: ACTIVE, but the last record is a %s", flid, r.EventType))
			continue
		}
		for _, d := range jsonDiff(s.AppendJSON(nil), r.Value) {
			bad = append(bad, fmt.Sprintf("FLID %d: %s", flid, d))
		}
	}
	for flid := range last {
		if _, ok := states[flid]; !ok {
			bad = append(bad, fmt.Sprintf("FLID %d: on msgx.flight.state but not stored", flid))
		}
	}
	sort.Strings(bad)
	noProblems(t, bad, "msgx.flight.state differs from PostgreSQL (FLID key: want = PostgreSQL, got = Kafka)")
}

// jsonDiff compares two JSON objects and lists the keys whose values differ (want = PostgreSQL,
// got = Kafka).
func jsonDiff(want, got []byte) []string {
	decode := func(b []byte) (map[string]any, error) {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var m map[string]any
		return m, d.Decode(&m)
	}
	w, err := decode(want)
	if err != nil {
		return []string{fmt.Sprintf("state JSON does not decode: %v", err)}
	}
	g, err := decode(got)
	if err != nil {
		return []string{fmt.Sprintf("record value does not decode: %v: %s", err, got)}
	}
	var out []string
	for k, wv := range w {
		gv, ok := g[k]
		if !ok {
			out = append(out, fmt.Sprintf("key %q: want %s, missing on Kafka", k, compact(wv)))
		} else if !reflect.DeepEqual(wv, gv) {
			out = append(out, fmt.Sprintf("key %q: want %s, got %s", k, compact(wv), compact(gv)))
		}
	}
	for k, gv := range g {
		if _, ok := w[k]; !ok {
			out = append(out, fmt.Sprintf("key %q: not in the state JSON, got %s", k, compact(gv)))
		}
	}
	return out
}

func compact(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// checkChangesComplete: per FLID, msgx.flight.changes holds every state_version from 1 to the
// stored one, in order, once duplicates (same flid and state_version) are dropped.
func checkChangesComplete(t *testing.T, c *stack.Consumer, states map[int64]*flight.State) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		bad := changesProblems(c.Records(), states)
		if len(bad) == 0 {
			return
		}
		if time.Now().After(deadline) {
			noProblems(t, bad, "msgx.flight.changes is incomplete or out of order per FLID")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// changesProblems checks msgx.flight.changes against the stored versions: per FLID, after
// dropping records whose (flid, state_version) was already seen, the versions are 1, 2, … up to
// the stored state_version, in that order.
func changesProblems(recs []stack.Record, states map[int64]*flight.State) []string {
	seen := map[int64]map[int64]bool{}
	order := map[int64][]int64{}
	for _, r := range recs {
		if r.Topic != topicChanges {
			continue
		}
		flid, err := strconv.ParseInt(r.FLID, 10, 64)
		if err != nil {
			continue
		}
		if seen[flid] == nil {
			seen[flid] = map[int64]bool{}
		}
		if seen[flid][r.StateVersion] {
			continue
		}
		seen[flid][r.StateVersion] = true
		order[flid] = append(order[flid], r.StateVersion)
	}
	var bad []string
	for flid, s := range states {
		vs := order[flid]
		for i, v := range vs {
			if v != int64(i+1) {
				bad = append(bad, fmt.Sprintf("FLID %d: versions on msgx.flight.changes %v, want 1..%d in order", flid, vs, s.Version))
				break
			}
		}
		if int64(len(vs)) != s.Version && (len(vs) == 0 || vs[len(vs)-1] == int64(len(vs))) {
			bad = append(bad, fmt.Sprintf("FLID %d: %d versions on msgx.flight.changes, stored state_version %d", flid, len(vs), s.Version))
		}
	}
	for flid := range order {
		if _, ok := states[flid]; !ok {
			bad = append(bad, fmt.Sprintf("FLID %d: on msgx.flight.changes but not stored", flid))
		}
	}
	sort.Strings(bad)
	return bad
}
