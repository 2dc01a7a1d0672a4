package flights_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/flight"
	"github.com/msgx/msgx/pkg/sis"
)

// form is one payload of a FLOP subtype and the fields it must leave (a JSON object: a subset
// of the state JSON). Every key the message's KAFKA:msg event lists as changed must be one of
// want's keys: nothing else may change.
type form struct{ payload, want string }

// subtypeCase is one row of the FLOP matrix: forms applied in order (each applied twice: the
// second time must change nothing, INV-20) and payloads the SIS contract rejects (PROTOCOL).
type subtypeCase struct {
	styp   string
	forms  []form
	reject []string
}

const T1, T1J = "23JAN210600", `"2021-01-23T06:00:00"`

func timeCase(styp string) subtypeCase {
	k := strings.ToLower(styp)
	return subtypeCase{styp: styp,
		forms: []form{
			{"<" + styp + ">" + T1 + "</" + styp + ">", `{"` + k + `":` + T1J + `}`},
			{"<" + styp + "></" + styp + ">", `{"` + k + `":null}`},
			{"<" + styp + ">23JAN210700</" + styp + ">", `{"` + k + `":"2021-01-23T07:00:00"}`},
			{"<" + styp + "/>", `{"` + k + `":null}`},
			{"<" + styp + ">23JAN210700</" + styp + ">", `{"` + k + `":"2021-01-23T07:00:00"}`},
			{"", `{"` + k + `":null}`}, // element absent = clear (TOBT sample)
		},
		reject: []string{"<" + styp + ">32JAN210600</" + styp + ">", "<" + styp + ">23XYZ210600</" + styp + ">"},
	}
}

func textCase(styp, v1, v2 string) subtypeCase {
	k := strings.ToLower(styp)
	return subtypeCase{styp: styp,
		forms: []form{
			{"<" + styp + ">" + v1 + "</" + styp + ">", `{"` + k + `":"` + v1 + `"}`},
			{"<" + styp + "></" + styp + ">", `{"` + k + `":""}`}, // empty is stored empty (§e.2)
			{"<" + styp + ">" + v2 + "</" + styp + ">", `{"` + k + `":"` + v2 + `"}`},
		},
		reject: []string{""},
	}
}

func requiredCase(styp, v1, want1, v2, want2 string, bad ...string) subtypeCase {
	k := strings.ToLower(styp)
	return subtypeCase{styp: styp,
		forms: []form{
			{"<" + styp + ">" + v1 + "</" + styp + ">", `{"` + k + `":` + want1 + `}`},
			{"<" + styp + ">" + v2 + "</" + styp + ">", `{"` + k + `":` + want2 + `}`},
		},
		reject: append([]string{"", "<" + styp + "></" + styp + ">", "<" + styp + "/>"}, bad...),
	}
}

