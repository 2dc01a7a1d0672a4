package main

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type outputInner struct {
	IDs []int64    `json:"ids"`
	At  *time.Time `json:"at"`
}

type outputDoc struct {
	List   []string          `json:"list"`
	Counts map[string]int64  `json:"counts"`
	Inner  outputInner       `json:"inner"`
	Ptr    *outputInner      `json:"ptr"`
	Any    map[string]any    `json:"any"`
	Raw    json.RawMessage   `json:"raw"`
	Zero   time.Time         `json:"zero"`
	Bytes  []byte            `json:"bytes"`
	hidden []int             // unexported: copied, not written
	Nested [][]int           `json:"nested"`
	ByKey  map[string][]int  `json:"by_key"`
	Marsh  json.Marshaler    `json:"marsh"`
	Items  []outputInner     `json:"items"`
	Times  map[string]string `json:"times"`
}

// Every --json writes [] for an empty list and {} for an empty map, at any depth; every time in
// the airport's zone, to the microsecond; the zero time, raw JSON and bytes as they are.
func TestWriteJSONEmptyListsAndTimes(t *testing.T) {
	t.Parallel()
	loc, err := time.LoadLocation("Asia/Shanghai")
	require.NoError(t, err)
	at := time.Date(2026, 12, 2, 10, 41, 7, 123456789, time.UTC)
	doc := outputDoc{Ptr: &outputInner{At: &at}, Any: map[string]any{"ids": []int64(nil), "at": at, "none": nil},
		Nested: [][]int{nil}, ByKey: map[string][]int{"a": nil}, Items: []outputInner{{}}}
	var out bytes.Buffer
	require.NoError(t, writeJSON(&out, loc, doc))
	var got map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &got), out.String())
	require.Equal(t, []any{}, got["list"])
	require.Equal(t, map[string]any{}, got["counts"])
	require.Equal(t, map[string]any{"ids": []any{}, "at": nil}, got["inner"])
	require.Equal(t, map[string]any{"ids": []any{}, "at": "2026-12-02T18:41:07.123456+08:00"}, got["ptr"])
	require.Equal(t, map[string]any{"ids": []any{}, "at": "2026-12-02T18:41:07.123456+08:00", "none": nil}, got["any"])
	require.Nil(t, got["raw"])
	require.Equal(t, "0001-01-01T00:00:00Z", got["zero"])
	require.Nil(t, got["bytes"])
	require.Equal(t, []any{[]any{}}, got["nested"])
	require.Equal(t, map[string]any{"a": []any{}}, got["by_key"])
	require.Equal(t, []any{map[string]any{"ids": []any{}, "at": nil}}, got["items"])
	require.Equal(t, "2026-12-02T18:41:07.123456+08:00", stamp(loc, at), "text as JSON")
	require.Nil(t, doc.List, "the value given is not changed")

	out.Reset()
	require.NoError(t, writeJSON(&out, loc, []int(nil)))
	require.Equal(t, "[]\n", out.String())
}

// --json (the flag every command has) may come before the command; other flags there are a
// usage error, and "--" still ends the flags.
func TestGlobalFlagsBeforeTheCommand(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	for _, c := range []struct {
		args     []string
		name     string
		cmdWords []string
	}{
		{[]string{"--json", "status"}, "status", []string{"--json"}},
		{[]string{"-json=false", "dlq", "list", "--limit", "3"}, "dlq", []string{"list", "--limit", "3", "-json=false"}},
		{[]string{"--json", "show", "--", "-5"}, "show", []string{"--json", "--", "-5"}},
		{[]string{"show", "38", "--json"}, "show", []string{"38", "--json"}},
	} {
		name, args, err := splitCommand(c.args, &out)
		require.NoError(t, err, "%v", c.args)
		require.Equal(t, c.name, name)
		require.Equal(t, c.cmdWords, args, "%v", c.args)
	}
	_, _, err := splitCommand([]string{"--limit", "3", "dlq"}, &out)
	require.ErrorContains(t, err, "flag provided but not defined: -limit")
	_, _, err = splitCommand([]string{"--json"}, &out)
	require.ErrorContains(t, err, "no command")
	require.Empty(t, out.String())
}
