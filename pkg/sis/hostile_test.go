package sis

import (
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const billionLaughs = `<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<MSG><META><SNDR>AODB</SNDR><SEQN>1</SEQN><DTTM>20201214143044</DTTM><TYPE>FLOP</TYPE><STYP>REMC</STYP></META>
<FLOP><FLID>15</FLID><REMC>&lol9;</REMC></FLOP></MSG>`

func deepNesting(n int) []byte {
	return []byte("<MSG>" + strings.Repeat("<A>", n) + strings.Repeat("</A>", n) + "</MSG>")
}

func bigText(n int) []byte {
	return flopMsg("REMC", "<REMC>"+strings.Repeat("x", n)+"</REMC>")
}

// TestHostile: every hostile input yields a classified error.
func TestHostile(t *testing.T) {
	t.Parallel()
	flop := string(flopMsg("ACFT", "<ACFT>320</ACFT>"))
	cases := []struct {
		name  string
		raw   []byte
		opt   Options
		class Class
		path  string
	}{
		{"billion laughs", []byte(billionLaughs), Options{}, ClassMalformed, "MSG"},
		{"internal DOCTYPE after root start", []byte(strings.Replace(flop, "<FLOP>", "<!DOCTYPE x><FLOP>", 1)), Options{}, ClassMalformed, "MSG"},
		{"undefined entity", flopMsg("REMC", "<REMC>&lol;</REMC>"), Options{}, ClassMalformed, "MSG/FLOP/REMC"},
		{"external entity", flopMsg("REMC", `<REMC>&xxe;</REMC>`), Options{}, ClassMalformed, "MSG/FLOP/REMC"},
		{"bad char ref", flopMsg("REMC", "<REMC>&#0;</REMC>"), Options{}, ClassMalformed, "MSG/FLOP/REMC"},
		{"100k-deep nesting", deepNesting(100_000), Options{}, ClassMalformed, ""},
		{"depth limit", deepNesting(10), Options{MaxDepth: 5}, ClassMalformed, "MSG/A/A/A/A"},
		{"50 MB text node", bigText(50 << 20), Options{}, ClassCodec, "MSG"},
		{"50 MB text node, limit raised", bigText(50 << 20), Options{MaxBytes: 64 << 20}, ClassProtocol, "MSG/FLOP/REMC"},
		{"invalid UTF-8 in text", flopMsg("REMC", "<REMC>\xff\xfe</REMC>"), Options{}, ClassMalformed, "MSG"},
		{"invalid UTF-8 in name", []byte(strings.Replace(flop, "<ACFT>", "<AC\xc3FT>", 1)), Options{}, ClassMalformed, "MSG"},
		{"truncated UTF-8", []byte(flop[:len(flop)-8] + "\xe4\xb8"), Options{}, ClassMalformed, "MSG"},
		{"control character", flopMsg("REMC", "<REMC>a\x01b</REMC>"), Options{}, ClassMalformed, "MSG"},
		{"second root", []byte(flop + "\n" + flop[strings.Index(flop, "<MSG>"):]), Options{}, ClassMalformed, "MSG"},
		{"second end tag", []byte(flop + "</MSG>"), Options{}, ClassMalformed, "MSG"},
		{"trailing text", []byte(flop + "junk"), Options{}, ClassMalformed, "MSG"},
		{"text before root", []byte("junk" + flop[strings.Index(flop, "<MSG>"):]), Options{}, ClassMalformed, "MSG"},
		{"unclosed root", []byte(flop[:strings.LastIndex(flop, "</MSG>")]), Options{}, ClassMalformed, "MSG"},
		{"mismatched end tag", []byte(strings.Replace(flop, "</ACFT>", "</ACFX>", 1)), Options{}, ClassMalformed, "MSG/FLOP/ACFT"},
		{"duplicate attribute", flopMsg("FDIV", `<FDIV DDES="HKG" DDES="PEK" DDIR="TO"/>`), Options{}, ClassMalformed, "MSG/FLOP"},
		{"unquoted attribute", flopMsg("FDIV", `<FDIV DDES=HKG/>`), Options{}, ClassMalformed, "MSG/FLOP"},
		{"lt in attribute", flopMsg("FDIV", `<FDIV DDES="<"/>`), Options{}, ClassMalformed, "MSG/FLOP"},
		{"bad comment", []byte(strings.Replace(flop, "<FLOP>", "<!-- a -- b --><FLOP>", 1)), Options{}, ClassMalformed, "MSG"},
		{"unterminated CDATA", flopMsg("REMC", "<REMC><![CDATA[abc</REMC></FLOP></MSG>"), Options{}, ClassMalformed, "MSG/FLOP/REMC"},
		{"empty", []byte(""), Options{}, ClassMalformed, "MSG"},
		{"blank", []byte(" \n\t "), Options{}, ClassMalformed, "MSG"},
		{"not XML", []byte("hello"), Options{}, ClassMalformed, "MSG"},
		{"XML declaration later", []byte(strings.Replace(flop, "<FLOP>", `<?xml version="1.0"?><FLOP>`, 1)), Options{}, ClassMalformed, "MSG"},
		{"XML declaration not ASCII", []byte(strings.Replace(flop, `version="1.0"`, `version="1.0é"`, 1)), Options{}, ClassMalformed, "MSG"},
		{"encoding not read", []byte(strings.Replace(flop, `encoding="UTF-8"`, `encoding="Big5"`, 1)), Options{}, ClassCodec, "MSG"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, err := Decode(tc.raw, tc.opt)
			require.Nil(t, m)
			requireErr(t, err, tc.class, tc.path)
		})
	}
}

