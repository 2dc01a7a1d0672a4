package sis

import (
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// This file holds the XML scanner: a small, strict, allocation-light parser for
// the subset of XML 1.0 that SIS uses. It builds a flat element tree (an arena
// of nodes linked by index) whose names, attribute values and texts are
// substrings of the input where possible.
//
// Why not encoding/xml: its RawToken loop alone, before any typed decoding, is
// slower than the decoder's throughput target for schedules; it also silently
// stops at the root end tag and expands nothing we need. This scanner rejects every DTD (no entity
// expansion is possible), checks UTF-8, nesting depth and trailing content.
//
// Supported: XML declaration, comments, processing instructions, CDATA,
// the five predefined entities and character references. Rejected: DOCTYPE and
// any other `<!` construct, undefined entities, control characters.

type node struct {
	name   string // local name (prefix stripped)
	text   string // concatenated character data; leading blank-only segments dropped
	attrLo int32
	attrHi int32
	first  int32 // first child, -1 if none
	last   int32 // last child, -1 if none
	next   int32 // next sibling, -1 if none
}

// maxElements bounds the arena (56 bytes a node): a 16 MiB schedule has about
// 650k elements.
const maxElements = 1 << 20

type attr struct {
	name  string // local name
	qname string
	value string
}

type document struct {
	nodes  []node
	attrs  []attr
	stack  []int32  // open elements
	qnames []string // qualified names of the open elements, for end-tag matching
	// texts collects text split into several segments (by comments, CDATA or
	// entities) so joining stays linear; rare, so allocated lazily.
	texts map[int32]*strings.Builder
}

// maxAttrs bounds the attributes of one element (SIS uses at most 3 plus the
// namespace declarations of MSG); it keeps the duplicate check cheap.
const maxAttrs = 32

var docPool = sync.Pool{New: func() any {
	return &document{nodes: make([]node, 0, 64), attrs: make([]attr, 0, 16), stack: make([]int32, 0, 16)}
}}

func getDoc() *document { return docPool.Get().(*document) }

func putDoc(d *document) {
	if cap(d.nodes) > 1<<16 { // do not pin huge arenas
		return
	}
	// The arena and the attributes only grow while a document is parsed, so what lies past their
	// length is still zero: clearing the used part lets go of the text, and a small message that
	// reuses a schedule's arena does not clear all of it. The names of the open elements shrink.
	clear(d.nodes)
	clear(d.attrs)
	clear(d.qnames[:cap(d.qnames)])
	d.texts = nil
	d.nodes, d.attrs, d.stack, d.qnames = d.nodes[:0], d.attrs[:0], d.stack[:0], d.qnames[:0]
	docPool.Put(d)
}

var nameStart, nameByte [256]bool

func init() {
	for c := 0; c < 256; c++ {
		b := byte(c)
		start := b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b == '_' || b == ':' || b >= 0x80
		nameStart[c] = start
		nameByte[c] = start || b >= '0' && b <= '9' || b == '-' || b == '.'
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isBlank(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isSpace(s[i]) {
			return false
		}
	}
	return true
}

// checkChars verifies the input is valid UTF-8 without XML-forbidden control
// characters.
func checkChars(s string) *Error {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
				return malformed("MSG", s[i:min(len(s), i+16)], "control character 0x"+strconv.FormatUint(uint64(c), 16)+" at byte "+strconv.Itoa(i))
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return malformed("MSG", strconv.Quote(s[i:min(len(s), i+8)]), "invalid UTF-8 at byte "+strconv.Itoa(i))
		}
		if r == 0xFFFE || r == 0xFFFF {
			return malformed("MSG", s[i:i+size], "character not allowed in XML at byte "+strconv.Itoa(i))
		}
		i += size
	}
	return nil
}

type scanner struct {
	s        string
	i        int
	d        *document
	maxDepth int
}

// parse builds the element tree of s. The caller owns d (from getDoc).
func parse(s string, d *document, maxDepth int) (root int32, e *Error) {
	p := scanner{s: s, d: d, maxDepth: maxDepth}
	if err := checkChars(s); err != nil {
		return -1, err
	}
	if strings.HasPrefix(s, "\xEF\xBB\xBF") {
		p.i = 3
	}
	if err := p.xmlDecl(); err != nil {
		return -1, err
	}
	if err := p.misc(false); err != nil {
		return -1, err
	}
	if p.i >= len(s) {
		return -1, malformed("MSG", "", "no root element")
	}
	if err := p.content(); err != nil {
		return -1, err
	}
	if err := p.misc(true); err != nil {
		return -1, err
	}
	return 0, nil
}

