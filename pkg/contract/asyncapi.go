package contract

import "github.com/msgx/msgx/pkg/event"

// Default topic names (MSGX_KAFKA_TOPIC_*; a deployment may rename them).
const (
	TopicChanges   = "msgx.flight.changes"
	TopicState     = "msgx.flight.state"
	TopicHeartbeat = "msgx.heartbeat"
)

const kafkaBinding = "0.5.0"

// The contract's promises, as docs/events.md states them, for the AsyncAPI document.
const (
	readCommitted = "Read with isolation.level=read_committed: each batch is one Kafka transaction " +
		"(transactional.id <prefix>.<topic>); aborted records stay in the log and a read_uncommitted consumer sees them."
	delivery = "At least once: deduplicate by (flid, state_version); a duplicate is identical in key, value, flid, " +
		"state_version, event_id and event_type (only epoch may differ)."
	ordering = "Per flight (one key, one partition) in change order; none across flights or between the two topics."
)

// asyncAPI is the AsyncAPI 3 document of both topics: channels, the dispatcher's send
// operations, the messages (key, headers, payload) and their schemas.
func asyncAPI() obj {
	d := &defs{ref: func(n string) string { return "#/components/schemas/" + n }, all: obj{}}
	d.all["record.key"] = key()
	headers := d.headers()
	d.all["flight.change"] = d.changes()
	state := d.state()
	beat := d.beat()
	msgKey := obj{"$ref": d.ref("record.key")}
	kafkaMsg := obj{"kafka": obj{"key": msgKey, "bindingVersion": kafkaBinding}}
	channel := func(address, policy, desc, msg string) obj {
		return obj{
			"address":     address,
			"description": desc,
			"messages":    obj{msg: obj{"$ref": "#/components/messages/" + msg}},
			"bindings": obj{"kafka": obj{"bindingVersion": kafkaBinding,
				"topicConfiguration": obj{"cleanup.policy": []string{policy}}}},
		}
	}
	send := func(ch, msg, desc string) obj {
		return obj{
			"action":      "send",
			"channel":     obj{"$ref": "#/channels/" + ch},
			"messages":    []any{obj{"$ref": "#/channels/" + ch + "/messages/" + msg}},
			"description": desc + " " + ordering + " " + readCommitted + " " + delivery,
		}
	}
	return obj{
		"asyncapi": "3.0.0",
		"info": obj{
			"title":   "msgx flight events",
			"version": event.SchemaVersion,
			"description": "What happens to operational flights, published by msgx's dispatcher from its PostgreSQL outbox. " +
				"The reference is docs/events.md; the version is the schema_version header's. Every time is given as the airport's " +
				"wall clock (X) and as the instant it names (X_instant).",
		},
		"defaultContentType": "application/json",
		"channels": obj{
			"flightChanges": channel(TopicChanges, "delete",
				"One record per business change of a flight (retention: the consumers' replay window).", "flightChange"),
			"flightState": channel(TopicState, "compact",
				"A flight's latest full state; after compaction one record per FLID. A TOMBSTONE (deleted or purged flight) has a null value.", "flightState"),
			"heartbeat": channel(TopicHeartbeat, "delete",
				"The dispatcher's heartbeat, every period_seconds while a leader runs: no heartbeat for three periods means msgx sends nothing (stopped, or cut off from Kafka).", "heartbeat"),
		},
		"operations": obj{
			"sendFlightChanges": send("flightChanges", "flightChange",
				"The dispatcher sends a flight's change only after the broker acknowledged its previous one."),
			"sendFlightState": send("flightState", "flightState",
				"At most one record per FLID per flush period; the topic never goes back to an older state_version."),
			"sendHeartbeat": obj{
				"action": "send", "channel": obj{"$ref": "#/channels/heartbeat"},
				"messages": []any{obj{"$ref": "#/channels/heartbeat/messages/heartbeat"}},
				"description": "Every MSGX_HEARTBEAT_PERIOD, read under the dispatcher's lease and sent in a transaction of its own by the leader's producer (fenced as the event topics' are). " + readCommitted +
					" Quiet: heartbeats arrive and oldest_unsent_event_id is null on both topics. Stalled: no heartbeat for three periods, or the same oldest_unsent_event_id over many.",
			},
		},
		"components": obj{
			"messages": obj{
				"flightChange": obj{
					"name": "flightChange", "title": "A flight change", "contentType": "application/json",
					"headers": headers, "payload": obj{"$ref": d.ref("flight.change")}, "bindings": kafkaMsg,
				},
				"heartbeat": obj{
					"name": "heartbeat", "title": "The dispatcher's heartbeat", "contentType": "application/json",
					"headers": obj{"type": "object", "required": []string{event.HeaderSchemaVersion, event.HeaderEpoch},
						"properties": obj{event.HeaderSchemaVersion: obj{"const": event.SchemaVersion}, event.HeaderEpoch: obj{"type": "string", "pattern": posPat}}},
					"payload":  beat,
					"bindings": obj{"kafka": obj{"key": obj{"type": "string", "description": "the deployment's MSGX_KAFKA_TRANSACTIONAL_ID_PREFIX"}, "bindingVersion": kafkaBinding}},
				},
				"flightState": obj{
					"name": "flightState", "title": "A flight's latest state", "contentType": "application/json",
					"headers": headers, "payload": obj{"oneOf": []any{state, obj{"type": "null", "description": "a TOMBSTONE: the flight was deleted or purged"}}},
					"bindings": kafkaMsg,
				},
			},
			"schemas": d.all,
		},
	}
}