// TestTolerated: the harmless variations of docs/sis.md §h.1 decode.
func TestTolerated(t *testing.T) {
	t.Parallel()
	flop := string(flopMsg("ACFT", "<ACFT>320</ACFT>"))
	for name, raw := range map[string]string{
		"BOM":                  "\xEF\xBB\xBF" + flop,
		"trailing blanks":      flop + "\n\n  \t\n",
		"trailing comment, PI": flop + "\n<!-- end --><?note x?>\n",
		"comment inside":       strings.Replace(flop, "<ACFT>", "<!-- c --><ACFT>", 1),
		"no declaration":       flop[strings.Index(flop, "<MSG>"):],
		"blanks around =":      strings.Replace(flop, "<MSG>", `<MSG xmlns:xsi = "http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation = 'unisysaodbsis.xsd' >`, 1),
		"prefixed root":        strings.Replace(strings.Replace(flop, "<MSG>", `<s:MSG xmlns:s="urn:x">`, 1), "</MSG>", "</s:MSG>", 1),
		"CRLF":                 strings.ReplaceAll(flop, "\n", "\r\n"),
	} {
		m, err := Decode([]byte(raw), Options{})
		require.NoError(t, err, name)
		require.Equal(t, "320", m.Flop.Payload.ACFT.Value, name)
	}
}

func allocated(f func()) uint64 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestHostileMemory checks that hostile inputs are rejected with bounded
// allocation. It is deliberately not parallel: MemStats are process-wide.
func TestHostileMemory(t *testing.T) {
	deep := deepNesting(100_000)
	huge := bigText(50 << 20)
	laughs := []byte(billionLaughs)
	for name, tc := range map[string]struct {
		raw   []byte
		opt   Options
		limit uint64
	}{
		"100k-deep nesting": {deep, Options{}, 6 * uint64(len(deep))},
		"50 MB text node":   {huge, Options{}, 1 << 20},
		"billion laughs":    {laughs, Options{}, 1 << 20},
		"50 MB accepted by size, rejected by column": {huge, Options{MaxBytes: 64 << 20}, 2*uint64(len(huge)) + 1<<20},
	} {
		var err error
		n := allocated(func() { _, err = Decode(tc.raw, tc.opt) })
		require.Error(t, err, name)
		require.LessOrEqual(t, n, tc.limit, "%s allocated %d bytes", name, n)
	}
}

// TestHostileLinear: inputs built to trigger quadratic work finish quickly.
func TestHostileLinear(t *testing.T) {
	t.Parallel()
	// 1 MB of text split into 100k segments by comments
	m, err := Decode(flopMsg("REMC", "<REMC>"+strings.Repeat("a<!---->", 100_000)+"</REMC>"), Options{})
	require.Nil(t, m)
	requireErr(t, err, ClassProtocol, "MSG/FLOP/REMC") // joined, then too long for the column
	m, err = Decode(flopMsg("REMC", "<REMC>a<!---->b&amp;c<![CDATA[d]]></REMC>"), Options{})
	require.NoError(t, err)
	require.Equal(t, "ab&cd", m.Flop.Payload.REMC.Value)
	// many attributes
	var attrs strings.Builder
	for i := 0; i < 100_000; i++ {
		attrs.WriteString(" a" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + `="1"`)
	}
	_, err = Decode(flopMsg("FDIV", "<FDIV"+attrs.String()+"/>"), Options{})
	requireErr(t, err, ClassMalformed, "MSG/FLOP")
}
