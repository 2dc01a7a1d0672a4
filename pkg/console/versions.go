package console

import (
	"encoding/json"
	"sort"
	"strconv"
	"time"
)

// field is one value of a flight's state, shown as the timeline shows a value (valueLines).
type field struct {
	Name  string
	Lines []string
}

// fields lists a state's non-empty fields in name order.
func fields(doc map[string]any) []field {
	var out []field
	for k, v := range doc {
		if v == nil || v == "" {
			continue
		}
		out = append(out, field{k, valueLines(v)})
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

// version is one event of a flight: the version it published, the message that caused it, its
// payload, and Kafka's answer.
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
}
