package sis

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
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
