package sis

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/simplifiedchinese"
)

// This file reads a message's bytes as text according to its XML declaration
// (docs/sis.md §a.1). Chinese AODB installations keep the mailbox in a GBK
// table and declare encoding="GB2312" (or GBK, GB18030). MySQL converts such a
// column to the connection's charset (utf8mb4), so msgx usually receives UTF-8
// under a Chinese declaration; from a binary column it receives the GBK bytes
// themselves. Both are read:
//
//  1. The bytes are valid UTF-8 and every character is one of the declared
//     charset (text converted from a column in that charset can hold no
//     other): UTF-8.
//  2. Otherwise, the bytes decode in the declared charset and encode back to
//     exactly the same bytes: the declared charset.
//  3. Otherwise, the bytes are valid UTF-8 (characters outside the declared
//     charset, so not from a column in it): UTF-8.
//  4. Otherwise: CODEC_ERROR naming the first byte that is neither.
//
// Real GBK text that is also valid UTF-8 and reads as characters of GBK is
// possible only by accident for a character or two; a message with Chinese
// names in GBK bytes fails rule 1 at its first name.

// Form says what a message's bytes were.
type Form string

const (
	// FormUTF8: UTF-8 under a UTF-8 declaration (or none).
	FormUTF8 Form = "utf-8"
	// FormConverted: UTF-8 under a GB2312, GBK or GB18030 declaration — text
	// the MySQL server converted from the mailbox column's charset.
	FormConverted Form = "converted"
	// FormDeclared: bytes in the declared GB2312, GBK or GB18030 charset.
	FormDeclared Form = "declared"
)

// Text is a message's bytes read as text.
type Text struct {
	// UTF8 is the message in UTF-8: the input itself, except for FormDeclared,
	// where it is the decoding. Its XML declaration is left as it was.
	UTF8 string
	// Declared is the declared charset by its canonical name: UTF-8 (also when
	// nothing is declared), GB2312, GBK or GB18030.
	Declared string
	Form     Form
}

// charsets maps the accepted encoding labels (upper case) to a canonical name.
// GB2312 is read with the GBK codec: GBK extends it, and AODBs that declare
// GB2312 write GBK characters too.
var charsets = map[string]string{
	"UTF-8": "UTF-8", "UTF8": "UTF-8", "US-ASCII": "UTF-8", "ASCII": "UTF-8",
	"GB2312": "GB2312", "GB_2312-80": "GB2312", "EUC-CN": "GB2312", "CSGB2312": "GB2312",
	"GBK": "GBK", "CP936": "GBK", "MS936": "GBK", "WINDOWS-936": "GBK", "X-GBK": "GBK",
	"GB18030": "GB18030",
}

// codecs are the x/text codecs of the non-UTF-8 canonical names.
var codecs = map[string]encoding.Encoding{
	"GB2312": simplifiedchinese.GBK, "GBK": simplifiedchinese.GBK, "GB18030": simplifiedchinese.GB18030,
}

const utf8BOM = "\xEF\xBB\xBF"

// ReadText reads raw as text by its XML declaration (the rules above). Its
// only failure is a CODEC_ERROR *Error: an encoding msgx does not read, or
// bytes that are neither UTF-8 nor the declared charset. It checks nothing
// else: invalid UTF-8 under a UTF-8 declaration is left to Decode (MALFORMED).
func ReadText(raw string) (Text, error) {
	t, err := readText(raw)
	if err != nil {
		return Text{}, err
	}
	return t, nil
}

func readText(raw string) (Text, *Error) {
	bom := strings.HasPrefix(raw, utf8BOM)
	label, ok := declaredEncoding(strings.TrimPrefix(raw, utf8BOM))
	if !ok {
		return Text{UTF8: raw, Declared: "UTF-8", Form: FormUTF8}, nil
	}
	name, known := charsets[strings.ToUpper(label)]
	if !known {
		return Text{}, codecErr("MSG", label, "unsupported encoding declaration (UTF-8, GB2312, GBK, GB18030 are read)")
	}
	t := Text{UTF8: raw, Declared: name, Form: FormUTF8}
	cs := codecs[name]
	if cs == nil {
		return t, nil
	}
	t.Form = FormConverted
	valid := utf8.ValidString(raw)
	if bom || (valid && encodable(cs, raw)) {
		return t, nil // a UTF-8 BOM says UTF-8 whatever the declaration
	}
	if out, ok := decodeExact(cs, raw); ok {
		t.UTF8, t.Form = out, FormDeclared
		return t, nil
	}
	if valid {
		return t, nil
	}
	at := firstUndecodable(cs, raw)
	return Text{}, codecErr("MSG", raw[at:min(len(raw), at+8)],
		"bytes neither UTF-8 nor "+name+" at byte "+strconv.Itoa(at))
}

// declaredEncoding returns the encoding label of the XML declaration at the
// start of s; ok is false when there is none (or it is too broken to name one,
// or not ASCII: the scanner reports that).
func declaredEncoding(s string) (label string, ok bool) {
	if !strings.HasPrefix(s, "<?xml") || len(s) < 6 || !isSpace(s[5]) {
		return "", false
	}
	end := strings.Index(s, "?>")
	if end < 0 {
		return "", false
	}
	decl := s[5:end]
	if !isASCII(decl) {
		return "", false // not a declaration (the scanner rejects it)
	}
	label, found, bad := encodingPseudoAttr(decl)
	return label, found && !bad
}

// encodingPseudoAttr finds encoding="…" in the body of an XML declaration:
// found is false when there is none, bad when it is not a quoted value.
func encodingPseudoAttr(decl string) (label string, found, bad bool) {
	k := strings.Index(decl, "encoding")
	if k < 0 {
		return "", false, false
	}
	v := strings.TrimLeft(decl[k+len("encoding"):], " \t\r\n")
	if !strings.HasPrefix(v, "=") {
		return "", true, true
	}
	v = strings.TrimLeft(v[1:], " \t\r\n")
	if v == "" || (v[0] != '"' && v[0] != '\'') {
		return "", true, true
	}
	q := strings.IndexByte(v[1:], v[0])
	if q < 0 {
		return "", true, true
	}
	return v[1 : 1+q], true, false
}

// encodable reports whether every character of the UTF-8 text b is in cs.
func encodable(cs encoding.Encoding, s string) bool {
	if isASCII(s) {
		return true
	}
	_, err := cs.NewEncoder().String(s)
	return err == nil
}

// decodeExact decodes b from cs; ok is false unless every byte sequence is a
// character of cs that encodes back to the same bytes (x/text replaces what it
// cannot decode with U+FFFD, which this round trip catches).
func decodeExact(cs encoding.Encoding, s string) (string, bool) {
	out, err := cs.NewDecoder().String(s)
	if err != nil {
		return "", false
	}
	back, err := cs.NewEncoder().String(out)
	if err != nil || back != s {
		return "", false
	}
	return out, true
}

// firstUndecodable returns the offset in b of the first byte sequence that
// does not survive decodeExact's round trip.
func firstUndecodable(cs encoding.Encoding, s string) int {
	out, err := cs.NewDecoder().String(s)
	if err != nil {
		return 0
	}
	enc := cs.NewEncoder()
	at := 0
	for _, r := range out {
		back, err := enc.String(string(r))
		if err != nil || !strings.HasPrefix(s[at:], back) {
			return at
		}
		at += len(back)
	}
	return min(at, len(s))
}
