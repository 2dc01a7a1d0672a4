package sis

import (
	"strconv"
	"time"
)

// entry states returned by the collection entry decoders.
const (
	entryItem  = iota // a real entry
	entryEmpty        // an empty entry: dropped
	entryClear        // the bare "remove all" form (DELY, ERUT, SRVT)
)

type entryDecoder[T any] func(x *decoder, ni int32, path string) (T, int, *Error)

func addEntry[T any](x *decoder, l *List[T], ci int32, parent string, dec entryDecoder[T]) *Error {
	name := x.node(ci).name
	path := parent + "/" + name + "[" + strconv.Itoa(x.next(name)) + "]"
	v, state, err := dec(x, ci, path)
	if err != nil {
		return err
	}
	l.Present = true
	if l.Items == nil {
		l.Items = []T{}
	}
	switch state {
	case entryItem:
		l.Items = append(l.Items, v)
	case entryClear:
		l.ClearAll = true
	}
	return nil
}

func unknown(path, name string) *Error {
	return codecErr(path+"/"+name, name, "unknown element")
}

// flightElements is every element name flightField understands.
var flightElements = map[string]bool{}

func init() {
	for _, n := range []string{
		"FLID", "FFID", "ALCD", "ALSC", "FLNO", "MVIN", "SODT", "FLTY", "FLIN", "ROUT", "ERUT",
		"ACFT", "RENO", "TAOP", "TAFL", "TAID", "TRML", "MAXP", "STND", "PSDT", "PHAG", "FHAG",
		"MHAG", "EXSC", "EXSR", "FTSS", "CHDT", "GTDT", "CKDT", "CLDT", "FDIV", "FRET", "FLAB",
		"CSOP", "CSFT", "MAID", "ESTT", "ACTT", "APPT", "BOTM", "LACL", "FINT", "CNCL", "EGSR",
		"EGST", "PEDT", "NEAT", "PADT", "NAAT", "COBT", "CTOT", "TOBT", "EOBT", "IEST", "RUNW",
		"PORT", "TIPT", "PSHT", "DELY", "SRVT", "ABTM", "CHOT", "VIPF", "REMC", "VIPP", "VIPR",
		"LBNO", "LBWT", "PAXC",
	} {
		flightElements[n] = true
	}
}

func (r *FlightRecord) strField(name string) *Field[string] {
	switch name {
	case "FFID":
		return &r.FFID
	case "ALCD":
		return &r.ALCD
	case "ALSC":
		return &r.ALSC
	case "FLNO":
		return &r.FLNO
	case "MVIN":
		return &r.MVIN
	case "FLTY":
		return &r.FLTY
	case "FLIN":
		return &r.FLIN
	case "ACFT":
		return &r.ACFT
	case "RENO":
		return &r.RENO
	case "TAOP":
		return &r.TAOP
	case "TAFL":
		return &r.TAFL
	case "TRML":
		return &r.TRML
	case "STND":
		return &r.STND
	case "EXSC":
		return &r.EXSC
	case "EXSR":
		return &r.EXSR
	case "FTSS":
		return &r.FTSS
	case "CSOP":
		return &r.CSOP
	case "CSFT":
		return &r.CSFT
	case "RUNW":
		return &r.RUNW
	case "REMC":
		return &r.REMC
	}
	return nil
}

func (r *FlightRecord) timeField(name string) *Field[time.Time] {
	switch name {
	case "SODT":
		return &r.SODT
	case "ESTT":
		return &r.ESTT
	case "ACTT":
		return &r.ACTT
	case "APPT":
		return &r.APPT
	case "BOTM":
		return &r.BOTM
	case "LACL":
		return &r.LACL
	case "FINT":
		return &r.FINT
	case "CNCL":
		return &r.CNCL
	case "EGSR":
		return &r.EGSR
	case "EGST":
		return &r.EGST
	case "PEDT":
		return &r.PEDT
	case "NEAT":
		return &r.NEAT
	case "PADT":
		return &r.PADT
	case "NAAT":
		return &r.NAAT
	case "COBT":
		return &r.COBT
	case "CTOT":
		return &r.CTOT
	case "TOBT":
		return &r.TOBT
	case "EOBT":
		return &r.EOBT
	case "IEST":
		return &r.IEST
	}
	return nil
}

