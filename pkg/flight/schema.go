package flight

import "slices"

// F names a scalar field of a flight (a column of table flight).
type F int

// The scalar fields, in column order. The names are the SIS elements they come from
// (docs/sis.md §c.1); compound elements (FDIV, FRET, FLAB, PORT) have one field per part.
const (
	FFID F = iota
	ALCD
	ALSC
	FLNO
	MVIN
	SODT
	FLTY
	FLIN
	ACFT
	RENO
	TAOP
	TAFL
	TAID
	TRML
	MAXP
	STND
	PHAG
	FHAG
	MHAG
	EXSC
	EXSR
	FTSS
	FDIVDDES
	FDIVDDIR
	FDIVReason
	FRETREID
	FRETReason
	FLABARES
	FLABReason
	CSOP
	CSFT
	MAID
	ESTT
	ACTT
	APPT
	BOTM
	LACL
	FINT
	CNCL
	EGSR
	EGST
	PEDT
	NEAT
	PADT
	NAAT
	COBT
	TOBT
	EOBT
	IEST
	CTOT
	RUNW
	PortOpen
	PortClose
	REMC
	VIPP
	VIPR
	LBNO
	LBWT
	PAXC
	NumFields
)

// Column describes one stored column: its name (also its JSON key and its name in the
// "changed" map of events) and its kind.
type Column struct {
	Name string
	Kind Kind
}

// Fields describes every scalar field, indexed by F.
var Fields = [NumFields]Column{
	FFID: {"ffid", KindText}, ALCD: {"alcd", KindText}, ALSC: {"alsc", KindText},
	FLNO: {"flno", KindText}, MVIN: {"mvin", KindText}, SODT: {"sodt", KindTime},
	FLTY: {"flty", KindText}, FLIN: {"flin", KindText}, ACFT: {"acft", KindText},
	RENO: {"reno", KindText}, TAOP: {"taop", KindText}, TAFL: {"tafl", KindText},
	TAID: {"taid", KindInt}, TRML: {"trml", KindText}, MAXP: {"maxp", KindInt},
	STND: {"stnd", KindText}, PHAG: {"phag", KindInt}, FHAG: {"fhag", KindInt},
	MHAG: {"mhag", KindInt}, EXSC: {"exsc", KindText}, EXSR: {"exsr", KindText},
	FTSS: {"ftss", KindText}, FDIVDDES: {"fdiv_ddes", KindText}, FDIVDDIR: {"fdiv_ddir", KindText},
	FDIVReason: {"fdiv_reason", KindText}, FRETREID: {"fret_reid", KindText},
	FRETReason: {"fret_reason", KindText}, FLABARES: {"flab_ares", KindText},
	FLABReason: {"flab_reason", KindText}, CSOP: {"csop", KindText}, CSFT: {"csft", KindText},
	MAID: {"maid", KindInt}, ESTT: {"estt", KindTime}, ACTT: {"actt", KindTime},
	APPT: {"appt", KindTime}, BOTM: {"botm", KindTime}, LACL: {"lacl", KindTime},
	FINT: {"fint", KindTime}, CNCL: {"cncl", KindTime}, EGSR: {"egsr", KindTime},
	EGST: {"egst", KindTime}, PEDT: {"pedt", KindTime}, NEAT: {"neat", KindTime},
	PADT: {"padt", KindTime}, NAAT: {"naat", KindTime}, COBT: {"cobt", KindTime},
	TOBT: {"tobt", KindTime}, EOBT: {"eobt", KindTime}, IEST: {"iest", KindTime},
	CTOT: {"ctot", KindTime}, RUNW: {"runw", KindText}, PortOpen: {"port_open", KindTime},
	PortClose: {"port_close", KindTime}, REMC: {"remc", KindText}, VIPP: {"vipp", KindInt},
	VIPR: {"vipr", KindText}, LBNO: {"lbno", KindInt}, LBWT: {"lbwt", KindDecimal},
	PAXC: {"paxc", KindInt},
}

// C names a collection of a flight (rows of a detail table).
type C int