// matrix is the one table of FLOP subtypes: the 48 of docs/sis.md §b.3 plus ESTT and ACTT.
var matrix = func() []subtypeCase {
	var out []subtypeCase
	for _, s := range []string{"APPT", "BOTM", "CNCL", "EGSR", "EGST", "FINT", "LACL", "COBT", "CTOT",
		"EOBT", "IEST", "NAAT", "NEAT", "PADT", "PEDT", "TOBT", "ESTT", "ACTT"} {
		out = append(out, timeCase(s))
	}
	out = append(out,
		textCase("REMC", "late 晚点", "ok"), textCase("RENO", "B2574", "B1234"), textCase("RUNW", "02L", "20R"),
		textCase("STND", "504", "G12"), textCase("TRML", "T2", "T1"), textCase("FTSS", "BOR", "DEP"),
		requiredCase("ACFT", "320", `"320"`, "358", `"358"`, "<ACFT>TOOLONG</ACFT>"),
		requiredCase("FLIN", "I", `"I"`, "M", `"M"`, "<FLIN>X</FLIN>"),
		requiredCase("FLTY", "P", `"P"`, "C", `"C"`),
		requiredCase("MAXP", "180", `180`, "300", `300`, "<MAXP>abc</MAXP>"),
		subtypeCase{styp: "EXSS",
			forms: []form{
				{"<EXSC>DLY</EXSC><EXSR>late inbound</EXSR>", `{"exsc":"DLY","exsr":"late inbound"}`},
				{"<EXSC>DLY</EXSC>", `{"exsc":"DLY","exsr":null}`},
				{"<EXSC>ABC</EXSC><EXSR>x</EXSR>", `{"exsc":"ABC","exsr":"x"}`},
				{"<EXSC></EXSC><EXSR></EXSR>", `{"exsc":"","exsr":null}`},
			},
			reject: []string{"", "<EXSR>remark only</EXSR>"}},
		subtypeCase{styp: "FDIV",
			forms: []form{
				{`<FDIV DDES="PEK" DDIR="TO">weather</FDIV>`, `{"fdiv_ddes":"PEK","fdiv_ddir":"TO","fdiv_reason":"weather"}`},
				{`<FDIV DDES="" DDIR="TO"></FDIV>`, `{"fdiv_ddes":null,"fdiv_ddir":null,"fdiv_reason":null}`},
				{`<FDIV DDES="SHA" DDIR="FROM"></FDIV>`, `{"fdiv_ddes":"SHA","fdiv_ddir":"FROM","fdiv_reason":null}`},
				{``, `{"fdiv_ddes":null,"fdiv_ddir":null,"fdiv_reason":null}`},
			},
			reject: []string{`<FDIV DDES="PEK" DDIR="TOO">x</FDIV>`, `<FDIV DDES="PEK" DDIR="">x</FDIV>`, `<FDIV DDES="PEK">x</FDIV>`}},
		subtypeCase{styp: "FLAB",
			forms: []form{
				{`<FLAB ARES="G">wind shear</FLAB>`, `{"flab_ares":"G","flab_reason":"wind shear"}`},
				{`<FLAB ARES=""></FLAB>`, `{"flab_ares":null,"flab_reason":null}`},
				{`<FLAB ARES="O"></FLAB>`, `{"flab_ares":"O","flab_reason":null}`},
				{`<FLAB/>`, `{"flab_ares":null,"flab_reason":null}`},
				{`<FLAB ARES="O">x</FLAB>`, `{"flab_ares":"O","flab_reason":"x"}`},
				{``, `{"flab_ares":null,"flab_reason":null}`},
			},
			reject: []string{`<FLAB ARES="X">r</FLAB>`, `<FLAB ARES="">reason without indicator</FLAB>`}},
		subtypeCase{styp: "FRET",
			forms: []form{
				{`<FRET REID="A">tech</FRET>`, `{"fret_reid":"A","fret_reason":"tech"}`},
				{`<FRET></FRET>`, `{"fret_reid":null,"fret_reason":null}`},
				{`<FRET REID="G"></FRET>`, `{"fret_reid":"G","fret_reason":null}`},
				{``, `{"fret_reid":null,"fret_reason":null}`},
			},
			reject: []string{`<FRET REID="Z">x</FRET>`, `<FRET>reason only</FRET>`}},
		subtypeCase{styp: "HNAG",
			forms: []form{
				{`<FHAG>110009</FHAG><PHAG>110010</PHAG><MHAG>110011</MHAG>`, `{"fhag":110009,"phag":110010,"mhag":110011}`},
				{`<FHAG>1</FHAG><PHAG></PHAG>`, `{"fhag":1,"phag":null,"mhag":null}`},
				{`<FHAG>2</FHAG><PHAG>3</PHAG><MHAG>4</MHAG>`, `{"fhag":2,"phag":3,"mhag":4}`},
				{`<FHAG></FHAG><PHAG></PHAG><MHAG></MHAG>`, `{"fhag":null,"phag":null,"mhag":null}`},
			},
			reject: []string{`<FHAG>abc</FHAG>`}},
		subtypeCase{styp: "VIPP",
			forms: []form{
				{`<VIPP>3</VIPP><VIPR>1</VIPR>`, `{"vipp":3,"vipr":"1"}`},
				{`<VIPP></VIPP><VIPR>1</VIPR>`, `{"vipp":null,"vipr":"1"}`},
				{`<VIPP>2</VIPP><VIPR></VIPR>`, `{"vipp":2,"vipr":null}`},
				{`<VIPP></VIPP><VIPR></VIPR>`, `{"vipp":null,"vipr":null}`},
			},
			reject: []string{`<VIPP>x</VIPP>`}},
		subtypeCase{styp: "TAOP",
			forms: []form{
				{`<TAOP>YG</TAOP><TAFL>YG9061</TAFL><TAID>16</TAID>`, `{"taop":"YG","tafl":"YG9061","taid":16}`},
				{`<TAOP>YG</TAOP><TAFL></TAFL><TAID>16</TAID>`, `{"taop":null,"tafl":null,"taid":null}`},
				{`<TAOP>CA</TAOP><TAFL>CA101</TAFL><TAID>17</TAID>`, `{"taop":"CA","tafl":"CA101","taid":17}`},
				{``, `{"taop":null,"tafl":null,"taid":null}`},
			},
			reject: []string{`<TAOP>YG</TAOP><TAFL>YG1</TAFL><TAID>x</TAID>`}},
		subtypeCase{styp: "PORT",
			forms: []form{
				{`<PORT><POTM>23JAN210500</POTM><POID>O</POID></PORT>`, `{"port_open":"2021-01-23T05:00:00"}`},
				{`<PORT><POTM>23JAN210520</POTM><POID>C</POID></PORT>`, `{"port_close":"2021-01-23T05:20:00"}`},
				{`<PORT><POTM></POTM><POID>O</POID></PORT>`, `{"port_open":null}`},
			},
			reject: []string{``, `<PORT><POTM>23JAN210500</POTM></PORT>`, `<PORT><POTM>23JAN210500</POTM><POID>X</POID></PORT>`}},
		subtypeCase{styp: "ABTM",
			forms: []form{
				{`<ABTM ASNO="1"><ABDG>A1</ABDG><ABOP>A</ABOP><AOTM>23JAN210500</AOTM></ABTM><ABTM ASNO="2"><ABDG>A2</ABDG><ABOP>A</ABOP></ABTM>`,
					`{"abtm":[{"asno":1,"abdg":"A1","abop":"A","aotm":"2021-01-23T05:00:00"},{"asno":2,"abdg":"A2","abop":"A","aotm":null}]}`},
				{`<ABTM ASNO="2"><ABDG>A2</ABDG><ABOP>D</ABOP><AOTM>23JAN210530</AOTM></ABTM>`,
					`{"abtm":[{"asno":2,"abdg":"A2","abop":"D","aotm":"2021-01-23T05:30:00"}]}`},
			},
			reject: []string{``, `<ABTM></ABTM>`, `<ABTM ASNO="1"><ABDG>A1</ABDG><ABOP>X</ABOP></ABTM>`,
				`<ABTM ASNO="1"><ABDG>A1</ABDG></ABTM><ABTM ASNO="1"><ABDG>A2</ABDG></ABTM>`}},
		subtypeCase{styp: "CHDT",
			forms: []form{
				{`<CHDT CHNO="1"><CHUT>C1</CHUT><CCLS>Y</CCLS><PCBT>23JAN210300</PCBT><PCET>23JAN210500</PCET><CTYP>D</CTYP></CHDT><CHDT CHNO="2"><CHUT>C2</CHUT><CTYP>E</CTYP></CHDT>`,
					`{"chdt":[{"chno":1,"chut":"C1","ccls":"Y","pcbt":"2021-01-23T03:00:00","pcet":"2021-01-23T05:00:00","cbtm":null,"cetm":null,"ctyp":"D"},{"chno":2,"chut":"C2","ccls":null,"pcbt":null,"pcet":null,"cbtm":null,"cetm":null,"ctyp":"E"}]}`},
				{`<CHDT CHNO="2"><CHUT>C3</CHUT></CHDT>`,
					`{"chdt":[{"chno":2,"chut":"C3","ccls":null,"pcbt":null,"pcet":null,"cbtm":null,"cetm":null,"ctyp":null}]}`},
			},
			reject: []string{``, `<CHDT></CHDT>`}},
		subtypeCase{styp: "CHOT",
			forms: []form{
				{`<CHOT CSNO="1"><CHTM>23JAN210300</CHTM><CHID>ON</CHID><CHST>504</CHST></CHOT>`,
					`{"chot":[{"csno":1,"chtm":"2021-01-23T03:00:00","chid":"ON","chst":"504"}]}`},
				{`<CHOT CSNO="1"><CHTM>23JAN210300</CHTM><CHID>ON</CHID><CHST>504</CHST></CHOT><CHOT CSNO="2"><CHTM>23JAN210530</CHTM><CHID>OFF</CHID><CHST>504</CHST></CHOT>`,
					`{"chot":[{"csno":1,"chtm":"2021-01-23T03:00:00","chid":"ON","chst":"504"},{"csno":2,"chtm":"2021-01-23T05:30:00","chid":"OFF","chst":"504"}]}`},
			},
			reject: []string{``, `<CHOT CSNO="1"><CHID>UP</CHID><CHST>504</CHST></CHOT>`}},
		subtypeCase{styp: "CKDT",
			forms: []form{
				{`<CKDT CKNO="1"><CHKC>K01</CHKC><CCLS>Y</CCLS><PCOT>23JAN210300</PCOT><CTYP>D</CTYP></CKDT><CKDT CKNO="2"><CHKC>K02</CHKC></CKDT>`,
					`{"ckdt":[{"ckno":1,"chkc":"K01","ccls":"Y","pcot":"2021-01-23T03:00:00","pcct":null,"cotm":null,"cctm":null,"ctyp":"D"},{"ckno":2,"chkc":"K02","ccls":null,"pcot":null,"pcct":null,"cotm":null,"cctm":null,"ctyp":null}]}`},
				{`<CKDT CKNO="2"><CHKC>K02</CHKC></CKDT><CKDT CKNO="1"><CHKC>K09</CHKC></CKDT>`,
					`{"ckdt":[{"ckno":2,"chkc":"K02","ccls":null,"pcot":null,"pcct":null,"cotm":null,"cctm":null,"ctyp":null},{"ckno":1,"chkc":"K09","ccls":null,"pcot":null,"pcct":null,"cotm":null,"cctm":null,"ctyp":null}]}`},
			},
			reject: []string{``, `<CKDT></CKDT>`}},
		subtypeCase{styp: "CLDT",
			forms: []form{
				{`<CLDT CLNO="1"><BELT>B14</BELT><BCLS>Y</BCLS><FBAG>23JAN210400</FBAG><BTYP>D</BTYP></CLDT>`,
					`{"cldt":[{"clno":1,"belt":"B14","bcls":"Y","pcot":null,"pcct":null,"fbag":"2021-01-23T04:00:00","lbag":null,"btyp":"D"}]}`},
				{`<CLDT CLNO="1"><BELT>B14</BELT><BCLS>Y</BCLS><FBAG>23JAN210400</FBAG><LBAG>23JAN210420</LBAG><BTYP>D</BTYP></CLDT>`,
					`{"cldt":[{"clno":1,"belt":"B14","bcls":"Y","pcot":null,"pcct":null,"fbag":"2021-01-23T04:00:00","lbag":"2021-01-23T04:20:00","btyp":"D"}]}`},
			},
			reject: []string{``, `<CLDT></CLDT>`}},
		subtypeCase{styp: "GTDT",
			forms: []form{
				{`<GTDT GTNO="1"><GATE>G1</GATE><PGOT>23JAN210400</PGOT><GTYP>D</GTYP></GTDT><GTDT GTNO="2"><GATE>G2</GATE></GTDT><GTDT GTNO="3"><GATE>G3</GATE></GTDT>`,
					`{"gtdt":[{"gtno":1,"gate":"G1","pgot":"2021-01-23T04:00:00","pgct":null,"gotm":null,"gctm":null,"gtyp":"D"},{"gtno":2,"gate":"G2","pgot":null,"pgct":null,"gotm":null,"gctm":null,"gtyp":null},{"gtno":3,"gate":"G3","pgot":null,"pgct":null,"gotm":null,"gctm":null,"gtyp":null}]}`},
				{`<GTDT GTNO="3"><GATE>G4</GATE></GTDT>`,
					`{"gtdt":[{"gtno":3,"gate":"G4","pgot":null,"pgct":null,"gotm":null,"gctm":null,"gtyp":null}]}`},
			},
			reject: []string{``, `<GTDT></GTDT>`, `<GTDT GTNO="1"><PGOT>23JAN210400</PGOT></GTDT>`}},
		subtypeCase{styp: "PSDT",
			forms: []form{
				{`<PSDT PSNO="1"><PSST>505</PSST><STST>23JAN210300</STST></PSDT><PSDT PSNO="3"><PSST>506</PSST></PSDT>`,
					`{"psdt":[{"psno":1,"psst":"505","stst":"2021-01-23T03:00:00","stet":null,"trtm":null,"pstm":null,"psid":null,"pshn":null},{"psno":3,"psst":"506","stst":null,"stet":null,"trtm":null,"pstm":null,"psid":null,"pshn":null}]}`},
			},
			reject: []string{``, `<PSDT></PSDT>`, `<PSDT PSNO="1"><STST>23JAN210300</STST></PSDT>`}},
		subtypeCase{styp: "PSHT",
			forms: []form{
				{`<PSHT PSHN="1"><PSTM>23JAN210530</PSTM><PSID>IN</PSID><PUST>504</PUST></PSHT>`,
					`{"psdt":[{"psno":1,"psst":"504","stst":"2021-01-23T02:37:00","stet":null,"trtm":null,"pstm":"2021-01-23T05:30:00","psid":"IN","pshn":1},{"psno":2,"psst":"503","stst":null,"stet":null,"trtm":null,"pstm":null,"psid":null,"pshn":null}]}`},
				{`<PSHT PSHN="1"><PUST>504</PUST><PSID>IN</PSID></PSHT>`,
					`{"psdt":[{"psno":1,"psst":"504","stst":"2021-01-23T02:37:00","stet":null,"trtm":null,"pstm":null,"psid":"IN","pshn":1},{"psno":2,"psst":"503","stst":null,"stet":null,"trtm":null,"pstm":null,"psid":null,"pshn":null}]}`},
			},
			reject: []string{`<PSHT PSHN="1"><PSTM>23JAN210530</PSTM></PSHT>`}},
		subtypeCase{styp: "TIPT",
			forms: []form{
				{`<TIPT><TRTM>23JAN210500</TRTM><TRST>503</TRST></TIPT><TIPT><TRTM>23JAN210510</TRTM><TRST>504</TRST></TIPT>`,
					`{"psdt":[{"psno":1,"psst":"504","stst":"2021-01-23T02:37:00","stet":null,"trtm":"2021-01-23T05:10:00","pstm":null,"psid":null,"pshn":null},{"psno":2,"psst":"503","stst":null,"stet":null,"trtm":"2021-01-23T05:00:00","pstm":null,"psid":null,"pshn":null}]}`},
				{`<TIPT><TRST>503</TRST></TIPT>`,
					`{"psdt":[{"psno":1,"psst":"504","stst":"2021-01-23T02:37:00","stet":null,"trtm":"2021-01-23T05:10:00","pstm":null,"psid":null,"pshn":null},{"psno":2,"psst":"503","stst":null,"stet":null,"trtm":null,"pstm":null,"psid":null,"pshn":null}]}`},
			},
			reject: []string{`<TIPT><TRTM>23JAN210500</TRTM></TIPT>`}},
		subtypeCase{styp: "DELY",
			forms: []form{
				{`<DELY CODE="YY" STRT="15DEC031605" DURA="0200">YYY</DELY><DELY CODE="XX" STRT="15DEC031605" DURA="0201">XXX</DELY><DELY CODE="ZZ" DURA="0202"></DELY>`,
					`{"dely":[{"code":"YY","strt":"2003-12-15T16:05:00","dura_min":120,"comment":"YYY"},{"code":"XX","strt":"2003-12-15T16:05:00","dura_min":121,"comment":"XXX"},{"code":"ZZ","strt":null,"dura_min":122,"comment":null}]}`},
				{`<DELY CODE="XX" STRT="15DEC031700" DURA="0030">later</DELY><DELY CODE="AB" DURA="0005"></DELY>`,
					`{"dely":[{"code":"YY","strt":"2003-12-15T16:05:00","dura_min":120,"comment":"YYY"},{"code":"XX","strt":"2003-12-15T17:00:00","dura_min":30,"comment":"later"},{"code":"ZZ","strt":null,"dura_min":122,"comment":null},{"code":"AB","strt":null,"dura_min":5,"comment":null}]}`},
				{`<DELY></DELY>`, `{"dely":[]}`},
			},
			reject: []string{`<DELY STRT="15DEC031605" DURA="0200">no code</DELY>`, `<DELY CODE="YY" DURA="200"></DELY>`, `<DELY CODE="YY" DURA="0290"></DELY>`}},
		subtypeCase{styp: "ERUT",
			forms: []form{
				{`<ERUT RTNO="1"><APCD>CTU</APCD><SCDT>23JAN210535</SCDT></ERUT><ERUT RTNO="2"><APCD>XIY</APCD><SCAT>23JAN210710</SCAT></ERUT>`,
					`{"erut":[{"rtno":1,"apcd":"CTU","scat":null,"scdt":"2021-01-23T05:35:00"},{"rtno":2,"apcd":"XIY","scat":"2021-01-23T07:10:00","scdt":null}]}`},
				{`<ERUT RTNO="2"><APCD>PEK</APCD><SCAT>23JAN210800</SCAT></ERUT>`,
					`{"erut":[{"rtno":1,"apcd":"CTU","scat":null,"scdt":"2021-01-23T05:35:00"},{"rtno":2,"apcd":"PEK","scat":"2021-01-23T08:00:00","scdt":null}]}`},
				{`<ERUT></ERUT>`, `{"erut":[]}`},
			},
			reject: []string{`<ERUT><APCD>CTU</APCD></ERUT>`, `<ERUT RTNO="1"><SCDT>23JAN210535</SCDT></ERUT>`}},
		subtypeCase{styp: "SRVT",
			forms: []form{
				{`<SRVT><SRTC>WAT</SRTC><SRQT>2</SRQT><SRST>23JAN210400</SRST><SRPR>110009</SRPR></SRVT>`,
					`{"srvt":[{"srtc":"WAT","srqt":"2","srst":"2021-01-23T04:00:00","sret":null,"srpr":"110009","sanr":null,"sarr":null}]}`},
				{`<SRVT><SRTC>FUE</SRTC><SRQT>0</SRQT><SANR>MAC</SANR><SARR>机械</SARR></SRVT><SRVT><SRTC>WAT</SRTC><SRQT>3</SRQT></SRVT>`,
					`{"srvt":[{"srtc":"WAT","srqt":"3","srst":null,"sret":null,"srpr":null,"sanr":null,"sarr":null},{"srtc":"FUE","srqt":"0","srst":null,"sret":null,"srpr":null,"sanr":"MAC","sarr":"机械"}]}`},
				{`<SRVT></SRVT>`, `{"srvt":[]}`},
			},
			reject: []string{`<SRVT><SRQT>2</SRQT></SRVT>`}},
		subtypeCase{styp: "VIPF",
			forms: []form{
				{`<VIPF><VPCD>V001</VPCD><VFES>3</VFES></VIPF>`, `{"vipf":[{"vpcd":"V001","vfes":"3","vipt":[]}]}`},
				{`<VIPF><VPCD>V001</VPCD><VFES>4</VFES><VIPT><VSCD>S1</VSCD><VTQY>2</VTQY><VTST>23JAN210400</VTST></VIPT></VIPF><VIPF><VPCD>V002</VPCD></VIPF>`,
					`{"vipf":[{"vpcd":"V001","vfes":"4","vipt":[{"vscd":"S1","vtqy":2,"vtst":"2021-01-23T04:00:00","vtet":null}]},{"vpcd":"V002","vfes":null,"vipt":[]}]}`},
				{`<VIPF><VPCD>V001</VPCD><VFES>5</VFES></VIPF>`, // no VIPT: the stored services stay
					`{"vipf":[{"vpcd":"V001","vfes":"5","vipt":[{"vscd":"S1","vtqy":2,"vtst":"2021-01-23T04:00:00","vtet":null}]},{"vpcd":"V002","vfes":null,"vipt":[]}]}`},
			},
			reject: []string{`<VIPF><VPCD>V001</VPCD><VFES>x</VFES></VIPF>`}},
	)
	return out
}()

