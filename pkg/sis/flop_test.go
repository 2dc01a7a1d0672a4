package sis

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func flopMsg(styp, payload string) []byte {
	return []byte(`<?xml version="1.0" encoding="UTF-8"?>
<MSG><META><SNDR>AODB</SNDR><SEQN>1</SEQN><DTTM>20201214143044</DTTM><TYPE>FLOP</TYPE><STYP>` + styp + `</STYP></META>
<FLOP><FLID>15</FLID><FFID>CA-CA101-A-12DEC031345-D</FFID>` + payload + `</FLOP></MSG>`)
}

var emptyPair = regexp.MustCompile(`<([A-Z]{4})([^<>]*)></[A-Z]{4}>`)

// selfClosing turns every <X ...></X> into <X .../>.
func selfClosing(s string) string { return emptyPair.ReplaceAllString(s, "<$1$2/>") }

type subtypeCase struct {
	styp      string
	value     string // payload carrying a value
	empty     string // payload with the element(s) present but empty
	valueErr  string // expected PROTOCOL path for the value form ("" = accepted)
	emptyErr  string // expected PROTOCOL path for empty and self-closing ("" = accepted)
	absentErr string // expected PROTOCOL path when the payload is absent ("" = accepted)
}

func subtypeCases() []subtypeCase {
	var cs []subtypeCase
	// times: empty or absent = clear (docs/sis.md §e.2, docs/spec.md §6)
	for _, s := range []string{"APPT", "BOTM", "CNCL", "COBT", "CTOT", "EGSR", "EGST", "EOBT", "ESTT", "ACTT", "FINT", "IEST", "LACL", "NAAT", "NEAT", "PADT", "PEDT", "TOBT"} {
		cs = append(cs, subtypeCase{styp: s, value: "<" + s + ">12DEC031350</" + s + ">", empty: "<" + s + "></" + s + ">"})
	}
	// cannot be cleared; one-letter/numeric ones reject empty too
	for s, v := range map[string]string{"ACFT": "358", "FLIN": "I", "FLTY": "C", "MAXP": "130"} {
		cs = append(cs, subtypeCase{styp: s, value: "<" + s + ">" + v + "</" + s + ">", empty: "<" + s + "></" + s + ">", emptyErr: "MSG/FLOP/" + s, absentErr: "MSG/FLOP/" + s})
	}
	// free text: empty accepted, absent rejected
	for s, v := range map[string]string{"REMC": "Bag loading Delay", "RENO": "T5561", "RUNW": "02L", "STND": "S209", "TRML": "T3", "FTSS": "DELY"} {
		cs = append(cs, subtypeCase{styp: s, value: "<" + s + ">" + v + "</" + s + ">", empty: "<" + s + "></" + s + ">", absentErr: "MSG/FLOP/" + s})
	}
	// replace-by-sequence collections: no entries -> rejected
	for s, v := range map[string]string{
		"ABTM": `<ABTM ASNO="1"><ABDG>212</ABDG><ABOP>D</ABOP><AOTM>10DEC061343</AOTM></ABTM>`,
		"CHDT": `<CHDT CHNO="1"><CHUT>CH0021</CHUT><CCLS>X</CCLS><PCBT>15DEC031530</PCBT><PCET>15DEC031830</PCET><CBTM>15DEC031520</CBTM><CETM>15DEC031900</CETM><CTYP>E</CTYP></CHDT>`,
		"CHOT": `<CHOT CSNO="1"><CHTM>15DEC031350</CHTM><CHID>ON</CHID><CHST>S211</CHST></CHOT>`,
		"CKDT": `<CKDT CKNO="1"><CHKC>01</CHKC><CCLS>X</CCLS><PCOT>15DEC031515</PCOT><PCCT>15DEC031725</PCCT><COTM>15DEC031525</COTM><CCTM>15DEC031725</CCTM><CTYP>D</CTYP></CKDT>`,
		"CLDT": `<CLDT CLNO="1"><BELT>B01</BELT><BCLS>X</BCLS><PCOT>12DEC031330</PCOT><PCCT>12DEC031430</PCCT><FBAG>12DEC031335</FBAG><LBAG>12DEC031425</LBAG><BTYP>D</BTYP></CLDT>`,
		"GTDT": `<GTDT GTNO="1"><GATE>G28</GATE><PGOT>15DEC031805</PGOT><PGCT>15DEC031925</PGCT><GOTM>15DEC031825</GOTM><GCTM>15DEC031920</GCTM><GTYP>D</GTYP></GTDT>`,
		"PSDT": `<PSDT PSNO="1"><PSST>S211</PSST><STST>15DEC021330</STST><STET>15DEC021430</STET></PSDT>`,
	} {
		cs = append(cs, subtypeCase{styp: s, value: v, empty: "<" + s + "></" + s + ">", emptyErr: "MSG/FLOP/" + s, absentErr: "MSG/FLOP/" + s})
	}
	cs = append(cs,
		subtypeCase{styp: "PORT", value: `<PORT><POTM>10AUG181855</POTM><POID>O</POID></PORT>`, empty: `<PORT></PORT>`, emptyErr: "MSG/FLOP/PORT/POID", absentErr: "MSG/FLOP/PORT/POID"},
		subtypeCase{styp: "EXSS", value: `<EXSC>DELAY</EXSC><EXSR>delay for one hour</EXSR>`, empty: `<EXSC></EXSC><EXSR></EXSR>`, absentErr: "MSG/FLOP/EXSC"},
		subtypeCase{styp: "FDIV", value: `<FDIV DDES="HKG" DDIR="TO">INCLEMENT WEATHER</FDIV>`, empty: `<FDIV></FDIV>`},
		subtypeCase{styp: "FLAB", value: `<FLAB ARES="G">POOR VISIBILITY</FLAB>`, empty: `<FLAB></FLAB>`},
		subtypeCase{styp: "FRET", value: `<FRET REID="G">EXIT DOOR FAULT</FRET>`, empty: `<FRET></FRET>`},
		subtypeCase{styp: "HNAG", value: `<FHAG>234523</FHAG><PHAG>22313</PHAG><MHAG>234523</MHAG>`, empty: `<FHAG></FHAG><PHAG></PHAG><MHAG></MHAG>`},
		subtypeCase{styp: "TAOP", value: `<TAOP>CA</TAOP><TAFL>CA201</TAFL><TAID>6213345</TAID>`, empty: `<TAOP></TAOP><TAFL></TAFL><TAID></TAID>`},
		subtypeCase{styp: "VIPP", value: `<VIPP>2</VIPP><VIPR>3</VIPR>`, empty: `<VIPP></VIPP><VIPR></VIPR>`},
		// merge-by-key: the bare element removes all (ClearAll); absent is left to the processor
		subtypeCase{styp: "DELY", value: `<DELY CODE="YY" STRT="15DEC031605" DURA="0200">YYYYYYY</DELY>`, empty: `<DELY></DELY>`},
		subtypeCase{styp: "ERUT", value: `<ERUT RTNO="1"><APCD>SHA</APCD><SCDT>15DEC211140</SCDT></ERUT>`, empty: `<ERUT></ERUT>`},
		subtypeCase{styp: "SRVT", value: `<SRVT><SRTC>ATN</SRTC><SRQT>2</SRQT><SRST>12DEC211400</SRST><SRET>12DEC211430</SRET><SRPR></SRPR><SANR>MACHINE</SANR><SARR>由于机器问题</SARR></SRVT>`, empty: `<SRVT></SRVT>`},
		subtypeCase{styp: "VIPF", value: `<VIPF><VPCD>VC11030</VPCD><VFES>3</VFES><VIPT><VSCD>S1</VSCD><VTQY>2</VTQY><VTST>15DEC201100</VTST><VTET>15DEC201200</VTET></VIPT></VIPF>`, empty: `<VIPF></VIPF>`},
		// patch-existing-rows
		subtypeCase{styp: "PSHT", value: `<PSHT PSHN="1"><PSTM>10AUG181346</PSTM><PSID>IN</PSID><PUST>504</PUST></PSHT>`, empty: `<PSHT></PSHT>`},
		subtypeCase{styp: "TIPT", value: `<TIPT><TRTM>10AUG181350</TRTM><TRST>503</TRST></TIPT>`, empty: `<TIPT></TIPT>`},
		// FDEL must be empty; its element is required
		subtypeCase{styp: "FDEL", value: `<FDEL>now</FDEL>`, valueErr: "MSG/FLOP/FDEL", empty: `<FDEL></FDEL>`, absentErr: "MSG/FLOP/FDEL"},
	)
	return cs
}

