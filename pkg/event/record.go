package event

import (
	"strconv"
	"time"
)

// SchemaVersion is the version of the record contract (docs/events.md), in every record's
// schema_version header.
const SchemaVersion = "1"

// Claimed is an outbox event as the dispatcher claimed it: what its Kafka record is made of.
type Claimed struct {
	EventID      int64
	Target       string // TargetMsg or TargetSchd
	FLID         string
	Type         string // Upsert or Tombstone
	StateVersion int64
	MsgID        int64 // 0: none
	Payload      []byte
	CreatedAt    time.Time // when the change committed (the event_time header)
}

// Header is one Kafka record header.
type Header struct {
	Key   string
	Value string
}

// KafkaRecord is the record of one event, without its topic: key, value (nil: a null value)
// and headers.
type KafkaRecord struct {
	Key     string
	Value   []byte
	Headers []Header
}

// Record is the Kafka record of c sent by the dispatcher of lease epoch: key the FLID, the
// headers of docs/events.md (msg_id only when a message caused the event), and a value only
// for an UPSERT or a KAFKA:msg event; a KAFKA:schd TOMBSTONE is a null value.
func Record(c Claimed, epoch int64) KafkaRecord {
	h := []Header{
		{Key: "schema_version", Value: SchemaVersion},
		{Key: "event_time", Value: c.CreatedAt.UTC().Format(time.RFC3339Nano)},
		{Key: "event_id", Value: strconv.FormatInt(c.EventID, 10)},
		{Key: "flid", Value: c.FLID},
		{Key: "state_version", Value: strconv.FormatInt(c.StateVersion, 10)},
		{Key: "epoch", Value: strconv.FormatInt(epoch, 10)},
		{Key: "event_type", Value: c.Type},
	}
	if c.MsgID != 0 {
		h = append(h, Header{Key: "msg_id", Value: strconv.FormatInt(c.MsgID, 10)})
	}
	var value []byte
	if c.Payload != nil && (c.Type == Upsert || c.Target == TargetMsg) {
		value = c.Payload
	}
	return KafkaRecord{Key: c.FLID, Value: value, Headers: h}
}
