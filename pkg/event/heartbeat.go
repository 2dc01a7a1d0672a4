package event

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Beat is what a heartbeat record says (docs/events.md, "Heartbeat"): when the dispatcher
// leader of epoch Epoch wrote it, its period, ingest's watermark, and per event topic the newest
// event id sent and the oldest one not sent yet.
type Beat struct {
	Time      time.Time
	Period    time.Duration
	Epoch     int64
	Watermark int64 // ingest's W: the mailbox ids up to it are discovered (0: none yet)
	Changes   BeatTopic
	State     BeatTopic
}

// BeatTopic is one event topic's progress in a heartbeat: the highest event id the leader's
// term has had acknowledged on it, and the oldest event not sent yet (PENDING or DEAD); 0: none.
type BeatTopic struct {
	Topic        string
	LastSent     int64
	OldestUnsent int64
}

// beatValue is a heartbeat's JSON value; the ids are null when there is none.
type beatValue struct {
	Time          string    `json:"time"`
	PeriodSeconds float64   `json:"period_seconds"`
	Epoch         int64     `json:"epoch"`
	Watermark     int64     `json:"watermark"`
	Changes       beatTopic `json:"changes"`
	State         beatTopic `json:"state"`
}

type beatTopic struct {
	Topic        string `json:"topic"`
	LastSent     *int64 `json:"last_sent_event_id"`
	OldestUnsent *int64 `json:"oldest_unsent_event_id"`
}

func orNull(id int64) *int64 {
	if id == 0 {
		return nil
	}
	return &id
}

func (t BeatTopic) value() beatTopic {
	return beatTopic{Topic: t.Topic, LastSent: orNull(t.LastSent), OldestUnsent: orNull(t.OldestUnsent)}
}

func (t beatTopic) beat() BeatTopic {
	b := BeatTopic{Topic: t.Topic}
	if t.LastSent != nil {
		b.LastSent = *t.LastSent
	}
	if t.OldestUnsent != nil {
		b.OldestUnsent = *t.OldestUnsent
	}
	return b
}

// HeartbeatRecord is the Kafka record of b: key the deployment's name (key, the transactional
// id prefix: one partition's order per deployment), the schema_version and epoch headers, and
// the JSON value.
func HeartbeatRecord(key string, b Beat) KafkaRecord {
	v, err := json.Marshal(beatValue{
		Time: b.Time.UTC().Format(time.RFC3339Nano), PeriodSeconds: b.Period.Seconds(), Epoch: b.Epoch,
		Watermark: b.Watermark, Changes: b.Changes.value(), State: b.State.value(),
	})
	if err != nil {
		panic(err) // strings and numbers always marshal
	}
	return KafkaRecord{Key: key, Value: v, Headers: []Header{
		{Key: HeaderSchemaVersion, Value: SchemaVersion},
		{Key: HeaderEpoch, Value: strconv.FormatInt(b.Epoch, 10)},
	}}
}

// ParseHeartbeat reads back a record HeartbeatRecord wrote (value and headers).
func ParseHeartbeat[H ~struct{ Key, Value string }](value []byte, headers []H) (Beat, error) {
	version := ""
	for _, h := range headers {
		if x := Header(h); x.Key == HeaderSchemaVersion {
			version = x.Value
		}
	}
	if version != SchemaVersion {
		return Beat{}, fmt.Errorf("heartbeat: schema_version %q: %w", version, ErrSchemaVersion)
	}
	var v beatValue
	if err := json.Unmarshal(value, &v); err != nil {
		return Beat{}, fmt.Errorf("heartbeat: %w", err)
	}
	at, err := time.Parse(time.RFC3339Nano, v.Time)
	if err != nil {
		return Beat{}, fmt.Errorf("heartbeat: time %q: %w", v.Time, errNotTime)
	}
	if v.Epoch <= 0 || v.PeriodSeconds <= 0 {
		return Beat{}, errors.New("heartbeat: epoch and period_seconds must be positive")
	}
	return Beat{Time: at, Period: time.Duration(v.PeriodSeconds * float64(time.Second)), Epoch: v.Epoch, Watermark: v.Watermark,
		Changes: v.Changes.beat(), State: v.State.beat()}, nil
}