func payloadKeys(t *testing.T, op *FlightOp) []string {
	t.Helper()
	b, err := json.Marshal(op.Payload)
	require.NoError(t, err)
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &m))
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestFlopSubtypes runs every supported subtype with its payload present with a
// value, empty, self-closing and absent.
func TestFlopSubtypes(t *testing.T) {
	t.Parallel()
	cases := subtypeCases()
	covered := map[string]bool{}
	for _, tc := range cases {
		covered[tc.styp] = true
	}
	require.Equal(t, Subtypes(), sortedKeys(covered), "every supported subtype needs a case")
	require.Len(t, Subtypes(), 50) // 48 of docs/sis.md §b.3 + ESTT + ACTT

	for _, tc := range cases {
		elems, ok := SubtypeElements(tc.styp)
		require.True(t, ok)
		sort.Strings(elems)
		forms := []struct{ name, payload, wantErr string }{
			{"value", tc.value, tc.valueErr},
			{"empty", tc.empty, tc.emptyErr},
			{"self-closing", selfClosing(tc.empty), tc.emptyErr},
			{"absent", "", tc.absentErr},
		}
		for _, f := range forms {
			t.Run(tc.styp+"/"+f.name, func(t *testing.T) {
				t.Parallel()
				if f.name == "self-closing" {
					require.NotContains(t, f.payload, "></", "self-closing form still has an end tag")
				}
				m, err := Decode(flopMsg(tc.styp, f.payload), Options{Location: shanghai})
				if f.wantErr != "" {
					requireErr(t, err, ClassProtocol, f.wantErr)
					return
				}
				require.NoError(t, err)
				require.Equal(t, tc.styp, m.Flop.Subtype)
				require.Equal(t, int64(15), m.Flop.FLID)
				keys := payloadKeys(t, m.Flop)
				switch {
				case tc.styp == "FDEL":
					require.Equal(t, KindFlightDelete, m.Kind)
					require.Empty(t, keys)
				case f.name == "absent":
					require.Equal(t, KindFlightUpdate, m.Kind)
					require.Empty(t, keys, "absent payload must leave every field absent")
				default:
					require.Equal(t, KindFlightUpdate, m.Kind)
					require.Equal(t, elems, keys, "payload must carry exactly the subtype's elements")
				}
			})
		}
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestFlopEmptyForms pins the decoded state of the empty forms the merge rules
// depend on.
func TestFlopEmptyForms(t *testing.T) {
	t.Parallel()
	dec := func(styp, payload string) FlightRecord {
		m, err := Decode(flopMsg(styp, payload), Options{Location: shanghai})
		require.NoError(t, err)
		return m.Flop.Payload
	}
	p := dec("PADT", "<PADT/>")
	require.True(t, p.PADT.Present && p.PADT.Empty)
	p = dec("TOBT", "")
	require.False(t, p.TOBT.Present)
	p = dec("APPT", "<APPT>12DEC031350</APPT>")
	v, ok := p.APPT.Get()
	require.True(t, ok)
	require.Equal(t, "2003-12-12T13:50:00+08:00", v.Format("2006-01-02T15:04:05-07:00"))

	p = dec("DELY", `<DELY CODE="YY" STRT="15DEC031605" DURA="0200">Y</DELY><DELY CODE="XX" DURA="0130"/><DELY></DELY>`)
	require.True(t, p.DELY.Present && p.DELY.ClearAll)
	require.Len(t, p.DELY.Items, 2)
	require.Equal(t, 120, p.DELY.Items[0].DURA.Value) // h*60+m, not the peer's h*24+m
	require.Equal(t, 90, p.DELY.Items[1].DURA.Value)
	require.False(t, p.DELY.Items[1].Comment.Present)

	p = dec("ERUT", `<ERUT/>`)
	require.True(t, p.ERUT.Present && p.ERUT.ClearAll)
	require.NotNil(t, p.ERUT.Items)
	require.Empty(t, p.ERUT.Items)

	p = dec("SRVT", `<SRVT><SRTC>ATN</SRTC><SRQT></SRQT></SRVT><SRVT><SRTC>BUS</SRTC></SRVT>`)
	require.False(t, p.SRVT.ClearAll)
	require.True(t, p.SRVT.Items[0].SRQT.Present && p.SRVT.Items[0].SRQT.Empty)
	require.False(t, p.SRVT.Items[1].SRQT.Present)

	p = dec("VIPF", `<VIPF><VFES>3</VFES></VIPF><VIPF><VPCD>V1</VPCD></VIPF>`)
	require.Len(t, p.VIPF.Items, 1, "entries without VPCD are dropped")

	p = dec("HNAG", `<FHAG>1</FHAG><PHAG/>`)
	require.Equal(t, int64(1), p.FHAG.Value)
	require.True(t, p.PHAG.Empty)
	require.False(t, p.MHAG.Present)

	p = dec("FRET", `<FRET REID="G"></FRET>`)
	require.Equal(t, Irregular{Indicator: "G"}, p.FRET.Value)

	p = dec("PORT", `<PORT><POTM></POTM><POID>C</POID></PORT>`)
	require.True(t, p.PORT.Items[0].POTM.Empty)
	require.Equal(t, "C", p.PORT.Items[0].POID.Value)

	p = dec("REMC", `<REMC> a &amp; b &lt;c&gt; <![CDATA[<d>]]></REMC>`)
	require.Equal(t, "a & b <c> <d>", p.REMC.Value)

	p = dec("CKDT", `<CKDT CKNO="1"><CHKC>01</CHKC></CKDT><CKDT CKNO="2"><CHKC>17</CHKC></CKDT>`)
	require.Equal(t, 2, p.CKDT.Items[1].CKNO.Value)
}

// TestInvalidForms covers each enum and date format with invalid values.
func TestInvalidForms(t *testing.T) {
	t.Parallel()
	schd := readSample(t, "SCHD/01_DNLD.xml")
	schs := readSample(t, "SCHS/02_RESP.xml")
	cases := []struct {
		name  string
		raw   []byte
		class Class
		path  string
	}{
		{"MVIN", []byte(strings.Replace(schd, "<MVIN>D</MVIN>", "<MVIN>d</MVIN>", 1)), ClassProtocol, "MSG/SCHD/FLTR[1]/MVIN"},
		{"FLIN", flopMsg("FLIN", "<FLIN>X</FLIN>"), ClassProtocol, "MSG/FLOP/FLIN"},
		{"FLIN lower", flopMsg("FLIN", "<FLIN>i</FLIN>"), ClassProtocol, "MSG/FLOP/FLIN"},
		{"DDIR", flopMsg("FDIV", `<FDIV DDES="HKG" DDIR="to">X</FDIV>`), ClassProtocol, "MSG/FLOP/FDIV@DDIR"},
		{"DDIR with empty DDES", flopMsg("FDIV", `<FDIV DDES="" DDIR="TOO"/>`), ClassProtocol, "MSG/FLOP/FDIV@DDIR"},
		{"ARES", flopMsg("FLAB", `<FLAB ARES="X">Y</FLAB>`), ClassProtocol, "MSG/FLOP/FLAB@ARES"},
		{"REID", flopMsg("FRET", `<FRET REID="X">Y</FRET>`), ClassProtocol, "MSG/FLOP/FRET@REID"},
		{"REID missing with reason", flopMsg("FRET", `<FRET>Y</FRET>`), ClassProtocol, "MSG/FLOP/FRET@REID"},
		{"POID", flopMsg("PORT", `<PORT><POTM>10AUG181855</POTM><POID>X</POID></PORT>`), ClassProtocol, "MSG/FLOP/PORT[1]/POID"},
		{"POID missing", flopMsg("PORT", `<PORT><POTM>10AUG181855</POTM></PORT>`), ClassProtocol, "MSG/FLOP/PORT[1]/POID"},
		{"CHID", flopMsg("CHOT", `<CHOT CSNO="1"><CHID>MAYBE</CHID><CHST>S1</CHST></CHOT>`), ClassProtocol, "MSG/FLOP/CHOT[1]/CHID"},
		{"ABOP", flopMsg("ABTM", `<ABTM ASNO="1"><ABDG>212</ABDG><ABOP>X</ABOP></ABTM>`), ClassProtocol, "MSG/FLOP/ABTM[1]/ABOP"},
		{"DELY no CODE", flopMsg("DELY", `<DELY STRT="15DEC031605">x</DELY>`), ClassProtocol, "MSG/FLOP/DELY[1]@CODE"},
		{"DURA letters", flopMsg("DELY", `<DELY CODE="YY" DURA="2h00"/>`), ClassProtocol, "MSG/FLOP/DELY[1]@DURA"},
		{"DURA minutes", flopMsg("DELY", `<DELY CODE="YY" DURA="0060"/>`), ClassProtocol, "MSG/FLOP/DELY[1]@DURA"},
		{"DURA short", flopMsg("DELY", `<DELY CODE="YY" DURA="200"/>`), ClassProtocol, "MSG/FLOP/DELY[1]@DURA"},
		{"STRT", flopMsg("DELY", `<DELY CODE="YY" STRT="15DEC03160"/>`), ClassProtocol, "MSG/FLOP/DELY[1]@STRT"},
		{"ERUT no RTNO", flopMsg("ERUT", `<ERUT><APCD>SHA</APCD></ERUT>`), ClassProtocol, "MSG/FLOP/ERUT[1]@RTNO"},
		{"ERUT RTNO letters", flopMsg("ERUT", `<ERUT RTNO="x"><APCD>SHA</APCD></ERUT>`), ClassProtocol, "MSG/FLOP/ERUT[1]@RTNO"},
		{"ERUT no APCD", flopMsg("ERUT", `<ERUT RTNO="2"><SCAT>15DEC211345</SCAT></ERUT>`), ClassProtocol, "MSG/FLOP/ERUT[1]/APCD"},
		{"SRVT no SRTC", flopMsg("SRVT", `<SRVT><SRQT>2</SRQT></SRVT>`), ClassProtocol, "MSG/FLOP/SRVT[1]/SRTC"},
		{"GTDT no GTNO", flopMsg("GTDT", `<GTDT><GATE>G1</GATE></GTDT><GTDT GTNO="2"><GATE>G1</GATE></GTDT>`), ClassProtocol, "MSG/FLOP/GTDT[1]@GTNO"},
		{"second GTDT no GATE", flopMsg("GTDT", `<GTDT GTNO="1"><GATE>G1</GATE></GTDT><GTDT GTNO="2"><GTYP>D</GTYP></GTDT>`), ClassProtocol, "MSG/FLOP/GTDT[2]/GATE"},
		{"MAXP letters", flopMsg("MAXP", "<MAXP>1a0</MAXP>"), ClassProtocol, "MSG/FLOP/MAXP"},
		{"MAXP too big", flopMsg("MAXP", "<MAXP>99999</MAXP>"), ClassProtocol, "MSG/FLOP/MAXP"},
		{"TAID letters", flopMsg("TAOP", "<TAOP>CA</TAOP><TAID>x1</TAID>"), ClassProtocol, "MSG/FLOP/TAID"},
		{"FLID 13 digits", []byte(strings.Replace(string(flopMsg("ACFT", "<ACFT>320</ACFT>")), "<FLID>15</FLID>", "<FLID>1234567890123</FLID>", 1)), ClassProtocol, "MSG/FLOP/FLID"},
		{"duplicate ACFT", flopMsg("ACFT", "<ACFT>320</ACFT><ACFT>321</ACFT>"), ClassProtocol, "MSG/FLOP/ACFT"},
		{"child in leaf", flopMsg("ACFT", "<ACFT><X/></ACFT>"), ClassProtocol, "MSG/FLOP/ACFT"},
		{"unknown element", flopMsg("ACFT", "<ACFT>320</ACFT><ZZZZ/>"), ClassCodec, "MSG/FLOP/ZZZZ"},
		{"text in container", flopMsg("ACFT", "junk<ACFT>320</ACFT>"), ClassProtocol, "MSG/FLOP"},
		{"RENO 11", flopMsg("RENO", "<RENO>B1234567890</RENO>"), ClassProtocol, "MSG/FLOP/RENO"},
		{"TRML 6 chars", flopMsg("TRML", "<TRML>航站楼一二三</TRML>"), ClassProtocol, "MSG/FLOP/TRML"},
		{"FDIV reason 31", flopMsg("FDIV", `<FDIV DDES="HKG" DDIR="TO">`+strings.Repeat("x", 31)+`</FDIV>`), ClassProtocol, "MSG/FLOP/FDIV"},
		{"REMC 81", flopMsg("REMC", "<REMC>"+strings.Repeat("备", 81)+"</REMC>"), ClassProtocol, "MSG/FLOP/REMC"},
		{"FLNO 13", []byte(strings.Replace(schd, "<FLNO>YG9028</FLNO>", "<FLNO>YG90281234567</FLNO>", 1)), ClassProtocol, "MSG/SCHD/FLTR[1]/FLNO"},
		{"ALCD 1", []byte(strings.Replace(schd, "<ALCD>YG</ALCD>", "<ALCD>Y</ALCD>", 1)), ClassProtocol, "MSG/SCHD/FLTR[1]/ALCD"},
		{"DTTM", []byte(strings.Replace(schd, "<DTTM>20181105223126</DTTM>", "<DTTM>2018110522312</DTTM>", 1)), ClassProtocol, "MSG/META/DTTM"},
		{"SEQN", []byte(strings.Replace(schd, "<SEQN>345935</SEQN>", "<SEQN>34x</SEQN>", 1)), ClassProtocol, "MSG/META/SEQN"},
		{"SCHT 2400", []byte(strings.Replace(schs, "<SCHT>1023</SCHT>", "<SCHT>2400</SCHT>", 1)), ClassProtocol, "MSG/SCHS/FLTR[1]/SCHT"},
		{"SCHT 1260", []byte(strings.Replace(schs, "<SCHT>1023</SCHT>", "<SCHT>1260</SCHT>", 1)), ClassProtocol, "MSG/SCHS/FLTR[1]/SCHT"},
		{"ROUT HHMM", []byte(strings.Replace(schs, "<SCAT>1125</SCAT>", "<SCAT>11:25</SCAT>", 1)), ClassProtocol, "MSG/SCHS/FLTR[1]/ROUT[1]/SCAT"},
		{"SDAT 31FEB21", []byte(strings.Replace(schs, "<SDAT>10SEP20</SDAT>", "<SDAT>31FEB21</SDAT>", 1)), ClassProtocol, "MSG/SCHS/SDAT"},
		{"EDDT unknown month", []byte(strings.Replace(schs, "<EDDT>14MAR21</EDDT>", "<EDDT>14MRZ21</EDDT>", 1)), ClassProtocol, "MSG/SCHS/FLTR[1]/EDDT"},
		{"DYOP", []byte(strings.Replace(schs, "<DYOP>1200560</DYOP>", "<DYOP>1300560</DYOP>", 1)), ClassProtocol, "MSG/SCHS/FLTR[1]/DYOP"},
		{"SADC", []byte(strings.Replace(schs, "<SADC>+1</SADC>", "<SADC>one</SADC>", 1)), ClassProtocol, "MSG/SCHS/FLTR[1]/ERUT[1]/SADC"},
		{"SCHS RECS", []byte(strings.Replace(schs, "<RECS>2</RECS>", "<RECS>1</RECS>", 1)), ClassProtocol, "MSG/SCHS/RECS"},
	}
	for _, bad := range []string{"32JAN210535", "29FEB210535", "23XYZ210535", "23JAN212435", "23JAN210560", "23JAN21053", "23JAN2105355", "2021-01-23", "23JAN21 535", "00JAN210535"} {
		cases = append(cases, struct {
			name  string
			raw   []byte
			class Class
			path  string
		}{"DDMONYYHHMM " + bad, flopMsg("APPT", "<APPT>"+bad+"</APPT>"), ClassProtocol, "MSG/FLOP/APPT"})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Decode(tc.raw, Options{Location: shanghai})
			requireErr(t, err, tc.class, tc.path)
		})
	}
}

