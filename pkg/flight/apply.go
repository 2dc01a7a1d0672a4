package flight

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/msgx/msgx/pkg/sis"
)

// Outcomes of Apply that are not changes.
var (
	// ErrNoFlight: the message refers to a FLID that is not stored (the processor skips it:
	// procstate.NoMatch).
	ErrNoFlight = errors.New("flight not stored")
	// ErrDeleted: a FLOP or delete for a DELETED flight (skipped: procstate.NoMatchDeleted): no
	// version bump and no event, because an UPSERT after a TOMBSTONE would resurrect it downstream.
	ErrDeleted = errors.New("flight deleted")
)

// Violation is a message that breaks the SIS contract for this flight (PROTOCOL).
type Violation struct{ Reason string }

func (v *Violation) Error() string { return v.Reason }

func violation(format string, args ...any) error {
	return &Violation{Reason: fmt.Sprintf(format, args...)}
}

// Input is what Apply applies to one flight: a FLOP (Op), a schedule record to add or update
// (Record, from SCHD DNLD/RESP/ADFT), or a schedule delete (Record with Delete).
type Input struct {
	Op     *sis.FlightOp
	Record *sis.FlightRecord
	Delete bool
	// At is the stamp of the message (StampOf); the zero Stamp applies without provenance
	// (every write is fresh and nothing is stamped).
	At Stamp
	// Force makes every write of a stamped input fresh: an operator forced the replay of an
	// older message over what later-created messages set (INV-24b).
	Force bool
}

// Inputs are what a decoded flight message applies, unstamped: a FLOP's operation, or each
// schedule record (each a delete for SCHD DEL); none for any other message.
func Inputs(m *sis.Message) []Input {
	switch {
	case m.Flop != nil:
		return []Input{{Op: m.Flop}}
	case m.Schedule != nil:
		inputs := make([]Input, len(m.Schedule.Records))
		for i := range m.Schedule.Records {
			inputs[i] = Input{Record: &m.Schedule.Records[i], Delete: m.Kind == sis.KindScheduleDelete}
		}
		return inputs
	}
	return nil
}

// FLID returns the flight the input is about.
func (in Input) FLID() int64 {
	if in.Op != nil {
		return in.Op.FLID
	}
	return in.Record.FLID.Value
}

// Apply returns the next state of the flight cur (nil or not stored: no such flight) after in,
// and what changed. It never touches Version, LastMsgID or MAFL: the store bumps the version
// once per changed flight and message and derives MAFL over the whole message. Errors are
// ErrNoFlight, ErrDeleted or a *Violation; on error next is cur unchanged.
func Apply(cur *State, in Input) (State, Changes, error) {
	next, ch, err := applyInput(cur, in)
	if err != nil {
		return zero(cur), Changes{}, err
	}
	ch.Fields = Diff(cur, next).Fields
	return *next, ch, nil
}

// applyInput is Apply without the changed fields (Changes.Fields stays nil), for Batch, which
// compares the states itself: the next state is a new State of its own, or nil on error.
func applyInput(cur *State, in Input) (*State, Changes, error) {
	var w *writer
	if in.At != (Stamp{}) {
		w = &writer{at: in.At, force: in.Force}
	}
	next, notes, err := apply(cur, in, w)
	if err != nil {
		return nil, Changes{}, err
	}
	next.w = nil
	ch := Changes{Notes: notes}
	if w != nil {
		ch.Stale, ch.Written = w.stale, w.written
	}
	return next, ch, nil
}

func apply(cur *State, in Input, w *writer) (*State, []string, error) {
	next := new(State)
	var notes []string
	var err error
	switch {
	case in.Op != nil:
		if !cur.Exists() {
			return nil, nil, ErrNoFlight
		}
		if cur.Status == Deleted {
			return nil, nil, ErrDeleted
		}
		*next = cur.fork()
		next.w = w
		notes, err = applyOp(next, in.Op)
	case in.Delete:
		if !cur.Exists() {
			return nil, nil, ErrNoFlight
		}
		if cur.Status == Deleted {
			return nil, nil, ErrDeleted
		}
		*next = cur.fork()
		next.w = w
		next.setStatus(Deleted)
	case in.Record != nil:
		if cur.Exists() {
			*next = cur.fork()
		} else {
			next.FLID = in.Record.FLID.Value
		}
		next.w = w
		next.setStatus(Active)
		if next.Status == Deleted { // a later-created delete overtook this record (INV-24b)
			*next = *cur
			return next, nil, nil
		}
		notes, err = applyRecord(next, in.Record)
	default:
		return nil, nil, violation("nothing to apply")
	}
	if err != nil {
		return nil, nil, err
	}
	if next.Status == Deleted { // only an ACTIVE master has a projection (INV-21)
		next.MAFL = nil
	}
	return next, notes, nil
}

