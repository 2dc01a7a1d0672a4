package verify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"

	"github.com/msgx/msgx/pkg/dev/stack"
	"github.com/msgx/msgx/pkg/flight"
)

// jsonDiff compares two JSON objects and lists the keys whose values differ (want = PostgreSQL,
// got = Kafka).
func jsonDiff(want, got []byte) []string {
	decode := func(b []byte) (map[string]any, error) {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var m map[string]any
		return m, d.Decode(&m)
	}
	w, err := decode(want)
	if err != nil {
		return []string{fmt.Sprintf("state JSON does not decode: %v", err)}
	}
	g, err := decode(got)
	if err != nil {
		return []string{fmt.Sprintf("record value does not decode: %v: %s", err, got)}
	}
	var out []string
	for k, wv := range w {
		gv, ok := g[k]
		if !ok {
			out = append(out, fmt.Sprintf("key %q: want %s, missing on Kafka", k, compact(wv)))
		} else if !reflect.DeepEqual(wv, gv) {
			out = append(out, fmt.Sprintf("key %q: want %s, got %s", k, compact(wv), compact(gv)))
		}
	}
	for k, gv := range g {
		if _, ok := w[k]; !ok {
			out = append(out, fmt.Sprintf("key %q: not in the state JSON, got %s", k, compact(gv)))
		}
	}
	return out
}

func compact(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// ChangesProblems checks msgx.flight.changes against the stored versions: per FLID, after
// dropping records whose (flid, state_version) was already seen, the versions are 1, 2, … up to
// the stored state_version, in that order.
func ChangesProblems(recs []stack.Record, states map[int64]*flight.State) []string {
	seen := map[int64]map[int64]bool{}
	order := map[int64][]int64{}
	for _, r := range recs {
		if r.Topic != TopicChanges {
			continue
		}
		flid, err := strconv.ParseInt(r.FLID, 10, 64)
		if err != nil {
			continue
		}
		if seen[flid] == nil {
			seen[flid] = map[int64]bool{}
		}
		if seen[flid][r.StateVersion] {
			continue
		}
		seen[flid][r.StateVersion] = true
		order[flid] = append(order[flid], r.StateVersion)
	}
	var bad []string
	for flid, s := range states {
		vs := order[flid]
		for i, v := range vs {
			if v != int64(i+1) {
				bad = append(bad, fmt.Sprintf("FLID %d: versions on msgx.flight.changes %v, want 1..%d in order", flid, vs, s.Version))
				break
			}
		}
		if int64(len(vs)) != s.Version && (len(vs) == 0 || vs[len(vs)-1] == int64(len(vs))) {
			bad = append(bad, fmt.Sprintf("FLID %d: %d versions on msgx.flight.changes, stored state_version %d", flid, len(vs), s.Version))
		}
	}
	for flid := range order {
		if _, ok := states[flid]; !ok {
			bad = append(bad, fmt.Sprintf("FLID %d: on msgx.flight.changes but not stored", flid))
		}
	}
	sort.Strings(bad)
	return bad
}
