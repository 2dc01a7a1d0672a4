package sis

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/encoding/simplifiedchinese"
)

// FuzzDecode: no panic, no hang; every input gets a message or a classified
// *Error, and every message marshals to JSON.
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(samplesDir, "*", "*.xml"))
	for _, p := range files {
		raw, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Add([]byte(billionLaughs))
	f.Add(deepNesting(100))
	f.Add(flopMsg("DELY", `<DELY CODE="YY" STRT="15DEC031605" DURA="0200">x &amp; y</DELY><DELY/>`))
	f.Add(flopMsg("REMC", `<REMC><![CDATA[<x>]]>&#x4e2d;</REMC>`))
	for _, seed := range charsetSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := Decode(raw, Options{MaxDepth: 32})
		if err != nil {
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("unclassified error %T: %v", err, err)
			}
			switch se.Class {
			case ClassMalformed, ClassProtocol, ClassCodec:
			default:
				t.Fatalf("bad class %q", se.Class)
			}
			if se.Path == "" {
				t.Fatalf("error without path: %v", err)
			}
			if m != nil {
				t.Fatal("message and error")
			}
			return
		}
		if m.Kind == "" || m.Meta.TYPE == "" || m.Meta.STYP == "" {
			t.Fatalf("incomplete message %+v", m.Meta)
		}
		if _, err := json.Marshal(m); err != nil {
			t.Fatalf("marshal: %v", err)
		}
	})
}

// charsetSeeds are messages under Chinese declarations: UTF-8 bytes, GBK and GB18030 bytes,
// a BOM, and bytes valid in neither.
func charsetSeeds(f *testing.F) [][]byte {
	gbk := cityList(f, "GBK")
	gb18030 := cityList(f, "GB18030")
	return [][]byte{
		[]byte(cityList(f, "GB2312")),
		encodeIn(f, simplifiedchinese.GBK, gbk),
		encodeIn(f, simplifiedchinese.GB18030, gb18030),
		[]byte(utf8BOM + gbk),
		[]byte(strings.Replace(gbk, "<CNMC>", "<CNMC>\x81\xFF", 1)),
		[]byte(`<?xml version="1.0" encoding='gb18030'?><MSG>\x84\x31\xA4\x37</MSG>`),
	}
}

// FuzzReadText: no panic; a failure is a CODEC_ERROR; what is read as the declared charset
// encodes back to the input; and the UTF-8 text read reads again as itself (ingest stores it,
// the processor decodes it).
func FuzzReadText(f *testing.F) {
	for _, seed := range charsetSeeds(f) {
		f.Add(seed)
	}
	f.Add([]byte(`<?xml version="1.0" encoding="GBK"?><MSG>\xD5\x80</MSG>`))
	f.Add([]byte(`<?xml version="1.0" encoding="Big5"?><MSG/>`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		text, err := ReadText(string(raw))
		if err != nil {
			var se *Error
			if !errors.As(err, &se) || se.Class != ClassCodec {
				t.Fatalf("not a CODEC_ERROR: %v", err)
			}
			return
		}
		if text.Form == FormDeclared {
			back, err := codecs[text.Declared].NewEncoder().String(text.UTF8)
			if err != nil || back != string(raw) {
				t.Fatalf("%s text does not encode back to its bytes", text.Declared)
			}
		}
		if text.Form != FormUTF8 && !utf8.ValidString(text.UTF8) && !bytes.HasPrefix(raw, []byte(utf8BOM)) {
			t.Fatalf("%s: UTF-8 text not valid", text.Form)
		}
		again, err := ReadText(text.UTF8)
		if text.Form == FormDeclared && (err != nil || again.Form != FormConverted || again.UTF8 != text.UTF8) {
			t.Fatalf("transcoded text reads again as %v %v", again.Form, err)
		}
	})
}
