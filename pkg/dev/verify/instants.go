package verify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/msgx/msgx/pkg/dev/stack"
	"github.com/msgx/msgx/pkg/flight"
)

// InstantCount is what Instants compared: the instants that name their wall time, and the wall
// times of a clock change that have none (null, as docs/events.md says).
type InstantCount struct {
	Named, Unnamed int
}

// Instants checks every record value of recs: each wall-clock time X has X_instant beside it,
// and each X_instant is the instant X names in loc, the airport's zone (RFC 3339 with loc's
// offset at that instant), or null when X is null or names no single instant (a wall time the
// clocks skip or repeat). The expected instant is worked out apart from flight.Instant: from the
// offsets loc has around the wall time.
func Instants(recs []stack.Record, loc *time.Location) ([]string, InstantCount) {
	var bad []string
	var n InstantCount
	for _, r := range recs {
		if r.Value == nil {
			continue
		}
		for _, p := range ValueInstants(r.Value, loc, &n) {
			bad = append(bad, fmt.Sprintf("%s FLID %s v%d: %s", r.Topic, r.FLID, r.StateVersion, p))
		}
	}
	return bad, n
}

// ValueInstants is Instants of one JSON value; it adds what it compared to n.
func ValueInstants(value []byte, loc *time.Location, n *InstantCount) []string {
	d := json.NewDecoder(bytes.NewReader(value))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return []string{"not JSON: " + err.Error()}
	}
	var bad []string
	walkInstants(v, "", loc, n, &bad)
	return bad
}

func walkInstants(v any, path string, loc *time.Location, n *InstantCount, bad *[]string) {
	switch v := v.(type) {
	case []any:
		for i, e := range v {
			walkInstants(e, fmt.Sprintf("%s[%d]", path, i), loc, n, bad)
		}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			at := path + "." + k
			if base, ok := strings.CutSuffix(k, flight.InstantSuffix); ok {
				wall, has := v[base]
				if !has {
					*bad = append(*bad, at+": no "+base+" beside it")
					continue
				}
				if p := checkInstant(wall, v[k], loc, n); p != "" {
					*bad = append(*bad, at+": "+p)
				}
				continue
			}
			if s, ok := v[k].(string); ok && isWall(s) {
				if _, has := v[k+flight.InstantSuffix]; !has {
					*bad = append(*bad, at+": wall-clock time without "+k+flight.InstantSuffix)
				}
			}
			walkInstants(v[k], at, loc, n, bad)
		}
	}
}

func isWall(s string) bool {
	_, err := time.Parse(flight.TimeLayout, s)
	return err == nil
}

// checkInstant compares one instant with the wall time beside it.
func checkInstant(wall, instant any, loc *time.Location, n *InstantCount) string {
	if wall == nil {
		if instant != nil {
			return fmt.Sprintf("%v beside a null time", instant)
		}
		return ""
	}
	ws, ok := wall.(string)
	if !ok || !isWall(ws) {
		return fmt.Sprintf("beside %v, which is no wall-clock time", wall)
	}
	w, _ := time.Parse(flight.TimeLayout, ws)
	want, one := expectedInstant(w, loc)
	if instant == nil {
		if one {
			return fmt.Sprintf("null, but %s names %s", ws, want.Format(time.RFC3339))
		}
		n.Unnamed++
		return ""
	}
	is, ok := instant.(string)
	if !ok {
		return fmt.Sprintf("%v is no string", instant)
	}
	got, err := time.Parse(time.RFC3339, is)
	switch {
	case err != nil:
		return fmt.Sprintf("%q is not RFC 3339", is)
	case !one:
		return fmt.Sprintf("%q, but %s is skipped or repeated by the clock change (null expected)", is, ws)
	case !got.Equal(want):
		return fmt.Sprintf("%q, but %s names %s", is, ws, want.Format(time.RFC3339))
	case offsetOf(got) != offsetOf(got.In(loc)):
		return fmt.Sprintf("%q: not the airport's offset %s", is, got.In(loc).Format("-07:00"))
	}
	n.Named++
	return ""
}

// expectedInstant is the one instant at which loc's clock shows w, found by trying the offsets
// loc has within a day of it; false when there is none or more than one.
func expectedInstant(w time.Time, loc *time.Location) (time.Time, bool) {
	var found []time.Time
	for _, h := range []int{-26, -13, 0, 13, 26} {
		off := offsetOf(w.Add(time.Duration(h) * time.Hour).In(loc))
		c := w.Add(-time.Duration(off) * time.Second)
		if offsetOf(c.In(loc)) == off && !slices.ContainsFunc(found, c.Equal) {
			found = append(found, c)
		}
	}
	if len(found) != 1 {
		return time.Time{}, false
	}
	return found[0], true
}

func offsetOf(t time.Time) int {
	_, off := t.Zone()
	return off
}
