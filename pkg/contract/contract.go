// Package contract makes the consumer contract of docs/events.md machine-readable: a JSON Schema
// (draft 2020-12) for each record part (key, headers, each topic's value) and an AsyncAPI 3
// document of both topics, written from the flight model (package flight: the fields, their
// kinds, the collections) and the record format (package event: the headers), so the documents
// change when the model does. The documents live in docs/contract (package docs embeds them; the
// read API serves them); the package's test keeps them equal to what Documents makes (-update
// writes them), and Validator checks records against them.
package contract

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/flight"
)

// The schema documents, by file name in docs/contract.
const (
	KeySchema     = "msgx.record.key.schema.json"
	HeadersSchema = "msgx.record.headers.schema.json"
	ChangesSchema = "msgx.flight.changes.value.schema.json"
	StateSchema   = "msgx.flight.state.value.schema.json"
	BeatSchema    = "msgx.heartbeat.value.schema.json"
	AsyncAPI      = "asyncapi.json"
)

// Schemas lists the schema documents.
var Schemas = []string{KeySchema, HeadersSchema, ChangesSchema, StateSchema, BeatSchema}

// obj is one JSON object of a document; encoding/json writes its keys sorted.
type obj = map[string]any

const (
	draft   = "https://json-schema.org/draft/2020-12/schema"
	wallPat = `^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}$`
	instPat = `^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(Z|[+-][0-9]{2}:[0-9]{2})$`
	dayPat  = `^[0-9]{4}-[0-9]{2}-[0-9]{2}$`
	posPat  = `^[1-9][0-9]*$`
)

// defs are the named schemas the documents share. ref names one: "#/$defs/NAME" in a schema
// file, "#/components/schemas/NAME" in the AsyncAPI document.
type defs struct {
	ref func(name string) string
	all obj
}

func (d *defs) use(name string, s obj) obj {
	if _, ok := d.all[name]; !ok {
		d.all[name] = s
	}
	return obj{"$ref": d.ref(name)}
}

func nullable(t string) obj { return obj{"type": []string{t, "null"}} }

// value is the schema of a field or column of kind k; the JSON kind is any JSON value.
func (d *defs) value(k flight.Kind) obj {
	switch k {
	case flight.KindInt:
		return nullable("integer")
	case flight.KindTime:
		return d.use("wall", obj{"type": []string{"string", "null"}, "pattern": wallPat,
			"description": "the airport's wall-clock time, no zone (null: unset)"})
	case flight.KindJSON:
		return obj{"description": "a JSON value as the AODB sent it"}
	case flight.KindDecimal:
		return obj{"type": []string{"string", "null"}, "description": "a decimal number as text"}
	}
	return nullable("string")
}

func (d *defs) instant() obj {
	return d.use("instant", obj{"type": []string{"string", "null"}, "format": "date-time", "pattern": instPat,
		"description": "the instant the wall-clock time beside it names: RFC 3339 with the airport's UTC offset; null when that time is null or is skipped or repeated by a clock change"})
}

// members adds the properties of columns cols (and each time's instant) to props and req.
func (d *defs) members(cols []flight.Column, props obj, req []string, key bool) []string {
	for i, c := range cols {
		v := d.value(c.Kind)
		if key && i == 0 { // a row's key is always set
			v = obj{"type": "string"}
			if c.Kind == flight.KindInt {
				v = obj{"type": "integer"}
			}
		}
		props[c.Name] = v
		req = append(req, c.Name)
		if c.Kind == flight.KindTime {
			props[c.Name+flight.InstantSuffix] = d.instant()
			req = append(req, c.Name+flight.InstantSuffix)
		}
	}
	return req
}

func (d *defs) rows(c flight.Collection) obj {
	props := obj{}
	req := d.members(c.Cols, props, nil, true)
	return obj{"type": "array", "items": d.use("row."+c.Name, obj{"type": "object", "properties": props, "required": req,
		"description": "one row of " + strings.ToUpper(c.Name) + ", its key first"})}
}

func (d *defs) mafl() obj {
	return obj{"type": "array", "items": d.use("mafl.child", obj{"type": "object", "required": []string{"flid", "flno"},
		"properties": obj{"flid": obj{"type": "integer", "minimum": 1}, "flno": obj{"type": "string"}}})}
}

