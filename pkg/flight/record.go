package flight

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/msgx/msgx/pkg/sis"
)

// VIPService is one VIPT child of a VIPF row, stored in flight_vip.vipt as JSON. Its fields
// are in alphabetical order so that its JSON is canonical (comparable as text).
type VIPService struct {
	VSCD *string `json:"vscd"`
	VTET *string `json:"vtet"`
	VTQY *int64  `json:"vtqy"`
	VTST *string `json:"vtst"`
}

func marshalVIPT(s []VIPService) string {
	if s == nil {
		s = []VIPService{}
	}
	b, _ := json.Marshal(s) // plain strings and numbers always marshal
	return string(b)
}

// CanonicalVIPT returns the canonical JSON text of a stored vipt value.
func CanonicalVIPT(raw []byte) (string, error) {
	var s []VIPService
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("decode vipt: %w", err)
	}
	return marshalVIPT(s), nil
}

func (v Value) ptrS() *string {
	if !v.Valid {
		return nil
	}
	return &v.S
}

func (v Value) ptrI() *int64 {
	if !v.Valid {
		return nil
	}
	return &v.I
}

func (v Value) ptrT() *string {
	if !v.Valid {
		return nil
	}
	s := v.T().Format(TimeLayout)
	return &s
}

// OperationDay is the local calendar day (YYYY-MM-DD) of a SIS time: SIS times are wall-clock
// times in the airport zone (MSGX_AIRPORT_TZ), so the day is read off the wall clock.
func OperationDay(sodt time.Time) string { return sodt.Format(time.DateOnly) }

// freeText are the text fields whose empty element is stored as "" rather than cleared
// (docs/sis.md §e.2: REMC RENO RUNW STND TRML FTSS and EXSS's EXSC).
var freeText = map[F]bool{REMC: true, RENO: true, RUNW: true, STND: true, TRML: true, FTSS: true, EXSC: true}

type textField struct {
	f   F
	get func(*sis.FlightRecord) sis.Field[string]
}

var recordText = []textField{
	{FFID, func(r *sis.FlightRecord) sis.Field[string] { return r.FFID }},
	{ALCD, func(r *sis.FlightRecord) sis.Field[string] { return r.ALCD }},
	{ALSC, func(r *sis.FlightRecord) sis.Field[string] { return r.ALSC }},
	{FLNO, func(r *sis.FlightRecord) sis.Field[string] { return r.FLNO }},
	{MVIN, func(r *sis.FlightRecord) sis.Field[string] { return r.MVIN }},
	{FLTY, func(r *sis.FlightRecord) sis.Field[string] { return r.FLTY }},
	{FLIN, func(r *sis.FlightRecord) sis.Field[string] { return r.FLIN }},
	{ACFT, func(r *sis.FlightRecord) sis.Field[string] { return r.ACFT }},
	{RENO, func(r *sis.FlightRecord) sis.Field[string] { return r.RENO }},
	{TAOP, func(r *sis.FlightRecord) sis.Field[string] { return r.TAOP }},
	{TAFL, func(r *sis.FlightRecord) sis.Field[string] { return r.TAFL }},
	{TRML, func(r *sis.FlightRecord) sis.Field[string] { return r.TRML }},
	{STND, func(r *sis.FlightRecord) sis.Field[string] { return r.STND }},
	{EXSC, func(r *sis.FlightRecord) sis.Field[string] { return r.EXSC }},
	{EXSR, func(r *sis.FlightRecord) sis.Field[string] { return r.EXSR }},
	{FTSS, func(r *sis.FlightRecord) sis.Field[string] { return r.FTSS }},
	{CSOP, func(r *sis.FlightRecord) sis.Field[string] { return r.CSOP }},
	{CSFT, func(r *sis.FlightRecord) sis.Field[string] { return r.CSFT }},
	{RUNW, func(r *sis.FlightRecord) sis.Field[string] { return r.RUNW }},
	{REMC, func(r *sis.FlightRecord) sis.Field[string] { return r.REMC }},
	{LBWT, func(r *sis.FlightRecord) sis.Field[string] { return r.LBWT }},
}

var recordTimes = []struct {
	f    F
	name string
}{
	{SODT, "SODT"}, {ESTT, "ESTT"}, {ACTT, "ACTT"}, {APPT, "APPT"}, {BOTM, "BOTM"}, {LACL, "LACL"},
	{FINT, "FINT"}, {CNCL, "CNCL"}, {EGSR, "EGSR"}, {EGST, "EGST"}, {PEDT, "PEDT"}, {NEAT, "NEAT"},
	{PADT, "PADT"}, {NAAT, "NAAT"}, {COBT, "COBT"}, {CTOT, "CTOT"}, {TOBT, "TOBT"}, {EOBT, "EOBT"},
	{IEST, "IEST"},
}