func TestTimeFormats(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"23JAN210535": "2021-01-23 05:35", "23jan210535": "2021-01-23 05:35", "16Nov200000": "2020-11-16 00:00",
		"29FEB242359": "2024-02-29 23:59", "01DEC991200": "2099-12-01 12:00",
	} {
		got, ok := ParseDateTime(in, shanghai)
		require.True(t, ok, in)
		require.Equal(t, want, got.Format("2006-01-02 15:04"), in)
		require.Equal(t, shanghai, got.Location())
		require.Equal(t, strings.ToUpper(in), FormatDateTime(got))
	}
	d, ok := ParseDate("10sep20", shanghai)
	require.True(t, ok)
	require.Equal(t, "2020-09-10T00:00:00+08:00", d.Format("2006-01-02T15:04:05-07:00"))
	_, ok = ParseDate("29FEB21", shanghai)
	require.False(t, ok)
	c, ok := ParseClock("2359")
	require.True(t, ok)
	require.Equal(t, 1439, c.Minutes())
	s, ok := ParseStamp("20181105223126", shanghai)
	require.True(t, ok)
	require.Equal(t, "2018-11-05T22:31:26+08:00", s.Format("2006-01-02T15:04:05-07:00"))
	for _, bad := range []string{"2018110522312", "20181105243126", "20180230223126", "2018110522312x"} {
		_, ok := ParseStamp(bad, shanghai)
		require.False(t, ok, bad)
	}
	// the configured location is used
	m, err := Decode(flopMsg("APPT", "<APPT>12DEC031350</APPT>"), Options{Location: time.UTC})
	require.NoError(t, err)
	require.Equal(t, time.UTC, m.Flop.Payload.APPT.Value.Location())
	require.Equal(t, time.UTC, m.Meta.DTTM.Location())
}
