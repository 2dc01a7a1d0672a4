package flight

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The integer wall clock and instant writers give what time.Time's formatting and Instant give,
// over every zone change of zones with summer time, half-hour changes, a skipped day (Apia
// 2011), frequent changes (Casablanca) and none, from 1800 to 2200.
func TestWallClockMatchesTime(t *testing.T) {
	t.Parallel()
	names := []string{"UTC", "Asia/Shanghai", "Europe/Berlin", "Europe/London", "America/Sao_Paulo", "America/St_Johns",
		"Australia/Lord_Howe", "Pacific/Apia", "Africa/Casablanca", "Asia/Kolkata", "America/New_York", "Pacific/Kiritimati"}
	rng := rand.New(rand.NewPCG(1, 2))
	from, to := time.Date(1800, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro(), time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	check := func(loc *time.Location, us int64) {
		w := time.UnixMicro(us).UTC()
		require.Equal(t, w.Format(TimeLayout), string(appendWall(nil, us)), "%d", us)
		want := "null"
		if inst, ok := Instant(w, loc); ok {
			want = `"` + inst.Format(InstantLayout) + `"`
		}
		v := Value{Valid: true, I: us}
		require.Equal(t, want, string(v.appendInstant(nil, loc)), "%s in %s", w, loc)
		// A member copies the instant's wall clock from the value written before it.
		col := Column{Name: "sodt", Kind: KindTime}
		require.Equal(t, `"sodt":"`+w.Format(TimeLayout)+`","sodt_instant":`+want, string(appendMember(nil, col, v, loc)), "%s in %s", w, loc)
	}
	for _, name := range names {
		loc, err := time.LoadLocation(name)
		require.NoError(t, err)
		for range 20000 {
			check(loc, from+rng.Int64N(to-from))
		}
		// Around every change: the minutes before and after it, on both sides' wall clocks.
		for _, p := range periodsOf(loc) {
			if p.start == -1<<63 {
				continue
			}
			for d := int64(-26 * 3600); d <= 26*3600; d += 900 {
				check(loc, p.start+d*1e6+p.off*1e6)
				check(loc, p.start+d*1e6+p.off*1e6+59*1e6+rng.Int64N(1e6))
			}
		}
	}
	for _, us := range []int64{0, -1, 1, -62135596800e6, 253402300799e6, 253402300800e6, -62135596801e6} {
		require.Equal(t, time.UnixMicro(us).UTC().Format(TimeLayout), string(appendWall(nil, us)), "%d", us)
		for _, name := range names {
			loc, err := time.LoadLocation(name)
			require.NoError(t, err)
			check(loc, us)
		}
	}
	require.Equal(t, `"sodt":null,"sodt_instant":null`, string(appendMember(nil, Column{Name: "sodt", Kind: KindTime}, Null, time.UTC)))
}
