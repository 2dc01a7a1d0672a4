package flight

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Kind is the type of a stored value (and of its column).
type Kind uint8

// Value kinds.
const (
	KindText    Kind = iota // text / varchar
	KindInt                 // integer / bigint
	KindTime                // timestamp: local airport wall clock
	KindDecimal             // numeric, kept as its validated text
	KindJSON                // jsonb, kept as canonical JSON text
)

// TimeLayout is how wall-clock times appear in JSON (no zone: local airport time).
const TimeLayout = "2006-01-02T15:04:05"

// InstantLayout is how the instant beside a wall-clock time appears in JSON: RFC 3339 with the
// airport's UTC offset at that wall time.
const InstantLayout = time.RFC3339

// InstantSuffix names the instant beside a wall-clock time in JSON: "sodt" has "sodt_instant",
// a change's "old" and "new" have "old_instant" and "new_instant".
const InstantSuffix = "_instant"

// Value is one nullable value of a flight field or collection column. It is comparable with ==.
// A time is kept as its wall clock (Wall) in Unix microseconds, the precision of the flight
// tables' timestamps: a Value is 32 bytes, and a flight state holds about 60 of them and its
// collections' rows 8 each.
type Value struct {
	Valid bool
	S     string // KindText, KindDecimal, KindJSON
	I     int64  // KindInt; KindTime: the wall clock in Unix microseconds (T)
}

// Null is the absent value (SQL NULL, JSON null).
var Null = Value{}

// Text returns a text value ("" is a value, distinct from Null).
func Text(s string) Value { return Value{Valid: true, S: s} }

// Int returns an integer value.
func Int(i int64) Value { return Value{Valid: true, I: i} }

// Time returns a time value holding t's wall clock.
func Time(t time.Time) Value { return Value{Valid: true, I: Wall(t).UnixMicro()} }

// own returns v with its own copy of its text. A decoded message's text values share the
// message's whole text; a state keeps a value for as long as its flight is cached, and it must
// not keep every message that ever set one of its fields alive with it.
func (v Value) own() Value {
	if v.S != "" {
		v.S = strings.Clone(v.S)
	}
	return v
}

// T returns the wall clock of a time value, labelled UTC (Wall).
func (v Value) T() time.Time { return time.UnixMicro(v.I).UTC() }

// Decimal returns a decimal value from its text.
func Decimal(s string) Value { return Value{Valid: true, S: s} }

// JSON returns a JSON value from its canonical text.
func JSON(s string) Value { return Value{Valid: true, S: s} }

// Wall returns t's wall clock in its own location, labelled UTC: SIS times are local airport
// times and the flight tables store them as zone-less timestamps.
func Wall(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// Instant returns the instant that the wall-clock time w (labelled UTC, as Wall gives it) names
// in loc, and false when it names none or two: a wall time inside the hour the clocks skip when
// daylight saving time starts, or inside the hour they repeat when it ends. msgx does not choose
// for the AODB which of two instants it meant, nor move a skipped time.
func Instant(w time.Time, loc *time.Location) (time.Time, bool) {
	t := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), loc)
	if !Wall(t).Equal(w) { // normalised past a gap: the wall time does not exist
		return time.Time{}, false
	}
	start, end := t.ZoneBounds()
	// The same wall time in the zone period before or after t's names a second instant when
	// that instant lies inside that period.
	if !start.IsZero() {
		if other := at(w, start.Add(-time.Nanosecond)); other.Before(start) && offset(other, loc) == offset(start.Add(-time.Nanosecond), loc) {
			return time.Time{}, false
		}
	}
	if !end.IsZero() {
		if other := at(w, end); !other.Before(end) && offset(other, loc) == offset(end, loc) {
			return time.Time{}, false
		}
	}
	return t, true
}

// at is the instant at which a clock with the UTC offset in force at ref shows w.
func at(w, ref time.Time) time.Time {
	_, off := ref.Zone()
	return w.Add(-time.Duration(off) * time.Second)
}

// offset is the UTC offset of loc at instant t, in seconds.
func offset(t time.Time, loc *time.Location) int {
	_, off := t.In(loc).Zone()
	return off
}

// appendInstant appends the instant of time value v in loc as JSON: null for a null value and
// for a wall time that names no single instant (Instant).
func (v Value) appendInstant(b []byte, loc *time.Location) []byte {
	return v.appendInstantAfter(b, loc, nil)
}

// appendInstantAfter is appendInstant given wall, v as appendJSON wrote it for KindTime (nil:
// not written): the instant shows the same wall clock, so its digits are copied, not computed
// again.
func (v Value) appendInstantAfter(b []byte, loc *time.Location, wall []byte) []byte {
	if !v.Valid {
		return append(b, "null"...)
	}
	off, ok := instantOffset(v.I, loc)
	if !ok {
		return append(b, "null"...)
	}
	if wall != nil {
		b = append(b, wall[:len(wall)-1]...) // the quoted wall clock without its closing quote
	} else {
		b = append(b, '"')
		b = appendWall(b, v.I) // the instant in loc shows the wall clock, with its offset
	}
	b = appendOffset(b, off)
	return append(b, '"')
}

// appendJSON appends v as JSON for a column of kind k.
func (v Value) appendJSON(b []byte, k Kind) []byte {
	if !v.Valid {
		return append(b, "null"...)
	}
	switch k {
	case KindInt:
		return strconv.AppendInt(b, v.I, 10)
	case KindTime:
		b = append(b, '"')
		b = appendWall(b, v.I)
		return append(b, '"')
	case KindJSON:
		return append(b, v.S...)
	}
	return appendString(b, v.S)
}

// appendString appends s as a JSON string, byte for byte as encoding/json.Marshal writes it
// (<, > and & escaped, U+2028 and U+2029 escaped, invalid UTF-8 as \ufffd), without Marshal's
// allocations: every field of every state event goes through here (FuzzAppendString keeps the
// two equal).
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(append(b, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(b, s[start:]...), '"')
}

// jsonOf returns v as a JSON value of kind k.
func (v Value) jsonOf(k Kind) json.RawMessage { return v.appendJSON(nil, k) }
