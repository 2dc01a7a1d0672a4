package sis

import (
	"cmp"
	"slices"
	"time"
)

// flightFields is the one list of the elements of a flight record (a FLTR, and the payload of
// a FLOP): each element's name with the setter that decodes it into its field. The record
// decoder, the FLOP payload and the FLOP's ignored-element warning all read it.
var flightFields = [...]elem[FlightRecord]{
	{"FLID", id(12, func(r *FlightRecord) *Field[int64] { return &r.FLID })},
	{"FFID", str(func(r *FlightRecord) *Field[string] { return &r.FFID })},
	{"ALCD", str(func(r *FlightRecord) *Field[string] { return &r.ALCD })},
	{"ALSC", str(func(r *FlightRecord) *Field[string] { return &r.ALSC })},
	{"FLNO", str(func(r *FlightRecord) *Field[string] { return &r.FLNO })},
	{"MVIN", str(func(r *FlightRecord) *Field[string] { return &r.MVIN })},
	{"SODT", tm(func(r *FlightRecord) *Field[time.Time] { return &r.SODT })},
	{"FLTY", str(func(r *FlightRecord) *Field[string] { return &r.FLTY })},
	{"FLIN", str(func(r *FlightRecord) *Field[string] { return &r.FLIN })},
	{"ROUT", list(routeEntry.decode, func(r *FlightRecord) *List[RouteEntry] { return &r.ROUT })},
	{"ERUT", list(routeEntry.decode, func(r *FlightRecord) *List[RouteEntry] { return &r.ERUT })},
	{"ACFT", str(func(r *FlightRecord) *Field[string] { return &r.ACFT })},
	{"RENO", str(func(r *FlightRecord) *Field[string] { return &r.RENO })},
	{"TAOP", str(func(r *FlightRecord) *Field[string] { return &r.TAOP })},
	{"TAFL", str(func(r *FlightRecord) *Field[string] { return &r.TAFL })},
	{"TAID", id(12, func(r *FlightRecord) *Field[int64] { return &r.TAID })},
	{"TRML", str(func(r *FlightRecord) *Field[string] { return &r.TRML })},
	{"MAXP", num(maxSmallint, func(r *FlightRecord) *Field[int] { return &r.MAXP })},
	{"STND", str(func(r *FlightRecord) *Field[string] { return &r.STND })},
	{"PSDT", list(standEntry.decode, func(r *FlightRecord) *List[StandAllocation] { return &r.PSDT })},
	{"PHAG", id(10, func(r *FlightRecord) *Field[int64] { return &r.PHAG })},
	{"FHAG", id(10, func(r *FlightRecord) *Field[int64] { return &r.FHAG })},
	{"MHAG", id(10, func(r *FlightRecord) *Field[int64] { return &r.MHAG })},
	{"EXSC", str(func(r *FlightRecord) *Field[string] { return &r.EXSC })},
	{"EXSR", str(func(r *FlightRecord) *Field[string] { return &r.EXSR })},
	{"FTSS", str(func(r *FlightRecord) *Field[string] { return &r.FTSS })},
	{"CHDT", list(chuteEntry.decode, func(r *FlightRecord) *List[ChuteAllocation] { return &r.CHDT })},
	{"GTDT", list(gateEntry.decode, func(r *FlightRecord) *List[GateAllocation] { return &r.GTDT })},
	{"CKDT", list(checkinEntry.decode, func(r *FlightRecord) *List[CheckinAllocation] { return &r.CKDT })},
	{"CLDT", list(carouselEntry.decode, func(r *FlightRecord) *List[CarouselAllocation] { return &r.CLDT })},
	{"FDIV", diversion},
	{"FRET", irregular("REID", func(r *FlightRecord) *Field[Irregular] { return &r.FRET })},
	{"FLAB", irregular("ARES", func(r *FlightRecord) *Field[Irregular] { return &r.FLAB })},
	{"CSOP", str(func(r *FlightRecord) *Field[string] { return &r.CSOP })},
	{"CSFT", str(func(r *FlightRecord) *Field[string] { return &r.CSFT })},
	{"MAID", id(12, func(r *FlightRecord) *Field[int64] { return &r.MAID })},
	{"ESTT", tm(func(r *FlightRecord) *Field[time.Time] { return &r.ESTT })},
	{"ACTT", tm(func(r *FlightRecord) *Field[time.Time] { return &r.ACTT })},
	{"APPT", tm(func(r *FlightRecord) *Field[time.Time] { return &r.APPT })},
	{"BOTM", tm(func(r *FlightRecord) *Field[time.Time] { return &r.BOTM })},
	{"LACL", tm(func(r *FlightRecord) *Field[time.Time] { return &r.LACL })},
	{"FINT", tm(func(r *FlightRecord) *Field[time.Time] { return &r.FINT })},
	{"CNCL", tm(func(r *FlightRecord) *Field[time.Time] { return &r.CNCL })},
	{"EGSR", tm(func(r *FlightRecord) *Field[time.Time] { return &r.EGSR })},
	{"EGST", tm(func(r *FlightRecord) *Field[time.Time] { return &r.EGST })},
	{"PEDT", tm(func(r *FlightRecord) *Field[time.Time] { return &r.PEDT })},
	{"NEAT", tm(func(r *FlightRecord) *Field[time.Time] { return &r.NEAT })},
	{"PADT", tm(func(r *FlightRecord) *Field[time.Time] { return &r.PADT })},
	{"NAAT", tm(func(r *FlightRecord) *Field[time.Time] { return &r.NAAT })},
	{"COBT", tm(func(r *FlightRecord) *Field[time.Time] { return &r.COBT })},
	{"CTOT", tm(func(r *FlightRecord) *Field[time.Time] { return &r.CTOT })},
	{"TOBT", tm(func(r *FlightRecord) *Field[time.Time] { return &r.TOBT })},
	{"EOBT", tm(func(r *FlightRecord) *Field[time.Time] { return &r.EOBT })},
	{"IEST", tm(func(r *FlightRecord) *Field[time.Time] { return &r.IEST })},
	{"RUNW", str(func(r *FlightRecord) *Field[string] { return &r.RUNW })},
	{"PORT", list(portEntry.decode, func(r *FlightRecord) *List[Port] { return &r.PORT })},
	{"TIPT", list(tractorEntry.decode, func(r *FlightRecord) *List[TractorInPlace] { return &r.TIPT })},
	{"PSHT", list(pushEntry.decode, func(r *FlightRecord) *List[Push] { return &r.PSHT })},
	{"DELY", list(decDelay, func(r *FlightRecord) *List[Delay] { return &r.DELY })},
	{"SRVT", list(serviceEntry.decode, func(r *FlightRecord) *List[Service] { return &r.SRVT })},
	{"ABTM", list(airbridgeEntry.decode, func(r *FlightRecord) *List[Airbridge] { return &r.ABTM })},
	{"CHOT", list(chockEntry.decode, func(r *FlightRecord) *List[Chock] { return &r.CHOT })},
	{"VIPF", list(vipEntry.decode, func(r *FlightRecord) *List[VIP] { return &r.VIPF })},
	{"REMC", str(func(r *FlightRecord) *Field[string] { return &r.REMC })},
	{"VIPP", num(maxSmallint, func(r *FlightRecord) *Field[int] { return &r.VIPP })},
	{"VIPR", num(9, func(r *FlightRecord) *Field[int] { return &r.VIPR })},
	{"LBNO", num(maxSmallint, func(r *FlightRecord) *Field[int] { return &r.LBNO })},
	{"LBWT", weight},
	{"PAXC", num(maxSmallint, func(r *FlightRecord) *Field[int] { return &r.PAXC })},
}

