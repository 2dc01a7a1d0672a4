package console

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"time"
)

// field is one value of a flight's state.
type field struct {
	Name  string
	Value string
}

// fields lists a state's non-empty fields in name order.
func fields(doc map[string]any) []field {
	var out []field
	for k, v := range doc {
		if v == nil || v == "" {
			continue
		}
		out = append(out, field{k, str(v)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// str shows a JSON value: a string as itself, a number as written, anything else as JSON.
func str(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case json.Number:
		return x.String()
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

// version is one event of a flight: the version it published, the message that caused it, the
// fields that changed from the previous version of the same target, and Kafka's answer.
type version struct {
	EventID   int64
	Target    string
	Type      string
	Version   int64
	MsgID     *int64
	Payload   []byte
	Status    string
	Attempts  int
	CreatedAt time.Time
	SentAt    *time.Time
	LastError string
	MsgType   string
	MsgStyp   string
	Changes   []change `db:"-"`
}

type change struct{ Field, From, To string }

// diffVersions fills each version's changes against the previous version of its target
// (versions arrive newest first).
func diffVersions(vs []version) {
	for i := range vs {
		var prev map[string]any
		for j := i + 1; j < len(vs); j++ {
			if vs[j].Target == vs[i].Target {
				_ = json.Unmarshal(vs[j].Payload, &prev)
				break
			}
		}
		var cur map[string]any
		_ = json.Unmarshal(vs[i].Payload, &cur)
		vs[i].Changes = diff(flatten("", prev), flatten("", cur))
	}
}

func flatten(prefix string, v any) map[string]string {
	out := map[string]string{}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			for fk, fv := range flatten(prefix+k+".", e) {
				out[fk] = fv
			}
		}
	case nil:
		if prefix != "" {
			out[strings.TrimSuffix(prefix, ".")] = ""
		}
	default:
		out[strings.TrimSuffix(prefix, ".")] = str(x)
	}
	return out
}

func diff(a, b map[string]string) []change {
	var out []change
	for k, v := range b {
		if a[k] != v {
			out = append(out, change{k, a[k], v})
		}
	}
	for k, v := range a {
		if _, ok := b[k]; !ok && v != "" {
			out = append(out, change{k, v, ""})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Field < out[j].Field })
	return out
}
