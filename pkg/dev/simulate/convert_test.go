package simulate

import (
	"time"

	"github.com/msgx/msgx/pkg/sis"
)

// fromRecord translates a decoded FLTR or FLOP payload into the model's terms:
// an absent or empty field gives the zero value. It is the test's independent
// reading of what the simulator sent.
func fromRecord(r sis.FlightRecord) Flight {
	s := func(f sis.Field[string]) string { v, _ := f.Get(); return v }
	t := func(f sis.Field[time.Time]) time.Time { v, _ := f.Get(); return v }
	i64 := func(f sis.Field[int64]) int64 { v, _ := f.Get(); return v }
	n := func(f sis.Field[int]) int { v, _ := f.Get(); return v }
	f := Flight{
		FLID: i64(r.FLID), Airline: s(r.ALCD), FlightNumber: s(r.FLNO), Movement: s(r.MVIN),
		Scheduled: t(r.SODT), FlightType: s(r.FLTY), Indicator: s(r.FLIN), AircraftType: s(r.ACFT),
		Registration: s(r.RENO), Terminal: s(r.TRML), MaxPax: n(r.MAXP),
		LinkedAirline: s(r.TAOP), LinkedFlight: s(r.TAFL), LinkedFLID: i64(r.TAID),
		MasterAirline: s(r.CSOP), MasterFlight: s(r.CSFT), MasterFLID: i64(r.MAID),
		PaxHandler: i64(r.PHAG), FieldHandler: i64(r.FHAG), MaintHandler: i64(r.MHAG),
		ExtStatus: s(r.EXSC), ExtRemark: s(r.EXSR), Status: s(r.FTSS), Stand: s(r.STND),
		Estimated: t(r.ESTT), Actual: t(r.ACTT), Cancelled: t(r.CNCL), BoardingOpen: t(r.BOTM),
		LastCall: t(r.LACL), EstOffBlock: t(r.EOBT), TargetOffBlock: t(r.TOBT),
	}
	if d, ok := r.FDIV.Get(); ok {
		f.Diversion = &Diversion{Airport: d.DDES, Direction: d.DDIR, Reason: d.Reason}
	}
	if d, ok := r.FRET.Get(); ok {
		f.Return = &Return{Type: d.Indicator, Reason: d.Reason}
	}
	for _, e := range r.ROUT.Items {
		f.Route = append(f.Route, RouteStop{Seq: n(e.RTNO), Airport: s(e.APCD), Arrival: t(e.SCAT), Departure: t(e.SCDT)})
	}
	for _, e := range r.ERUT.Items {
		f.FullRoute = append(f.FullRoute, RouteStop{Seq: n(e.RTNO), Airport: s(e.APCD), Arrival: t(e.SCAT), Departure: t(e.SCDT)})
	}
	for _, e := range r.PSDT.Items {
		f.Stands = append(f.Stands, StandAlloc{Seq: n(e.PSNO), Stand: s(e.PSST), Start: t(e.STST), End: t(e.STET)})
	}
	for _, e := range r.GTDT.Items {
		f.Gates = append(f.Gates, GateAlloc{Seq: n(e.GTNO), Gate: s(e.GATE), PlannedOpen: t(e.PGOT), PlannedClose: t(e.PGCT),
			Open: t(e.GOTM), Close: t(e.GCTM), Type: s(e.GTYP)})
	}
	for _, e := range r.CKDT.Items {
		f.Checkins = append(f.Checkins, CheckinAlloc{Seq: n(e.CKNO), Desk: s(e.CHKC), Class: s(e.CCLS), PlannedOpen: t(e.PCOT),
			PlannedClose: t(e.PCCT), Open: t(e.COTM), Close: t(e.CCTM), Type: s(e.CTYP)})
	}
	for _, e := range r.CLDT.Items {
		f.Carousels = append(f.Carousels, CarouselAlloc{Seq: n(e.CLNO), Belt: s(e.BELT), Class: s(e.BCLS), PlannedOpen: t(e.PCOT),
			PlannedClose: t(e.PCCT), FirstBag: t(e.FBAG), LastBag: t(e.LBAG), Type: s(e.BTYP)})
	}
	for _, e := range r.CHDT.Items {
		f.Chutes = append(f.Chutes, ChuteAlloc{Seq: n(e.CHNO), Chute: s(e.CHUT), Class: s(e.CCLS), PlannedBegin: t(e.PCBT),
			PlannedEnd: t(e.PCET), Begin: t(e.CBTM), End: t(e.CETM), Type: s(e.CTYP)})
	}
	for _, e := range r.CHOT.Items {
		f.Chocks = append(f.Chocks, Chock{Seq: n(e.CSNO), Time: t(e.CHTM), Indicator: s(e.CHID), Stand: s(e.CHST)})
	}
	for _, e := range r.ABTM.Items {
		f.Airbridges = append(f.Airbridges, AirbridgeOp{Seq: n(e.ASNO), Airbridge: s(e.ABDG), Op: s(e.ABOP), Time: t(e.AOTM)})
	}
	for _, e := range r.DELY.Items {
		f.Delays = append(f.Delays, Delay{Code: s(e.CODE), Start: t(e.STRT), Minutes: n(e.DURA), Comment: s(e.Comment)})
	}
	return f
}
