package simulate

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/sis"
)

var smallFlights = 50

func smallDay(seed uint64) Day {
	return Generate(Config{Seed: seed, Flights: smallFlights, Additions: 3, BadShare: 0.08})
}

func TestGenerateIsDeterministic(t *testing.T) {
	t.Parallel()
	a, b := smallDay(7), smallDay(7)
	require.Len(t, b.Messages, len(a.Messages))
	for i := range a.Messages {
		require.Equal(t, a.Messages[i], b.Messages[i], "message %d", i)
	}
	require.Equal(t, a.Expected, b.Expected)

	c := smallDay(8)
	require.NotEqual(t, a.Messages[len(a.Messages)/2].Raw, c.Messages[len(c.Messages)/2].Raw)
}

func TestSEQNUniqueAndIncreasingExceptDuplicates(t *testing.T) {
	t.Parallel()
	d := smallDay(3)
	last := int64(0)
	for _, m := range d.Messages {
		require.False(t, m.At.Before(d.Messages[max(m.Index-1, 0)].At), "send times are ordered")
		if m.Outcome == OutcomeDuplicate {
			orig := d.Messages[m.DuplicateOf]
			require.Less(t, orig.Index, m.Index)
			require.Equal(t, orig.SEQN, m.SEQN)
			require.Equal(t, orig.Raw, m.Raw)
			continue
		}
		require.Greater(t, m.SEQN, last)
		last = m.SEQN
	}
}

// TestRoundTrip decodes every message with pkg/sis and compares it with what
// the simulator recorded.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	d := smallDay(11)
	opt := sis.Options{Location: d.Config.Location}
	for _, m := range d.Messages {
		msg, err := sis.Decode(m.Raw, opt)
		switch m.Outcome {
		case OutcomeMalformed, OutcomeProtocol:
			var se *sis.Error
			require.True(t, errors.As(err, &se), "message %d (%s) must fail: %s", m.Index, m.Bad, m.Raw)
			want := sis.ClassMalformed
			if m.Outcome == OutcomeProtocol {
				want = sis.ClassProtocol
			}
			require.Equal(t, want, se.Class, "message %d (%s): %v", m.Index, m.Bad, err)
			continue
		}
		require.NoError(t, err, "message %d: %s", m.Index, m.Raw)
		require.Empty(t, msg.Warnings, "message %d", m.Index)
		require.Equal(t, m.SNDR, msg.Meta.SNDR)
		require.Equal(t, m.Type, msg.Meta.TYPE)
		require.Equal(t, m.Subtype, msg.Meta.STYP)
		require.Equal(t, m.SEQN, mustInt(t, msg.Meta.SEQN))
		if m.Outcome == OutcomeDuplicate { // a resend: same content, later DATE_RECEIVED
			require.True(t, d.Messages[m.DuplicateOf].At.Equal(msg.Meta.DTTM), "message %d DTTM", m.Index)
			continue
		}
		require.True(t, m.At.Equal(msg.Meta.DTTM), "message %d DTTM", m.Index)
		switch {
		case m.Type == "FLOP":
			want := sis.KindFlightUpdate
			if m.Subtype == "FDEL" {
				want = sis.KindFlightDelete
			}
			require.Equal(t, want, msg.Kind)
			require.NotNil(t, m.Change)
			require.Equal(t, m.FLID, msg.Flop.FLID)
			got := fromRecord(msg.Flop.Payload)
			got.FLID = msg.Flop.FLID
			require.Equal(t, m.Change.Flight, got, "message %d: %s", m.Index, m.Raw)
			require.Equal(t, m.Change.ClearDelays, msg.Flop.Payload.DELY.ClearAll, "message %d", m.Index)
		case m.Type == "SCHD":
			want := sis.KindScheduleSnapshot
			if m.Subtype == "ADFT" {
				want = sis.KindScheduleAdd
			}
			require.Equal(t, want, msg.Kind)
			require.Len(t, msg.Schedule.Records, len(m.Records))
			for i, r := range msg.Schedule.Records {
				got := fromRecord(r)
				got.State = StateActive
				require.Equal(t, m.Records[i], got, "message %d record %d", m.Index, i)
			}
		default:
			require.Equal(t, sis.KindRefList, msg.Kind)
			var keys []string
			for _, r := range msg.RefList.Records {
				keys = append(keys, r.Key)
			}
			require.ElementsMatch(t, m.RefKeys, keys)
			require.Equal(t, len(keys), msg.RefList.DeclaredRecs)
		}
	}
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	var v int64
	for _, c := range []byte(s) {
		require.True(t, c >= '0' && c <= '9', s)
		v = v*10 + int64(c-'0')
	}
	return v
}

