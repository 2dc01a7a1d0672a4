-- migrate:up

-- msgxctl kafka reseed is audited like every operator action.
ALTER TABLE replay_audit DROP CONSTRAINT replay_audit_action_check;
ALTER TABLE replay_audit ADD CONSTRAINT replay_audit_action_check
    CHECK (action IN ('replay', 'dlq-replay', 'dlq-skip', 'backfill-retry', 'gap-skip', 'request', 'identity-set', 'db-restored', 'kafka-reseed'));

-- migrate:down

DELETE FROM replay_audit WHERE action = 'kafka-reseed';
ALTER TABLE replay_audit DROP CONSTRAINT replay_audit_action_check;
ALTER TABLE replay_audit ADD CONSTRAINT replay_audit_action_check
    CHECK (action IN ('replay', 'dlq-replay', 'dlq-skip', 'backfill-retry', 'gap-skip', 'request', 'identity-set', 'db-restored'));
