package procstate_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/procstate"
	"github.com/msgx/msgx/pkg/request"
)

// Every SKIPPED reason the processor writes is built by one constructor and read back by
// ParseSkip: constructor → text → parser gives the same reason, and the text is the one stored.
func TestSkipReasonsRoundTrip(t *testing.T) {
	t.Parallel()
	cases := []struct {
		skip procstate.Skip
		text string
	}{
		{procstate.Duplicate(1, false), "duplicate-of:1"},
		{procstate.Duplicate(4711, true), "duplicate-of:4711 content-differs"},
		{procstate.Ignored("LDM"), "ignored:LDM"},
		{procstate.NoMatch(), "no-match:FLID"},
		{procstate.NoMatchDeleted(), "no-match:deleted"},
		{procstate.StaleLate([]string{"estt"}), "stale:late: estt"},
		{procstate.StaleLate([]string{"7001 estt", "7002 stnd"}), "stale:late: 7001 estt, 7002 stnd"},
		{procstate.NoOpenRequest(""), "no-open-request"},
		{procstate.NoOpenRequest(string(request.DTTMBeforeSent)), "no-open-request:before-sent"},
		{procstate.NoOpenRequest(string(request.OutOfRequestDays)), "no-open-request:other-days"},
	}
	for _, c := range cases {
		require.Equal(t, c.text, c.skip.String())
		got, err := procstate.ParseSkip(c.text)
		require.NoError(t, err, c.text)
		require.Equal(t, c.skip, got, c.text)
		require.Equal(t, c.skip.Kind == procstate.SkipNoMatch, procstate.IsNoMatch(c.text), c.text)
	}
}

// Texts the processor never writes are no SKIPPED reason: a no-match reason does not carry the
// FLID (the message's text does).
func TestParseSkipRefusesOtherTexts(t *testing.T) {
	t.Parallel()
	for _, text := range []string{"", "no-match:424242", "no-match:", "no-match", "duplicate-of:", "duplicate-of:x",
		"duplicate-of:0", "ignored:", "stale:late: ", "stale:late", "stale:early: estt", "no-open-request:", "decode REMC: bad"} {
		_, err := procstate.ParseSkip(text)
		require.ErrorIs(t, err, procstate.ErrNotSkip, text)
		require.False(t, procstate.IsNoMatch(text), text)
	}
}

// The note of a message applied in part is found among its notes.
func TestStaleNoteRoundTrip(t *testing.T) {
	t.Parallel()
	units := []string{"7001 estt", "7002 stnd"}
	note := procstate.StaleNote(units)
	require.Equal(t, "stale:late (applied in part; not written): 7001 estt, 7002 stnd", note)
	for _, reason := range []string{note, "RESP answers request 3; " + note} {
		got, ok := procstate.ParseStaleNote(reason)
		require.True(t, ok, reason)
		require.Equal(t, units, got)
	}
	_, ok := procstate.ParseStaleNote("stale:late: estt")
	require.False(t, ok, "a skip is not a note")
}

// Replay takes FAILED and DEAD messages of the replayable classes and the SKIPPED no-match ones,
// nothing else.
func TestReplayable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		status procstate.Status
		class  procstate.Class
		reason string
		ok     bool
	}{
		{procstate.StatusSkipped, "", procstate.NoMatch().String(), true},
		{procstate.StatusSkipped, "", procstate.NoMatchDeleted().String(), true},
		{procstate.StatusSkipped, "", procstate.Duplicate(1, false).String(), false},
		{procstate.StatusSkipped, "", "no-match:424242", false},
		{procstate.StatusDead, procstate.ClassExhausted, "after 5 attempts", true},
		{procstate.StatusFailed, procstate.ClassInfra, "connection refused", true},
		{procstate.StatusDead, procstate.ClassProtocol, "FDIV@DDIR", false},
		{procstate.StatusDead, procstate.ClassMalformed, "MSG/META", false},
		{procstate.StatusSucceeded, "", "", false},
		{procstate.StatusPending, "", "", false},
	} {
		ok, why := procstate.Replayable(c.status, c.class, c.reason)
		require.Equal(t, c.ok, ok, "%s %s %s", c.status, c.class, c.reason)
		require.Equal(t, ok, why == "", why)
	}
	for _, c := range procstate.Classes {
		ok, _ := procstate.Replayable(procstate.StatusDead, c, "")
		require.Equal(t, !c.Permanent(), ok, c)
	}
}