func (d *defs) status() obj {
	return obj{"enum": []any{flight.Active, flight.Deleted}}
}

func (d *defs) day() obj {
	return obj{"type": []string{"string", "null"}, "pattern": dayPat, "description": "the operation day, the airport's calendar day of SODT"}
}

// state is the schema of a flight's full state (flight.State.AppendJSONIn).
func (d *defs) state() obj {
	props := obj{
		"flid":          obj{"type": "integer", "minimum": 1},
		"state":         d.status(),
		"state_version": obj{"type": "integer", "minimum": 1},
		"operation_day": d.day(),
		"mafl":          d.mafl(),
	}
	req := []string{"flid", "state", "state_version", "operation_day"}
	req = d.members(flight.Fields[:], props, req, false)
	for _, c := range flight.Collections {
		props[c.Name] = d.rows(c)
		req = append(req, c.Name)
	}
	req = append(req, "mafl")
	return d.use("flight.state", obj{"type": "object", "properties": props, "required": req,
		"description": "a flight's full state: every field (null when unset), every collection, mafl; fields may be added"})
}

// changeOf is the schema of one entry of "changed": the field's old and new values, and for a
// time (instant not nil) the instants they name.
func changeOf(old, new, instant obj) obj {
	props, req := obj{"old": old, "new": new}, []string{"old", "new"}
	if instant != nil {
		props["old_instant"], props["new_instant"] = instant, instant
		req = append(req, "old_instant", "new_instant")
	}
	return obj{"type": "object", "properties": props, "required": req}
}

func (d *defs) changed() obj {
	props := obj{
		"state":         changeOf(obj{"enum": []any{nil, flight.Active, flight.Deleted}}, d.status(), nil),
		"operation_day": changeOf(d.day(), d.day(), nil),
		"mafl":          changeOf(d.mafl(), d.mafl(), nil),
	}
	for _, f := range flight.Fields {
		v := d.value(f.Kind)
		var instant obj
		if f.Kind == flight.KindTime {
			instant = d.instant()
		}
		props[f.Name] = changeOf(v, v, instant)
	}
	for _, c := range flight.Collections {
		r := d.rows(c)
		props[c.Name] = changeOf(r, r, nil)
	}
	return d.use("flight.changed", obj{"type": "object", "properties": props,
		"additionalProperties": obj{"type": "object", "required": []string{"old", "new"}},
		"description":          "every changed field, collection, state or mafl with its old and new value"})
}

func (d *defs) changes() obj {
	base := func(extra obj, req ...string) obj {
		props := obj{
			"flid":          obj{"type": "integer", "minimum": 1},
			"state_version": obj{"type": "integer", "minimum": 1},
			"event":         obj{"enum": []string{event.Upsert, event.Tombstone}},
		}
		maps.Copy(props, extra)
		return obj{"type": "object", "properties": props, "required": append([]string{"flid", "state_version", "event"}, req...)}
	}
	byMessage := base(obj{"msg_id": obj{"type": "integer", "minimum": 1}, "type": obj{"type": "string"}, "styp": obj{"type": "string"},
		"changed": d.changed()}, "msg_id", "type", "styp", "changed")
	byMessage["description"] = "a change a mailbox message made"
	childPurged := base(obj{"reason": obj{"const": event.ReasonChildPurged}, "changed": d.changed()}, "reason", "changed")
	childPurged["description"] = "a master's change when the history sweep purged one of its children"
	purged := base(obj{"reason": obj{"const": "purged"}, "event": obj{"const": event.Tombstone}}, "reason")
	purged["description"] = "the history sweep's purge of a quiet flight"
	return obj{"oneOf": []any{byMessage, childPurged, purged}}
}

