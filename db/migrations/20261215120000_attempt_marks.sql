-- migrate:up

-- The head deadline counts real attempts (docs/spec.md INV-23). The start mark committed before
-- a batch names the batch's last message (processing_through, NULL once the attempt ended with
-- an outcome). crashes counts the panics a message caused (recorded by the dying process);
-- deaths counts attempts that ran the message alone and ended with the process dying without a
-- word (SIGKILL, out of memory, a hang killed by the liveness probe), charged by the next leader.
ALTER TABLE proc_state
    ADD COLUMN processing_through bigint,
    ADD COLUMN crashes integer NOT NULL DEFAULT 0 CHECK (crashes >= 0),
    ADD COLUMN deaths integer NOT NULL DEFAULT 0 CHECK (deaths >= 0);
ALTER TABLE proc_state_hst
    ADD COLUMN processing_through bigint,
    ADD COLUMN crashes integer NOT NULL DEFAULT 0 CHECK (crashes >= 0),
    ADD COLUMN deaths integer NOT NULL DEFAULT 0 CHECK (deaths >= 0);

-- migrate:down

ALTER TABLE proc_state_hst DROP COLUMN processing_through, DROP COLUMN crashes, DROP COLUMN deaths;
ALTER TABLE proc_state DROP COLUMN processing_through, DROP COLUMN crashes, DROP COLUMN deaths;
