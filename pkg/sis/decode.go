package sis

import (
	"strconv"
	"strings"
	"sync"
	"time"
)

var (
	defaultLocOnce sync.Once
	defaultLoc     *time.Location
)

func defaultLocation() *time.Location {
	defaultLocOnce.Do(func() {
		loc, err := time.LoadLocation(DefaultLocation)
		if err != nil {
			loc = time.FixedZone("CST", 8*3600) // Asia/Shanghai has had no DST since 1991
		}
		defaultLoc = loc
	})
	return defaultLoc
}

// refListKeys maps the 23 reference list TYPEs of docs/sis.md §b.6 to their key field.
var refListKeys = map[string]string{
	"ABDG": "ABCD", "ABNR": "ANRC", "AIRC": "ITAT", "AIRL": "ITOP", "ARPT": "ITCD",
	"BLST": "BCOD", "CHLT": "CCOD", "CITY": "ITCD", "CLST": "CCOD", "COUL": "COUC",
	"DLYL": "DCOD", "FLTL": "FTYP", "GLST": "GCOD", "HLTR": "HLTC", "ORGN": "OGID",
	"PLST": "PCOD", "REGL": "REGC", "REGN": "RNUM", "SLST": "SCOD", "STTS": "STTC",
	"TLST": "TCOD", "VIPL": "VPCD", "VIPS": "VSCD",
}

// RefListKey returns the key field of a reference list TYPE and whether TYPE is
// one of the 23 reference lists.
func RefListKey(typ string) (string, bool) {
	k, ok := refListKeys[typ]
	return k, ok
}

var refActions = map[string]bool{"DNLD": true, "RESP": true, "ADD": true, "UPD": true, "DEL": true}

type decoder struct {
	d        *document
	loc      *time.Location
	warnings []string
	counts   []nameCount // occurrences per element name in a season record (next)
	// flightSeen counts each flight element since startFlight (indexed as flightFields).
	flightSeen [flightElements]uint32
}

type nameCount struct {
	name string
	n    int
}

// next returns the 1-based occurrence number of name since the last reset.
func (x *decoder) next(name string) int {
	for i := range x.counts {
		if x.counts[i].name == name {
			x.counts[i].n++
			return x.counts[i].n
		}
	}
	x.counts = append(x.counts, nameCount{name, 1})
	return 1
}

func (x *decoder) warn(s string) { x.warnings = append(x.warnings, s) }

func (x *decoder) node(i int32) *node { return &x.d.nodes[i] }

