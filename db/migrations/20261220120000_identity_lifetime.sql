-- migrate:up

-- Issue 15. Identity with a lifetime: a same-key message is the same message only when the
-- bound one's DTTM is within the identity window of it (docs/spec.md §5, PRE-7). The binding
-- keeps the bound message's DTTM; bindings older than the window plus a margin are deleted by
-- the jobs stage. Bindings made before this migration take their bound_at as DTTM.
ALTER TABLE msg_identity ADD COLUMN dttm timestamptz;
UPDATE msg_identity SET dttm = bound_at;
ALTER TABLE msg_identity ALTER COLUMN dttm SET NOT NULL;
CREATE INDEX msg_identity_bound_at ON msg_identity (bound_at);
-- A key reused outside the window is bound again to the new message, and a message replayed after
-- a change of the rule may bind a second key: neither the key on proc_state nor msg_id here is
-- unique any more (msg_identity's primary key stays the key).
ALTER TABLE msg_identity DROP CONSTRAINT msg_identity_msg_id_key;
ALTER TABLE proc_state DROP CONSTRAINT proc_state_identity_key_key;
CREATE INDEX proc_state_identity_key ON proc_state (identity_key);
ALTER TABLE proc_state_hst DROP CONSTRAINT proc_state_hst_identity_key_key;
CREATE INDEX proc_state_hst_identity_key ON proc_state_hst (identity_key);
-- proc_state_hst retention (MSGX_PROC_STATE_HST_RETENTION) deletes by archived_at.
CREATE INDEX proc_state_hst_archived_at ON proc_state_hst (archived_at);

-- The identity rule (one row): the window and whether the key includes the DTTM day. Written by
-- the first processor start and by msgxctl identity set (with a replay_audit row); a processor
-- whose configuration disagrees refuses to start.
CREATE TABLE identity_rule (
    one            boolean     PRIMARY KEY DEFAULT true CHECK (one),
    window_seconds bigint      NOT NULL CHECK (window_seconds > 0),
    include_day    boolean     NOT NULL,
    set_at         timestamptz NOT NULL,
    set_by         text        NOT NULL,
    reason         text        NOT NULL
);

ALTER TABLE replay_audit DROP CONSTRAINT replay_audit_action_check;
ALTER TABLE replay_audit ADD CONSTRAINT replay_audit_action_check
    CHECK (action IN ('replay', 'dlq-replay', 'dlq-skip', 'backfill-retry', 'gap-skip', 'request', 'identity-set'));

-- migrate:down
DELETE FROM replay_audit WHERE action = 'identity-set';
ALTER TABLE replay_audit DROP CONSTRAINT replay_audit_action_check;
ALTER TABLE replay_audit ADD CONSTRAINT replay_audit_action_check
    CHECK (action IN ('replay', 'dlq-replay', 'dlq-skip', 'backfill-retry', 'gap-skip', 'request'));
DROP TABLE identity_rule;
DROP INDEX proc_state_hst_archived_at;
DROP INDEX proc_state_hst_identity_key;
ALTER TABLE proc_state_hst ADD CONSTRAINT proc_state_hst_identity_key_key UNIQUE (identity_key);
DROP INDEX proc_state_identity_key;
ALTER TABLE proc_state ADD CONSTRAINT proc_state_identity_key_key UNIQUE (identity_key);
ALTER TABLE msg_identity ADD CONSTRAINT msg_identity_msg_id_key UNIQUE (msg_id);
DROP INDEX msg_identity_bound_at;
ALTER TABLE msg_identity DROP COLUMN dttm;