// beat is the schema of a heartbeat's value (event.HeartbeatRecord).
func (d *defs) beat() obj {
	id := obj{"type": []string{"integer", "null"}, "minimum": 1}
	topic := d.use("heartbeat.topic", obj{"type": "object", "required": []string{"topic", "last_sent_event_id", "oldest_unsent_event_id"},
		"properties": obj{
			"topic":                  obj{"type": "string"},
			"last_sent_event_id":     withDesc(id, "the highest event id the dispatcher leader's term has had acknowledged on the topic; null: none yet this term"),
			"oldest_unsent_event_id": withDesc(id, "the oldest event waiting to be sent (pending or a dead letter); null: nothing waits"),
		}})
	return d.use("heartbeat", obj{"type": "object", "required": []string{"time", "period_seconds", "epoch", "watermark", "changes", "state"},
		"properties": obj{
			"time":           obj{"type": "string", "format": "date-time", "description": "when the dispatcher wrote it, RFC 3339 UTC"},
			"period_seconds": obj{"type": "number", "exclusiveMinimum": 0, "description": "the next one is due this much later"},
			"epoch":          obj{"type": "integer", "minimum": 1, "description": "the dispatcher leader's epoch"},
			"watermark":      obj{"type": "integer", "minimum": 0, "description": "ingest's watermark: every mailbox id up to it is discovered"},
			"changes":        topic,
			"state":          topic,
		},
		"description": "the dispatcher's heartbeat: it is alive under its lease and how far it is"})
}

func withDesc(s obj, desc string) obj {
	out := maps.Clone(s)
	out["description"] = desc
	return out
}

func key() obj {
	return obj{"type": "string", "pattern": posPat, "description": "the FLID as a decimal string"}
}

func (d *defs) headers() obj {
	str := func(desc string) obj { return obj{"type": "string", "pattern": posPat, "description": desc} }
	props := obj{
		event.HeaderSchemaVersion: obj{"const": event.SchemaVersion, "description": "the contract's version; stop on one you do not know"},
		event.HeaderEventTime:     obj{"type": "string", "format": "date-time", "pattern": `^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z$`, "description": "when the change committed in msgx, RFC 3339 UTC"},
		event.HeaderEventID:       str("the outbox event; grows with commit order"),
		event.HeaderFLID:          str("the FLID, the record's key"),
		event.HeaderStateVersion:  str("the flight's state_version after the change"),
		event.HeaderMsgID:         str("the mailbox message behind the change; absent when none"),
		event.HeaderEpoch:         str("the epoch of the dispatcher leader that sent the record"),
		event.HeaderEventType:     obj{"enum": []string{event.Upsert, event.Tombstone}},
	}
	req := []string{event.HeaderSchemaVersion, event.HeaderEventTime, event.HeaderEventID, event.HeaderFLID,
		event.HeaderStateVersion, event.HeaderEpoch, event.HeaderEventType}
	return d.use("record.headers", obj{"type": "object", "properties": props, "required": req,
		"additionalProperties": obj{"type": "string"},
		"description":          "the record's headers as name: value (UTF-8); each appears once; headers not listed may be added"})
}

// schemaFile is one JSON Schema document whose root is the schema made by root.
func schemaFile(title string, root func(d *defs) obj) obj {
	d := &defs{ref: func(n string) string { return "#/$defs/" + n }, all: obj{}}
	s := root(d)
	doc := obj{"$schema": draft, "title": title}
	maps.Copy(doc, s)
	if len(d.all) > 0 {
		doc["$defs"] = d.all
	}
	return doc
}

// Documents returns every document of docs/contract by its path there, as indented JSON: the
// schemas, the AsyncAPI document and the example values.
func Documents() map[string][]byte {
	docs := map[string]obj{
		KeySchema:     schemaFile("msgx record key (both topics)", func(*defs) obj { return key() }),
		HeadersSchema: schemaFile("msgx record headers (both topics)", (*defs).headers),
		ChangesSchema: schemaFile("msgx.flight.changes record value", (*defs).changes),
		StateSchema:   schemaFile("msgx.flight.state record value (UPSERT; a TOMBSTONE has a null value)", (*defs).state),
		BeatSchema:    schemaFile("msgx.heartbeat record value", (*defs).beat),
		AsyncAPI:      asyncAPI(),
	}
	out := examples()
	for _, name := range slices.Sorted(maps.Keys(docs)) {
		b, err := json.MarshalIndent(docs[name], "", "  ")
		if err != nil {
			panic(err) // maps, slices, strings and numbers always marshal
		}
		out[name] = append(b, '\n')
	}
	return out
}
