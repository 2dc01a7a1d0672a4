// Package kafkaverify compares what the two Kafka topics hold with what PostgreSQL says msgx
// sent (msgxctl kafka verify): every SENT KAFKA:msg event once per (flid, state_version) on
// the changes topic (duplicates identical), the versions of each FLID in order on both topics,
// and the last record of each flight on the state topic equal to its stored state (a
// tombstone for a deleted or purged flight). Topics gathers what a read_committed read of the
// topics saw, Stored what one PostgreSQL snapshot holds, and Compare, a pure function, lists the
// differences with the counts of what was and was not compared.
package kafkaverify

import (
	"crypto/sha256"
	"fmt"

	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/kafka"
)

// Kind is a kind of difference.
type Kind string

// The differences Compare reports.
const (
	ChangeMissing    Kind = "change-missing"    // a SENT KAFKA:msg event has no record on the changes topic
	ChangeDiffers    Kind = "change-differs"    // its record's value or event_id is not the event's
	DuplicateDiffers Kind = "duplicate-differs" // records of one (flid, state_version) that are not identical
	OutOfOrder       Kind = "out-of-order"      // a FLID's record with a lower version than one before it
	StateMissing     Kind = "state-missing"     // a stored flight sent to the state topic has no record there
	StateBehind      Kind = "state-behind"      // the last state record is older than what was sent or stored
	StateDiffers     Kind = "state-differs"     // the last state record is not the stored state
	Malformed        Kind = "malformed"         // a record whose headers do not follow docs/events.md (event.Parse)
	BeyondDatabase   Kind = "beyond-database"   // a change record newer than the stored flight: work the database lost
)

// Difference is one disagreement between a topic and PostgreSQL, or inside a topic.
type Difference struct {
	Kind         Kind   `json:"kind"`
	Topic        string `json:"topic"`
	FLID         string `json:"flid"`
	StateVersion int64  `json:"state_version"`
	Partition    int32  `json:"partition"`
	Offset       int64  `json:"offset"` // -1: no record
	Detail       string `json:"detail"`
}

// changeRec is what is kept of one record of the changes topic.
type changeRec struct {
	partition int32
	offset    int64
	valueSum  []byte // SHA-256 of the value; nil: null value
	identity  [32]byte
	eventID   int64
}

// stateRec is the last record of a FLID on the state topic.
type stateRec struct {
	partition int32
	offset    int64
	version   int64
	value     []byte
	eventType string
}

type changeKey struct {
	flid    string
	version int64
}

type orderKey struct {
	partition int32
	flid      string
}

// Topics is what a read of the two topics saw: of the changes topic a digest of every record,
// of the state topic the last record of each FLID. Feed it each partition in offset order.
type Topics struct {
	ChangesTopic, StateTopic    string
	ChangeRecords, StateRecords int

	changes  map[changeKey][]changeRec
	maxSeen  map[orderKey]int64
	states   map[string]stateRec
	stateMax map[string]int64
	diffs    []Difference // found while reading: order, malformed records
}

// NewTopics returns an empty read of the two topics.
func NewTopics(changesTopic, stateTopic string) *Topics {
	return &Topics{ChangesTopic: changesTopic, StateTopic: stateTopic, changes: map[changeKey][]changeRec{},
		maxSeen: map[orderKey]int64{}, states: map[string]stateRec{}, stateMax: map[string]int64{}}
}

// parse reads the record through the contract (event.Parse); a record whose headers do not
// parse is noted as malformed.
func (t *Topics) parse(r kafka.ConsumedRecord) (event.Received, bool) {
	e, err := event.Parse(r.Key, r.Value, r.Headers)
	if err != nil {
		t.diffs = append(t.diffs, Difference{Kind: Malformed, Topic: r.Topic, FLID: r.Key, Partition: r.Partition, Offset: r.Offset,
			Detail: err.Error()})
	}
	return e, err == nil
}

// AddChange records one record of the changes topic.
func (t *Topics) AddChange(r kafka.ConsumedRecord) {
	t.ChangeRecords++
	e, ok := t.parse(r)
	if !ok {
		return
	}
	v := e.StateVersion
	ok2 := orderKey{r.Partition, r.Key}
	if prev, seen := t.maxSeen[ok2]; seen && v < prev {
		t.diffs = append(t.diffs, Difference{Kind: OutOfOrder, Topic: r.Topic, FLID: r.Key, StateVersion: v, Partition: r.Partition,
			Offset: r.Offset, Detail: fmt.Sprintf("version %d after version %d", v, prev)})
	}
	t.maxSeen[ok2] = max(t.maxSeen[ok2], v)
	rec := changeRec{partition: r.Partition, offset: r.Offset, eventID: e.EventID, identity: identity(r)}
	if r.Value != nil {
		s := sha256.Sum256(r.Value)
		rec.valueSum = s[:]
	}
	k := changeKey{r.Key, v}
	t.changes[k] = append(t.changes[k], rec)
}

// identity is the digest two records of one change must share: key, value and every header but
// epoch (a change sent again by a newer dispatcher leader carries that leader's epoch).
func identity(r kafka.ConsumedRecord) [32]byte {
	h := sha256.New()
	fmt.Fprintf(h, "%q %t %q", r.Key, r.Value == nil, r.Value)
	for _, hd := range r.Headers {
		if hd.Key != event.HeaderEpoch {
			fmt.Fprintf(h, " %q=%q", hd.Key, hd.Value)
		}
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

// Held is what the state topic holds of a FLID: the version of its last record, and whether that
// is a tombstone (a null value).
type Held struct {
	Version   int64
	Tombstone bool
}

// HeldStates returns the last record of each FLID the state topic read holds, by FLID.
func (t *Topics) HeldStates() map[string]Held {
	out := make(map[string]Held, len(t.states))
	for k, r := range t.states {
		out[k] = Held{Version: r.version, Tombstone: r.value == nil}
	}
	return out
}

// AddState records one record of the state topic: the last of each FLID is kept.
func (t *Topics) AddState(r kafka.ConsumedRecord) {
	t.StateRecords++
	e, ok := t.parse(r)
	if !ok {
		return
	}
	v := e.StateVersion
	if prev, seen := t.stateMax[r.Key]; seen && v < prev {
		t.diffs = append(t.diffs, Difference{Kind: OutOfOrder, Topic: r.Topic, FLID: r.Key, StateVersion: v, Partition: r.Partition,
			Offset: r.Offset, Detail: fmt.Sprintf("version %d after version %d: the state topic went back", v, prev)})
	}
	t.stateMax[r.Key] = max(t.stateMax[r.Key], v)
	t.states[r.Key] = stateRec{partition: r.Partition, offset: r.Offset, version: v, value: r.Value, eventType: e.Type}
}