// flightElements is the length of flightFields, a constant so that the decoder can count
// the elements in an array (its type cannot refer to flightFields, whose setters refer to it).
const flightElements = 69

// Compiles only while flightElements is the length of flightFields.
const _ = uint(len(flightFields)-flightElements) + uint(flightElements-len(flightFields))

// flightIndex finds an element's place in flightFields: every name has four bytes, so a name is
// looked up as a number in a sorted table (cheaper than a map lookup on every element).
var flightIndex = func() []nameIndex {
	t := make([]nameIndex, len(flightFields))
	for i, f := range flightFields {
		k, ok := nameKey(f.name)
		if !ok {
			panic("sis: flight element " + f.name + " is not four bytes long")
		}
		t[i] = nameIndex{k, i}
	}
	slices.SortFunc(t, func(a, b nameIndex) int { return cmp.Compare(a.key, b.key) })
	return t
}()

type nameIndex struct {
	key uint32
	i   int
}

// nameKey is a four-byte name as a number; false for another length.
func nameKey(name string) (uint32, bool) {
	if len(name) != 4 {
		return 0, false
	}
	return uint32(name[0])<<24 | uint32(name[1])<<16 | uint32(name[2])<<8 | uint32(name[3]), true
}

// flightElement returns the place of name in flightFields, or false.
func flightElement(name string) (int, bool) {
	k, ok := nameKey(name)
	if !ok {
		return 0, false
	}
	j, found := slices.BinarySearchFunc(flightIndex, k, func(e nameIndex, k uint32) int { return cmp.Compare(e.key, k) })
	if !found {
		return 0, false
	}
	return flightIndex[j].i, true
}