// matrixBase is the schedule record every matrix flight starts from: two stands for PSHT/TIPT.
func matrixBase(flid int64) string {
	return fltr(flid, "YG9028", "23JAN210535",
		`<PSDT PSNO="1"><PSST>504</PSST><STST>23JAN210237</STST></PSDT><PSDT PSNO="2"><PSST>503</PSST></PSDT>`)
}

// TestFlopMatrix drives every FLOP subtype through the real pump: each form → expected state,
// version +1, exactly the two events; the same message again → no change, no bump, no event
// (INV-20); the rejecting forms → DEAD PROTOCOL with nothing changed.
func TestFlopMatrix(t *testing.T) {
	t.Parallel()
	covered := map[string]bool{"FDEL": true} // FDEL: TestFlopDelete
	for _, c := range matrix {
		covered[c.styp] = true
	}
	for _, s := range sis.Subtypes() {
		require.True(t, covered[s], "subtype %s missing from the matrix", s)
	}
	require.Len(t, covered, len(flight.SubtypeModes))

	e := setup(t, 10)
	for i, c := range matrix {
		flid := int64(1000 + i)
		t.Run(c.styp, func(t *testing.T) {
			ids := e.run(t, schd("ADFT", matrixBase(flid)))
			require.Equal(t, "SUCCEEDED", e.outcome(t, ids[0]).Status)
			for _, bad := range c.reject {
				before := stateJSON(t, e.state(t, flid))
				nEvents := e.countEvents(t)
				id := e.run(t, flop(c.styp, flid, bad))[0]
				o := e.outcome(t, id)
				require.Equal(t, outcome{"DEAD", "PROTOCOL", o.Reason}, o, "reject form %q", bad)
				require.Equal(t, before, stateJSON(t, e.state(t, flid)))
				require.Equal(t, nEvents, e.countEvents(t))
			}
			for _, f := range c.forms {
				applyForm(t, e, c.styp, flid, f)
			}
		})
	}
}

