package clip_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/clip"
)

func TestString(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"", 5, ""},
		{"abc", 3, "abc"},
		{"abcd", 3, "ab…"},
		{"跑道关闭", 4, "跑道关闭"},
		{"跑道关闭维修", 4, "跑道关…"},
		{"abc", 0, ""},
		{"abc", 1, "…"},
		{"a\xffb", 5, "a\uFFFDb"},
	} {
		require.Equal(t, c.want, clip.String(c.in, c.n), "String(%q, %d)", c.in, c.n)
	}
}

// Whatever the input and the bound, the result is valid UTF-8 of at most n characters.
func FuzzString(f *testing.F) {
	f.Add("skipped by alice: 航班取消", 10)
	f.Add(strings.Repeat("é", 100), 7)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n > 10000 || n < -1 {
			return
		}
		got := clip.String(s, n)
		require.True(t, utf8.ValidString(got))
		require.LessOrEqual(t, utf8.RuneCountInString(got), max(n, 0))
	})
}
