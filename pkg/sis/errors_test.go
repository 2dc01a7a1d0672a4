package sis_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/sis"
)

// ValuePattern takes out exactly the offending value of a decode error's text, whatever the
// value holds (quotes, backslashes, a closing parenthesis, non-ASCII), so that two messages
// failing the same way read the same.
func TestValuePatternTakesOutTheValue(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(sis.ValuePattern)
	var texts []string
	for _, v := range []string{"TOO", `a "quoted" \ value)`, "中文", ""} {
		raw := `<MSG><META><SNDR>AODB</SNDR><TYPE>FLOP</TYPE><STYP>FDIV</STYP><SEQN>1</SEQN><DTTM>20260315100000</DTTM></META>` +
			`<FLOP><FLID>1</FLID><FDIV><DDES>PEK</DDES><DDIR>` + strings.NewReplacer("&", "&amp;", "<", "&lt;").Replace(v) + `</DDIR></FDIV></FLOP></MSG>`
		_, err := sis.Decode([]byte(raw), sis.Options{})
		var se *sis.Error
		require.True(t, errors.As(err, &se), "%q: %v", v, err)
		require.Len(t, re.FindAllString(se.Error(), -1), 1, se.Error())
		texts = append(texts, re.ReplaceAllString(se.Error(), ""))
	}
	for _, s := range texts {
		require.Equal(t, texts[0], s)
		require.NotContains(t, s, "value")
	}
}
