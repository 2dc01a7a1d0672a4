package flight

import (
	"encoding/json"
	"testing"
)

// appendString writes every string exactly as encoding/json.Marshal does: consumers of the
// topics see the same bytes as before it replaced Marshal.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "CA1234", "a\"b\\c", "<tag>&amp;", "\x00\x01\b\f\n\r\t\x1f\x7f", "浦东 T2", "\u2028\u2029",
		"bad \xff\xfe utf8", "\xe6\xb5", "emoji 😀", "\U0010FFFF"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Fatalf("appendString(%q) = %s, encoding/json writes %s", s, got[1:], want)
		}
	})
}
