package sis

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/simplifiedchinese"
)

// cityList is a CITY download with Chinese names, declaring encoding decl; 㐀 (U+3400) is
// only in GB18030, so it is added when decl is GB18030.
func cityList(t testing.TB, decl string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(samplesDir, "CITY", "01_DNLD.xml"))
	require.NoError(t, err)
	s := strings.Replace(string(raw), `encoding="UTF-8"`, `encoding="`+decl+`"`, 1)
	if decl == "GB18030" {
		s = strings.Replace(s, "<CNMC>上海</CNMC>", "<CNMC>上海㐀</CNMC>", 1)
	}
	return s
}

func encodeIn(t testing.TB, cs encoding.Encoding, s string) []byte {
	t.Helper()
	b, err := cs.NewEncoder().Bytes([]byte(s))
	require.NoError(t, err)
	return b
}

// cityNames returns ITCD → CNMC of a decoded CITY list.
func cityNames(t testing.TB, raw []byte) map[string]string {
	t.Helper()
	m, err := Decode(raw, Options{})
	require.NoError(t, err)
	out := map[string]string{}
	for _, r := range m.RefList.Records {
		for _, f := range r.Fields {
			if f.Name == "CNMC" {
				out[r.Key] = f.Value
			}
		}
	}
	return out
}

// TestChineseDeclarations: a list declaring GB2312, GBK or GB18030 decodes to the same names
// whether its bytes are UTF-8 (converted by the MySQL server) or in the declared charset (a
// binary column), and with a UTF-8 BOM.
func TestChineseDeclarations(t *testing.T) {
	t.Parallel()
	for decl, cs := range map[string]encoding.Encoding{
		"GB2312": simplifiedchinese.GBK, "gbk": simplifiedchinese.GBK, "GB18030": simplifiedchinese.GB18030,
	} {
		text := cityList(t, decl)
		want := map[string]string{"SHA": "上海", "HET": "呼和浩特", "CTU": "成都"}
		if decl == "GB18030" {
			want["SHA"] = "上海㐀"
		}
		for form, raw := range map[Form][]byte{
			FormConverted: []byte(text),
			FormDeclared:  encodeIn(t, cs, text),
		} {
			got, err := ReadText(string(raw))
			require.NoError(t, err, decl)
			require.Equal(t, form, got.Form, decl)
			require.Equal(t, strings.ToUpper(decl), got.Declared)
			require.Equal(t, text, got.UTF8, "%s %s: the text is exactly the UTF-8 one", decl, form)
			names := cityNames(t, raw)
			for k, v := range want {
				require.Equal(t, v, names[k], "%s %s %s", decl, form, k)
			}
		}
		got, err := ReadText(utf8BOM + text)
		require.NoError(t, err)
		require.Equal(t, FormConverted, got.Form)
		require.Equal(t, want["HET"], cityNames(t, []byte(utf8BOM+text))["HET"])
	}
}

// TestCharsetRule: GBK bytes that happen to be valid UTF-8 are GBK when the UTF-8 reading
// has characters GBK lacks; bytes valid in neither are a CODEC_ERROR naming the byte;
// encodings msgx does not read are a CODEC_ERROR, never MALFORMED.
func TestCharsetRule(t *testing.T) {
	t.Parallel()
	remc := func(decl, text string) []byte {
		return []byte(strings.Replace(string(flopMsg("REMC", "<REMC>"+text+"</REMC>")), `encoding="UTF-8"`, `encoding="`+decl+`"`, 1))
	}
	// 0xD5 0x80 is a GBK character and also the UTF-8 of U+0540 (Armenian), which GBK lacks.
	hanzi, err := simplifiedchinese.GBK.NewDecoder().String("\xD5\x80")
	require.NoError(t, err)
	require.NotEqual(t, "\uFFFD", hanzi)
	got, err := ReadText(string(remc("GBK", "\xD5\x80")))
	require.NoError(t, err)
	require.Equal(t, FormDeclared, got.Form)
	m, err := Decode(remc("GBK", "\xD5\x80"), Options{})
	require.NoError(t, err)
	require.Equal(t, hanzi, m.Flop.Payload.REMC.Value)

	// UTF-8 with a character outside GBK under a GBK declaration (not from a GBK column) stays
	// UTF-8 when it is not GBK too (ก is E0 B8 81: 81 then '<' is no GBK character) ...
	m, err = Decode(remc("GBK", "ก"), Options{})
	require.NoError(t, err)
	require.Equal(t, "ก", m.Flop.Payload.REMC.Value)
	// ... and is read as GBK when it is (the price of reading real GBK bytes by rule 2).
	m, err = Decode(remc("GBK", "Հ"), Options{})
	require.NoError(t, err)
	require.Equal(t, hanzi, m.Flop.Payload.REMC.Value)

	prefix := len(remc("GBK", "")) - len("</REMC></FLOP></MSG>")
	_, err = Decode(remc("GBK", "ab\xFF\xFFcd"), Options{})
	se := requireErr(t, err, ClassCodec, "MSG")
	require.Contains(t, se.Msg, "neither UTF-8 nor GBK at byte "+strconv.Itoa(prefix+2))

	for _, decl := range []string{"Big5", "ISO-8859-1", "UTF-16", "x-unknown"} {
		_, err := Decode(remc(decl, "abc"), Options{})
		requireErr(t, err, ClassCodec, "MSG")
		_, err = Decode(remc(decl, "\xB1\xB1"), Options{})
		requireErr(t, err, ClassCodec, "MSG")
	}
	// a UTF-8 declaration keeps invalid UTF-8 MALFORMED
	_, err = Decode(remc("UTF-8", "\xB1\xB1"), Options{})
	requireErr(t, err, ClassMalformed, "MSG")
}

// TestGBKRoundTrip: every two-byte GBK code the codec decodes encodes back to the same bytes,
// so a message transcoded from GBK bytes keeps its original bytes recoverable.
func TestGBKRoundTrip(t *testing.T) {
	t.Parallel()
	for name, cs := range map[string]encoding.Encoding{"GBK": simplifiedchinese.GBK, "GB18030": simplifiedchinese.GB18030} {
		decoded, undecodable := 0, 0
		for lead := 0x81; lead <= 0xFE; lead++ {
			for trail := 0x40; trail <= 0xFE; trail++ {
				if trail == 0x7F {
					continue
				}
				b := []byte{byte(lead), byte(trail)}
				if out, ok := decodeExact(cs, string(b)); ok {
					decoded++
					require.NotEqual(t, "\uFFFD", out)
				} else {
					undecodable++
					require.Equal(t, 0, firstUndecodable(cs, string(b)), "%s %X", name, b)
				}
			}
		}
		require.Greater(t, decoded, 21000, name)
		t.Logf("%s: %d two-byte codes decode exactly, %d do not", name, decoded, undecodable)
	}
}
