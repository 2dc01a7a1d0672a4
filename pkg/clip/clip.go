// Package clip bounds free text (error messages, operator notes, log fields) for columns and
// lines of limited size without ever cutting inside a character: PostgreSQL refuses a string
// that is not valid UTF-8, so a byte cut in the middle of a multi-byte character would lose the
// write it was meant to explain.
package clip

import (
	"strings"
	"unicode/utf8"
)

// Ellipsis ends a clipped string.
const Ellipsis = "…"

// String returns s with at most n characters: s itself (made valid UTF-8) when it fits, else its
// first n-1 characters followed by Ellipsis. n below 1 gives "".
func String(s string, n int) string {
	if n < 1 {
		return ""
	}
	s = strings.ToValidUTF8(s, string(utf8.RuneError))
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	kept := 0
	for i := range s {
		if kept == n-1 {
			return s[:i] + Ellipsis
		}
		kept++
	}
	return s
}
