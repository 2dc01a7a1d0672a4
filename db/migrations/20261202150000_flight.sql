-- migrate:up

-- Flight state (issue 6). The pipeline migration created the tables; this adds what the flight
-- and schedule processors look up.

-- Replay of a schedule snapshot is recognised by its message id (docs/spec.md §6: audit only).
CREATE INDEX schd_snap_log_msg ON schd_snap_log (msg_id);

-- The MAFL projection reads the ACTIVE children of a set of masters (INV-21).
CREATE INDEX flight_maid_active ON flight (maid, flid) WHERE maid IS NOT NULL AND state = 'ACTIVE';

-- An operation day, once set, never changes (INV-12); the processor rejects the change
-- (PROTOCOL) before it reaches the table, this trigger is the last line.
CREATE FUNCTION flight_operation_day_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.operation_day IS NOT NULL AND NEW.operation_day IS DISTINCT FROM OLD.operation_day THEN
        RAISE EXCEPTION 'flight %: operation_day % is immutable (got %)', OLD.flid, OLD.operation_day, NEW.operation_day
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER flight_operation_day_immutable BEFORE UPDATE OF operation_day ON flight
    FOR EACH ROW EXECUTE FUNCTION flight_operation_day_immutable();

-- migrate:down
DROP TRIGGER flight_operation_day_immutable ON flight;
DROP FUNCTION flight_operation_day_immutable();
DROP INDEX flight_maid_active;
DROP INDEX schd_snap_log_msg;