func applyForm(t *testing.T, e *env, styp string, flid int64, f form) {
	t.Helper()
	var want map[string]any
	require.NoError(t, json.Unmarshal([]byte(f.want), &want), f.want)
	before := e.state(t, flid)
	nEvents := len(e.events(t, flid))
	raw := flop(styp, flid, f.payload)
	id := e.run(t, raw)[0]
	require.Equal(t, "SUCCEEDED", e.outcome(t, id).Status, "form %q: %+v", f.payload, e.outcome(t, id))
	after := e.state(t, flid)
	got := stateJSON(t, after)
	for k, v := range want {
		require.Equal(t, v, got[k], "form %q field %s", f.payload, k)
	}
	require.Equal(t, before.Version+1, after.Version, "form %q must bump the version once", f.payload)
	require.Equal(t, id, after.LastMsgID)
	evs := e.events(t, flid)[nEvents:]
	require.Len(t, evs, 2, "form %q: two events", f.payload)
	require.Equal(t, "KAFKA:msg", evs[0].Target)
	require.Equal(t, "KAFKA:schd", evs[1].Target)
	for _, ev := range evs {
		require.Equal(t, "UPSERT", ev.Type)
		require.Equal(t, after.Version, ev.Version)
		require.Equal(t, id, ev.MsgID)
		require.Equal(t, fmt.Sprint(flid), ev.Key)
	}
	changed := evs[0].Payload["changed"].(map[string]any)
	var keys []string
	for k := range changed {
		require.Contains(t, want, k, "form %q changed %s, which it must not", f.payload, k)
		keys = append(keys, k)
	}
	sort.Strings(keys)
	require.NotEmpty(t, keys)
	require.Equal(t, "FLOP", evs[0].Payload["type"])
	require.Equal(t, styp, evs[0].Payload["styp"])
	require.Equal(t, publishedJSON(t, after), evs[1].Payload, "KAFKA:schd carries the full state")

	// INV-20: the same message again changes nothing (a new mailbox row, a new SEQN).
	again := strings.Replace(raw, "<SEQN>", "<SEQN>9", 1)
	id2 := e.run(t, again)[0]
	require.Equal(t, "SUCCEEDED", e.outcome(t, id2).Status)
	require.Equal(t, got, stateJSON(t, e.state(t, flid)), "form %q applied twice", f.payload)
	require.Len(t, e.events(t, flid), nEvents+2)
}

