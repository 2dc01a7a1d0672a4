package flight

import (
	"encoding/json"
	"strconv"
	"time"
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

// Value is one nullable value of a flight field or collection column. It is comparable with ==:
// times are always normalised by Wall (UTC-labelled wall clock, no monotonic reading).
type Value struct {
	Valid bool
	S     string    // KindText, KindDecimal, KindJSON
	I     int64     // KindInt
	T     time.Time // KindTime
}

// Null is the absent value (SQL NULL, JSON null).
var Null = Value{}

// Text returns a text value ("" is a value, distinct from Null).
func Text(s string) Value { return Value{Valid: true, S: s} }

// Int returns an integer value.
func Int(i int64) Value { return Value{Valid: true, I: i} }

// Time returns a time value holding t's wall clock.
func Time(t time.Time) Value { return Value{Valid: true, T: Wall(t)} }

// Decimal returns a decimal value from its text.
func Decimal(s string) Value { return Value{Valid: true, S: s} }

// JSON returns a JSON value from its canonical text.
func JSON(s string) Value { return Value{Valid: true, S: s} }

// Wall returns t's wall clock in its own location, labelled UTC: SIS times are local airport
// times and the flight tables store them as zone-less timestamps.
func Wall(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
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
		b = v.T.AppendFormat(b, TimeLayout)
		return append(b, '"')
	case KindJSON:
		return append(b, v.S...)
	}
	return appendString(b, v.S)
}

func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}

// jsonOf returns v as a JSON value of kind k.
func (v Value) jsonOf(k Kind) json.RawMessage { return v.appendJSON(nil, k) }