func (p *scanner) snippet(i int) string {
	j := min(len(p.s), i+40)
	for j < len(p.s) && !utf8.RuneStart(p.s[j]) {
		j++
	}
	return p.s[i:j]
}

func (p *scanner) path() string {
	var b strings.Builder
	for k, ni := range p.d.stack {
		if k > 0 {
			b.WriteByte('/')
		}
		b.WriteString(p.d.nodes[ni].name)
	}
	if b.Len() == 0 {
		return "MSG"
	}
	return b.String()
}

func (p *scanner) errAt(i int, msg string) *Error {
	return malformed(p.path(), p.snippet(i), msg+" at byte "+strconv.Itoa(i))
}

func (p *scanner) skipSpace() bool {
	start := p.i
	for p.i < len(p.s) && isSpace(p.s[p.i]) {
		p.i++
	}
	return p.i > start
}

func (p *scanner) xmlDecl() *Error {
	rest := p.s[p.i:]
	if !strings.HasPrefix(rest, "<?xml") || len(rest) < 6 || !isSpace(rest[5]) {
		return nil
	}
	end := strings.Index(rest, "?>")
	if end < 0 {
		return p.errAt(p.i, "unterminated XML declaration")
	}
	// the declared encoding was read before scanning (readText); only its syntax is checked here
	if _, _, bad := encodingPseudoAttr(rest[5:end]); bad || !isASCII(rest[5:end]) {
		return p.errAt(p.i, "bad XML declaration")
	}
	p.i += end + 2
	return nil
}

// misc skips blanks, comments and processing instructions before (epilog ==
// false) or after (epilog == true) the root element.
func (p *scanner) misc(epilog bool) *Error {
	for {
		p.skipSpace()
		if p.i >= len(p.s) {
			return nil
		}
		rest := p.s[p.i:]
		switch {
		case strings.HasPrefix(rest, "<!--"):
			if err := p.comment(); err != nil {
				return err
			}
		case strings.HasPrefix(rest, "<?"):
			if err := p.pi(); err != nil {
				return err
			}
		case strings.HasPrefix(rest, "<!DOCTYPE"):
			return malformed("MSG", p.snippet(p.i), "DOCTYPE not allowed (no DTD, no entity expansion)")
		case epilog:
			return malformed("MSG", trim(p.snippet(p.i)), "trailing content after the root element at byte "+strconv.Itoa(p.i))
		case rest[0] == '<' && len(rest) > 1 && nameStart[rest[1]]:
			return nil
		default:
			return p.errAt(p.i, "content before the root element")
		}
	}
}

func (p *scanner) comment() *Error {
	start := p.i
	end := strings.Index(p.s[p.i+4:], "-->")
	if end < 0 {
		return p.errAt(start, "unterminated comment")
	}
	body := p.s[p.i+4 : p.i+4+end]
	if strings.Contains(body, "--") || strings.HasSuffix(body, "-") {
		return p.errAt(start, "'--' inside comment")
	}
	p.i += 4 + end + 3
	return nil
}

func (p *scanner) pi() *Error {
	start := p.i
	p.i += 2
	nameEnd := p.i
	for nameEnd < len(p.s) && nameByte[p.s[nameEnd]] {
		nameEnd++
	}
	target := p.s[p.i:nameEnd]
	if target == "" || !nameStart[target[0]] {
		return p.errAt(start, "bad processing instruction")
	}
	if strings.EqualFold(target, "xml") {
		return p.errAt(start, "XML declaration not at the start")
	}
	end := strings.Index(p.s[nameEnd:], "?>")
	if end < 0 {
		return p.errAt(start, "unterminated processing instruction")
	}
	if end > 0 && !isSpace(p.s[nameEnd]) {
		return p.errAt(start, "bad processing instruction")
	}
	p.i = nameEnd + end + 2
	return nil
}

func (p *scanner) name() (string, *Error) {
	start := p.i
	if p.i >= len(p.s) || !nameStart[p.s[p.i]] {
		return "", p.errAt(start, "expected a name")
	}
	p.i++
	for p.i < len(p.s) && nameByte[p.s[p.i]] {
		p.i++
	}
	return p.s[start:p.i], nil
}

func localName(q string) string {
	if k := strings.LastIndexByte(q, ':'); k >= 0 {
		return q[k+1:]
	}
	return q
}

