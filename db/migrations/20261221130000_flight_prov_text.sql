-- migrate:up

-- Issue 19: a flight's provenance is stored as the text package flight wrote (MarshalProv),
-- no longer as jsonb: PostgreSQL parsed it on every flight written and printed it on every
-- load, and nothing queries into it. The flight table holds the operational days only (the
-- history sweep purges the rest), so the rewrite is short.
ALTER TABLE flight ALTER COLUMN prov TYPE text USING prov::text;

-- migrate:down
ALTER TABLE flight ALTER COLUMN prov TYPE jsonb USING prov::jsonb;
