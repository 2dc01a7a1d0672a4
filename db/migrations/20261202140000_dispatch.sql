-- migrate:up

-- The dispatcher's fast claim path (pkg/outbox): unsent events of a target in event order, so
-- the heads of the oldest backlog are found by reading a short window instead of visiting every
-- FLID. msg_event_unsent (target, partition_key, event_id) stays for the per-FLID skip scan.
CREATE INDEX msg_event_unsent_order ON msg_event (target, event_id) WHERE status <> 'SENT';

-- migrate:down
DROP INDEX msg_event_unsent_order;
