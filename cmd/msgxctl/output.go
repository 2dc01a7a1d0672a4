package main

import (
	"encoding"
	"encoding/json"
	"reflect"
	"time"
)

// timeLayout is the one form of every time msgxctl prints, text and JSON alike: RFC 3339 with
// the offset of the airport's time zone (MSGX_AIRPORT_TZ) and microseconds when there are any,
// as time.Time's JSON writes a time truncated to microseconds.
const timeLayout = "2006-01-02T15:04:05.999999Z07:00"

// stamp is t in timeLayout, in the airport's time zone; "-" for the zero time.
func stamp(loc *time.Location, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.In(loc).Format(timeLayout)
}

// stampOf is stamp of *t; "-" for nil.
func stampOf(loc *time.Location, t *time.Time) string {
	if t == nil {
		return "-"
	}
	return stamp(loc, *t)
}

// airportWall reads a timestamp without time zone that holds the airport's wall clock (pgx reads
// it as UTC; a date reads as its midnight) as the instant it names; nil and the zero time stay
// as they are.
func airportWall(loc *time.Location, t *time.Time) *time.Time {
	if t == nil || t.IsZero() {
		return t
	}
	w := time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), loc)
	return &w
}

var (
	timeType          = reflect.TypeFor[time.Time]()
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// jsonReady returns a copy of v for --json: a nil slice or map becomes an empty one ([] and {},
// never null) and a time moves to the airport's time zone, truncated to microseconds (what
// PostgreSQL keeps), so that every time reads as timeLayout. Values that write their own JSON
// (json.Marshaler, encoding.TextMarshaler) and byte slices are kept as they are; the zero time
// too.
func jsonReady(v reflect.Value, loc *time.Location) reflect.Value {
	t := v.Type()
	if t == timeType {
		if tm := v.Interface().(time.Time); !tm.IsZero() {
			return reflect.ValueOf(tm.In(loc).Truncate(time.Microsecond))
		}
		return v
	}
	if t.Kind() == reflect.Pointer { // written as what it points to
		if v.IsNil() {
			return v
		}
		p := reflect.New(t.Elem())
		p.Elem().Set(jsonReady(v.Elem(), loc))
		return p
	}
	pt := reflect.PointerTo(t)
	if t.Implements(jsonMarshalerType) || t.Implements(textMarshalerType) || pt.Implements(jsonMarshalerType) ||
		pt.Implements(textMarshalerType) || (t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8) {
		return v
	}
	switch t.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		out := reflect.New(t).Elem()
		out.Set(jsonReady(v.Elem(), loc))
		return out
	case reflect.Slice, reflect.Array:
		out := reflect.New(t).Elem()
		if t.Kind() == reflect.Slice {
			out = reflect.MakeSlice(t, v.Len(), v.Len())
		}
		for i := range v.Len() {
			out.Index(i).Set(jsonReady(v.Index(i), loc))
		}
		return out
	case reflect.Map:
		out := reflect.MakeMapWithSize(t, v.Len())
		for it := v.MapRange(); it.Next(); {
			out.SetMapIndex(it.Key(), jsonReady(it.Value(), loc))
		}
		return out
	case reflect.Struct:
		out := reflect.New(t).Elem()
		out.Set(v)
		for i := range t.NumField() {
			if out.Field(i).CanSet() {
				out.Field(i).Set(jsonReady(v.Field(i), loc))
			}
		}
		return out
	}
	return v
}
