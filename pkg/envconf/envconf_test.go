package envconf_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/envconf"
)

type upper string

func (u *upper) UnmarshalText(b []byte) error {
	if strings.ToUpper(string(b)) != string(b) {
		return fmt.Errorf("must be upper case, got %q", b)
	}
	*u = upper(b)
	return nil
}

type inner struct {
	Batch int   `envconfig:"T_BATCH" default:"50" desc:"rows per poll"`
	Code  upper `envconfig:"T_CODE" default:"AB" desc:"a code"`
	Tune  int64 `default:"7"` // no variable
	Wired string
}

type outer struct {
	Wait  time.Duration `envconfig:"T_WAIT" default:"1s" desc:"a wait"`
	On    bool          `envconfig:"T_ON" default:"true" desc:"a switch"`
	List  []string      `envconfig:"T_LIST" default:"A,B" desc:"a list"`
	Empty string        `envconfig:"T_EMPTY" desc:"keeps its value when unset" doc:"per binary"`
	Conns int32         `envconfig:"T_CONNS" default:"8" desc:"connections"`
	Inner inner
	Embedded
}

// Embedded is walked into like a named struct field.
type Embedded struct {
	Level string `envconfig:"T_LEVEL" default:"info" desc:"a level"`
}

// setenv sets the variables for the test (envconfig reads the process environment).
func setenv(t *testing.T, kv map[string]string) {
	for k, v := range kv {
		t.Setenv(k, v)
	}
}

func TestProcessDefaultsAndEnvironment(t *testing.T) {
	setenv(t, map[string]string{"T_WAIT": "250ms", "T_LIST": "X", "T_ON": "false", "TUNE": "99", "V": "99"})
	o := outer{Empty: "preset", Inner: inner{Wired: "w"}}
	require.NoError(t, envconf.Process(&o))
	require.Equal(t, 250*time.Millisecond, o.Wait)
	require.False(t, o.On)
	require.Equal(t, []string{"X"}, o.List)
	require.Equal(t, "preset", o.Empty, "no default, not set: kept")
	require.Equal(t, int32(8), o.Conns)
	require.Equal(t, 50, o.Inner.Batch)
	require.Equal(t, upper("AB"), o.Inner.Code)
	require.Equal(t, int64(7), o.Inner.Tune, "a tuning value takes its default, whatever the environment holds")
	require.Equal(t, "w", o.Inner.Wired, "untagged fields are left alone")
	require.Equal(t, "info", o.Level)
}

func TestProcessReportsEveryBadValueOnOneLineEach(t *testing.T) {
	setenv(t, map[string]string{"T_WAIT": "soon", "T_BATCH": "many", "T_CONNS": "99999999999", "T_CODE": "ab", "T_ON": "maybe"})
	var o outer
	err := envconf.Process(&o)
	require.Error(t, err)
	require.Equal(t, []string{
		`T_WAIT: cannot parse "soon" as Duration`,
		`T_ON: cannot parse "maybe" as bool`,
		`T_CONNS: cannot parse "99999999999" as int32`,
		`T_BATCH: cannot parse "many" as int`,
		`T_CODE: must be upper case, got "ab"`,
	}, strings.Split(err.Error(), "\n"))
}

func TestFieldsInDeclarationOrder(t *testing.T) {
	t.Parallel()
	var names []string
	for _, f := range envconf.Fields(outer{}) {
		names = append(names, f.Name)
	}
	require.Equal(t, []string{"T_WAIT", "T_ON", "T_LIST", "T_EMPTY", "T_CONNS", "T_BATCH", "T_CODE", "T_LEVEL"}, names)
	f := envconf.Fields(&outer{})[3]
	require.Equal(t, envconf.Field{Name: "T_EMPTY", Default: "", Doc: "per binary", Desc: "keeps its value when unset"}, f)
	require.Equal(t, "A,B", envconf.Fields(outer{})[2].Doc, "the doc shows the default tag verbatim")
}

func TestDefaultsAndFillZero(t *testing.T) {
	var d inner
	envconf.Defaults(&d)
	require.Equal(t, inner{Batch: 50, Code: "AB", Tune: 7}, d)

	z := inner{Batch: 3}
	envconf.FillZero(&z)
	require.Equal(t, inner{Batch: 3, Code: "AB", Tune: 7}, z, "set fields are kept")

	require.Panics(t, func() {
		envconf.Defaults(&struct {
			N int `default:"x"`
		}{})
	}, "a default that does not parse is a programming error")
}

func TestProblems(t *testing.T) {
	t.Parallel()
	var p envconf.Problems
	require.NoError(t, p.Err())
	p.Positive("A", 0)
	p.Positive("B", time.Second)
	p.Between("C", 0, 1, 10)
	p.Between("D", 5, 1, 10)
	p.Add("E", "must be %s", "set")
	p.Join(nil)
	require.EqualError(t, p.Err(), "A: must be a positive duration, got 0s\nC: must be between 1 and 10, got 0\nE: must be set")
}

func TestValues(t *testing.T) {
	t.Parallel()
	o := outer{Wait: 1500 * time.Millisecond, On: true, List: []string{"A", "B"}, Conns: 8, Inner: inner{Batch: 50, Code: "AB", Tune: 7}}
	require.Equal(t, map[string]string{
		"T_WAIT": "1.5s", "T_ON": "true", "T_LIST": "A,B", "T_EMPTY": "", "T_CONNS": "8",
		"T_BATCH": "50", "T_CODE": "AB", "T_LEVEL": "",
	}, envconf.Values(&o), "variables only (no tuning values), effective values as text")
}
