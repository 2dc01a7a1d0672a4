-- migrate:up

-- Issue 15: the attempt history (docs/spec.md §5 "Attempt history", INV-23). One row per attempt
-- of a message, written in the transaction that records its outcome: SUCCEEDED, SKIPPED, DEAD or
-- FAILED (with the outcome), CRASHED (by the dying process, with the panic's charge), DIED and
-- INTERRUPTED (by the next attempt, with the re-stamped start mark), BATCH_FAILED (a batch that
-- failed as a whole: every message of it, nobody charged). Replay never touches it, so
-- every error a message ever had stays readable after it succeeds.
CREATE TABLE msg_attempt (
    attempt_id  bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    msg_id      bigint      NOT NULL,
    attempt     integer     NOT NULL CHECK (attempt >= 0), -- proc_state.attempts after it (the count so far for CRASHED, DIED, INTERRUPTED, BATCH_FAILED)
    at          timestamptz NOT NULL,
    epoch       bigint      NOT NULL,                      -- the processor leader's epoch
    outcome     text        NOT NULL CHECK (outcome IN ('SUCCEEDED', 'SKIPPED', 'DEAD', 'FAILED', 'CRASHED', 'DIED', 'INTERRUPTED', 'BATCH_FAILED')),
    error_class text,
    reason      text,
    meta        jsonb                                      -- the META read, for a message that failed to decode
);
CREATE INDEX msg_attempt_msg ON msg_attempt (msg_id, attempt_id);

-- Bound: a message's attempts live as long as its row, in proc_state or proc_state_hst. Archiving
-- moves the row and keeps them; when retention deletes the archived row they go with it (a
-- cascade by trigger: a foreign key cannot follow a row that moves between the two tables). A row
-- moved back to proc_state in the same statement keeps them.
CREATE FUNCTION msg_attempt_cascade() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM msg_attempt a
     WHERE a.msg_id IN (SELECT o.msg_id FROM gone o)
       AND NOT EXISTS (SELECT 1 FROM proc_state p WHERE p.msg_id = a.msg_id);
    RETURN NULL;
END $$;
CREATE TRIGGER msg_attempt_cascade AFTER DELETE ON proc_state_hst
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION msg_attempt_cascade();

-- The error text each replayed message had (parallel to ids) when it was replayed.
ALTER TABLE replay_audit ADD COLUMN errors text[];

-- migrate:down
ALTER TABLE replay_audit DROP COLUMN errors;
DROP TRIGGER msg_attempt_cascade ON proc_state_hst;
DROP FUNCTION msg_attempt_cascade();
DROP TABLE msg_attempt;