// applyRecord applies a schedule record (SCHD DNLD/RESP/ADFT FLTR) to s with the schedule rule
// (INV-14): a field the record carries is set (an empty element clears it, or stores "" for
// free text), a field it does not carry stays; a collection it carries replaces that
// collection. SODT sets the operation day, which never changes once set (INV-12).
func applyRecord(s *State, r *sis.FlightRecord) ([]string, error) {
	if err := setOperationDay(s, r); err != nil {
		return nil, err
	}
	setRecordScalars(s, r)
	if r.PORT.Present { // the record's PORT list is the door times: slots it does not name are cleared
		s.set(PortOpen, Null)
		s.set(PortClose, Null)
		if err := setPorts(s, r.PORT.Items); err != nil {
			return nil, err
		}
	}
	if err := replaceRecordCollections(s, r); err != nil {
		return nil, err
	}
	var notes []string
	if r.PSHT.Present {
		notes = append(notes, patchPush(s, r.PSHT.Items)...)
	}
	if r.TIPT.Present {
		notes = append(notes, patchTractor(s, r.TIPT.Items)...)
	}
	return notes, nil
}

// setOperationDay sets the operation day from the record's SODT, refusing a change (INV-12).
func setOperationDay(s *State, r *sis.FlightRecord) error {
	sodt, ok := r.SODT.Get()
	if !ok {
		return nil
	}
	day := OperationDay(sodt)
	if s.OperationDay != "" && s.OperationDay != day {
		return violation("flight %d: operation day conflict: stored %s, SODT %s gives %s",
			s.FLID, s.OperationDay, sodt.Format("02Jan06 15:04"), day)
	}
	s.OperationDay = day
	return nil
}

// setRecordScalars sets every scalar field the record carries.
func setRecordScalars(s *State, r *sis.FlightRecord) {
	for _, t := range recordText {
		v := t.get(r)
		switch {
		case !v.Present:
		case v.Empty && freeText[t.f]:
			s.set(t.f, Text(""))
		case t.f == LBWT:
			s.set(t.f, decimalVal(v))
		default:
			s.set(t.f, textVal(v))
		}
	}
	for _, t := range recordTimes {
		if v := *timeOf(r, t.name); v.Present {
			s.set(t.f, timeVal(v))
		}
	}
	setID := func(f F, v sis.Field[int64]) {
		if v.Present {
			s.set(f, idVal(v))
		}
	}
	setID(TAID, r.TAID)
	setID(PHAG, r.PHAG)
	setID(FHAG, r.FHAG)
	setID(MHAG, r.MHAG)
	setID(MAID, r.MAID)
	setInt := func(f F, v sis.Field[int]) {
		if v.Present {
			s.set(f, intVal(v))
		}
	}
	setInt(MAXP, r.MAXP)
	setInt(VIPP, r.VIPP)
	setInt(LBNO, r.LBNO)
	setInt(PAXC, r.PAXC)
	if r.VIPR.Present {
		s.set(VIPR, intText(r.VIPR))
	}
	if r.FDIV.Present {
		setDiversion(s, r.FDIV)
	}
	if r.FRET.Present {
		setIrregular(s, FRETREID, FRETReason, r.FRET)
	}
	if r.FLAB.Present {
		setIrregular(s, FLABARES, FLABReason, r.FLAB)
	}
}

// replaceRecordCollections replaces every collection the record carries. Sequence-numbered
// lists must not repeat a number; keyed lists take the last entry of a key.
func replaceRecordCollections(s *State, r *sis.FlightRecord) error {
	type carried struct {
		c       C
		present bool
		rows    []Row
	}
	for _, x := range []carried{
		{ROUT, r.ROUT.Present, rows(r.ROUT.Items, routeRow)},
		{ERUT, r.ERUT.Present, rows(r.ERUT.Items, routeRow)},
		{PSDT, r.PSDT.Present, rows(r.PSDT.Items, standRow)},
		{GTDT, r.GTDT.Present, rows(r.GTDT.Items, gateRow)},
		{CKDT, r.CKDT.Present, rows(r.CKDT.Items, checkinRow)},
		{CLDT, r.CLDT.Present, rows(r.CLDT.Items, carouselRow)},
		{CHDT, r.CHDT.Present, rows(r.CHDT.Items, chuteRow)},
		{CHOT, r.CHOT.Present, rows(r.CHOT.Items, chockRow)},
		{ABTM, r.ABTM.Present, rows(r.ABTM.Items, airbridgeRow)},
	} {
		if !x.present {
			continue
		}
		if err := replaceBySeq(s, x.c, x.rows); err != nil {
			return err
		}
	}
	for _, x := range []carried{
		{DELY, r.DELY.Present, rows(r.DELY.Items, delayRow)},
		{SRVT, r.SRVT.Present, rows(r.SRVT.Items, serviceRow)},
		{VIPF, r.VIPF.Present, rows(r.VIPF.Items, vipRow)},
	} {
		if x.present {
			mergeByKey(s, x.c, x.rows, true)
		}
	}
	return nil
}

func decimalVal(f sis.Field[string]) Value {
	if v, ok := f.Get(); ok {
		return Decimal(v)
	}
	return Null
}