func zero(cur *State) State {
	if cur == nil {
		return State{}
	}
	return *cur
}

// Mode is how a FLOP subtype changes the flight (docs/sis.md §e.2, §e.3; docs/flight.md).
type Mode string

// The FLOP modes.
const (
	// ModeSet: the subtype's element(s) with a value set the field(s); empty or absent clears.
	ModeSet Mode = "set"
	// ModeRequired: a value sets the field; empty or absent is rejected (PROTOCOL).
	ModeRequired Mode = "set-required"
	// ModeText: present sets the field, empty stored as "" (distinct from NULL); absent rejected.
	ModeText Mode = "set-text"
	// ModeReplaceBySeq: the entries are the complete list, keyed by their sequence number:
	// new numbers inserted, known numbers updated in place, numbers not listed deleted; no
	// entries is rejected.
	ModeReplaceBySeq Mode = "replace-by-seq"
	// ModeMergeByKey: each entry inserts or updates the row with its key; rows not mentioned
	// stay; the bare empty element (DELY, ERUT, SRVT) removes all rows first.
	ModeMergeByKey Mode = "merge-by-key"
	// ModePatch: each entry patches the existing stand rows of its stand.
	ModePatch Mode = "patch-existing-rows"
	// ModeDelete: the flight becomes DELETED.
	ModeDelete Mode = "delete"
)

// SubtypeModes is the mode of every supported FLOP subtype: the 48 of docs/sis.md §b.3 plus ESTT
// and ACTT.
var SubtypeModes = map[string]Mode{
	"APPT": ModeSet, "BOTM": ModeSet, "CNCL": ModeSet, "EGSR": ModeSet, "EGST": ModeSet,
	"FINT": ModeSet, "LACL": ModeSet, "COBT": ModeSet, "CTOT": ModeSet, "EOBT": ModeSet,
	"IEST": ModeSet, "NAAT": ModeSet, "NEAT": ModeSet, "PADT": ModeSet, "PEDT": ModeSet,
	"TOBT": ModeSet, "ESTT": ModeSet, "ACTT": ModeSet,
	"FDIV": ModeSet, "FLAB": ModeSet, "FRET": ModeSet, "HNAG": ModeSet, "VIPP": ModeSet,
	"TAOP": ModeSet, "PORT": ModeSet, "EXSS": ModeSet,
	"ACFT": ModeRequired, "FLIN": ModeRequired, "FLTY": ModeRequired, "MAXP": ModeRequired,
	"REMC": ModeText, "RENO": ModeText, "RUNW": ModeText, "STND": ModeText, "TRML": ModeText,
	"FTSS": ModeText,
	"ABTM": ModeReplaceBySeq, "CHDT": ModeReplaceBySeq, "CHOT": ModeReplaceBySeq,
	"CKDT": ModeReplaceBySeq, "CLDT": ModeReplaceBySeq, "GTDT": ModeReplaceBySeq,
	"PSDT": ModeReplaceBySeq,
	"DELY": ModeMergeByKey, "ERUT": ModeMergeByKey, "SRVT": ModeMergeByKey, "VIPF": ModeMergeByKey,
	"PSHT": ModePatch, "TIPT": ModePatch,
	"FDEL": ModeDelete,
}

// timeFields maps the time subtypes to their field.
var timeFields = map[string]F{
	"APPT": APPT, "BOTM": BOTM, "CNCL": CNCL, "EGSR": EGSR, "EGST": EGST, "FINT": FINT,
	"LACL": LACL, "COBT": COBT, "CTOT": CTOT, "EOBT": EOBT, "IEST": IEST, "NAAT": NAAT,
	"NEAT": NEAT, "PADT": PADT, "PEDT": PEDT, "TOBT": TOBT, "ESTT": ESTT, "ACTT": ACTT,
}