// isFlightElement reports whether name is an element of a flight record.
func isFlightElement(name string) bool {
	_, ok := flightElement(name)
	return ok
}

// startFlight resets the element counts before the elements of a record or FLOP payload.
func (x *decoder) startFlight() {
	clear(x.flightSeen[:])
}

// flightRecord decodes a FLTR element.
func (x *decoder) flightRecord(ni int32, path string, r *FlightRecord) *Error {
	if err := x.noText(ni, path); err != nil {
		return err
	}
	x.startFlight()
	for c := x.node(ni).first; c >= 0; c = x.node(c).next {
		ok, err := x.flightField(r, c, path)
		if err != nil {
			return err
		}
		if !ok {
			return unknown(path, x.node(c).name)
		}
	}
	return nil
}

// flightField decodes child ci into r; false when ci is not a flight element.
func (x *decoder) flightField(r *FlightRecord, ci int32, parent string) (bool, *Error) {
	i, ok := flightElement(x.node(ci).name)
	if !ok {
		return false, nil
	}
	x.flightSeen[i]++
	_, err := flightFields[i].set(x, r, ci, parent, int(x.flightSeen[i]))
	return true, err
}

// weight decodes LBWT, a decimal(11,2) kept as validated text.
func weight(x *decoder, r *FlightRecord, ci int32, parent string, _ int) (bool, *Error) {
	if r.LBWT.Present {
		return false, dup(parent+"/LBWT", x.node(ci).text)
	}
	v, err := x.leafIn(ci, parent)
	if err != nil {
		return false, err
	}
	if v != "" && !isDecimal(v) {
		return false, protocol(parent+"/LBWT", v, "must be a decimal with at most 2 fraction digits")
	}
	err = strValue(&r.LBWT, v, parent, "/LBWT", "LBWT")
	return r.LBWT.HasValue(), err
}

// diversion decodes FDIV.
func diversion(x *decoder, r *FlightRecord, ci int32, parent string, _ int) (bool, *Error) {
	err := x.setDiversion(&r.FDIV, ci, parent)
	return r.FDIV.HasValue(), err
}

// irregular decodes FRET or FLAB, whose indicator is the attribute attrName.
func irregular(attrName string, field func(*FlightRecord) *Field[Irregular]) setter[FlightRecord] {
	return func(x *decoder, r *FlightRecord, ci int32, parent string, _ int) (bool, *Error) {
		f := field(r)
		err := x.setIrregular(f, ci, parent, attrName)
		return f.HasValue(), err
	}
}

func (x *decoder) setDiversion(f *Field[Diversion], ci int32, parent string) *Error {
	path := parent + "/FDIV"
	if f.Present {
		return dup(path, x.node(ci).text)
	}
	text, err := x.leaf(ci, path)
	if err != nil {
		return err
	}
	var ddes, ddir Field[string]
	if err := x.setAttrStr(&ddes, ci, path, "DDES"); err != nil {
		return err
	}
	if err := x.setAttrStr(&ddir, ci, path, "DDIR"); err != nil {
		return err
	}
	if !ddes.HasValue() { // docs/sis.md §e.2: absent or empty DDES clears the diversion
		*f = EmptyField[Diversion]()
		return nil
	}
	if !ddir.HasValue() {
		return protocol(path+"@DDIR", ddir.Value, "DDIR required (TO or FROM) when DDES is set")
	}
	if text != "" {
		if err := checkLen("FDIV#reason", path, text); err != nil {
			return err
		}
	}
	*f = Val(Diversion{DDES: ddes.Value, DDIR: ddir.Value, Reason: text})
	return nil
}

