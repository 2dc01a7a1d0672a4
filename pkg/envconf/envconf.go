// Package envconf reads settings from the environment into plain structs with
// github.com/kelseyhightower/envconfig, the way each component declares them: a field tagged
//
//	envconfig:"MSGX_POLL_INTERVAL" default:"1s" desc:"what it does"
//
// is a variable with its default and the line docs/configuration.md shows; a field with only a
// default tag is a tuning value without a variable (its default lives in the same place); a
// struct field without tags is walked into (components compose, flat: a variable's name is its
// tag, never prefixed by the field path). A component's Validate names the variables in its
// messages with a Problems. Only settings.Load (and the development tools) call Process;
// components and tests call Defaults. Types: whatever envconfig parses (strings, bools, ints, time.Duration, comma-separated
// []string, any encoding.TextUnmarshaler).
//
// envconfig stops at the first value that does not parse; Process hands it one field at a time
// (a one-field struct built with reflect.StructOf carrying the field's own tags), so that every
// bad value is reported, one line each.
package envconf

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/kelseyhightower/envconfig"
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
	walk(reflect.Indirect(reflect.ValueOf(v)), func(f reflect.StructField, _ reflect.Value) {
		if name := f.Tag.Get("envconfig"); name != "" {
			doc, ok := f.Tag.Lookup("doc")
			if !ok {
				doc = f.Tag.Get("default")
			}
			out = append(out, Field{Name: name, Default: f.Tag.Get("default"), Doc: doc, Desc: f.Tag.Get("desc")})
		}
	})
	return out
}

// Values returns the value of every variable of the struct v (or pointer to it) as text, by
// variable name: what the process runs with. Lists are comma-separated.
func Values(v any) map[string]string {
	out := map[string]string{}
	walk(reflect.Indirect(reflect.ValueOf(v)), func(f reflect.StructField, fv reflect.Value) {
		if name := f.Tag.Get("envconfig"); name != "" {
			out[name] = text(fv)
		}
	})
	return out
}

func text(v reflect.Value) string {
	if v.Kind() == reflect.Slice && v.Len() == 0 {
		return ""
	}
	if m, ok := v.Interface().(encoding.TextMarshaler); ok {
		if b, err := m.MarshalText(); err == nil {
			return string(b)
		}
	}
	if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.String {
		items := make([]string, v.Len())
		for i := range items {
			items[i] = v.Index(i).String()
		}
		return strings.Join(items, ",")
	}
	return fmt.Sprint(v.Interface())
}

// Process sets every field of *dst from the environment (a variable that is set) or its default
// tag (a variable that is not set, and every tuning value); a field with neither keeps its value.
// The error has one line per value that does not parse, naming the variable; such a field takes
// its default, so that the caller can still validate the others and report every bad value at
// once.
func Process(dst any) error {
	var errs []error
	walk(reflect.ValueOf(dst).Elem(), func(f reflect.StructField, v reflect.Value) {
		if err := one(f, v, f.Tag.Get("envconfig")); err != nil {
			errs = append(errs, err)
			if _, ok := f.Tag.Lookup("default"); ok {
				mustDefault(f, v)
			}
		}
	})
	return errors.Join(errs...)
}

// noVariable is the envconfig key of a tuning value: a name no environment can hold (an
// environment entry's name ends at its first '='), so envconfig applies the default tag only.
const noVariable = "NO=VARIABLE"

// one lets envconfig set v (the field f) through a one-field struct with f's tags, the variable
// being name (noVariable: the default tag alone).
func one(f reflect.StructField, v reflect.Value, name string) error {
	if name == "" {
		name = noVariable
	}
	tag := fmt.Sprintf("envconfig:%q", name)
	if def, ok := f.Tag.Lookup("default"); ok {
		tag += fmt.Sprintf(" default:%q", def)
	}
	holder := reflect.New(reflect.StructOf([]reflect.StructField{{Name: "V", Type: f.Type, Tag: reflect.StructTag(tag)}}))
	holder.Elem().Field(0).Set(v)
	err := envconfig.Process("", holder.Interface())
	var pe *envconfig.ParseError
	switch {
	case errors.As(err, &pe):
		if name == noVariable {
			name = f.Name
		}
		return readable(name, f.Type, pe)
	case err != nil:
		return fmt.Errorf("%s: %w", name, err)
	}
	v.Set(holder.Elem().Field(0))
	return nil
}

// readable turns envconfig's "envconfig.Process: assigning … converting …" into
// `NAME: cannot parse "value" as Duration`, or NAME: the type's own message (TextUnmarshaler).
func readable(name string, t reflect.Type, pe *envconfig.ParseError) error {
	var num *strconv.NumError
	if errors.As(pe.Err, &num) || t == reflect.TypeFor[time.Duration]() {
		return fmt.Errorf("%s: cannot parse %q as %s", name, pe.Value, t.Name())
	}
	return fmt.Errorf("%s: %w", name, pe.Err)
}

// Defaults sets every field of *dst that has a default tag to it, whatever the environment
// holds. A default that does not parse is a programming error: it panics (the components' tests
// run Defaults).
func Defaults(dst any) {
	walk(reflect.ValueOf(dst).Elem(), func(f reflect.StructField, v reflect.Value) {
		if _, ok := f.Tag.Lookup("default"); ok {
			mustDefault(f, v)
		}
	})
}

// FillZero sets every zero field of *dst that has a default tag to it, for components that
// accept a partly filled configuration (tests set what they vary).
func FillZero(dst any) {
	walk(reflect.ValueOf(dst).Elem(), func(f reflect.StructField, v reflect.Value) {
		if _, ok := f.Tag.Lookup("default"); ok && v.IsZero() {
			mustDefault(f, v)
		}
	})
}

func mustDefault(f reflect.StructField, v reflect.Value) {
	if err := one(f, v, ""); err != nil {
		panic("envconf: bad default: " + err.Error())
	}
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// walk calls fn for every tagged field, descending into untagged struct fields.
func walk(v reflect.Value, fn func(reflect.StructField, reflect.Value)) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		fv := v.Field(i)
		_, hasEnv := f.Tag.Lookup("envconfig")
		_, hasDef := f.Tag.Lookup("default")
		if hasEnv || hasDef {
			fn(f, fv)
			continue
		}
		if f.Type.Kind() == reflect.Struct && !reflect.PointerTo(f.Type).Implements(textUnmarshaler) {
			walk(fv, fn)
		}
	}
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