// applyOp applies one FLOP to s.
func applyOp(s *State, op *sis.FlightOp) ([]string, error) {
	p := &op.Payload
	mode, ok := SubtypeModes[op.Subtype]
	if !ok {
		return nil, violation("FLOP subtype %s not supported", op.Subtype)
	}
	switch mode {
	case ModeSet:
		return nil, applySet(s, op.Subtype, p)
	case ModeRequired:
		return nil, applyRequired(s, op.Subtype, p)
	case ModeText:
		f, v := textSubtype(op.Subtype, p)
		if !v.Present {
			return nil, violation("%s required (cannot be cleared through FLOP)", op.Subtype)
		}
		s.set(f, Text(v.Value))
		return nil, nil
	case ModeReplaceBySeq:
		c, rows := seqRows(op.Subtype, p)
		if len(rows) == 0 {
			return nil, violation("%s needs at least one entry (cannot be cleared through FLOP)", op.Subtype)
		}
		return nil, replaceBySeq(s, c, rows)
	case ModeMergeByKey:
		c, rows, clearAll := keyedRows(op.Subtype, p)
		mergeByKey(s, c, rows, clearAll)
		return nil, nil
	case ModePatch:
		if op.Subtype == "PSHT" {
			return patchPush(s, p.PSHT.Items), nil
		}
		return patchTractor(s, p.TIPT.Items), nil
	case ModeDelete:
		s.setStatus(Deleted)
	}
	return nil, nil
}

func applySet(s *State, styp string, p *sis.FlightRecord) error {
	if f, ok := timeFields[styp]; ok {
		s.set(f, timeVal(*timeOf(p, styp)))
		return nil
	}
	switch styp {
	case "FDIV":
		setDiversion(s, p.FDIV)
	case "FLAB":
		setIrregular(s, FLABARES, FLABReason, p.FLAB)
	case "FRET":
		setIrregular(s, FRETREID, FRETReason, p.FRET)
	case "HNAG":
		s.set(FHAG, idVal(p.FHAG))
		s.set(PHAG, idVal(p.PHAG))
		s.set(MHAG, idVal(p.MHAG))
	case "VIPP":
		s.set(VIPP, intVal(p.VIPP))
		s.set(VIPR, intText(p.VIPR))
	case "TAOP":
		// docs/sis.md §e.2: if any of the three is empty or absent, all three are cleared (unlink).
		if p.TAOP.HasValue() && p.TAFL.HasValue() && p.TAID.HasValue() {
			s.set(TAOP, Text(p.TAOP.Value))
			s.set(TAFL, Text(p.TAFL.Value))
			s.set(TAID, Int(p.TAID.Value))
		} else {
			s.set(TAOP, Null)
			s.set(TAFL, Null)
			s.set(TAID, Null)
		}
	case "PORT":
		if len(p.PORT.Items) == 0 {
			return violation("PORT with POID (O or C) required")
		}
		return setPorts(s, p.PORT.Items)
	case "EXSS":
		if !p.EXSC.Present {
			return violation("EXSC required (cannot be cleared through FLOP)")
		}
		// EXSC empty is stored empty; the remark is cleared when empty or absent.
		s.set(EXSC, Text(p.EXSC.Value))
		s.set(EXSR, textVal(p.EXSR))
	default:
		return violation("FLOP subtype %s has no set rule", styp)
	}
	return nil
}

func applyRequired(s *State, styp string, p *sis.FlightRecord) error {
	var f F
	var v Value
	switch styp {
	case "ACFT":
		f, v = ACFT, textVal(p.ACFT)
	case "FLIN":
		f, v = FLIN, textVal(p.FLIN)
	case "FLTY":
		f, v = FLTY, textVal(p.FLTY)
	case "MAXP":
		f, v = MAXP, intVal(p.MAXP)
	}
	if !v.Valid {
		return violation("%s required and must not be empty (cannot be cleared through FLOP)", styp)
	}
	s.set(f, v)
	return nil
}

func textSubtype(styp string, p *sis.FlightRecord) (F, sis.Field[string]) {
	switch styp {
	case "REMC":
		return REMC, p.REMC
	case "RENO":
		return RENO, p.RENO
	case "RUNW":
		return RUNW, p.RUNW
	case "STND":
		return STND, p.STND
	case "TRML":
		return TRML, p.TRML
	}
	return FTSS, p.FTSS
}

