package console

import (
	"encoding/xml"
	"strings"
)

// decodedField is one leaf element of a message (its path and text) or one attribute of any
// element (path@name and value), where errors such as FRET@REID point.
type decodedField struct {
	Path, Value string
}

// decodedFields lists a message's leaf elements with their text and its attributes, in document
// order (the message catalogue's fields, whatever the message type): the n fields from the
// skip-th (0-based), and how many it has.
func decodedFields(raw string, skip, n int) ([]decodedField, int) {
	dec := xml.NewDecoder(strings.NewReader(raw))
	dec.Strict = false
	var path []string
	var text strings.Builder
	var out []decodedField
	total := 0
	add := func(path, value string) {
		if total >= skip && total < skip+n {
			out = append(out, decodedField{path, value})
		}
		total++
	}
	leaf := false
	for {
		tok, err := dec.RawToken() // prefixes as written, not resolved to namespace URLs
		if err != nil {
			return out, total
		}
		switch t := tok.(type) {
		case xml.StartElement:
			path = append(path, t.Name.Local)
			text.Reset()
			leaf = true
			for _, a := range t.Attr {
				add(strings.Join(path, "/")+"@"+attrName(a.Name), a.Value)
			}
		case xml.CharData:
			if leaf {
				text.Write(t)
			}
		case xml.EndElement:
			if leaf && len(path) > 0 {
				add(strings.Join(path, "/"), strings.TrimSpace(text.String()))
			}
			leaf = false
			if len(path) > 0 {
				path = path[:len(path)-1]
			}
		}
	}
}

// attrName is an attribute's name as written (prefix:local; RawToken gives the prefix as Space).
func attrName(n xml.Name) string {
	if n.Space == "" {
		return n.Local
	}
	return n.Space + ":" + n.Local
}
