-- migrate:up

-- Issue 15, INV-24: late rows never regress newer values. Per flight, which message (its DTTM as
-- Unix seconds of the airport wall clock, and its msg_id) last set each field, the lifecycle
-- state, each collection as a whole and each collection entry merged or patched since:
-- [[dttm, msg_id, "name", …], …], one array per distinct message (package flight, prov.go).
-- NULL for flights last written before this migration: no provenance, so nothing is stale.
ALTER TABLE flight ADD COLUMN prov jsonb;

-- migrate:down
ALTER TABLE flight DROP COLUMN prov;