func timeOf(p *sis.FlightRecord, name string) *sis.Field[time.Time] {
	switch name {
	case "SODT":
		return &p.SODT
	case "ESTT":
		return &p.ESTT
	case "ACTT":
		return &p.ACTT
	case "APPT":
		return &p.APPT
	case "BOTM":
		return &p.BOTM
	case "LACL":
		return &p.LACL
	case "FINT":
		return &p.FINT
	case "CNCL":
		return &p.CNCL
	case "EGSR":
		return &p.EGSR
	case "EGST":
		return &p.EGST
	case "PEDT":
		return &p.PEDT
	case "NEAT":
		return &p.NEAT
	case "PADT":
		return &p.PADT
	case "NAAT":
		return &p.NAAT
	case "COBT":
		return &p.COBT
	case "CTOT":
		return &p.CTOT
	case "TOBT":
		return &p.TOBT
	case "EOBT":
		return &p.EOBT
	}
	return &p.IEST
}

func setDiversion(s *State, f sis.Field[sis.Diversion]) {
	d, ok := f.Get()
	if !ok { // absent, or DDES empty: clear all three (docs/sis.md §e.2)
		s.set(FDIVDDES, Null)
		s.set(FDIVDDIR, Null)
		s.set(FDIVReason, Null)
		return
	}
	s.set(FDIVDDES, Text(d.DDES))
	s.set(FDIVDDIR, Text(d.DDIR))
	s.set(FDIVReason, optText(d.Reason))
}

func setIrregular(s *State, ind, reason F, f sis.Field[sis.Irregular]) {
	v, ok := f.Get()
	if !ok { // absent, or neither indicator nor reason: clear both
		s.set(ind, Null)
		s.set(reason, Null)
		return
	}
	s.set(ind, Text(v.Indicator))
	s.set(reason, optText(v.Reason))
}

// setPorts applies PORT entries in order: POID O sets the open slot, C the close slot; an
// empty POTM clears that slot.
func setPorts(s *State, items []sis.Port) error {
	for _, e := range items {
		switch e.POID.Value {
		case "O":
			s.set(PortOpen, timeVal(e.POTM))
		case "C":
			s.set(PortClose, timeVal(e.POTM))
		default:
			return violation("PORT POID must be O or C, got %q", e.POID.Value)
		}
	}
	return nil
}

// seqRows converts the entries of a replace-by-sequence subtype.
func seqRows(styp string, p *sis.FlightRecord) (C, []Row) {
	switch styp {
	case "ABTM":
		return ABTM, rows(p.ABTM.Items, airbridgeRow)
	case "CHDT":
		return CHDT, rows(p.CHDT.Items, chuteRow)
	case "CHOT":
		return CHOT, rows(p.CHOT.Items, chockRow)
	case "CKDT":
		return CKDT, rows(p.CKDT.Items, checkinRow)
	case "CLDT":
		return CLDT, rows(p.CLDT.Items, carouselRow)
	case "GTDT":
		return GTDT, rows(p.GTDT.Items, gateRow)
	}
	return PSDT, rows(p.PSDT.Items, standRow)
}

// keyedRows converts the entries of a merge-by-key subtype.
func keyedRows(styp string, p *sis.FlightRecord) (C, []Row, bool) {
	switch styp {
	case "DELY":
		return DELY, rows(p.DELY.Items, delayRow), p.DELY.ClearAll
	case "ERUT":
		return ERUT, rows(p.ERUT.Items, routeRow), p.ERUT.ClearAll
	case "SRVT":
		return SRVT, rows(p.SRVT.Items, serviceRow), p.SRVT.ClearAll
	}
	return VIPF, rows(p.VIPF.Items, vipRow), p.VIPF.ClearAll
}

func rows[T any](items []T, conv func(T) Row) []Row {
	if len(items) == 0 {
		return nil
	}
	out := make([]Row, len(items))
	for i, e := range items {
		out[i] = conv(e)
		for j := range out[i] {
			out[i][j] = out[i][j].own()
		}
	}
	return out
}