// flightRecord decodes a FLTR element.
func (x *decoder) flightRecord(ni int32, path string, r *FlightRecord) *Error {
	if err := x.noText(ni, path); err != nil {
		return err
	}
	x.counts = x.counts[:0]
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
	name := x.node(ci).name
	if f := r.strField(name); f != nil {
		return true, x.setStr(f, ci, parent, name)
	}
	if f := r.timeField(name); f != nil {
		return true, x.setTime(f, ci, parent)
	}
	switch name {
	case "FLID":
		return true, x.setID(&r.FLID, ci, parent, 12)
	case "TAID":
		return true, x.setID(&r.TAID, ci, parent, 12)
	case "MAID":
		return true, x.setID(&r.MAID, ci, parent, 12)
	case "PHAG":
		return true, x.setID(&r.PHAG, ci, parent, 10)
	case "FHAG":
		return true, x.setID(&r.FHAG, ci, parent, 10)
	case "MHAG":
		return true, x.setID(&r.MHAG, ci, parent, 10)
	case "MAXP":
		return true, x.setInt(&r.MAXP, ci, parent, maxSmallint)
	case "VIPP":
		return true, x.setInt(&r.VIPP, ci, parent, maxSmallint)
	case "VIPR":
		return true, x.setInt(&r.VIPR, ci, parent, 9)
	case "LBNO":
		return true, x.setInt(&r.LBNO, ci, parent, maxSmallint)
	case "PAXC":
		return true, x.setInt(&r.PAXC, ci, parent, maxSmallint)
	case "LBWT":
		if r.LBWT.Present {
			return true, dup(parent+"/LBWT", x.node(ci).text)
		}
		v, err := x.leaf(ci, parent+"/LBWT")
		if err != nil {
			return true, err
		}
		if v != "" && !isDecimal(v) {
			return true, protocol(parent+"/LBWT", v, "must be a decimal with at most 2 fraction digits")
		}
		return true, strValue(&r.LBWT, v, parent, "/LBWT", "LBWT")
	case "FDIV":
		return true, x.setDiversion(&r.FDIV, ci, parent)
	case "FRET":
		return true, x.setIrregular(&r.FRET, ci, parent, "REID")
	case "FLAB":
		return true, x.setIrregular(&r.FLAB, ci, parent, "ARES")
	case "ROUT":
		return true, addEntry(x, &r.ROUT, ci, parent, decRoute)
	case "ERUT":
		return true, addEntry(x, &r.ERUT, ci, parent, decRoute)
	case "PSDT":
		return true, addEntry(x, &r.PSDT, ci, parent, decStand)
	case "GTDT":
		return true, addEntry(x, &r.GTDT, ci, parent, decGate)
	case "CKDT":
		return true, addEntry(x, &r.CKDT, ci, parent, decCheckin)
	case "CLDT":
		return true, addEntry(x, &r.CLDT, ci, parent, decCarousel)
	case "CHDT":
		return true, addEntry(x, &r.CHDT, ci, parent, decChute)
	case "CHOT":
		return true, addEntry(x, &r.CHOT, ci, parent, decChock)
	case "ABTM":
		return true, addEntry(x, &r.ABTM, ci, parent, decAirbridge)
	case "PORT":
		return true, addEntry(x, &r.PORT, ci, parent, decPort)
	case "TIPT":
		return true, addEntry(x, &r.TIPT, ci, parent, decTractor)
	case "PSHT":
		return true, addEntry(x, &r.PSHT, ci, parent, decPush)
	case "DELY":
		return true, addEntry(x, &r.DELY, ci, parent, decDelay)
	case "SRVT":
		return true, addEntry(x, &r.SRVT, ci, parent, decService)
	case "VIPF":
		return true, addEntry(x, &r.VIPF, ci, parent, decVIP)
	}
	return false, nil
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

func required(ok bool, path, msg string) *Error {
	if ok {
		return nil
	}
	return protocol(path, "", msg)
}

func decRoute(x *decoder, ni int32, path string) (RouteEntry, int, *Error) {
	var e RouteEntry
	if err := x.noText(ni, path); err != nil {
		return e, 0, err
	}
	if err := x.seqAttr(&e.RTNO, ni, path, "RTNO"); err != nil {
		return e, 0, err
	}
	for c := x.node(ni).first; c >= 0; c = x.node(c).next {
		var err *Error
		switch n := x.node(c).name; n {
		case "APCD":
			err = x.setStr(&e.APCD, c, path, "APCD")
		case "SCAT":
			err = x.setTime(&e.SCAT, c, path)
		case "SCDT":
			err = x.setTime(&e.SCDT, c, path)
		default:
			err = unknown(path, n)
		}
		if err != nil {
			return e, 0, err
		}
	}
	if !e.RTNO.HasValue() && !e.APCD.HasValue() && !e.SCAT.HasValue() && !e.SCDT.HasValue() {
		return e, entryClear, nil
	}
	if err := required(e.RTNO.HasValue(), path+"@RTNO", "RTNO required"); err != nil {
		return e, 0, err
	}
	return e, entryItem, required(e.APCD.HasValue(), path+"/APCD", "APCD required")
}

func decStand(x *decoder, ni int32, path string) (StandAllocation, int, *Error) {
	var e StandAllocation
	if err := x.noText(ni, path); err != nil {
		return e, 0, err
	}
	if err := x.seqAttr(&e.PSNO, ni, path, "PSNO"); err != nil {
		return e, 0, err
	}
	for c := x.node(ni).first; c >= 0; c = x.node(c).next {
		var err *Error
		switch n := x.node(c).name; n {
		case "PSST":
			err = x.setStr(&e.PSST, c, path, "PSST")
		case "STST":
			err = x.setTime(&e.STST, c, path)
		case "STET":
			err = x.setTime(&e.STET, c, path)
		default:
			err = unknown(path, n)
		}
		if err != nil {
			return e, 0, err
		}
	}
	if !e.PSNO.HasValue() && !e.PSST.HasValue() && !e.STST.HasValue() && !e.STET.HasValue() {
		return e, entryEmpty, nil
	}
	if err := required(e.PSNO.HasValue(), path+"@PSNO", "PSNO required"); err != nil {
		return e, 0, err
	}
	return e, entryItem, required(e.PSST.HasValue(), path+"/PSST", "PSST required")
}

func decGate(x *decoder, ni int32, path string) (GateAllocation, int, *Error) {
	var e GateAllocation
	if err := x.noText(ni, path); err != nil {
		return e, 0, err
	}
	if err := x.seqAttr(&e.GTNO, ni, path, "GTNO"); err != nil {
		return e, 0, err
	}
	any := e.GTNO.HasValue()
	for c := x.node(ni).first; c >= 0; c = x.node(c).next {
		var err *Error
		switch n := x.node(c).name; n {
		case "GATE":
			err = x.setStr(&e.GATE, c, path, "GATE")
		case "GTYP":
			err = x.setStr(&e.GTYP, c, path, "GTYP")
		case "PGOT":
			err = x.setTime(&e.PGOT, c, path)
		case "PGCT":
			err = x.setTime(&e.PGCT, c, path)
		case "GOTM":
			err = x.setTime(&e.GOTM, c, path)
		case "GCTM":
			err = x.setTime(&e.GCTM, c, path)
		default:
			err = unknown(path, n)
		}
		if err != nil {
			return e, 0, err
		}
	}
	any = any || e.GATE.HasValue() || e.GTYP.HasValue() || e.PGOT.HasValue() || e.PGCT.HasValue() || e.GOTM.HasValue() || e.GCTM.HasValue()
	if !any {
		return e, entryEmpty, nil
	}
	if err := required(e.GTNO.HasValue(), path+"@GTNO", "GTNO required"); err != nil {
		return e, 0, err
	}
	return e, entryItem, required(e.GATE.HasValue(), path+"/GATE", "GATE required")
}

func decCheckin(x *decoder, ni int32, path string) (CheckinAllocation, int, *Error) {
	var e CheckinAllocation
	if err := x.noText(ni, path); err != nil {
		return e, 0, err
	}
	if err := x.seqAttr(&e.CKNO, ni, path, "CKNO"); err != nil {
		return e, 0, err
	}
	for c := x.node(ni).first; c >= 0; c = x.node(c).next {
		var err *Error
		switch n := x.node(c).name; n {
		case "CHKC":
			err = x.setStr(&e.CHKC, c, path, "CHKC")
		case "CCLS":
			err = x.setStr(&e.CCLS, c, path, "CCLS")
		case "CTYP":
			err = x.setStr(&e.CTYP, c, path, "CTYP")
		case "PCOT":
			err = x.setTime(&e.PCOT, c, path)
		case "PCCT":
			err = x.setTime(&e.PCCT, c, path)
		case "COTM":
			err = x.setTime(&e.COTM, c, path)
		case "CCTM":
			err = x.setTime(&e.CCTM, c, path)
		default:
			err = unknown(path, n)
		}
		if err != nil {
			return e, 0, err
		}
	}
	if !(e.CKNO.HasValue() || e.CHKC.HasValue() || e.CCLS.HasValue() || e.CTYP.HasValue() || e.PCOT.HasValue() ||
		e.PCCT.HasValue() || e.COTM.HasValue() || e.CCTM.HasValue()) {
		return e, entryEmpty, nil
	}
	if err := required(e.CKNO.HasValue(), path+"@CKNO", "CKNO required"); err != nil {
		return e, 0, err
	}
	return e, entryItem, required(e.CHKC.HasValue(), path+"/CHKC", "CHKC required")
}

func decCarousel(x *decoder, ni int32, path string) (CarouselAllocation, int, *Error) {
	var e CarouselAllocation
	if err := x.noText(ni, path); err != nil {
		return e, 0, err
	}
	if err := x.seqAttr(&e.CLNO, ni, path, "CLNO"); err != nil {
		return e, 0, err
	}
	for c := x.node(ni).first; c >= 0; c = x.node(c).next {
		var err *Error
		switch n := x.node(c).name; n {
		case "BELT":
			err = x.setStr(&e.BELT, c, path, "BELT")
		case "BCLS":
			err = x.setStr(&e.BCLS, c, path, "BCLS")
		case "BTYP":
			err = x.setStr(&e.BTYP, c, path, "BTYP")
		case "PCOT":
			err = x.setTime(&e.PCOT, c, path)
		case "PCCT":
			err = x.setTime(&e.PCCT, c, path)
		case "FBAG":
			err = x.setTime(&e.FBAG, c, path)
		case "LBAG":
			err = x.setTime(&e.LBAG, c, path)
		default:
			err = unknown(path, n)
		}
		if err != nil {
			return e, 0, err
		}
	}
	if !(e.CLNO.HasValue() || e.BELT.HasValue() || e.BCLS.HasValue() || e.BTYP.HasValue() || e.PCOT.HasValue() ||
		e.PCCT.HasValue() || e.FBAG.HasValue() || e.LBAG.HasValue()) {
		return e, entryEmpty, nil
	}
	if err := required(e.CLNO.HasValue(), path+"@CLNO", "CLNO required"); err != nil {
		return e, 0, err
	}
	return e, entryItem, required(e.BELT.HasValue(), path+"/BELT", "BELT required")
}

func decChute(x *decoder, ni int32, path string) (ChuteAllocation, int, *Error) {
	var e ChuteAllocation
	if err := x.noText(ni, path); err != nil {
		return e, 0, err
	}
	if err := x.seqAttr(&e.CHNO, ni, path, "CHNO"); err != nil {
		return e, 0, err
	}
	for c := x.node(ni).first; c >= 0; c = x.node(c).next {
		var err *Error
		switch n := x.node(c).name; n {
		case "CHUT":
			err = x.setStr(&e.CHUT, c, path, "CHUT")
		case "CCLS":
			err = x.setStr(&e.CCLS, c, path, "CCLS")
		case "CTYP":
			err = x.setStr(&e.CTYP, c, path, "CTYP")
		case "PCBT":
			err = x.setTime(&e.PCBT, c, path)
		case "PCET":
			err = x.setTime(&e.PCET, c, path)
		case "CBTM":
			err = x.setTime(&e.CBTM, c, path)
		case "CETM":
			err = x.setTime(&e.CETM, c, path)
		default:
			err = unknown(path, n)
		}
		if err != nil {
			return e, 0, err
		}
	}
	if !(e.CHNO.HasValue() || e.CHUT.HasValue() || e.CCLS.HasValue() || e.CTYP.HasValue() || e.PCBT.HasValue() ||
		e.PCET.HasValue() || e.CBTM.HasValue() || e.CETM.HasValue()) {
		return e, entryEmpty, nil
	}
	if err := required(e.CHNO.HasValue(), path+"@CHNO", "CHNO required"); err != nil {
		return e, 0, err
	}
	return e, entryItem, required(e.CHUT.HasValue(), path+"/CHUT", "CHUT required")
}

func decChock(x *decoder, ni int32, path string) (Chock, int, *Error) {
	var e Chock
	if err := x.noText(ni, path); err != nil {
		return e, 0, err
	}
	if err := x.seqAttr(&e.CSNO, ni, path, "CSNO"); err != nil {
		return e, 0, err
	}
	for c := x.node(ni).first; c >= 0; c = x.node(c).next {
		var err *Error
		switch n := x.node(c).name; n {
		case "CHTM":
			err = x.setTime(&e.CHTM, c, path)
		case "CHID":
			err = x.setStr(&e.CHID, c, path, "CHID")
		case "CHST":
			err = x.setStr(&e.CHST, c, path, "CHST")
		default:
			err = unknown(path, n)
		}
		if err != nil {
			return e, 0, err
		}
	}
	if !(e.CSNO.HasValue() || e.CHTM.HasValue() || e.CHID.HasValue() || e.CHST.HasValue()) {
		return e, entryEmpty, nil
	}
	if err := required(e.CSNO.HasValue(), path+"@CSNO", "CSNO required"); err != nil {
		return e, 0, err
	}
	return e, entryItem, required(e.CHST.HasValue(), path+"/CHST", "CHST required")
}

func decAirbridge(x *decoder, ni int32, path string) (Airbridge, int, *Error) {
	var e Airbridge
	if err := x.noText(ni, path); err != nil {
		return e, 0, err
	}
	if err := x.seqAttr(&e.ASNO, ni, path, "ASNO"); err != nil {
		return e, 0, err
	}
	for c := x.node(ni).first; c >= 0; c = x.node(c).next {
		var err *Error
		switch n := x.node(c).name; n {
		case "ABDG":
			err = x.setStr(&e.ABDG, c, path, "ABDG")
		case "ABOP":
			err = x.setStr(&e.ABOP, c, path, "ABOP")
		case "AOTM":
			err = x.setTime(&e.AOTM, c, path)
		default:
			err = unknown(path, n)
		}
		if err != nil {
			return e, 0, err
		}
	}
	if !(e.ASNO.HasValue() || e.ABDG.HasValue() || e.ABOP.HasValue() || e.AOTM.HasValue()) {
		return e, entryEmpty, nil
	}
	if err := required(e.ASNO.HasValue(), path+"@ASNO", "ASNO required"); err != nil {
		return e, 0, err
	}
	return e, entryItem, required(e.ABDG.HasValue(), path+"/ABDG", "ABDG required")
}

func decPort(x *decoder, ni int32, path string) (Port, int, *Error) {
	var e Port
	if err := x.noText(ni, path); err != nil {
		return e, 0, err
	}
	for c := x.node(ni).first; c >= 0; c = x.node(c).next {
		var err *Error
		switch n := x.node(c).name; n {
		case "POTM":
			err = x.setTime(&e.POTM, c, path)
		case "POID":
			err = x.setStr(&e.POID, c, path, "POID")
		default:
			err = unknown(path, n)
		}
		if err != nil {
			return e, 0, err
		}
	}
	if !e.POTM.HasValue() && !e.POID.HasValue() {
		return e, entryEmpty, nil
	}
	return e, entryItem, required(e.POID.HasValue(), path+"/POID", "POID required (O or C)")
}

func decTractor(x *decoder, ni int32, path string) (TractorInPlace, int, *Error) {
	var e TractorInPlace
	if err := x.noText(ni, path); err != nil {
		return e, 0, err
	}
	for c := x.node(ni).first; c >= 0; c = x.node(c).next {
		var err *Error
		switch n := x.node(c).name; n {
		case "TRTM":
			err = x.setTime(&e.TRTM, c, path)
		case "TRST":
			err = x.setStr(&e.TRST, c, path, "TRST")
		default:
			err = unknown(path, n)
		}
		if err != nil {
			return e, 0, err
		}
	}
	if !e.TRTM.HasValue() && !e.TRST.HasValue() {
		return e, entryEmpty, nil
	}
	return e, entryItem, required(e.TRST.HasValue(), path+"/TRST", "TRST required")
}

func decPush(x *decoder, ni int32, path string) (Push, int, *Error) {
	var e Push
	if err := x.noText(ni, path); err != nil {
		return e, 0, err
	}
	if err := x.seqAttr(&e.PSHN, ni, path, "PSHN"); err != nil {
		return e, 0, err
	}
	for c := x.node(ni).first; c >= 0; c = x.node(c).next {
		var err *Error
		switch n := x.node(c).name; n {
		case "PSTM":
			err = x.setTime(&e.PSTM, c, path)
		case "PSID":
			err = x.setStr(&e.PSID, c, path, "PSID")
		case "PUST":
			err = x.setStr(&e.PUST, c, path, "PUST")
		default:
			err = unknown(path, n)
		}
		if err != nil {
			return e, 0, err
		}
	}
	if !(e.PSHN.HasValue() || e.PSTM.HasValue() || e.PSID.HasValue() || e.PUST.HasValue()) {
		return e, entryEmpty, nil
	}
	return e, entryItem, required(e.PUST.HasValue(), path+"/PUST", "PUST required")
}

func decDelay(x *decoder, ni int32, path string) (Delay, int, *Error) {
	var e Delay
	text, err := x.leaf(ni, path)
	if err != nil {
		return e, 0, err
	}
	if err := x.setAttrStr(&e.CODE, ni, path, "CODE"); err != nil {
		return e, 0, err
	}
	if v, ok := x.attr(ni, "STRT"); ok {
		if err := x.timeValue(&e.STRT, v, path, "@STRT"); err != nil {
			return e, 0, err
		}
	}
	if v, ok := x.attr(ni, "DURA"); ok {
		if v == "" {
			e.DURA = EmptyField[int]()
		} else {
			h, ok1 := digits2(v[:min(2, len(v))])
			m, ok2 := digits2(v[min(2, len(v)):])
			if len(v) != 4 || !ok1 || !ok2 || m > 59 {
				return e, 0, protocol(path+"@DURA", v, "must be HHMM (minutes 00-59)")
			}
			e.DURA = Val(h*60 + m)
		}
	}
	if text != "" {
		if err := checkLen("DELY#comment", path, text); err != nil {
			return e, 0, err
		}
		e.Comment = Val(text)
	}
	if !e.CODE.HasValue() && !e.STRT.HasValue() && !e.DURA.HasValue() && text == "" {
		return e, entryClear, nil
	}
	return e, entryItem, required(e.CODE.HasValue(), path+"@CODE", "CODE required")
}

func decService(x *decoder, ni int32, path string) (Service, int, *Error) {
	var e Service
	if err := x.noText(ni, path); err != nil {
		return e, 0, err
	}
	for c := x.node(ni).first; c >= 0; c = x.node(c).next {
		var err *Error
		switch n := x.node(c).name; n {
		case "SRTC":
			err = x.setStr(&e.SRTC, c, path, "SRTC")
		case "SRQT":
			err = x.setInt(&e.SRQT, c, path, maxSmallint)
		case "SRST":
			err = x.setTime(&e.SRST, c, path)
		case "SRET":
			err = x.setTime(&e.SRET, c, path)
		case "SRPR":
			err = x.setID(&e.SRPR, c, path, 10)
		case "SANR":
			err = x.setStr(&e.SANR, c, path, "SANR")
		case "SARR":
			err = x.setStr(&e.SARR, c, path, "SARR")
		default:
			err = unknown(path, n)
		}
		if err != nil {
			return e, 0, err
		}
	}
	if !(e.SRTC.HasValue() || e.SRQT.HasValue() || e.SRST.HasValue() || e.SRET.HasValue() || e.SRPR.HasValue() ||
		e.SANR.HasValue() || e.SARR.HasValue()) {
		return e, entryClear, nil
	}
	return e, entryItem, required(e.SRTC.HasValue(), path+"/SRTC", "SRTC required")
}

func decVIP(x *decoder, ni int32, path string) (VIP, int, *Error) {
	var e VIP
	if err := x.noText(ni, path); err != nil {
		return e, 0, err
	}
	k := 0
	for c := x.node(ni).first; c >= 0; c = x.node(c).next {
		var err *Error
		switch n := x.node(c).name; n {
		case "VPCD":
			err = x.setStr(&e.VPCD, c, path, "VPCD")
		case "VFES":
			err = x.setInt(&e.VFES, c, path, maxSmallint)
		case "VIPT":
			k++
			err = x.vipService(&e.VIPT, c, path+"/VIPT["+strconv.Itoa(k)+"]")
		default:
			err = unknown(path, n)
		}
		if err != nil {
			return e, 0, err
		}
	}
	if !e.VPCD.HasValue() { // docs/sis.md §e.2: entries without VPCD are ignored
		if e.VFES.HasValue() || len(e.VIPT.Items) > 0 {
			x.warn(path + ": VIPF entry without VPCD ignored")
		}
		return e, entryEmpty, nil
	}
	return e, entryItem, nil
}

func (x *decoder) vipService(l *List[VIPService], ni int32, path string) *Error {
	var e VIPService
	if err := x.noText(ni, path); err != nil {
		return err
	}
	for c := x.node(ni).first; c >= 0; c = x.node(c).next {
		var err *Error
		switch n := x.node(c).name; n {
		case "VSCD":
			err = x.setStr(&e.VSCD, c, path, "VSCD")
		case "VTQY":
			err = x.setID(&e.VTQY, c, path, 18)
		case "VTST":
			err = x.setTime(&e.VTST, c, path)
		case "VTET":
			err = x.setTime(&e.VTET, c, path)
		default:
			err = unknown(path, n)
		}
		if err != nil {
			return err
		}
	}
	l.Present = true
	if l.Items == nil {
		l.Items = []VIPService{}
	}
	if !(e.VSCD.HasValue() || e.VTQY.HasValue() || e.VTST.HasValue() || e.VTET.HasValue()) {
		return nil
	}
	if err := required(e.VSCD.HasValue(), path+"/VSCD", "VSCD required"); err != nil {
		return err
	}
	l.Items = append(l.Items, e)
	return nil
}