func (p *scanner) content() *Error {
	d := p.d
	for {
		if p.i >= len(p.s) {
			if len(d.stack) == 0 {
				return nil
			}
			return malformed(p.path(), "", "unexpected end of input: element not closed")
		}
		c := p.s[p.i]
		if c != '<' {
			j := strings.IndexByte(p.s[p.i:], '<')
			if j < 0 {
				j = len(p.s) - p.i
			}
			seg := p.s[p.i : p.i+j]
			if len(d.stack) == 0 {
				return nil // epilog handles it
			}
			if err := p.text(seg); err != nil {
				return err
			}
			p.i += j
			continue
		}
		if len(d.stack) == 0 && d.nodes != nil && len(d.nodes) > 0 {
			return nil // root closed: epilog
		}
		if p.i+1 >= len(p.s) {
			return p.errAt(p.i, "unexpected end of input")
		}
		switch p.s[p.i+1] {
		case '/':
			if err := p.endTag(); err != nil {
				return err
			}
			if len(d.stack) == 0 {
				return nil
			}
		case '!':
			rest := p.s[p.i:]
			switch {
			case strings.HasPrefix(rest, "<!--"):
				if err := p.comment(); err != nil {
					return err
				}
			case strings.HasPrefix(rest, "<![CDATA["):
				end := strings.Index(rest[9:], "]]>")
				if end < 0 {
					return p.errAt(p.i, "unterminated CDATA section")
				}
				p.addText(rest[9 : 9+end])
				p.i += 9 + end + 3
			case strings.HasPrefix(rest, "<!DOCTYPE"):
				return malformed(p.path(), p.snippet(p.i), "DOCTYPE not allowed (no DTD, no entity expansion)")
			default:
				return p.errAt(p.i, "markup declaration not allowed")
			}
		case '?':
			if err := p.pi(); err != nil {
				return err
			}
		default:
			if err := p.startTag(); err != nil {
				return err
			}
			if len(d.stack) == 0 {
				return nil // self-closing root
			}
		}
	}
}

func (p *scanner) text(seg string) *Error {
	if strings.Contains(seg, "]]>") {
		return p.errAt(p.i+strings.Index(seg, "]]>"), "']]>' in text")
	}
	if strings.IndexByte(seg, '&') >= 0 {
		v, err := p.unescape(seg, p.i)
		if err != nil {
			return err
		}
		seg = v
	}
	p.addText(seg)
	return nil
}

func (p *scanner) addText(seg string) {
	ni := p.d.stack[len(p.d.stack)-1]
	n := &p.d.nodes[ni]
	if n.text == "" {
		if isBlank(seg) {
			return
		}
		n.text = seg
		return
	}
	if p.d.texts == nil {
		p.d.texts = map[int32]*strings.Builder{}
	}
	b := p.d.texts[ni]
	if b == nil {
		b = &strings.Builder{}
		b.WriteString(n.text)
		p.d.texts[ni] = b
	}
	b.WriteString(seg)
}

func (p *scanner) unescape(s string, at int) (string, *Error) {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c != '&' {
			b.WriteByte(c)
			i++
			continue
		}
		semi := strings.IndexByte(s[i:], ';')
		if semi < 0 || semi > 12 {
			return "", p.errAt(at+i, "bad entity reference")
		}
		ref := s[i+1 : i+semi]
		switch ref {
		case "lt":
			b.WriteByte('<')
		case "gt":
			b.WriteByte('>')
		case "amp":
			b.WriteByte('&')
		case "apos":
			b.WriteByte('\'')
		case "quot":
			b.WriteByte('"')
		default:
			if len(ref) < 2 || ref[0] != '#' {
				return "", p.errAt(at+i, "undefined entity (no DTD, no entity expansion)")
			}
			var r uint64
			var err error
			if ref[1] == 'x' {
				r, err = strconv.ParseUint(ref[2:], 16, 32)
			} else {
				r, err = strconv.ParseUint(ref[1:], 10, 32)
			}
			if err != nil || !legalChar(rune(r)) {
				return "", p.errAt(at+i, "bad character reference")
			}
			b.WriteRune(rune(r))
		}
		i += semi + 1
	}
	return b.String(), nil
}

func legalChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D || r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}

// startTag reads a start tag (or an empty-element tag) and opens its element.
func (p *scanner) startTag() *Error {
	start := p.i
	p.i++ // '<'
	q, err := p.name()
	if err != nil {
		return err
	}
	idx, err := p.addElement(start, q)
	if err != nil {
		return err
	}
	d := p.d
	for {
		sp := p.skipSpace()
		if p.i >= len(p.s) {
			return p.errAt(start, "unterminated start tag")
		}
		switch p.s[p.i] {
		case '>':
			p.i++
			d.stack = append(d.stack, idx)
			d.qnames = append(d.qnames, q)
			return nil
		case '/':
			if p.i+1 < len(p.s) && p.s[p.i+1] == '>' {
				p.i += 2
				return nil
			}
			return p.errAt(p.i, "bad start tag")
		}
		if !sp {
			return p.errAt(p.i, "missing blank before attribute")
		}
		if err := p.attribute(start, idx); err != nil {
			return err
		}
	}
}