// replaceBySeq makes rows the complete list of collection c. A sequence number twice in one
// list is a contract break. Stand rows keep their PSHT/TIPT patches when their number and
// stand are unchanged.
func replaceBySeq(s *State, c C, rows []Row) error {
	seen := make(map[Value]bool, len(rows))
	for _, r := range rows {
		if seen[r[0]] {
			return violation("%s: sequence number %d twice", Collections[c].Name, r[0].I)
		}
		seen[r[0]] = true
	}
	if c == PSDT {
		for i := range rows {
			for _, old := range s.C[PSDT] {
				if old[0] == rows[i][0] && old[stPSST] == rows[i][stPSST] {
					rows[i][stTRTM], rows[i][stPSTM], rows[i][stPSID], rows[i][stPSHN] = old[stTRTM], old[stPSTM], old[stPSID], old[stPSHN]
				}
			}
		}
	}
	if s.w == nil {
		s.C[c] = rows
		return nil
	}
	if s.wholeStale(c) {
		return nil
	}
	newer := s.takeWhole(c)
	out := make([]Row, 0, len(rows)+len(newer))
	for _, r := range rows {
		if i := indexOfKey(newer, r[0]); i >= 0 { // a later-created message set this entry
			s.w.mark(entryName(c, r[0]))
			out = append(out, newer[i])
			continue
		}
		out = append(out, r)
	}
	for _, r := range newer {
		if indexOfKey(rows, r[0]) < 0 {
			s.w.mark(entryName(c, r[0]))
			out = append(out, r)
		}
	}
	s.C[c] = out
	return nil
}

// mergeByKey inserts or updates each row by its key, keeping the position of a known key and
// appending new keys; clearAll removes every row first. A VIPF entry without VIPT children
// keeps the stored VIPT list.
func mergeByKey(s *State, c C, rows []Row, clearAll bool) {
	if clearAll && s.wholeStale(c) {
		return
	}
	var cur []Row // changed in place below: never the state's own rows, which a fork shares
	if clearAll {
		cur = s.takeWhole(c) // keeps the entries a later-created message set (INV-24b)
		for _, r := range cur {
			s.w.mark(entryName(c, r[0]))
		}
	} else {
		cur = slices.Clone(s.C[c])
	}
	for _, r := range rows {
		if s.entryStale(c, r[0]) {
			continue
		}
		s.stampEntry(c, r[0])
		i := indexOfKey(cur, r[0])
		if i < 0 {
			cur = append(cur, r)
			continue
		}
		if c == VIPF && !r[vipVIPT].Valid {
			r[vipVIPT] = cur[i][vipVIPT]
		}
		cur[i] = r
	}
	if c == VIPF {
		for i := range cur {
			if !cur[i][vipVIPT].Valid {
				cur[i][vipVIPT] = JSON("[]")
			}
		}
	}
	s.C[c] = cur
}

func indexOfKey(rows []Row, key Value) int {
	for i, r := range rows {
		if r[0] == key {
			return i
		}
	}
	return -1
}

// patchPush applies PSHT entries to the stand rows of their stand (PUST). A stand with no
// allocated row is reported in the notes, not silently dropped.
func patchPush(s *State, items []sis.Push) []string {
	var notes []string
	s.cloneColl(PSDT) // its rows change in place
	for _, e := range items {
		stand := Text(e.PUST.Value)
		n := 0
		for i := range s.C[PSDT] {
			r := &s.C[PSDT][i]
			if r[stPSST] != stand {
				continue
			}
			n++
			if s.entryStale(PSDT, r[0]) {
				continue
			}
			s.stampEntry(PSDT, r[0])
			r[stPSTM], r[stPSID], r[stPSHN] = timeVal(e.PSTM), textVal(e.PSID).own(), intVal(e.PSHN)
		}
		if n == 0 {
			notes = append(notes, "PSHT: stand "+e.PUST.Value+" not allocated")
		}
	}
	return notes
}

// patchTractor applies TIPT entries to the stand rows of their stand (TRST).
func patchTractor(s *State, items []sis.TractorInPlace) []string {
	var notes []string
	s.cloneColl(PSDT) // its rows change in place
	for _, e := range items {
		stand := Text(e.TRST.Value)
		n := 0
		for i := range s.C[PSDT] {
			r := &s.C[PSDT][i]
			if r[stPSST] != stand {
				continue
			}
			n++
			if s.entryStale(PSDT, r[0]) {
				continue
			}
			s.stampEntry(PSDT, r[0])
			r[stTRTM] = timeVal(e.TRTM)
		}
		if n == 0 {
			notes = append(notes, "TIPT: stand "+e.TRST.Value+" not allocated")
		}
	}
	return notes
}

