package event

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SchemaVersion is the version of the record contract (docs/events.md), in every record's
// schema_version header.
const SchemaVersion = "1"

// The record headers of docs/events.md: Record writes them, Parse reads them; no other code
// names them.
const (
	HeaderSchemaVersion = "schema_version"
	HeaderEventTime     = "event_time"
	HeaderEventID       = "event_id"
	HeaderFLID          = "flid"
	HeaderStateVersion  = "state_version"
	HeaderEpoch         = "epoch"
	HeaderEventType     = "event_type"
	HeaderMsgID         = "msg_id" // only when a message caused the event
)

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
		{Key: HeaderSchemaVersion, Value: SchemaVersion},
		{Key: HeaderEventTime, Value: c.CreatedAt.UTC().Format(time.RFC3339Nano)},
		{Key: HeaderEventID, Value: strconv.FormatInt(c.EventID, 10)},
		{Key: HeaderFLID, Value: c.FLID},
		{Key: HeaderStateVersion, Value: strconv.FormatInt(c.StateVersion, 10)},
		{Key: HeaderEpoch, Value: strconv.FormatInt(epoch, 10)},
		{Key: HeaderEventType, Value: c.Type},
	}
	if c.MsgID != 0 {
		h = append(h, Header{Key: HeaderMsgID, Value: strconv.FormatInt(c.MsgID, 10)})
	}
	var value []byte
	if c.Payload != nil && (c.Type == Upsert || c.Target == TargetMsg) {
		value = c.Payload
	}
	return KafkaRecord{Key: c.FLID, Value: value, Headers: h}
}

// Received is a record read back from a topic (Parse): the event it carries, its value as
// Payload, and the epoch of the dispatcher leader that sent it. Target is empty: the record does
// not carry it, its topic does.
type Received struct {
	Claimed
	Epoch int64
}

// ErrSchemaVersion means a record's schema_version is not the one this msgx writes: the
// contract changed in a way its readers do not know.
var ErrSchemaVersion = errors.New("a schema version this msgx does not know")

// HeaderError is a record header that Parse could not read: missing, repeated, or a value
// outside the contract.
type HeaderError struct {
	Header  string // the header's name
	Missing bool   // the record has no such header
	Value   string // the value read, when there is one
	Err     error  // what is wrong with the value
}

func (e *HeaderError) Error() string {
	if e.Missing {
		return fmt.Sprintf("record header %s: missing", e.Header)
	}
	return fmt.Sprintf("record header %s=%q: %v", e.Header, e.Value, e.Err)
}

func (e *HeaderError) Unwrap() error { return e.Err }

// Parse reads back a record that Record wrote: key, value and headers (of any type with Header's
// shape, such as kafka.Header, so the contract does not import the Kafka adapter). It is Record's
// inverse: Parse of Record(c, epoch) gives c but its Target, and epoch, the payload as the record
// carries it. Every header of docs/events.md is required but msg_id; headers it does not know are
// ignored (adding one does not change the schema version). Each header missing, repeated or
// outside the contract is a *HeaderError, all of them joined; an unknown schema version also
// matches ErrSchemaVersion.
func Parse[H ~struct{ Key, Value string }](key string, value []byte, headers []H) (Received, error) {
	p := parser{vals: map[string]string{}}
	for _, h := range headers {
		x := Header(h)
		switch x.Key {
		case HeaderSchemaVersion, HeaderEventTime, HeaderEventID, HeaderFLID, HeaderStateVersion, HeaderEpoch, HeaderEventType, HeaderMsgID:
			if _, ok := p.vals[x.Key]; ok {
				p.fail(x.Key, x.Value, errRepeated)
			}
			p.vals[x.Key] = x.Value
		}
	}
	r := Received{Claimed: Claimed{FLID: key, Payload: value}}
	if v, ok := p.get(HeaderSchemaVersion); ok && v != SchemaVersion {
		p.fail(HeaderSchemaVersion, v, ErrSchemaVersion)
	}
	if v, ok := p.get(HeaderEventTime); ok {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			p.fail(HeaderEventTime, v, errNotTime)
		}
		r.CreatedAt = t
	}
	r.EventID = p.positive(HeaderEventID)
	if p.positive(HeaderFLID) != 0 && p.vals[HeaderFLID] != key {
		p.fail(HeaderFLID, p.vals[HeaderFLID], fmt.Errorf("not the record's key %q", key))
	}
	r.StateVersion = p.positive(HeaderStateVersion)
	r.Epoch = p.positive(HeaderEpoch)
	if v, ok := p.get(HeaderEventType); ok && v != Upsert && v != Tombstone {
		p.fail(HeaderEventType, v, errEventType)
	} else {
		r.Type = v
	}
	if _, ok := p.vals[HeaderMsgID]; ok {
		r.MsgID = p.positive(HeaderMsgID)
	}
	if len(p.errs) > 0 {
		return Received{}, fmt.Errorf("parse record of key %q: %w", key, p.errs)
	}
	return r, nil
}

var (
	errRepeated    = errors.New("repeated")
	errNotPositive = errors.New("not a positive decimal integer")
	errNotTime     = errors.New("not an RFC 3339 time")
	errEventType   = fmt.Errorf("neither %s nor %s", Upsert, Tombstone)
)

// parser gathers what is wrong with a record's headers (Parse).
type parser struct {
	vals map[string]string
	errs headerErrors
}

// headerErrors are the *HeaderErrors of one record, on one line.
type headerErrors []error

func (e headerErrors) Error() string {
	s := make([]string, len(e))
	for i, err := range e {
		s[i] = err.Error()
	}
	return strings.Join(s, "; ")
}

func (e headerErrors) Unwrap() []error { return e }

func (p *parser) fail(name, value string, err error) {
	p.errs = append(p.errs, &HeaderError{Header: name, Value: value, Err: err})
}

// get returns the header named name; a missing one is noted.
func (p *parser) get(name string) (string, bool) {
	v, ok := p.vals[name]
	if !ok {
		p.errs = append(p.errs, &HeaderError{Header: name, Missing: true})
	}
	return v, ok
}

// positive returns the header named name as a positive integer; 0 when it is missing or is not one.
func (p *parser) positive(name string) int64 {
	v, ok := p.get(name)
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		p.fail(name, v, errNotPositive)
		return 0
	}
	return n
}
