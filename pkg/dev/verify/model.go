package verify

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/msgx/msgx/pkg/dev/simulate"
	"github.com/msgx/msgx/pkg/flight"
)

// ExpectedState maps the simulator's model of a flight onto the processor's state.
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
func ExpectedState(f simulate.Flight) flight.State {
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

// Mismatch is one difference between the expected and the stored state of a flight.
type Mismatch struct {
	flid      int64
	field     string
	want, got string
}

func (m Mismatch) String() string {
	return fmt.Sprintf("FLID %d %s: want %s, got %s", m.flid, m.field, m.want, m.got)
}

// DiffState lists every field where got differs from want.
func DiffState(want, got *flight.State) []Mismatch {
	var out []Mismatch
	add := func(field, w, g string) { out = append(out, Mismatch{flid: want.FLID, field: field, want: w, got: g}) }
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
		return v.T().Format(flight.TimeLayout)
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
