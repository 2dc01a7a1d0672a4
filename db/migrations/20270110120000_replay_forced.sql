-- migrate:up

-- An operator's forced replay (msgxctl replay --force, the console's "force"): the processor
-- applies the row without the staleness rule of late rows (INV-24b), overwriting what
-- later-created messages set. Written by every replay (false unless forced), read with the head.
-- The archive moves every column, so proc_state_hst keeps it too (whether the row's last replay
-- was forced).
ALTER TABLE proc_state ADD COLUMN replay_forced boolean NOT NULL DEFAULT false;
ALTER TABLE proc_state_hst ADD COLUMN replay_forced boolean NOT NULL DEFAULT false;

-- A forced replay is audited apart from a plain one.
ALTER TABLE replay_audit DROP CONSTRAINT replay_audit_action_check;
ALTER TABLE replay_audit ADD CONSTRAINT replay_audit_action_check
    CHECK (action IN ('replay', 'replay-forced', 'dlq-replay', 'dlq-skip', 'backfill-retry', 'gap-skip', 'request', 'identity-set', 'db-restored', 'kafka-reseed'));

-- migrate:down

UPDATE replay_audit SET action = 'replay' WHERE action = 'replay-forced';
ALTER TABLE replay_audit DROP CONSTRAINT replay_audit_action_check;
ALTER TABLE replay_audit ADD CONSTRAINT replay_audit_action_check
    CHECK (action IN ('replay', 'dlq-replay', 'dlq-skip', 'backfill-retry', 'gap-skip', 'request', 'identity-set', 'db-restored', 'kafka-reseed'));
ALTER TABLE proc_state_hst DROP COLUMN replay_forced;
ALTER TABLE proc_state DROP COLUMN replay_forced;
