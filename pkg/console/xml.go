package console

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
)

// prettyXML indents a message for reading; text that is not well-formed XML is shown as it is.
// The result is plain text: the template escapes it.
func prettyXML(raw string) string {
	dec := xml.NewDecoder(strings.NewReader(raw))
	dec.Strict = false
	var buf bytes.Buffer
	enc := xml.NewEncoder(&buf)
	enc.Indent("", "  ")
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return raw
		}
		if cd, ok := tok.(xml.CharData); ok && len(bytes.TrimSpace(cd)) == 0 {
			continue
		}
		if _, ok := tok.(xml.ProcInst); ok {
			continue
		}
		if err := enc.EncodeToken(xml.CopyToken(tok)); err != nil {
			return raw
		}
	}
	if err := enc.Flush(); err != nil {
		return raw
	}
	return buf.String()
}

// decodedField is one leaf element of a message: its path and text.
type decodedField struct {
	Path, Value string
}

// decodedFields lists a message's leaf elements with their text, in document order (the
// message catalogue's fields, whatever the message type).
func decodedFields(raw string) []decodedField {
	dec := xml.NewDecoder(strings.NewReader(raw))
	dec.Strict = false
	var path []string
	var text strings.Builder
	var out []decodedField
	leaf := false
	for {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		switch t := tok.(type) {
		case xml.StartElement:
			path = append(path, t.Name.Local)
			text.Reset()
			leaf = true
		case xml.CharData:
			text.Write(t)
		case xml.EndElement:
			if leaf && len(path) > 0 {
				out = append(out, decodedField{strings.Join(path, "/"), strings.TrimSpace(text.String())})
			}
			leaf = false
			if len(path) > 0 {
				path = path[:len(path)-1]
			}
			if len(out) >= 500 {
				return out
			}
		}
	}
}
