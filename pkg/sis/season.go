package sis

import (
	"strconv"
	"time"
)

func formatDate(t time.Time) string { return FormatDateTime(t)[:7] }

func (x *decoder) setDate(f *Field[time.Time], ci int32, parent string) *Error {
	name := x.node(ci).name
	if f.Present {
		return dup(parent+"/"+name, x.node(ci).text)
	}
	v, err := x.leafIn(ci, parent)
	if err != nil {
		return err
	}
	if v == "" {
		*f = EmptyField[time.Time]()
		return nil
	}
	t, ok := ParseDate(v, x.loc)
	if !ok {
		return protocol(parent+"/"+name, v, "must be DDMONYY")
	}
	*f = Val(t)
	return nil
}

func (x *decoder) setClock(f *Field[Clock], ci int32, parent string) *Error {
	name := x.node(ci).name
	if f.Present {
		return dup(parent+"/"+name, x.node(ci).text)
	}
	v, err := x.leafIn(ci, parent)
	if err != nil {
		return err
	}
	if v == "" {
		*f = EmptyField[Clock]()
		return nil
	}
	c, ok := ParseClock(v)
	if !ok {
		return protocol(parent+"/"+name, v, "must be HHMM (00-23, 00-59)")
	}
	*f = Val(c)
	return nil
}

func (x *decoder) setSeasonTime(f *Field[SeasonTime], ci int32, parent string) *Error {
	name := x.node(ci).name
	path := parent + "/" + name
	if f.Present {
		return dup(path, x.node(ci).text)
	}
	v, err := x.leaf(ci, path)
	if err != nil {
		return err
	}
	switch len(v) {
	case 0:
		*f = EmptyField[SeasonTime]()
		return nil
	case 4:
		if c, ok := ParseClock(v); ok {
			*f = Val(SeasonTime{Clock: c})
			return nil
		}
	case 11:
		if t, ok := ParseDateTime(v, x.loc); ok {
			*f = Val(SeasonTime{Clock: Clock{t.Hour(), t.Minute()}, At: t})
			return nil
		}
	}
	return protocol(path, v, "must be HHMM or DDMONYYHHMM")
}

func (x *decoder) setSigned(f *Field[int], ci int32, parent string) *Error {
	name := x.node(ci).name
	if f.Present {
		return dup(parent+"/"+name, x.node(ci).text)
	}
	v, err := x.leafIn(ci, parent)
	if err != nil {
		return err
	}
	if v == "" {
		*f = EmptyField[int]()
		return nil
	}
	n, ok := parseSigned(v)
	if !ok {
		return protocol(parent+"/"+name, v, "must be a signed day offset like +1 or -2")
	}
	*f = Val(n)
	return nil
}

func (x *decoder) season(root int32) (*Season, *Error) {
	bi, err := x.body(root, "SCHS")
	if err != nil {
		return nil, err
	}
	const path = "MSG/SCHS"
	if err := x.noText(bi, path); err != nil {
		return nil, err
	}
	out := &Season{DeclaredRecs: -1}
	var snam, apcd Field[string]
	var sdat, edat Field[time.Time]
	n := 0
	for c := x.node(bi).first; c >= 0; c = x.node(c).next {
		var err *Error
		switch name := x.node(c).name; name {
		case "SNAM":
			err = x.setStr(&snam, c, path, "SNAM")
		case "APCD":
			err = x.setStr(&apcd, c, path, "SCHS/APCD")
		case "SDAT":
			err = x.setDate(&sdat, c, path)
		case "EDAT":
			err = x.setDate(&edat, c, path)
		case "RECS":
			if out.DeclaredRecs >= 0 {
				return nil, dup(path+"/RECS", x.node(c).text)
			}
			out.DeclaredRecs, err = x.recs(c, path+"/RECS")
		case "FLTR":
			n++
		default:
			err = unknown(path, name)
		}
		if err != nil {
			return nil, err
		}
	}
	if !sdat.HasValue() {
		return nil, protocol(path+"/SDAT", "", "required field missing")
	}
	if !edat.HasValue() {
		return nil, protocol(path+"/EDAT", "", "required field missing")
	}
	if sdat.Value.After(edat.Value) {
		return nil, protocol(path+"/SDAT", formatDate(sdat.Value), "season start after season end "+formatDate(edat.Value))
	}
	if out.DeclaredRecs < 0 {
		return nil, protocol(path+"/RECS", "", "required field missing")
	}
	if out.DeclaredRecs != n {
		return nil, protocol(path+"/RECS", strconv.Itoa(out.DeclaredRecs), "RECS does not match the "+strconv.Itoa(n)+" FLTR records")
	}
	out.SNAM, out.APCD, out.SDAT, out.EDAT = snam.Value, apcd.Value, sdat.Value, edat.Value
	out.Records = make([]SeasonRecord, 0, n)
	k := 0
	for c := x.node(bi).first; c >= 0; c = x.node(c).next {
		if x.node(c).name != "FLTR" {
			continue
		}
		k++
		rp := path + "/FLTR[" + strconv.Itoa(k) + "]"
		var r SeasonRecord
		if err := x.seasonRecord(c, rp, &r); err != nil {
			return nil, err
		}
		if err := checkSeasonRecord(&r, rp, out); err != nil {
			return nil, err
		}
		out.Records = append(out.Records, r)
	}
	return out, nil
}

