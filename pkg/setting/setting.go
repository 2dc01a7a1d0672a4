// Package setting reads settings from the environment into plain structs, the way each
// component declares them: a field tagged
//
//	env:"MSGX_POLL_INTERVAL" default:"1s" desc:"what it does"
//
// is a variable with its default and the line docs/configuration.md shows; a field with only a
// default tag is a tuning value without a variable (its default lives in the same place); a
// struct field without tags is walked into (components compose). A component's Validate names
// the variables in its messages with a Problems. Only pkg/config calls Load; components call
// Defaults. Types: string, bool, ints, time.Duration, []string (comma-separated) and any
// encoding.TextUnmarshaler.
package setting

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Field is one variable as a struct declares it.
type Field struct {
	Name    string // MSGX_…
	Default string // the default tag, verbatim
	Doc     string // the default as the documentation shows it (doc tag, else Default)
	Desc    string
}

// Fields lists the variables of the struct v (or pointer to it) in declaration order.
func Fields(v any) []Field {
	var out []Field
	walk(reflect.Indirect(reflect.ValueOf(v)), func(f reflect.StructField, _ reflect.Value) error {
		if name := f.Tag.Get("env"); name != "" {
			doc, ok := f.Tag.Lookup("doc")
			if !ok {
				doc = f.Tag.Get("default")
			}
			out = append(out, Field{Name: name, Default: f.Tag.Get("default"), Doc: doc, Desc: f.Tag.Get("desc")})
		}
		return nil
	})
	return out
}

// Load sets every field of *dst from lookup (a variable that is set) or its default tag (a
// variable that is not set, and every tuning value); a field with neither keeps its value. The
// error has one line per value that does not parse.
func Load(dst any, lookup func(string) (string, bool)) error {
	var errs []error
	walk(reflect.ValueOf(dst).Elem(), func(f reflect.StructField, v reflect.Value) error {
		name := f.Tag.Get("env")
		raw, set := "", false
		if name != "" {
			raw, set = lookup(name)
		}
		if !set {
			def, ok := f.Tag.Lookup("default")
			if !ok {
				return nil
			}
			raw = def
			if name == "" {
				name = f.Name
			}
		}
		if err := parse(v, raw); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
		return nil
	})
	return errors.Join(errs...)
}

// Defaults sets every field of *dst that has a default tag to it. A default that does not parse
// is a programming error: it panics (the components' tests run Defaults).
func Defaults(dst any) {
	if err := Load(dst, func(string) (string, bool) { return "", false }); err != nil {
		panic("setting: bad default: " + err.Error())
	}
}

// FillZero sets every zero field of *dst that has a default tag to it, for components that
// accept a partly filled configuration (tests set what they vary).
func FillZero(dst any) {
	walk(reflect.ValueOf(dst).Elem(), func(f reflect.StructField, v reflect.Value) error {
		def, ok := f.Tag.Lookup("default")
		if !ok || !v.IsZero() {
			return nil
		}
		if err := parse(v, def); err != nil {
			panic(fmt.Sprintf("setting: bad default of %s: %v", f.Name, err))
		}
		return nil
	})
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// walk calls fn for every tagged field, descending into untagged struct fields.
func walk(v reflect.Value, fn func(reflect.StructField, reflect.Value) error) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		fv := v.Field(i)
		_, hasEnv := f.Tag.Lookup("env")
		_, hasDef := f.Tag.Lookup("default")
		if hasEnv || hasDef {
			_ = fn(f, fv)
			continue
		}
		if f.Type.Kind() == reflect.Struct && !reflect.PointerTo(f.Type).Implements(textUnmarshaler) {
			walk(fv, fn)
		}
	}
}

var durationType = reflect.TypeFor[time.Duration]()

// parse sets v from s; its errors read "cannot parse "s" as <type>".
func parse(v reflect.Value, s string) error {
	if v.CanAddr() && v.Addr().Type().Implements(textUnmarshaler) {
		return v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s))
	}
	bad := func(typ string) error { return fmt.Errorf("cannot parse %q as %s", s, typ) }
	if v.Type() == durationType {
		d, err := time.ParseDuration(s)
		if err != nil {
			return bad("Duration")
		}
		v.SetInt(int64(d))
		return nil
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return bad("bool")
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(s, 0, v.Type().Bits())
		if err != nil {
			return bad(v.Type().String())
		}
		v.SetInt(n)
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.String {
			panic("setting: unsupported slice type " + v.Type().String())
		}
		var items []string
		if s != "" {
			items = strings.Split(s, ",")
		}
		v.Set(reflect.ValueOf(items).Convert(v.Type()))
	default:
		panic("setting: unsupported type " + v.Type().String())
	}
	return nil
}

// Problems collects bad values, one line each, naming the variable.
type Problems struct {
	errs []error
}

// Add records a problem of variable name.
func (p *Problems) Add(name, format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf(name+": "+format, args...))
}

// Positive records a duration that is not positive.
func (p *Problems) Positive(name string, d time.Duration) {
	if d <= 0 {
		p.Add(name, "must be a positive duration, got %s", d)
	}
}

// Between records an integer outside [lo, hi].
func (p *Problems) Between(name string, n, lo, hi int64) {
	if n < lo || n > hi {
		p.Add(name, "must be between %d and %d, got %d", lo, hi, n)
	}
}

// Join adds the lines of err (another component's Validate).
func (p *Problems) Join(err error) {
	if err != nil {
		p.errs = append(p.errs, err)
	}
}

// Err returns the problems, one line each, or nil.
func (p *Problems) Err() error { return errors.Join(p.errs...) }