// --- value conversions (an empty or absent SIS value becomes Null, never the text "null") ---

func timeVal(f sis.Field[time.Time]) Value {
	if v, ok := f.Get(); ok {
		return Time(v)
	}
	return Null
}

func textVal(f sis.Field[string]) Value {
	if v, ok := f.Get(); ok {
		return Text(v)
	}
	return Null
}

func optText(s string) Value {
	if s == "" {
		return Null
	}
	return Text(s)
}

func intVal(f sis.Field[int]) Value {
	if v, ok := f.Get(); ok {
		return Int(int64(v))
	}
	return Null
}

func intText(f sis.Field[int]) Value {
	if v, ok := f.Get(); ok {
		return Text(strconv.Itoa(v))
	}
	return Null
}

func idVal(f sis.Field[int64]) Value {
	if v, ok := f.Get(); ok {
		return Int(v)
	}
	return Null
}

func idText(f sis.Field[int64]) Value {
	if v, ok := f.Get(); ok {
		return Text(strconv.FormatInt(v, 10))
	}
	return Null
}

func seq(f sis.Field[int]) Value { return Int(int64(f.Value)) }

func routeRow(e sis.RouteEntry) Row {
	return Row{seq(e.RTNO), textVal(e.APCD), timeVal(e.SCAT), timeVal(e.SCDT)}
}

func standRow(e sis.StandAllocation) Row {
	return Row{seq(e.PSNO), textVal(e.PSST), timeVal(e.STST), timeVal(e.STET)}
}

func gateRow(e sis.GateAllocation) Row {
	return Row{seq(e.GTNO), textVal(e.GATE), timeVal(e.PGOT), timeVal(e.PGCT), timeVal(e.GOTM), timeVal(e.GCTM), textVal(e.GTYP)}
}

func checkinRow(e sis.CheckinAllocation) Row {
	return Row{seq(e.CKNO), textVal(e.CHKC), textVal(e.CCLS), timeVal(e.PCOT), timeVal(e.PCCT), timeVal(e.COTM), timeVal(e.CCTM), textVal(e.CTYP)}
}

func carouselRow(e sis.CarouselAllocation) Row {
	return Row{seq(e.CLNO), textVal(e.BELT), textVal(e.BCLS), timeVal(e.PCOT), timeVal(e.PCCT), timeVal(e.FBAG), timeVal(e.LBAG), textVal(e.BTYP)}
}

func chuteRow(e sis.ChuteAllocation) Row {
	return Row{seq(e.CHNO), textVal(e.CHUT), textVal(e.CCLS), timeVal(e.PCBT), timeVal(e.PCET), timeVal(e.CBTM), timeVal(e.CETM), textVal(e.CTYP)}
}

func chockRow(e sis.Chock) Row {
	return Row{seq(e.CSNO), timeVal(e.CHTM), textVal(e.CHID), textVal(e.CHST)}
}

func airbridgeRow(e sis.Airbridge) Row {
	return Row{seq(e.ASNO), textVal(e.ABDG), textVal(e.ABOP), timeVal(e.AOTM)}
}

func delayRow(e sis.Delay) Row {
	return Row{textVal(e.CODE), timeVal(e.STRT), intVal(e.DURA), textVal(e.Comment)}
}

func serviceRow(e sis.Service) Row {
	return Row{textVal(e.SRTC), intText(e.SRQT), timeVal(e.SRST), timeVal(e.SRET), idText(e.SRPR), textVal(e.SANR), textVal(e.SARR)}
}

// vipRow converts a VIPF entry; its VIPT column is Null when the entry has no VIPT children
// (mergeByKey then keeps the stored list).
func vipRow(e sis.VIP) Row {
	r := Row{textVal(e.VPCD), intText(e.VFES), Null}
	if e.VIPT.Present {
		svc := make([]VIPService, 0, len(e.VIPT.Items))
		for _, v := range e.VIPT.Items {
			svc = append(svc, VIPService{VSCD: textVal(v.VSCD).ptrS(), VTQY: idVal(v.VTQY).ptrI(),
				VTST: timeVal(v.VTST).ptrT(), VTET: timeVal(v.VTET).ptrT()})
		}
		r[vipVIPT] = JSON(marshalVIPT(svc))
	}
	return r
}
