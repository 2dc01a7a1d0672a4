-- migrate:up

-- The console (docs/console.md) shows a flight's version history (its events by FLID) and the
-- events a message caused; replay's dry run finds the later messages of the same flights. Both
-- read msg_event by key, which only the unsent rows were indexed for.
CREATE INDEX msg_event_flight ON msg_event (partition_key, state_version);
CREATE INDEX msg_event_msg ON msg_event (msg_id) WHERE msg_id IS NOT NULL;

-- migrate:down

DROP INDEX msg_event_msg;
DROP INDEX msg_event_flight;
