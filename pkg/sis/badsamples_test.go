package sis

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// knownBad returns the sample rel if it is in the folder, otherwise builds it
// from its sibling as docs/sis.md §h describes it (those files are kept back).
func knownBad(t *testing.T, rel string, build func() string) string {
	t.Helper()
	if raw, err := os.ReadFile(filepath.Join(samplesDir, rel)); err == nil {
		return string(raw)
	}
	return build()
}

// TestKnownBadSamples covers docs/sis.md §h.2/§h.3.
func TestKnownBadSamples(t *testing.T) {
	t.Parallel()
	cases := []struct {
		rel   string
		build func(t *testing.T) string
		class Class // "" = accepted
		path  string
		value string
		check func(t *testing.T, m *Message)
	}{
		{
			rel: "ABNR/03_ADD.xml", class: ClassMalformed, path: "MSG", value: "</MSG>",
			build: func(t *testing.T) string {
				s := replaceOnce(t, readSample(t, "ABNR/04_UPD.xml"), "<STYP>UPD</STYP>", "<STYP>ADD</STYP>")
				return strings.TrimRight(s, " \t\r\n") + "\n</MSG>\n"
			},
		},
		{
			rel: "FLOP/03_FDIV.xml", class: ClassProtocol, path: "MSG/FLOP/FDIV@DDIR", value: "TOO",
			build: func(t *testing.T) string {
				return replaceOnce(t, readSample(t, "FLOP/01_FDIV.xml"), `DDIR="TO"`, `DDIR="TOO"`)
			},
		},
		{
			rel: "FLOP/04_FDIV.xml", class: ClassProtocol, path: "MSG/FLOP/FDIV@DDIR", value: "",
			build: func(t *testing.T) string {
				return replaceOnce(t, readSample(t, "FLOP/01_FDIV.xml"), `DDIR="TO"`, `DDIR=""`)
			},
		},
		{
			rel: "FLOP/02_FDIV.xml",
			build: func(t *testing.T) string {
				return replaceOnce(t, readSample(t, "FLOP/01_FDIV.xml"), `DDES="HKG"`, `DDES=""`)
			},
			check: func(t *testing.T, m *Message) {
				f := m.Flop.Payload.FDIV
				require.True(t, f.Present && f.Empty, "DDES empty clears the diversion")
			},
		},
		{
			// docs/sis.md §h.3 recommendation: indicator and reason both empty = clear.
			rel: "FLOP/02_FLAB.xml",
			build: func(t *testing.T) string {
				return replaceOnce(t, readSample(t, "FLOP/01_FLAB.xml"), `<FLAB ARES="G">POOR VISIBILITY</FLAB>`, `<FLAB ARES=""></FLAB>`)
			},
			check: func(t *testing.T, m *Message) {
				require.True(t, m.Flop.Payload.FLAB.Present && m.Flop.Payload.FLAB.Empty)
			},
		},
		{
			rel: "FLOP/99_FLAB_reason_without_indicator.xml", class: ClassProtocol, path: "MSG/FLOP/FLAB@ARES",
			build: func(t *testing.T) string {
				return replaceOnce(t, readSample(t, "FLOP/01_FLAB.xml"), `ARES="G"`, `ARES=""`)
			},
		},
		{
			rel: "SCHS/01_DNLD.xml", class: ClassProtocol, path: "MSG/SCHS/FLTR[1]/STDT", value: "14NOV21",
			build: func(t *testing.T) string {
				s := replaceOnce(t, readSample(t, "SCHS/02_RESP.xml"), "<STYP>RESP</STYP>", "<STYP>DNLD</STYP>")
				s = replaceOnce(t, s, "<STDT>14NOV20</STDT>", "<STDT>14NOV21</STDT>")
				return replaceOnce(t, s, "<STDT>11OCT20</STDT>", "<STDT>11OCT19</STDT>")
			},
		},
		{
			rel: "SCHS/99_before_season.xml", class: ClassProtocol, path: "MSG/SCHS/FLTR[2]/STDT", value: "11OCT19",
			build: func(t *testing.T) string {
				return replaceOnce(t, readSample(t, "SCHS/02_RESP.xml"), "<STDT>11OCT20</STDT>", "<STDT>11OCT19</STDT>")
			},
		},
		{
			rel: "SCHS/99_after_season.xml", class: ClassProtocol, path: "MSG/SCHS/FLTR[2]/EDDT", value: "11JUN21",
			build: func(t *testing.T) string {
				return replaceOnce(t, readSample(t, "SCHS/02_RESP.xml"), "<EDDT>10MAY21</EDDT>", "<EDDT>11JUN21</EDDT>")
			},
		},
		{
			rel: "SCHS/99_season_reversed.xml", class: ClassProtocol, path: "MSG/SCHS/SDAT", value: "10SEP22",
			build: func(t *testing.T) string {
				return replaceOnce(t, readSample(t, "SCHS/02_RESP.xml"), "<SDAT>10SEP20</SDAT>", "<SDAT>10SEP22</SDAT>")
			},
		},
		{
			rel: "FLOP/99_no_FLID.xml", class: ClassProtocol, path: "MSG/FLOP/FLID",
			build: func(t *testing.T) string {
				return replaceOnce(t, readSample(t, "FLOP/01_ACFT.xml"), "<FLID>15</FLID>", "")
			},
		},
		{
			rel: "FLOP/99_FLID_not_numeric.xml", class: ClassProtocol, path: "MSG/FLOP/FLID", value: "15A",
			build: func(t *testing.T) string {
				return replaceOnce(t, readSample(t, "FLOP/01_ACFT.xml"), "<FLID>15</FLID>", "<FLID>15A</FLID>")
			},
		},
		{
			rel: "SCHD/99_RECS_mismatch.xml", class: ClassProtocol, path: "MSG/SCHD/RECS", value: "3",
			build: func(t *testing.T) string {
				return replaceOnce(t, readSample(t, "SCHD/01_DNLD.xml"), "<RECS>2</RECS>", "<RECS>3</RECS>")
			},
		},
		{
			rel: "SCHD/99_missing_SODT.xml", class: ClassProtocol, path: "MSG/SCHD/FLTR[2]/SODT",
			build: func(t *testing.T) string {
				return replaceOnce(t, readSample(t, "SCHD/01_DNLD.xml"), "<SODT>23JAN210325</SODT>", "")
			},
		},
		{
			rel: "SCHD/99_bad_MVIN.xml", class: ClassProtocol, path: "MSG/SCHD/FLTR[1]/MVIN", value: "X",
			build: func(t *testing.T) string {
				return replaceOnce(t, readSample(t, "SCHD/01_DNLD.xml"), "<MVIN>D</MVIN>", "<MVIN>X</MVIN>")
			},
		},
		{
			rel: "SCHD/99_unknown_element.xml", class: ClassCodec, path: "MSG/SCHD/FLTR[1]/XXXX", value: "XXXX",
			build: func(t *testing.T) string {
				return replaceOnce(t, readSample(t, "SCHD/01_DNLD.xml"), "<FLID>15</FLID>", "<FLID>15</FLID><XXXX>1</XXXX>")
			},
		},
		{
			rel: "SCHD/99_no_body.xml", class: ClassMalformed, path: "MSG/SCHD",
			build: func(t *testing.T) string {
				s := readSample(t, "SCHD/01_DNLD.xml")
				return s[:strings.Index(s, "<SCHD>")] + "</MSG>"
			},
		},
		{
			rel: "FLOP/99_no_TYPE.xml", class: ClassMalformed, path: "MSG/META/TYPE",
			build: func(t *testing.T) string {
				return replaceOnce(t, readSample(t, "FLOP/01_ACFT.xml"), "<TYPE>FLOP</TYPE>", "")
			},
		},
		{
			rel: "FLOP/99_empty_STYP.xml", class: ClassMalformed, path: "MSG/META/STYP",
			build: func(t *testing.T) string {
				return replaceOnce(t, readSample(t, "FLOP/01_ACFT.xml"), "<STYP>ACFT</STYP>", "<STYP> </STYP>")
			},
		},
		{
			rel: "FLOP/99_no_META.xml", class: ClassMalformed, path: "MSG/META",
			build: func(t *testing.T) string {
				s := readSample(t, "FLOP/01_ACFT.xml")
				return s[:strings.Index(s, "<META>")] + s[strings.Index(s, "</META>")+len("</META>"):]
			},
		},
		{
			rel: "FLOP/99_bad_DTTM.xml", class: ClassProtocol, path: "MSG/META/DTTM", value: "20021310090311",
			build: func(t *testing.T) string {
				return replaceOnce(t, readSample(t, "FLOP/01_ACFT.xml"), "<DTTM>20021010090311</DTTM>", "<DTTM>20021310090311</DTTM>")
			},
		},
		{
			rel: "FLOP/99_root_not_MSG.xml", class: ClassMalformed, path: "MESSAGE",
			build: func(t *testing.T) string {
				return `<?xml version="1.0"?><MESSAGE><META/></MESSAGE>`
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.rel, func(t *testing.T) {
			t.Parallel()
			raw := knownBad(t, tc.rel, func() string { return tc.build(t) })
			m, err := Decode([]byte(raw), Options{Location: shanghai})
			if tc.class == "" {
				require.NoError(t, err)
				if tc.check != nil {
					tc.check(t, m)
				}
				return
			}
			require.Nil(t, m)
			se := requireErr(t, err, tc.class, tc.path)
			if tc.value != "" {
				require.Equal(t, tc.value, se.Value)
			}
			require.Contains(t, err.Error(), tc.path)
		})
	}
}

func TestKinds(t *testing.T) {
	t.Parallel()
	schd := readSample(t, "SCHD/01_DNLD.xml")
	for styp, kind := range map[string]Kind{"DNLD": KindScheduleSnapshot, "RESP": KindScheduleSnapshot, "DEL": KindScheduleDelete, "ADFT": KindScheduleAdd, "UPD": KindScheduleAdd} {
		m, err := Decode([]byte(replaceOnce(t, schd, "<STYP>DNLD</STYP>", "<STYP>"+styp+"</STYP>")), Options{})
		require.NoError(t, err, styp)
		require.Equal(t, kind, m.Kind, styp)
	}
	// a delete record needs only FLID
	del := replaceOnce(t, replaceOnce(t, schd, "<STYP>DNLD</STYP>", "<STYP>DEL</STYP>"), "<ACFT>733</ACFT>\n<RENO>B2574</RENO>\n<TAOP>YG</TAOP>\n<TAFL>YG9061</TAFL>", "")
	_, err := Decode([]byte(del), Options{})
	require.NoError(t, err)

	// unknown TYPE and unknown FLOP subtype are not errors
	flop := readSample(t, "FLOP/01_ACFT.xml")
	m, err := Decode([]byte(replaceOnce(t, flop, "<TYPE>FLOP</TYPE>", "<TYPE>LDM</TYPE>")), Options{})
	require.NoError(t, err)
	require.Equal(t, KindUnsupported, m.Kind)
	m, err = Decode([]byte(replaceOnce(t, flop, "<STYP>ACFT</STYP>", "<STYP>LBNO</STYP>")), Options{})
	require.NoError(t, err)
	require.Equal(t, KindUnsupported, m.Kind)
	require.Equal(t, int64(15), m.Flop.FLID)
	require.Equal(t, "LBNO", m.Flop.Subtype)

	// lower-case TYPE/STYP are normalised
	m, err = Decode([]byte(replaceOnce(t, flop, "<STYP>ACFT</STYP>", "<STYP> acft </STYP>")), Options{})
	require.NoError(t, err)
	require.Equal(t, "ACFT", m.Meta.STYP)

	// another subtype's element inside a FLOP is ignored with a warning
	m, err = Decode([]byte(replaceOnce(t, flop, "<ACFT>358</ACFT>", "<ACFT>358</ACFT><RENO>B1</RENO>")), Options{})
	require.NoError(t, err)
	require.False(t, m.Flop.Payload.RENO.Present)
	require.Len(t, m.Warnings, 1)

	// two FLOP blocks are not supported yet
	_, err = Decode([]byte(replaceOnce(t, flop, "</FLOP>", "</FLOP><FLOP><FLID>1</FLID><ACFT>320</ACFT></FLOP>")), Options{})
	requireErr(t, err, ClassCodec, "MSG/FLOP")

	// reference list: RECS mismatch is a warning, a missing key an error, a bad action an error
	airc := readSample(t, "AIRC/01_DNLD.xml")
	m, err = Decode([]byte(airc), Options{})
	require.NoError(t, err)
	require.Equal(t, []string{"RECS 1 does not match 2 records"}, m.Warnings)
	_, err = Decode([]byte(replaceOnce(t, readSample(t, "AIRC/03_DEL.xml"), "<STYP>DEL</STYP>", "<STYP>ZAP</STYP>")), Options{})
	requireErr(t, err, ClassProtocol, "MSG/META/STYP")
	abdg := readSample(t, "ABDG/03_ADD.xml")
	_, err = Decode([]byte(replaceOnce(t, abdg, "<ABCD>213</ABCD>", "<ABCD></ABCD>")), Options{})
	requireErr(t, err, ClassProtocol, "MSG/ABDG[1]/ABCD")
	m, err = Decode([]byte(abdg), Options{})
	require.NoError(t, err)
	require.Equal(t, []string{"213", "613"}, m.RefList.Records[0].Values("STND"))
}