// TestFlopDelete: FDEL makes the flight DELETED with TOMBSTONE events; a second FDEL and any
// FLOP afterwards are SKIPPED no-match:deleted without bump or event; FLOPs for unknown FLIDs
// are SKIPPED no-match:FLID; a later schedule record re-activates with a higher version.
func TestFlopDelete(t *testing.T) {
	t.Parallel()
	e := setup(t, 10)
	e.run(t, schd("ADFT", matrixBase(7)))
	for _, bad := range []string{`<FDEL>x</FDEL>`, ``, `<FDEL><X/></FDEL>`} {
		id := e.run(t, flop("FDEL", 7, bad))[0]
		require.Equal(t, "DEAD", e.outcome(t, id).Status, bad)
		require.Equal(t, "PROTOCOL", e.outcome(t, id).Class, bad)
	}
	ids := e.run(t,
		flop("FDEL", 7, `<FDEL></FDEL>`),
		flop("FDEL", 7, `<FDEL/>`),
		flop("CNCL", 7, `<CNCL>`+T1+`</CNCL>`),
		flop("CNCL", 8, `<CNCL>`+T1+`</CNCL>`),
		flop("FDEL", 8, `<FDEL/>`),
	)
	require.Equal(t, outcome{"SUCCEEDED", "", ""}, e.outcome(t, ids[0]))
	require.Equal(t, outcome{"SKIPPED", "", "no-match:deleted"}, e.outcome(t, ids[1]))
	require.Equal(t, outcome{"SKIPPED", "", "no-match:deleted"}, e.outcome(t, ids[2]))
	require.Equal(t, outcome{"SKIPPED", "", "no-match:FLID"}, e.outcome(t, ids[3]))
	require.Equal(t, outcome{"SKIPPED", "", "no-match:FLID"}, e.outcome(t, ids[4]))
	s := e.state(t, 7)
	require.Equal(t, flight.Deleted, s.Status)
	require.Equal(t, int64(2), s.Version)
	require.Len(t, s.C[flight.PSDT], 2, "details are kept until the purge")
	evs := e.events(t, 7)
	require.Len(t, evs, 4)
	require.Equal(t, event{Target: "KAFKA:schd", Key: "7", Type: "TOMBSTONE", Version: 2, MsgID: ids[0]}, evs[3])
	require.Equal(t, "TOMBSTONE", evs[2].Type)
	require.Equal(t, map[string]any{"state": map[string]any{"old": "ACTIVE", "new": "DELETED"}}, evs[2].Payload["changed"])

	// Re-activation by a schedule record: ACTIVE, version 3, UPSERT; fields it does not carry stay.
	id := e.run(t, schd("ADFT", fltr(7, "YG9028", "23JAN210900", "")))[0]
	require.Equal(t, "SUCCEEDED", e.outcome(t, id).Status)
	s = e.state(t, 7)
	require.Equal(t, flight.Active, s.Status)
	require.Equal(t, int64(3), s.Version)
	require.Len(t, s.C[flight.PSDT], 2)
	evs = e.events(t, 7)
	require.Len(t, evs, 6)
	require.Equal(t, "UPSERT", evs[5].Type)
	require.Equal(t, int64(3), evs[5].Version)

	// SCHD DEL deletes too; unknown FLIDs in it are ignored; all unknown → SKIPPED.
	ids = e.run(t, schd("DEL", "<FLID>7</FLID>", "<FLID>99</FLID>"), schd("DEL", "<FLID>98</FLID>"), schd("DEL", "<FLID>7</FLID>"))
	require.Equal(t, "SUCCEEDED", e.outcome(t, ids[0]).Status)
	require.Equal(t, outcome{"SKIPPED", "", "no-match:FLID"}, e.outcome(t, ids[1]))
	require.Equal(t, outcome{"SKIPPED", "", "no-match:deleted"}, e.outcome(t, ids[2]))
	s = e.state(t, 7)
	require.Equal(t, flight.Deleted, s.Status)
	require.Equal(t, int64(4), s.Version)
	require.Equal(t, "TOMBSTONE", e.events(t, 7)[7].Type)
	require.True(t, slices.ContainsFunc(e.events(t, 7), func(ev event) bool { return ev.Version == 4 && ev.Target == "KAFKA:msg" }))
}