func checkSeasonRecord(r *SeasonRecord, path string, s *Season) *Error {
	req := []struct {
		name string
		ok   bool
	}{
		{"ALCD", r.ALCD.HasValue()}, {"FLNO", r.FLNO.HasValue()}, {"MVIN", r.MVIN.HasValue()},
		{"STDT", r.STDT.HasValue()}, {"EDDT", r.EDDT.HasValue()}, {"DYOP", r.DYOP.HasValue()},
		{"SCHT", r.SCHT.HasValue()},
	}
	for _, f := range req {
		if !f.ok {
			return protocol(path+"/"+f.name, "", "required field missing")
		}
	}
	if r.STDT.Value.After(r.EDDT.Value) {
		return protocol(path+"/STDT", formatDate(r.STDT.Value), "validity start after validity end "+formatDate(r.EDDT.Value))
	}
	if r.STDT.Value.Before(s.SDAT) {
		return protocol(path+"/STDT", formatDate(r.STDT.Value), "validity start before season start "+formatDate(s.SDAT))
	}
	if r.EDDT.Value.After(s.EDAT) {
		return protocol(path+"/EDDT", formatDate(r.EDDT.Value), "validity end after season end "+formatDate(s.EDAT))
	}
	return nil
}

func (x *decoder) seasonRecord(ni int32, path string, r *SeasonRecord) *Error {
	if err := x.noText(ni, path); err != nil {
		return err
	}
	x.counts = x.counts[:0]
	for c := x.node(ni).first; c >= 0; c = x.node(c).next {
		var err *Error
		switch name := x.node(c).name; name {
		case "ALCD":
			err = x.setStr(&r.ALCD, c, path, name)
		case "ALSC":
			err = x.setStr(&r.ALSC, c, path, name)
		case "FLNO":
			err = x.setStr(&r.FLNO, c, path, name)
		case "MVIN":
			err = x.setStr(&r.MVIN, c, path, name)
		case "FLTY":
			err = x.setStr(&r.FLTY, c, path, name)
		case "FLIN":
			err = x.setStr(&r.FLIN, c, path, name)
		case "ACFT":
			err = x.setStr(&r.ACFT, c, path, name)
		case "RENO":
			err = x.setStr(&r.RENO, c, path, name)
		case "TAOP":
			err = x.setStr(&r.TAOP, c, path, name)
		case "TAFL":
			err = x.setStr(&r.TAFL, c, path, name)
		case "TRML":
			err = x.setStr(&r.TRML, c, path, name)
		case "CSOP":
			err = x.setStr(&r.CSOP, c, path, name)
		case "CSFT":
			err = x.setStr(&r.CSFT, c, path, name)
		case "MAXP":
			err = x.setInt(&r.MAXP, c, path, maxSmallint)
		case "STDT":
			err = x.setDate(&r.STDT, c, path)
		case "EDDT":
			err = x.setDate(&r.EDDT, c, path)
		case "SCHT":
			err = x.setClock(&r.SCHT, c, path)
		case "DYOP":
			err = x.setDays(r, c, path)
		case "ROUT":
			err = addEntry(x, &r.ROUT, c, path, seasonRouteEntry.decode)
		case "ERUT":
			err = addEntry(x, &r.ERUT, c, path, seasonRouteEntry.decode)
		default:
			err = unknown(path, name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// setDays decodes DYOP: 7 characters, position n (1 = Monday) holds n or 0.
func (x *decoder) setDays(r *SeasonRecord, ci int32, parent string) *Error {
	if err := x.setStr(&r.DYOP, ci, parent, "DYOP"); err != nil {
		return err
	}
	v, ok := r.DYOP.Get()
	if !ok {
		return nil
	}
	if len(v) != 7 {
		return protocol(parent+"/DYOP", v, "must be 7 characters, position n holding n or 0")
	}
	for i := 0; i < 7; i++ {
		switch v[i] {
		case '0':
		case byte('1' + i):
			r.Days[i] = true
		default:
			return protocol(parent+"/DYOP", v, "must be 7 characters, position n holding n or 0")
		}
	}
	return nil
}

// seasonRouteEntry is the kind of an SCHS ROUT/ERUT entry.
var seasonRouteEntry = newEntryKind(entryKind[SeasonRouteEntry]{
	seq: "RTNO", seqField: func(e *SeasonRouteEntry) *Field[int] { return &e.RTNO }, seqReq: true,
	elems: []elem[SeasonRouteEntry]{
		{"APCD", str(func(e *SeasonRouteEntry) *Field[string] { return &e.APCD })},
		{"SCAT", seasonTime(func(e *SeasonRouteEntry) *Field[SeasonTime] { return &e.SCAT })},
		{"SCDT", seasonTime(func(e *SeasonRouteEntry) *Field[SeasonTime] { return &e.SCDT })},
		{"SADC", signed(func(e *SeasonRouteEntry) *Field[int] { return &e.SADC })},
		{"SDDC", signed(func(e *SeasonRouteEntry) *Field[int] { return &e.SDDC })},
	},
	blank: entryEmpty, key: "APCD",
})

// seasonTime decodes an SCHS time leaf.
func seasonTime[T any](field func(*T) *Field[SeasonTime]) setter[T] {
	return func(x *decoder, t *T, ci int32, path string, _ int) (bool, *Error) {
		f := field(t)
		err := x.setSeasonTime(f, ci, path)
		return f.HasValue(), err
	}
}

// signed decodes a signed day offset leaf.
func signed[T any](field func(*T) *Field[int]) setter[T] {
	return func(x *decoder, t *T, ci int32, path string, _ int) (bool, *Error) {
		f := field(t)
		err := x.setSigned(f, ci, path)
		return f.HasValue(), err
	}
}
