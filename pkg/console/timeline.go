package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
)

// timelineRow is one version of a flight: the message behind it, every changed field before and
// after (collections as lists), and Kafka's acknowledgement of each target's event.
type timelineRow struct {
	Version          int64
	Event            string // UPSERT or TOMBSTONE
	MsgID            *int64
	MsgType, MsgStyp string
	At               time.Time
	Changes          []fieldChange
	Acks             []version
}

// fieldChange is one field of a version: its values before and after, one line per item.
type fieldChange struct {
	Field, Label string
	From, To     []string
}

// labels are the readable names of the fields an operator reads most; others keep their code.
var labels = map[string]string{
	"sodt": "Scheduled", "estt": "Estimated", "actt": "Actual", "eobt": "Estimated off-block", "tobt": "Target off-block",
	"ctot": "Calculated take-off", "stnd": "Stand", "psdt": "Stands", "gtdt": "Gates", "cldt": "Belts", "ckdt": "Check-in",
	"ftss": "Status", "reno": "Registration", "acft": "Aircraft", "trml": "Terminal", "runw": "Runway", "remc": "Remark",
	"rout": "Route", "erut": "Route (extended)", "cncl": "Cancelled", "botm": "On block", "lacl": "Last call", "flno": "Flight",
	"alcd": "Airline", "mvin": "Arrival/departure", "flty": "Flight type", "maid": "Code-share master", "fdiv_ddes": "Diverted to",
}

func label(code string) string {
	if l, ok := labels[code]; ok {
		return l
	}
	return code
}

// timeline makes one row per version from a flight's events (newest first): the changes are
// those the KAFKA:msg event published (its "changed" object: old and new of each field).
func timeline(vs []version) []timelineRow {
	var rows []timelineRow
	for _, v := range vs {
		if n := len(rows); n == 0 || rows[n-1].Version != v.Version {
			rows = append(rows, timelineRow{Version: v.Version, Event: v.Type, MsgID: v.MsgID, MsgType: v.MsgType, MsgStyp: v.MsgStyp, At: v.CreatedAt})
		}
		row := &rows[len(rows)-1]
		row.Acks = append(row.Acks, v)
		if v.Target == "KAFKA:msg" {
			row.Changes = envelopeChanges(v.Payload)
		}
	}
	return rows
}

// envelopeChanges reads the "changed" object of a change record; a field the state leaves out
// is not shown as cleared: only what the record names changed.
func envelopeChanges(payload []byte) []fieldChange {
	var env struct {
		Changed map[string]struct {
			Old json.RawMessage `json:"old"`
			New json.RawMessage `json:"new"`
		} `json:"changed"`
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	if dec.Decode(&env) != nil {
		return nil
	}
	out := make([]fieldChange, 0, len(env.Changed))
	for f, c := range env.Changed {
		if f == "prov" {
			continue // provenance bookkeeping, not a business field
		}
		out = append(out, fieldChange{Field: f, Label: label(f), From: lines(c.Old), To: lines(c.New)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Field < out[j].Field })
	return out
}

// lines shows a JSON value as lines (valueLines).
func lines(raw json.RawMessage) []string {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if len(raw) == 0 || dec.Decode(&v) != nil {
		return nil
	}
	return valueLines(v)
}

// valueLines is how the console shows a stored value (the timeline, the current state, the
// card): a scalar as one line, a list one line per item, an object as its fields; null as none.
func valueLines(v any) []string {
	if v == nil {
		return nil
	}
	if list, ok := v.([]any); ok {
		out := make([]string, 0, len(list))
		for _, e := range list {
			out = append(out, item(e))
		}
		return out
	}
	return []string{item(v)}
}

// item shows one value: a wall-clock time as "YYYY-MM-DD hh:mm", an object as "key value"
// pairs in key order (empty ones left out).
func item(v any) string {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k, e := range x {
			if e != nil && e != "" {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s %s", k, item(x[k])))
		}
		return strings.Join(parts, ", ")
	case string:
		return wallTime(x)
	}
	return str(v)
}

// wallRE is a timestamp-without-zone value as the flight state writes it (flight.TimeLayout).
var wallRE = regexp.MustCompile(`^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})(:\d{2})$`)

// wallTime shows a timestamp-without-zone value (airport time) as "YYYY-MM-DD hh:mm", its
// seconds only when they are not zero; any other text (a stand "T12", "ACTIVE") as itself.
func wallTime(s string) string {
	m := wallRE.FindStringSubmatch(s)
	switch {
	case m == nil:
		return s
	case m[3] == ":00":
		return m[1] + " " + m[2]
	}
	return m[1] + " " + m[2] + m[3]
}

// summary is a flight's card: its times, stand, gates, belts and status, in airport time.
type summary struct {
	Scheduled, Estimated, Actual, Stand, Status, Registration string
	Gates, Belts                                              []string
}

func summarize(doc map[string]any) summary {
	get := func(k string) string {
		if v := doc[k]; v != nil {
			return item(v)
		}
		return ""
	}
	s := summary{Scheduled: get("sodt"), Estimated: get("estt"), Actual: get("actt"), Stand: get("stnd"),
		Status: get("ftss"), Registration: get("reno")}
	s.Gates = collectionValues(doc["gtdt"], "gate")
	s.Belts = collectionValues(doc["cldt"], "belt")
	return s
}

// collectionValues are the key values of a collection's rows (the gate of each gate row).
func collectionValues(v any, key string) []string {
	list, _ := v.([]any)
	var out []string
	for _, e := range list {
		if m, ok := e.(map[string]any); ok && m[key] != nil {
			out = append(out, item(m[key]))
		}
	}
	return out
}