// TestExpectedIsTheFoldOfTheMessages replays the recorded intents in send order
// and requires the result to equal Day.Expected (no aliasing between messages
// and the model, nothing applied that was not sent).
func TestExpectedIsTheFoldOfTheMessages(t *testing.T) {
	t.Parallel()
	d := smallDay(5)
	flights := map[int64]*Flight{}
	for _, m := range d.Messages {
		if m.Outcome != OutcomeApplied {
			continue
		}
		for _, r := range m.Records {
			f := r.clone()
			flights[f.FLID] = &f
		}
		if m.Change != nil {
			f := flights[m.FLID]
			require.NotNil(t, f, "FLOP %d before its flight", m.Index)
			require.Equal(t, StateActive, f.State, "FLOP %d after FDEL", m.Index)
			f.apply(*m.Change)
		}
	}
	require.Len(t, d.Expected.Flights, len(flights))
	for _, want := range d.Expected.Flights {
		got := flights[want.FLID]
		require.NotNil(t, got)
		want.CodeShares = nil
		require.Equal(t, want, *got)
	}
}

// TestDayCoverage checks that a default-size day exercises every message kind
// the simulator knows and keeps its invariants.
func TestDayCoverage(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.Seed = 1
	d := Generate(cfg)
	seen := map[string]int{}
	bad := map[string]int{}
	for _, m := range d.Messages {
		seen[m.Type+"/"+m.Subtype]++
		if m.Bad != "" {
			bad[m.Bad]++
		}
	}
	for _, k := range []string{"AIRL/DNLD", "AIRC/DNLD", "ARPT/DNLD", "SLST/DNLD", "GLST/DNLD", "DLYL/DNLD",
		"BLST/DNLD", "CLST/DNLD", "ORGN/DNLD", "SCHD/DNLD", "SCHD/ADFT",
		"FLOP/ESTT", "FLOP/ACTT", "FLOP/CNCL", "FLOP/BOTM", "FLOP/LACL", "FLOP/EOBT", "FLOP/TOBT",
		"FLOP/STND", "FLOP/FDIV", "FLOP/FRET", "FLOP/PSDT", "FLOP/GTDT", "FLOP/CKDT", "FLOP/CLDT",
		"FLOP/CHDT", "FLOP/CHOT", "FLOP/ABTM", "FLOP/DELY", "FLOP/ERUT", "FLOP/FDEL"} {
		require.Positive(t, seen[k], k)
	}
	require.Len(t, bad, 10, "every kind of bad message: %v", bad)
	c := d.Counts()
	for _, o := range Outcomes {
		require.Positive(t, c[o], o)
	}
	schd := 0
	for _, m := range d.Messages {
		if m.Type == "SCHD" && m.Subtype == "DNLD" {
			schd = len(m.Records)
		}
	}
	require.Equal(t, 1200, schd)
	require.Len(t, d.Expected.Flights, 1200+cfg.Additions)
	require.Positive(t, d.Expected.Count(StateDeleted))

	var pairs, children, cancelled, uncancelled, diverted, masters int
	for _, f := range d.Expected.Flights {
		if f.LinkedFLID != 0 {
			partner, ok := d.Expected.Flight(f.LinkedFLID)
			require.True(t, ok)
			require.Equal(t, f.FLID, partner.LinkedFLID)
			require.Equal(t, f.FlightNumber, partner.LinkedFlight)
			pairs++
		}
		if f.MasterFLID != 0 {
			children++
		}
		if len(f.CodeShares) > 0 {
			masters++
		}
		if !f.Cancelled.IsZero() {
			cancelled++
		}
		if f.Diversion != nil {
			diverted++
		}
		require.Equal(t, d.Config.Date.Format("060102"), f.Scheduled.Format("060102"), "operation day of %d", f.FLID)
	}
	for _, m := range d.Messages {
		if m.Change != nil && m.Subtype == "CNCL" && m.Change.Flight.Cancelled.IsZero() {
			uncancelled++
		}
	}
	require.Positive(t, pairs)
	require.Positive(t, children)
	require.Positive(t, masters)
	require.Positive(t, cancelled)
	require.Positive(t, uncancelled)
	require.Positive(t, diverted)
	require.Less(t, len(d.Messages[9].Raw), 16<<20)
	require.True(t, bytes.HasPrefix(d.Messages[0].Raw, []byte(`<?xml version="1.0" encoding="UTF-8"?>`)))
}
