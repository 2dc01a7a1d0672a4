-- migrate:up

-- A message row that leaves a terminal status (a replay reopens it) leaves the batch debts that
-- name it, in the same transaction (INV-8d). The immediate marker writes only the rows its debt
-- names while it holds that debt row locked, so the debt row alone guards the mailbox write:
-- taking a row out of a debt waits for a marker write under way, and a row taken out before is
-- not written. The trigger holds the rule for every client, a previous release's replay
-- included; it runs as its owner, so a role that may reopen a row needs no grant on marker_debt.
-- It runs after the row's update: a BEFORE trigger would lock every row an UPDATE of status
-- touches before testing its WHEN, the processor's terminal writes included.
CREATE FUNCTION msgx_leave_debts() RETURNS trigger LANGUAGE plpgsql VOLATILE SECURITY DEFINER AS $$
BEGIN
    UPDATE marker_debt SET ids = array_remove(ids, OLD.msg_id) WHERE ids @> ARRAY[OLD.msg_id] AND cardinality(ids) > 1;
    DELETE FROM marker_debt WHERE ids = ARRAY[OLD.msg_id]; -- a debt never names no row
    RETURN NULL;
END $$;
-- Its names resolve in this schema only.
DO $$ BEGIN
  EXECUTE format('ALTER FUNCTION msgx_leave_debts() SET search_path = %I, pg_temp', current_schema());
END $$;
CREATE TRIGGER proc_state_leave_debts AFTER UPDATE OF status ON proc_state FOR EACH ROW
    WHEN (OLD.status IN ('SUCCEEDED', 'SKIPPED', 'DEAD') AND NEW.status NOT IN ('SUCCEEDED', 'SKIPPED', 'DEAD'))
    EXECUTE FUNCTION msgx_leave_debts();

-- A replay locks the debts naming the rows it may reopen before it touches them (procstate.Replay),
-- in debt order: the order in which the jobs stage's move of a debt and the processor's record of
-- a failed marker lock a debt and then its rows, so that none of them waits for another in a
-- cycle. Its owner's rights: the roles that replay need no privilege on marker_debt.
CREATE FUNCTION msgx_lock_debts(msg_ids bigint[]) RETURNS void LANGUAGE plpgsql VOLATILE SECURITY DEFINER AS $$
BEGIN
    PERFORM 1 FROM marker_debt WHERE ids && msg_ids ORDER BY debt_id FOR UPDATE;
END $$;
-- Its names resolve in this schema only.
DO $$ BEGIN
  EXECUTE format('ALTER FUNCTION msgx_lock_debts(bigint[]) SET search_path = %I, pg_temp', current_schema());
END $$;
REVOKE ALL ON FUNCTION msgx_lock_debts(bigint[]) FROM PUBLIC;

-- migrate:down
DROP FUNCTION msgx_lock_debts(bigint[]);
DROP TRIGGER proc_state_leave_debts ON proc_state;
DROP FUNCTION msgx_leave_debts();