// setIrregular decodes FLAB (indicator attribute ARES) or FRET (REID).
func (x *decoder) setIrregular(f *Field[Irregular], ci int32, parent, attrName string) *Error {
	name := x.node(ci).name
	path := parent + "/" + name
	if f.Present {
		return dup(path, x.node(ci).text)
	}
	text, err := x.leaf(ci, path)
	if err != nil {
		return err
	}
	var ind Field[string]
	if err := x.setAttrStr(&ind, ci, path, attrName); err != nil {
		return err
	}
	if !ind.HasValue() {
		if text == "" { // no indicator, no reason: clear (docs/sis.md §h.3 recommendation)
			*f = EmptyField[Irregular]()
			return nil
		}
		return protocol(path+"@"+attrName, "", attrName+" required when a reason is given")
	}
	if text != "" {
		if err := checkLen(name+"#reason", path, text); err != nil {
			return err
		}
	}
	*f = Val(Irregular{Indicator: ind.Value, Reason: text})
	return nil
}

// The kinds of collection entry of a flight record.
var (
	routeEntry = newEntryKind(entryKind[RouteEntry]{
		seq: "RTNO", seqField: func(e *RouteEntry) *Field[int] { return &e.RTNO }, seqReq: true,
		elems: []elem[RouteEntry]{
			{"APCD", str(func(e *RouteEntry) *Field[string] { return &e.APCD })},
			{"SCAT", tm(func(e *RouteEntry) *Field[time.Time] { return &e.SCAT })},
			{"SCDT", tm(func(e *RouteEntry) *Field[time.Time] { return &e.SCDT })},
		},
		blank: entryClear, key: "APCD",
	})
	standEntry = newEntryKind(entryKind[StandAllocation]{
		seq: "PSNO", seqField: func(e *StandAllocation) *Field[int] { return &e.PSNO }, seqReq: true,
		elems: []elem[StandAllocation]{
			{"PSST", str(func(e *StandAllocation) *Field[string] { return &e.PSST })},
			{"STST", tm(func(e *StandAllocation) *Field[time.Time] { return &e.STST })},
			{"STET", tm(func(e *StandAllocation) *Field[time.Time] { return &e.STET })},
		},
		blank: entryEmpty, key: "PSST",
	})
	gateEntry = newEntryKind(entryKind[GateAllocation]{
		seq: "GTNO", seqField: func(e *GateAllocation) *Field[int] { return &e.GTNO }, seqReq: true,
		elems: []elem[GateAllocation]{
			{"GATE", str(func(e *GateAllocation) *Field[string] { return &e.GATE })},
			{"GTYP", str(func(e *GateAllocation) *Field[string] { return &e.GTYP })},
			{"PGOT", tm(func(e *GateAllocation) *Field[time.Time] { return &e.PGOT })},
			{"PGCT", tm(func(e *GateAllocation) *Field[time.Time] { return &e.PGCT })},
			{"GOTM", tm(func(e *GateAllocation) *Field[time.Time] { return &e.GOTM })},
			{"GCTM", tm(func(e *GateAllocation) *Field[time.Time] { return &e.GCTM })},
		},
		blank: entryEmpty, key: "GATE",
	})
	checkinEntry = newEntryKind(entryKind[CheckinAllocation]{
		seq: "CKNO", seqField: func(e *CheckinAllocation) *Field[int] { return &e.CKNO }, seqReq: true,
		elems: []elem[CheckinAllocation]{
			{"CHKC", str(func(e *CheckinAllocation) *Field[string] { return &e.CHKC })},
			{"CCLS", str(func(e *CheckinAllocation) *Field[string] { return &e.CCLS })},
			{"CTYP", str(func(e *CheckinAllocation) *Field[string] { return &e.CTYP })},
			{"PCOT", tm(func(e *CheckinAllocation) *Field[time.Time] { return &e.PCOT })},
			{"PCCT", tm(func(e *CheckinAllocation) *Field[time.Time] { return &e.PCCT })},
			{"COTM", tm(func(e *CheckinAllocation) *Field[time.Time] { return &e.COTM })},
			{"CCTM", tm(func(e *CheckinAllocation) *Field[time.Time] { return &e.CCTM })},
		},
		blank: entryEmpty, key: "CHKC",
	})
	carouselEntry = newEntryKind(entryKind[CarouselAllocation]{
		seq: "CLNO", seqField: func(e *CarouselAllocation) *Field[int] { return &e.CLNO }, seqReq: true,
		elems: []elem[CarouselAllocation]{
			{"BELT", str(func(e *CarouselAllocation) *Field[string] { return &e.BELT })},
			{"BCLS", str(func(e *CarouselAllocation) *Field[string] { return &e.BCLS })},
			{"BTYP", str(func(e *CarouselAllocation) *Field[string] { return &e.BTYP })},
			{"PCOT", tm(func(e *CarouselAllocation) *Field[time.Time] { return &e.PCOT })},
			{"PCCT", tm(func(e *CarouselAllocation) *Field[time.Time] { return &e.PCCT })},
			{"FBAG", tm(func(e *CarouselAllocation) *Field[time.Time] { return &e.FBAG })},
			{"LBAG", tm(func(e *CarouselAllocation) *Field[time.Time] { return &e.LBAG })},
		},
		blank: entryEmpty, key: "BELT",
	})
	chuteEntry = newEntryKind(entryKind[ChuteAllocation]{
		seq: "CHNO", seqField: func(e *ChuteAllocation) *Field[int] { return &e.CHNO }, seqReq: true,
		elems: []elem[ChuteAllocation]{
			{"CHUT", str(func(e *ChuteAllocation) *Field[string] { return &e.CHUT })},
			{"CCLS", str(func(e *ChuteAllocation) *Field[string] { return &e.CCLS })},
			{"CTYP", str(func(e *ChuteAllocation) *Field[string] { return &e.CTYP })},
			{"PCBT", tm(func(e *ChuteAllocation) *Field[time.Time] { return &e.PCBT })},
			{"PCET", tm(func(e *ChuteAllocation) *Field[time.Time] { return &e.PCET })},
			{"CBTM", tm(func(e *ChuteAllocation) *Field[time.Time] { return &e.CBTM })},
			{"CETM", tm(func(e *ChuteAllocation) *Field[time.Time] { return &e.CETM })},
		},
		blank: entryEmpty, key: "CHUT",
	})
	chockEntry = newEntryKind(entryKind[Chock]{
		seq: "CSNO", seqField: func(e *Chock) *Field[int] { return &e.CSNO }, seqReq: true,
		elems: []elem[Chock]{
			{"CHTM", tm(func(e *Chock) *Field[time.Time] { return &e.CHTM })},
			{"CHID", str(func(e *Chock) *Field[string] { return &e.CHID })},
			{"CHST", str(func(e *Chock) *Field[string] { return &e.CHST })},
		},
		blank: entryEmpty, key: "CHST",
	})
	airbridgeEntry = newEntryKind(entryKind[Airbridge]{
		seq: "ASNO", seqField: func(e *Airbridge) *Field[int] { return &e.ASNO }, seqReq: true,
		elems: []elem[Airbridge]{
			{"ABDG", str(func(e *Airbridge) *Field[string] { return &e.ABDG })},
			{"ABOP", str(func(e *Airbridge) *Field[string] { return &e.ABOP })},
			{"AOTM", tm(func(e *Airbridge) *Field[time.Time] { return &e.AOTM })},
		},
		blank: entryEmpty, key: "ABDG",
	})
	portEntry = newEntryKind(entryKind[Port]{
		elems: []elem[Port]{
			{"POTM", tm(func(e *Port) *Field[time.Time] { return &e.POTM })},
			{"POID", str(func(e *Port) *Field[string] { return &e.POID })},
		},
		blank: entryEmpty, key: "POID", keyMsg: "POID required (O or C)",
	})
	tractorEntry = newEntryKind(entryKind[TractorInPlace]{
		elems: []elem[TractorInPlace]{
			{"TRTM", tm(func(e *TractorInPlace) *Field[time.Time] { return &e.TRTM })},
			{"TRST", str(func(e *TractorInPlace) *Field[string] { return &e.TRST })},
		},
		blank: entryEmpty, key: "TRST",
	})
	pushEntry = newEntryKind(entryKind[Push]{
		seq: "PSHN", seqField: func(e *Push) *Field[int] { return &e.PSHN },
		elems: []elem[Push]{
			{"PSTM", tm(func(e *Push) *Field[time.Time] { return &e.PSTM })},
			{"PSID", str(func(e *Push) *Field[string] { return &e.PSID })},
			{"PUST", str(func(e *Push) *Field[string] { return &e.PUST })},
		},
		blank: entryEmpty, key: "PUST",
	})
	serviceEntry = newEntryKind(entryKind[Service]{
		elems: []elem[Service]{
			{"SRTC", str(func(e *Service) *Field[string] { return &e.SRTC })},
			{"SRQT", num(maxSmallint, func(e *Service) *Field[int] { return &e.SRQT })},
			{"SRST", tm(func(e *Service) *Field[time.Time] { return &e.SRST })},
			{"SRET", tm(func(e *Service) *Field[time.Time] { return &e.SRET })},
			{"SRPR", id(10, func(e *Service) *Field[int64] { return &e.SRPR })},
			{"SANR", str(func(e *Service) *Field[string] { return &e.SANR })},
			{"SARR", str(func(e *Service) *Field[string] { return &e.SARR })},
		},
		blank: entryClear, key: "SRTC",
	})
	// docs/sis.md §e.2: VIPF entries without VPCD are ignored.
	vipEntry = newEntryKind(entryKind[VIP]{
		elems: []elem[VIP]{
			{"VPCD", str(func(e *VIP) *Field[string] { return &e.VPCD })},
			{"VFES", num(maxSmallint, func(e *VIP) *Field[int] { return &e.VFES })},
			{"VIPT", list(vipServiceEntry.decode, func(e *VIP) *List[VIPService] { return &e.VIPT })},
		},
		blank: entryEmpty, key: "VPCD", orphan: "VIPF entry without VPCD ignored",
	})
	vipServiceEntry = newEntryKind(entryKind[VIPService]{
		elems: []elem[VIPService]{
			{"VSCD", str(func(e *VIPService) *Field[string] { return &e.VSCD })},
			{"VTQY", id(18, func(e *VIPService) *Field[int64] { return &e.VTQY })},
			{"VTST", tm(func(e *VIPService) *Field[time.Time] { return &e.VTST })},
			{"VTET", tm(func(e *VIPService) *Field[time.Time] { return &e.VTET })},
		},
		blank: entryEmpty, key: "VSCD",
	})
)

