package sis

import (
	"slices"
	"sort"
)

// subtypeElements lists, for every supported FLOP subtype (the 48 of docs/sis.md
// §b.3 plus ESTT and ACTT), the payload elements it carries.
var subtypeElements = map[string][]string{
	"ABTM": {"ABTM"}, "ACFT": {"ACFT"}, "APPT": {"APPT"}, "BOTM": {"BOTM"}, "CHDT": {"CHDT"},
	"CHOT": {"CHOT"}, "CKDT": {"CKDT"}, "CLDT": {"CLDT"}, "CNCL": {"CNCL"}, "COBT": {"COBT"},
	"CTOT": {"CTOT"}, "DELY": {"DELY"}, "EGSR": {"EGSR"}, "EGST": {"EGST"}, "EOBT": {"EOBT"},
	"ERUT": {"ERUT"}, "EXSS": {"EXSC", "EXSR"}, "FDEL": {"FDEL"}, "FDIV": {"FDIV"},
	"FINT": {"FINT"}, "FLAB": {"FLAB"}, "FLIN": {"FLIN"}, "FLTY": {"FLTY"}, "FRET": {"FRET"},
	"FTSS": {"FTSS"}, "GTDT": {"GTDT"}, "HNAG": {"FHAG", "PHAG", "MHAG"}, "IEST": {"IEST"},
	"LACL": {"LACL"}, "MAXP": {"MAXP"}, "NAAT": {"NAAT"}, "NEAT": {"NEAT"}, "PADT": {"PADT"},
	"PEDT": {"PEDT"}, "PORT": {"PORT"}, "PSDT": {"PSDT"}, "PSHT": {"PSHT"}, "REMC": {"REMC"},
	"RENO": {"RENO"}, "RUNW": {"RUNW"}, "SRVT": {"SRVT"}, "STND": {"STND"},
	"TAOP": {"TAOP", "TAFL", "TAID"}, "TIPT": {"TIPT"}, "TOBT": {"TOBT"}, "TRML": {"TRML"},
	"VIPF": {"VIPF"}, "VIPP": {"VIPP", "VIPR"}, "ESTT": {"ESTT"}, "ACTT": {"ACTT"},
}

// SubtypeElements returns the payload elements of a supported FLOP subtype
// (e.g. HNAG -> FHAG, PHAG, MHAG) and whether the subtype is supported.
func SubtypeElements(styp string) ([]string, bool) {
	e, ok := subtypeElements[styp]
	return slices.Clone(e), ok
}

// Subtypes returns every supported FLOP subtype, sorted.
func Subtypes() []string {
	out := make([]string, 0, len(subtypeElements))
	for k := range subtypeElements {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// flop decodes the FLOP body. supported is false for an unknown subtype (then
// only FLID/FFID are decoded and the message is KindUnsupported).
func (x *decoder) flop(root int32, styp string) (*FlightOp, bool, *Error) {
	bi, err := x.body(root, "FLOP")
	if err != nil {
		return nil, false, err
	}
	const path = "MSG/FLOP"
	if err := x.noText(bi, path); err != nil {
		return nil, false, err
	}
	elems, supported := subtypeElements[styp]
	op := &FlightOp{Subtype: styp}
	x.startFlight()
	var flid Field[int64]
	var ffid Field[string]
	fdel := false
	for c := x.node(bi).first; c >= 0; c = x.node(c).next {
		name := x.node(c).name
		var err *Error
		switch {
		case name == "FLID":
			err = x.setID(&flid, c, path, 12)
		case name == "FFID":
			err = x.setStr(&ffid, c, path, "FFID")
		case !supported:
			// the payload of an unknown subtype is not decoded
		case name == "FDEL" && styp == "FDEL":
			if fdel {
				return nil, false, dup(path+"/FDEL", "")
			}
			fdel = true
			n := x.node(c)
			if n.text != "" {
				return nil, false, protocol(path+"/FDEL", n.text, "FDEL must be empty")
			}
			if n.first >= 0 {
				return nil, false, protocol(path+"/FDEL", x.node(n.first).name, "FDEL must be empty")
			}
		case contains(elems, name):
			_, err = x.flightField(&op.Payload, c, path)
		case isFlightElement(name) || name == "FDEL":
			x.warn(path + "/" + name + ": element ignored for subtype " + styp)
		default:
			err = unknown(path, name)
		}
		if err != nil {
			return nil, false, err
		}
	}
	v, ok := flid.Get()
	if !ok {
		return nil, false, protocol(path+"/FLID", "", "FLID required")
	}
	op.FLID = v
	op.FFID = ffid.Value
	if !supported {
		x.warn("FLOP subtype " + styp + " not supported")
		return op, false, nil
	}
	return op, true, checkSubtype(op, fdel)
}

// checkSubtype enforces the rejections of docs/sis.md §e.2 (forms that cannot clear
// a value) for the subtype's payload.
func checkSubtype(op *FlightOp, fdel bool) *Error {
	p := &op.Payload
	const at = "MSG/FLOP/"
	valueRequired := func(name string, present, hasValue bool) *Error {
		switch {
		case !present:
			return protocol(at+name, "", name+" required (cannot be cleared through FLOP)")
		case !hasValue:
			return protocol(at+name, "", name+" must not be empty")
		}
		return nil
	}
	presentRequired := func(name string, present bool) *Error {
		if !present {
			return protocol(at+name, "", name+" required (cannot be cleared through FLOP)")
		}
		return nil
	}
	entriesRequired := func(name string, n int) *Error {
		if n == 0 {
			return protocol(at+name, "", name+" needs at least one entry (cannot be cleared through FLOP)")
		}
		return nil
	}
	switch op.Subtype {
	case "ACFT":
		return valueRequired("ACFT", p.ACFT.Present, p.ACFT.HasValue())
	case "FLIN":
		return valueRequired("FLIN", p.FLIN.Present, p.FLIN.HasValue())
	case "FLTY":
		return valueRequired("FLTY", p.FLTY.Present, p.FLTY.HasValue())
	case "MAXP":
		return valueRequired("MAXP", p.MAXP.Present, p.MAXP.HasValue())
	case "REMC":
		return presentRequired("REMC", p.REMC.Present)
	case "RENO":
		return presentRequired("RENO", p.RENO.Present)
	case "RUNW":
		return presentRequired("RUNW", p.RUNW.Present)
	case "STND":
		return presentRequired("STND", p.STND.Present)
	case "TRML":
		return presentRequired("TRML", p.TRML.Present)
	case "FTSS":
		return presentRequired("FTSS", p.FTSS.Present)
	case "EXSS":
		return presentRequired("EXSC", p.EXSC.Present)
	case "ABTM":
		return entriesRequired("ABTM", len(p.ABTM.Items))
	case "CHDT":
		return entriesRequired("CHDT", len(p.CHDT.Items))
	case "CHOT":
		return entriesRequired("CHOT", len(p.CHOT.Items))
	case "CKDT":
		return entriesRequired("CKDT", len(p.CKDT.Items))
	case "CLDT":
		return entriesRequired("CLDT", len(p.CLDT.Items))
	case "GTDT":
		return entriesRequired("GTDT", len(p.GTDT.Items))
	case "PSDT":
		return entriesRequired("PSDT", len(p.PSDT.Items))
	case "PORT":
		if len(p.PORT.Items) == 0 {
			return protocol(at+"PORT/POID", "", "PORT with POID (O or C) required")
		}
	case "FDEL":
		if !fdel {
			return protocol(at+"FDEL", "", "FDEL element required")
		}
	}
	return nil
}
