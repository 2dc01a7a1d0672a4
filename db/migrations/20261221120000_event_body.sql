-- migrate:up

-- Issue 19: an event's value is stored as the text the processor wrote (body), no longer as
-- jsonb (payload). jsonb parsed every value on insert and printed it again on every read (the
-- dispatcher's claim, the console): a 2.3 KB full state cost about 4x the insert of the same
-- text, and it published the keys in jsonb's order instead of the documented one. lz4 (where
-- the server has it) compresses a TOASTed value several times faster than pglz.
--
-- Online: adding a nullable column rewrites nothing. Rows written before keep their payload and
-- every reader takes COALESCE(body, payload::text); they leave with MSGX_EVENT_RETENTION, after
-- which a later migration can drop payload. The replaced check holds for those rows (they met
-- the stricter one), so it is added NOT VALID instead of scanning the table under its lock.
ALTER TABLE msg_event ADD COLUMN body text;
DO $$
BEGIN
    ALTER TABLE msg_event ALTER COLUMN body SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported OR invalid_parameter_value THEN
    RAISE NOTICE 'lz4 not available: msg_event.body keeps the default compression';
END $$;
ALTER TABLE msg_event DROP CONSTRAINT msg_event_check1;
ALTER TABLE msg_event ADD CONSTRAINT msg_event_value CHECK (event_type = 'TOMBSTONE' OR body IS NOT NULL OR payload IS NOT NULL) NOT VALID;

-- migrate:down
ALTER TABLE msg_event DROP CONSTRAINT msg_event_value;
UPDATE msg_event SET payload = body::jsonb WHERE body IS NOT NULL;
ALTER TABLE msg_event DROP COLUMN body;
ALTER TABLE msg_event ADD CONSTRAINT msg_event_check1 CHECK (event_type = 'TOMBSTONE' OR payload IS NOT NULL);