// addElement appends the element of qualified name q, whose tag begins at start, to the tree as
// the last child of the open element, checking the limits of depth, roots and size.
func (p *scanner) addElement(start int, q string) (int32, *Error) {
	d := p.d
	if len(d.stack) >= p.maxDepth {
		return -1, malformed(p.path(), q, "nesting deeper than "+strconv.Itoa(p.maxDepth)+" elements")
	}
	if len(d.stack) == 0 && len(d.nodes) > 0 {
		return -1, p.errAt(start, "second root element")
	}
	if len(d.nodes) >= maxElements {
		return -1, codecErr(p.path(), q, "more than "+strconv.Itoa(maxElements)+" elements")
	}
	local := localName(q)
	if local == "" {
		return -1, p.errAt(start, "bad element name")
	}
	idx := int32(len(d.nodes))
	parent := int32(-1)
	if len(d.stack) > 0 {
		parent = d.stack[len(d.stack)-1]
	}
	d.nodes = append(d.nodes, node{name: local, attrLo: int32(len(d.attrs)), attrHi: int32(len(d.attrs)), first: -1, last: -1, next: -1})
	if parent >= 0 {
		pn := &d.nodes[parent]
		if pn.last >= 0 {
			d.nodes[pn.last].next = idx
		} else {
			pn.first = idx
		}
		pn.last = idx
	}
	return idx, nil
}

// attribute reads one attribute of the element idx, whose tag begins at start.
func (p *scanner) attribute(start int, idx int32) *Error {
	d := p.d
	aq, err := p.name()
	if err != nil {
		return err
	}
	p.skipSpace()
	if p.i >= len(p.s) || p.s[p.i] != '=' {
		return p.errAt(p.i, "expected '=' after attribute name")
	}
	p.i++
	p.skipSpace()
	v, err := p.attrValue()
	if err != nil {
		return err
	}
	n := &d.nodes[idx]
	if n.attrHi-n.attrLo >= maxAttrs {
		return p.errAt(start, "more than "+strconv.Itoa(maxAttrs)+" attributes")
	}
	for k := n.attrLo; k < n.attrHi; k++ {
		if d.attrs[k].qname == aq {
			return p.errAt(start, "duplicate attribute "+aq)
		}
	}
	d.attrs = append(d.attrs, attr{name: localName(aq), qname: aq, value: v})
	n.attrHi++
	return nil
}

// attrValue reads a quoted attribute value: entities expanded, tabs and line ends as blanks.
func (p *scanner) attrValue() (string, *Error) {
	if p.i >= len(p.s) || (p.s[p.i] != '"' && p.s[p.i] != '\'') {
		return "", p.errAt(p.i, "expected quoted attribute value")
	}
	quote := p.s[p.i]
	vs := p.i + 1
	ve := strings.IndexByte(p.s[vs:], quote)
	if ve < 0 {
		return "", p.errAt(p.i, "unterminated attribute value")
	}
	v := p.s[vs : vs+ve]
	if strings.IndexByte(v, '<') >= 0 {
		return "", p.errAt(vs, "'<' in attribute value")
	}
	if strings.IndexByte(v, '&') >= 0 {
		u, err := p.unescape(v, vs)
		if err != nil {
			return "", err
		}
		v = u
	}
	if strings.ContainsAny(v, "\t\n\r") {
		v = strings.Map(func(r rune) rune {
			if r == '\t' || r == '\n' || r == '\r' {
				return ' '
			}
			return r
		}, v)
	}
	p.i = vs + ve + 1
	return v, nil
}

func (p *scanner) endTag() *Error {
	start := p.i
	p.i += 2
	q, err := p.name()
	if err != nil {
		return err
	}
	p.skipSpace()
	if p.i >= len(p.s) || p.s[p.i] != '>' {
		return p.errAt(start, "bad end tag")
	}
	p.i++
	d := p.d
	if len(d.stack) == 0 {
		return p.errAt(start, "end tag without start tag")
	}
	top := d.stack[len(d.stack)-1]
	open := d.qnames[len(d.qnames)-1]
	if open != q {
		return malformed(p.path(), q, "end tag </"+q+"> does not match <"+open+"> at byte "+strconv.Itoa(start))
	}
	if b := d.texts[top]; b != nil {
		d.nodes[top].text = b.String()
		delete(d.texts, top)
	}
	d.stack = d.stack[:len(d.stack)-1]
	d.qnames = d.qnames[:len(d.qnames)-1]
	return nil
}
