-- migrate:up

-- A message row that leaves a terminal status (a replay reopens it) leaves the batch debts that
-- name it, in the same transaction (INV-8d). The immediate marker writes only the rows its debt
-- names while it holds that debt row locked, so the debt row alone guards the mailbox write:
-- taking a row out of a debt waits for a marker write under way, and a row taken out before is
-- not written. The trigger holds the rule for every client, a previous release's replay
-- included; it runs as its owner, so a role that may reopen a row needs no grant on marker_debt.
CREATE FUNCTION msgx_leave_debts() RETURNS trigger LANGUAGE plpgsql VOLATILE SECURITY DEFINER AS $$
BEGIN
    UPDATE marker_debt SET ids = array_remove(ids, OLD.msg_id) WHERE ids @> ARRAY[OLD.msg_id] AND cardinality(ids) > 1;
    DELETE FROM marker_debt WHERE ids = ARRAY[OLD.msg_id]; -- a debt never names no row
    RETURN NEW;
END $$;
-- Its names resolve in this schema only.
DO $$ BEGIN
  EXECUTE format('ALTER FUNCTION msgx_leave_debts() SET search_path = %I, pg_temp', current_schema());
END $$;
CREATE TRIGGER proc_state_leave_debts BEFORE UPDATE OF status ON proc_state FOR EACH ROW
    WHEN (OLD.status IN ('SUCCEEDED', 'SKIPPED', 'DEAD') AND NEW.status NOT IN ('SUCCEEDED', 'SKIPPED', 'DEAD'))
    EXECUTE FUNCTION msgx_leave_debts();

-- migrate:down
DROP TRIGGER proc_state_leave_debts ON proc_state;
DROP FUNCTION msgx_leave_debts();