// The collections. ROUT and ERUT share table flight_route (column kind tells them apart).
const (
	ROUT C = iota
	ERUT
	PSDT
	GTDT
	CKDT
	CLDT
	CHDT
	CHOT
	ABTM
	DELY
	SRVT
	VIPF
	NumColls
)

// MaxCols is the most columns a collection row has (stand and check-in rows have 8).
const MaxCols = 8

// Row is one collection row: the key first, then the other columns of its Collection, in
// order. Unused tail values stay Null. Rows are comparable with ==.
type Row [MaxCols]Value

// Collection describes a collection: its SIS element (JSON key, lower-case), its detail table,
// the fixed route kind (flight_route only) and its columns, key first. Input order is the
// row's index in the state (column ord of the table).
type Collection struct {
	Name      string
	Table     string
	RouteKind string
	Cols      []Column
}

// Collections describes every collection, indexed by C.
var Collections = [NumColls]Collection{
	ROUT: {"rout", "flight_route", "ROUT", routeCols},
	ERUT: {"erut", "flight_route", "ERUT", routeCols},
	PSDT: {"psdt", "flight_stand", "", []Column{{"psno", KindInt}, {"psst", KindText}, {"stst", KindTime},
		{"stet", KindTime}, {"trtm", KindTime}, {"pstm", KindTime}, {"psid", KindText}, {"pshn", KindInt}}},
	GTDT: {"gtdt", "flight_gate", "", []Column{{"gtno", KindInt}, {"gate", KindText}, {"pgot", KindTime},
		{"pgct", KindTime}, {"gotm", KindTime}, {"gctm", KindTime}, {"gtyp", KindText}}},
	CKDT: {"ckdt", "flight_checkin", "", []Column{{"ckno", KindInt}, {"chkc", KindText}, {"ccls", KindText},
		{"pcot", KindTime}, {"pcct", KindTime}, {"cotm", KindTime}, {"cctm", KindTime}, {"ctyp", KindText}}},
	CLDT: {"cldt", "flight_carousel", "", []Column{{"clno", KindInt}, {"belt", KindText}, {"bcls", KindText},
		{"pcot", KindTime}, {"pcct", KindTime}, {"fbag", KindTime}, {"lbag", KindTime}, {"btyp", KindText}}},
	CHDT: {"chdt", "flight_chute", "", []Column{{"chno", KindInt}, {"chut", KindText}, {"ccls", KindText},
		{"pcbt", KindTime}, {"pcet", KindTime}, {"cbtm", KindTime}, {"cetm", KindTime}, {"ctyp", KindText}}},
	CHOT: {"chot", "flight_chock", "", []Column{{"csno", KindInt}, {"chtm", KindTime}, {"chid", KindText},
		{"chst", KindText}}},
	ABTM: {"abtm", "flight_airbridge", "", []Column{{"asno", KindInt}, {"abdg", KindText}, {"abop", KindText},
		{"aotm", KindTime}}},
	DELY: {"dely", "flight_delay", "", []Column{{"code", KindText}, {"strt", KindTime}, {"dura_min", KindInt},
		{"comment", KindText}}},
	SRVT: {"srvt", "flight_service", "", []Column{{"srtc", KindText}, {"srqt", KindText}, {"srst", KindTime},
		{"sret", KindTime}, {"srpr", KindText}, {"sanr", KindText}, {"sarr", KindText}}},
	VIPF: {"vipf", "flight_vip", "", []Column{{"vpcd", KindText}, {"vfes", KindText}, {"vipt", KindJSON}}},
}

// DetailTables are the detail tables of Collections, each once, in collection order.
func DetailTables() []string {
	var out []string
	for _, c := range Collections {
		if !slices.Contains(out, c.Table) {
			out = append(out, c.Table)
		}
	}
	return out
}

var routeCols = []Column{{"rtno", KindInt}, {"apcd", KindText}, {"scat", KindTime}, {"scdt", KindTime}}

// Column indexes inside rows, named for the merge code.
const (
	stPSST  = 1
	stTRTM  = 4
	stPSTM  = 5
	stPSID  = 6
	stPSHN  = 7
	vipVIPT = 2
)