// A FLID that comes back after its flight was purged into the history store continues above the
// purged version and its purge TOMBSTONE, so consumers deduplicating by (flid, state_version)
// keep its events.
func TestReusedFLIDContinuesAboveItsHistory(t *testing.T) {
	t.Parallel()
	e := setup(t, 10)
	e.run(t, schd("ADFT", matrixBase(9)))
	e.run(t, flop("CNCL", 9, `<CNCL>`+T1+`</CNCL>`))
	require.Equal(t, int64(2), e.state(t, 9).Version)
	// The history sweep's purge, as pkg/jobs writes it (version 2 in the history, TOMBSTONE 3).
	_, err := e.db.Pool.Exec(context.Background(), `
		INSERT INTO flight_history (flid, operation_day, state_version, final_state, purge_reason, purged_at)
		VALUES (9, '2021-01-23', 2, '{}', 'quiet', now());
		DELETE FROM flight WHERE flid = 9`)
	require.NoError(t, err)

	id := e.run(t, schd("ADFT", fltr(9, "YG9028", "23JAN210900", "")))[0]
	require.Equal(t, "SUCCEEDED", e.outcome(t, id).Status)
	require.Equal(t, int64(4), e.state(t, 9).Version)
	evs := e.events(t, 9)
	require.Equal(t, int64(4), evs[len(evs)-1].Version)
}