// decDelay decodes a DELY entry, whose values are attributes and its text.
func decDelay(x *decoder, ni int32, path string, e *Delay) (int, *Error) {
	text, err := x.leaf(ni, path)
	if err != nil {
		return 0, err
	}
	if err := x.setAttrStr(&e.CODE, ni, path, "CODE"); err != nil {
		return 0, err
	}
	if v, ok := x.attr(ni, "STRT"); ok {
		if err := x.timeValue(&e.STRT, v, path, "@STRT"); err != nil {
			return 0, err
		}
	}
	if v, ok := x.attr(ni, "DURA"); ok {
		if v == "" {
			e.DURA = EmptyField[int]()
		} else {
			h, ok1 := digits2(v[:min(2, len(v))])
			m, ok2 := digits2(v[min(2, len(v)):])
			if len(v) != 4 || !ok1 || !ok2 || m > 59 {
				return 0, protocol(path+"@DURA", v, "must be HHMM (minutes 00-59)")
			}
			e.DURA = Val(h*60 + m)
		}
	}
	if text != "" {
		if err := checkLen("DELY#comment", path, text); err != nil {
			return 0, err
		}
		e.Comment = Val(text)
	}
	if !e.CODE.HasValue() && !e.STRT.HasValue() && !e.DURA.HasValue() && text == "" {
		return entryClear, nil
	}
	return entryItem, required(e.CODE.HasValue(), path+"@CODE", "CODE required")
}
