-- migrate:up

-- Tokens an operator revoked (msgxctl token revoke): every console replica refuses their logins
-- and sessions at the next request, while their MSGX_CONSOLE_TOKENS entry is still deployed.
CREATE TABLE token_revoked (
    token_sha256 bytea PRIMARY KEY CHECK (length(token_sha256) = 32),
    client text NOT NULL,
    revoked_at timestamptz NOT NULL,
    actor text NOT NULL,
    reason text NOT NULL
);

ALTER TABLE replay_audit DROP CONSTRAINT replay_audit_action_check;
ALTER TABLE replay_audit ADD CONSTRAINT replay_audit_action_check
    CHECK (action IN ('replay', 'replay-forced', 'dlq-replay', 'dlq-skip', 'backfill-retry', 'gap-skip', 'request', 'identity-set', 'db-restored', 'kafka-reseed',
                      'acknowledge', 'note', 'token-revoke'));

-- migrate:down

DELETE FROM replay_audit WHERE action = 'token-revoke';
ALTER TABLE replay_audit DROP CONSTRAINT replay_audit_action_check;
ALTER TABLE replay_audit ADD CONSTRAINT replay_audit_action_check
    CHECK (action IN ('replay', 'replay-forced', 'dlq-replay', 'dlq-skip', 'backfill-retry', 'gap-skip', 'request', 'identity-set', 'db-restored', 'kafka-reseed',
                      'acknowledge', 'note'));
DROP TABLE token_revoked;
