-- migrate:up

-- An operator's note or acknowledgement on a whole group or filter of dead letters (the
-- console's triage) is audited with the filter it took, beside each message's console_note row.
ALTER TABLE replay_audit DROP CONSTRAINT replay_audit_action_check;
ALTER TABLE replay_audit ADD CONSTRAINT replay_audit_action_check
    CHECK (action IN ('replay', 'replay-forced', 'dlq-replay', 'dlq-skip', 'backfill-retry', 'gap-skip', 'request', 'identity-set', 'db-restored', 'kafka-reseed',
                      'acknowledge', 'note'));

-- migrate:down

DELETE FROM replay_audit WHERE action IN ('acknowledge', 'note');
ALTER TABLE replay_audit DROP CONSTRAINT replay_audit_action_check;
ALTER TABLE replay_audit ADD CONSTRAINT replay_audit_action_check
    CHECK (action IN ('replay', 'replay-forced', 'dlq-replay', 'dlq-skip', 'backfill-retry', 'gap-skip', 'request', 'identity-set', 'db-restored', 'kafka-reseed'));