// Decode turns one raw mailbox message into a typed Message. Every failure is
// a *Error with a Class, the element path and the offending value.
func Decode(raw []byte, opt Options) (*Message, error) {
	if err := checkSize(len(raw), opt); err != nil {
		return nil, err // before the string copy: an oversized input costs nothing
	}
	m, err := decode(string(raw), opt)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// DecodePartial is Decode that, when the message is rejected, also returns what was read of it:
// a Message holding only the META fields read before the rejection (and the Kind, when the
// TYPE was reached), or nil when the META was not reached. Operators see what a DEAD message
// claimed to be.
func DecodePartial(raw []byte, opt Options) (*Message, error) {
	if err := checkSize(len(raw), opt); err != nil {
		return nil, err
	}
	return DecodePartialString(string(raw), opt)
}

// DecodePartialString is DecodePartial of a message already held as a string: the Message's
// text values share raw's memory instead of a copy of it.
func DecodePartialString(raw string, opt Options) (*Message, error) {
	m, err := decode(raw, opt)
	if err != nil {
		if m != nil {
			m = &Message{Meta: m.Meta, Kind: m.Kind}
		}
		return m, err
	}
	return m, nil
}

// checkSize rejects a message of n bytes larger than opt allows (CODEC_ERROR).
func checkSize(n int, opt Options) *Error {
	maxBytes := opt.MaxBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if n > maxBytes {
		return codecErr("MSG", strconv.Itoa(n), "message larger than "+strconv.Itoa(maxBytes)+" bytes")
	}
	return nil
}

func decode(raw string, opt Options) (*Message, *Error) {
	loc := opt.Location
	if loc == nil {
		loc = defaultLocation()
	}
	maxDepth := opt.MaxDepth
	if maxDepth <= 0 {
		maxDepth = DefaultMaxDepth
	}
	if err := checkSize(len(raw), opt); err != nil {
		return nil, err
	}
	if len(trim(raw)) == 0 {
		return nil, malformed("MSG", "", "empty message")
	}
	text, err := readText(raw)
	if err != nil {
		return nil, err
	}
	s := text.UTF8
	doc := getDoc()
	defer putDoc(doc)
	// pre-size the arena, but never beyond one node per 16 input bytes (deep
	// or degenerate input must not allocate ahead of what the limits admit)
	if n := min(strings.Count(s, "<"), len(s)/16, maxElements); n > cap(doc.nodes) {
		doc.nodes = make([]node, 0, n)
	}
	root, err := parse(s, doc, maxDepth)
	if err != nil {
		return nil, err
	}
	x := &decoder{d: doc, loc: loc}
	return x.message(root)
}

func (x *decoder) message(root int32) (*Message, *Error) {
	rn := x.node(root)
	if rn.name != "MSG" {
		return nil, malformed(rn.name, rn.name, "root element must be MSG")
	}
	if rn.text != "" {
		return nil, protocol("MSG", rn.text, "unexpected text")
	}
	meta := int32(-1)
	for c := rn.first; c >= 0; c = x.node(c).next {
		if x.node(c).name == "META" {
			if meta >= 0 {
				return nil, malformed("MSG/META", "", "duplicate META")
			}
			meta = c
		}
	}
	if meta < 0 {
		return nil, malformed("MSG/META", "", "META missing")
	}
	m := &Message{}
	if err := x.meta(meta, &m.Meta); err != nil {
		return m, err // the META fields read before the error (DecodePartial)
	}
	typ, styp := m.Meta.TYPE, m.Meta.STYP
	var err *Error
	switch {
	case typ == "SCHD":
		switch styp {
		case "DNLD", "RESP":
			m.Kind = KindScheduleSnapshot
		case "DEL":
			m.Kind = KindScheduleDelete
		default:
			m.Kind = KindScheduleAdd
		}
		m.Schedule, err = x.schedule(root, m.Kind == KindScheduleDelete)
	case typ == "SCHS":
		m.Kind = KindSeason
		m.Season, err = x.season(root)
	case typ == "FLOP":
		m.Kind = KindFlightUpdate
		if styp == "FDEL" {
			m.Kind = KindFlightDelete
		}
		var supported bool
		m.Flop, supported, err = x.flop(root, styp)
		if err == nil && !supported {
			m.Kind = KindUnsupported
		}
	default:
		if key, ok := refListKeys[typ]; ok {
			m.Kind = KindRefList
			m.RefList, err = x.refList(root, typ, styp, key)
		} else {
			m.Kind = KindUnsupported
		}
	}
	if err != nil {
		return m, err // the META read (DecodePartial)
	}
	m.Warnings = x.warnings
	return m, nil
}

func (x *decoder) meta(mi int32, out *Meta) *Error {
	mn := x.node(mi)
	if mn.text != "" {
		return protocol("MSG/META", mn.text, "unexpected text")
	}
	var seen [5]bool
	for c := mn.first; c >= 0; c = x.node(c).next {
		cn := x.node(c)
		k := -1
		switch cn.name {
		case "SNDR":
			k = 0
		case "SEQN":
			k = 1
		case "DTTM":
			k = 2
		case "TYPE":
			k = 3
		case "STYP":
			k = 4
		default:
			x.warn("META element " + cn.name + " ignored")
			continue
		}
		if seen[k] {
			if k >= 3 {
				return malformed("MSG/META/"+cn.name, cn.text, "duplicate element")
			}
			return protocol("MSG/META/"+cn.name, cn.text, "duplicate element")
		}
		seen[k] = true
		if cn.first >= 0 {
			return protocol("MSG/META/"+cn.name, x.node(cn.first).name, "unexpected child element")
		}
		v := trim(cn.text)
		switch k {
		case 0:
			out.SNDR = v
		case 1:
			out.SEQN = v
		case 2:
			out.DTTMRaw = v
		case 3:
			out.TYPE = upper(v)
		case 4:
			out.STYP = upper(v)
		}
	}
	switch {
	case out.TYPE == "":
		return malformed("MSG/META/TYPE", out.TYPE, "TYPE missing")
	case out.STYP == "":
		return malformed("MSG/META/STYP", out.STYP, "STYP missing")
	case len(out.TYPE) > 16:
		return protocol("MSG/META/TYPE", out.TYPE, "TYPE longer than 16 characters")
	case len(out.STYP) > 16:
		return protocol("MSG/META/STYP", out.STYP, "STYP longer than 16 characters")
	case out.SNDR == "":
		return protocol("MSG/META/SNDR", out.SNDR, "required field missing")
	case len(out.SNDR) > 16:
		return protocol("MSG/META/SNDR", out.SNDR, "SNDR longer than 16 characters")
	case out.SEQN == "":
		return protocol("MSG/META/SEQN", out.SEQN, "required field missing")
	case out.DTTMRaw == "":
		return protocol("MSG/META/DTTM", out.DTTMRaw, "required field missing")
	}
	if _, ok := parseUint(out.SEQN, 18); !ok {
		return protocol("MSG/META/SEQN", out.SEQN, "must be an unsigned integer of at most 18 digits")
	}
	t, ok := ParseStamp(out.DTTMRaw, x.loc)
	if !ok {
		return protocol("MSG/META/DTTM", out.DTTMRaw, "must be yyyyMMddHHmmss")
	}
	out.DTTM = t
	return nil
}

// body returns the single child of MSG named name; other children than META
// and allowed are a CODEC_ERROR.
func (x *decoder) body(root int32, name string, allowed ...string) (int32, *Error) {
	found := int32(-1)
	for c := x.node(root).first; c >= 0; c = x.node(c).next {
		cn := x.node(c).name
		switch {
		case cn == "META":
		case cn == name:
			if found >= 0 {
				return -1, codecErr("MSG/"+name, "", "several "+name+" blocks in one message are not supported")
			}
			found = c
		case contains(allowed, cn):
		default:
			return -1, codecErr("MSG/"+cn, cn, "unknown element")
		}
	}
	if found < 0 {
		return -1, malformed("MSG/"+name, "", "message body "+name+" missing")
	}
	return found, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// recs parses a RECS element into n.
func (x *decoder) recs(ci int32, path string) (int, *Error) {
	v, err := x.leaf(ci, path)
	if err != nil {
		return 0, err
	}
	n, ok := parseUint(v, 9)
	if !ok {
		return 0, protocol(path, v, "RECS must be an unsigned integer")
	}
	return int(n), nil
}

func (x *decoder) schedule(root int32, isDelete bool) (*Schedule, *Error) {
	bi, err := x.body(root, "SCHD")
	if err != nil {
		return nil, err
	}
	bn := x.node(bi)
	if bn.text != "" {
		return nil, protocol("MSG/SCHD", bn.text, "unexpected text")
	}
	out := &Schedule{DeclaredRecs: -1}
	n := 0
	for c := bn.first; c >= 0; c = x.node(c).next {
		switch x.node(c).name {
		case "RECS":
			if out.DeclaredRecs >= 0 {
				return nil, protocol("MSG/SCHD/RECS", x.node(c).text, "duplicate element")
			}
			if out.DeclaredRecs, err = x.recs(c, "MSG/SCHD/RECS"); err != nil {
				return nil, err
			}
		case "FLTR":
			n++
		default:
			return nil, codecErr("MSG/SCHD/"+x.node(c).name, x.node(c).name, "unknown element")
		}
	}
	if out.DeclaredRecs < 0 {
		return nil, protocol("MSG/SCHD/RECS", "", "required field missing")
	}
	if out.DeclaredRecs != n {
		return nil, protocol("MSG/SCHD/RECS", strconv.Itoa(out.DeclaredRecs), "RECS does not match the "+strconv.Itoa(n)+" FLTR records")
	}
	out.Records = make([]FlightRecord, 0, n)
	k := 0
	for c := bn.first; c >= 0; c = x.node(c).next {
		if x.node(c).name != "FLTR" {
			continue
		}
		k++
		path := "MSG/SCHD/FLTR[" + strconv.Itoa(k) + "]"
		out.Records = append(out.Records, FlightRecord{})
		rec := &out.Records[len(out.Records)-1]
		if err := x.flightRecord(c, path, rec); err != nil {
			return nil, err
		}
		if err := requireRecord(rec, path, isDelete); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// requireRecord enforces the FLTR fields the schedule needs (docs/sis.md §e.5); a
// delete record needs only FLID.
func requireRecord(r *FlightRecord, path string, isDelete bool) *Error {
	if !r.FLID.HasValue() {
		return protocol(path+"/FLID", "", "required field missing")
	}
	if isDelete {
		return nil
	}
	req := []struct {
		name string
		ok   bool
	}{
		{"ALCD", r.ALCD.HasValue()}, {"FLNO", r.FLNO.HasValue()}, {"MVIN", r.MVIN.HasValue()},
		{"SODT", r.SODT.HasValue()}, {"FLTY", r.FLTY.HasValue()}, {"FLIN", r.FLIN.HasValue()},
		{"ACFT", r.ACFT.HasValue()},
	}
	for _, f := range req {
		if !f.ok {
			return protocol(path+"/"+f.name, "", "required field missing")
		}
	}
	return nil
}

func (x *decoder) refList(root int32, typ, styp, key string) (*RefList, *Error) {
	if !refActions[styp] {
		return nil, protocol("MSG/META/STYP", styp, "reference list action must be DNLD, RESP, ADD, UPD or DEL")
	}
	out := &RefList{Type: typ, Action: styp, DeclaredRecs: -1}
	n := 0
	for c := x.node(root).first; c >= 0; c = x.node(c).next {
		cn := x.node(c)
		switch cn.name {
		case "META":
		case "RECS":
			if out.DeclaredRecs >= 0 {
				return nil, protocol("MSG/RECS", cn.text, "duplicate element")
			}
			v, err := x.recs(c, "MSG/RECS")
			if err != nil {
				return nil, err
			}
			out.DeclaredRecs = v
		case typ:
			n++
			path := "MSG/" + typ + "[" + strconv.Itoa(n) + "]"
			if cn.text != "" {
				return nil, protocol(path, cn.text, "unexpected text")
			}
			rec := RefRecord{}
			if err := x.refFields(c, path, &rec.Fields); err != nil {
				return nil, err
			}
			for _, f := range rec.Fields {
				if f.Name == key {
					if rec.Key != "" {
						return nil, protocol(path+"/"+key, f.Value, "duplicate key field")
					}
					rec.Key = f.Value
					if rec.Key == "" {
						break
					}
				}
			}
			if rec.Key == "" {
				return nil, protocol(path+"/"+key, "", "key field missing")
			}
			out.Records = append(out.Records, rec)
		default:
			return nil, codecErr("MSG/"+cn.name, cn.name, "unknown element in "+typ+" list")
		}
	}
	switch {
	case out.DeclaredRecs < 0:
		x.warn("RECS missing; " + strconv.Itoa(n) + " records")
	case out.DeclaredRecs != n:
		x.warn("RECS " + strconv.Itoa(out.DeclaredRecs) + " does not match " + strconv.Itoa(n) + " records")
	}
	if out.Records == nil {
		out.Records = []RefRecord{}
	}
	return out, nil
}

func (x *decoder) refFields(ni int32, path string, out *[]RefField) *Error {
	for c := x.node(ni).first; c >= 0; c = x.node(c).next {
		cn := x.node(c)
		f := RefField{Name: cn.name}
		for a := cn.attrLo; a < cn.attrHi; a++ {
			at := x.d.attrs[a]
			if strings.HasPrefix(at.qname, "xmlns") {
				continue
			}
			f.Attrs = append(f.Attrs, RefAttr{Name: at.name, Value: trim(at.value)})
		}
		if cn.first >= 0 {
			if cn.text != "" {
				return protocol(path+"/"+cn.name, cn.text, "unexpected text")
			}
			if err := x.refFields(c, path+"/"+cn.name, &f.Children); err != nil {
				return err
			}
		} else {
			f.Value = trim(cn.text)
		}
		*out = append(*out, f)
	}
	return nil
}

// leaf returns the trimmed text of a leaf element.
func (x *decoder) leaf(ci int32, path string) (string, *Error) {
	n := x.node(ci)
	if n.first >= 0 {
		return "", protocol(path, x.node(n.first).name, "unexpected child element")
	}
	return trim(n.text), nil
}

// leafIn is leaf for child ci of the element at parent; the path is only
// built on error.
func (x *decoder) leafIn(ci int32, parent string) (string, *Error) {
	n := x.node(ci)
	if n.first >= 0 {
		return "", protocol(parent+"/"+n.name, x.node(n.first).name, "unexpected child element")
	}
	return trim(n.text), nil
}

// attr returns the trimmed value of the attribute name and whether it occurs.
func (x *decoder) attr(ni int32, name string) (string, bool) {
	n := x.node(ni)
	for a := n.attrLo; a < n.attrHi; a++ {
		if x.d.attrs[a].name == name {
			return trim(x.d.attrs[a].value), true
		}
	}
	return "", false
}

func (x *decoder) noText(ni int32, path string) *Error {
	if t := x.node(ni).text; t != "" {
		return protocol(path, t, "unexpected text")
	}
	return nil
}

func dup(path, v string) *Error { return protocol(path, v, "duplicate element") }

// setStr decodes a text leaf into f, checking the length limit and enum of key.
func (x *decoder) setStr(f *Field[string], ci int32, parent, key string) *Error {
	name := x.node(ci).name
	if f.Present {
		return dup(parent+"/"+name, x.node(ci).text)
	}
	v, err := x.leafIn(ci, parent)
	if err != nil {
		return err
	}
	return strValue(f, v, parent, "/"+name, key)
}

// strValue sets f from v; the error path is at+sub, built only on error.
func strValue(f *Field[string], v, at, sub, key string) *Error {
	if v == "" {
		*f = EmptyField[string]()
		return nil
	}
	if msg := lenMsg(key, v); msg != "" {
		return protocol(at+sub, v, msg)
	}
	if msg := enumMsg(key, v); msg != "" {
		return protocol(at+sub, v, msg)
	}
	*f = Val(v)
	return nil
}

// setAttrStr decodes the attribute name of element ni into f.
func (x *decoder) setAttrStr(f *Field[string], ni int32, path, name string) *Error {
	v, ok := x.attr(ni, name)
	if !ok {
		return nil
	}
	return strValue(f, v, path, "@"+name, name)
}

func (x *decoder) setTime(f *Field[time.Time], ci int32, parent string) *Error {
	name := x.node(ci).name
	if f.Present {
		return dup(parent+"/"+name, x.node(ci).text)
	}
	v, err := x.leafIn(ci, parent)
	if err != nil {
		return err
	}
	return x.timeValue(f, v, parent, "/"+name)
}

func (x *decoder) timeValue(f *Field[time.Time], v, at, sub string) *Error {
	if v == "" {
		*f = EmptyField[time.Time]()
		return nil
	}
	t, ok := ParseDateTime(v, x.loc)
	if !ok {
		return protocol(at+sub, v, "must be DDMONYYHHMM")
	}
	*f = Val(t)
	return nil
}

// setInt decodes an unsigned integer leaf of at most maxDigits digits and at
// most maxVal.
func (x *decoder) setInt(f *Field[int], ci int32, parent string, maxVal int) *Error {
	name := x.node(ci).name
	if f.Present {
		return dup(parent+"/"+name, x.node(ci).text)
	}
	v, err := x.leafIn(ci, parent)
	if err != nil {
		return err
	}
	return intValue(f, v, parent, "/"+name, maxVal)
}

func intValue(f *Field[int], v, at, sub string, maxVal int) *Error {
	if v == "" {
		*f = EmptyField[int]()
		return nil
	}
	n, ok := parseUint(v, 10)
	if !ok || n > int64(maxVal) {
		return protocol(at+sub, v, "must be an unsigned integer up to "+strconv.Itoa(maxVal))
	}
	*f = Val(int(n))
	return nil
}

// setID decodes an AODB id (FLID, TAID, MAID: up to 12 digits) or another
// 64-bit id of at most maxDigits digits.
func (x *decoder) setID(f *Field[int64], ci int32, parent string, maxDigits int) *Error {
	name := x.node(ci).name
	if f.Present {
		return dup(parent+"/"+name, x.node(ci).text)
	}
	v, err := x.leafIn(ci, parent)
	if err != nil {
		return err
	}
	if v == "" {
		*f = EmptyField[int64]()
		return nil
	}
	n, ok := parseUint(v, maxDigits)
	if !ok {
		return protocol(parent+"/"+name, v, "must be an unsigned integer of at most "+strconv.Itoa(maxDigits)+" digits")
	}
	*f = Val(n)
	return nil
}

// seqAttr decodes a sequence-number attribute (RTNO, PSNO, ...).
func (x *decoder) seqAttr(f *Field[int], ni int32, path, name string) *Error {
	v, ok := x.attr(ni, name)
	if !ok {
		return nil
	}
	return intValue(f, v, path, "@"+name, maxSmallint)
}

const (
	maxSmallint = 32767
	maxInt32    = 2147483647
)

// upper upper-cases ASCII without allocating when v already is.
func upper(v string) string {
	for i := 0; i < len(v); i++ {
		if v[i] >= 'a' && v[i] <= 'z' {
			return strings.ToUpper(v)
		}
	}
	return v
}
