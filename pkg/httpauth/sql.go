package httpauth

// The revoked tokens' statements (token_revoked), bound parameters only.
const (
	revokeSQL = `INSERT INTO token_revoked (token_sha256, client, revoked_at, actor, reason) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (token_sha256) DO NOTHING`
	revokeAuditSQL = `INSERT INTO replay_audit (action, actor, reason, selector, ids, at) VALUES ('token-revoke', $1, $2, $3, '{}', $4)`
	revocationsSQL = `SELECT token_sha256, client, revoked_at, actor, reason FROM token_revoked ORDER BY revoked_at`
	// providerIdentitiesSQL: the identities (SHA-256 of issuer and subject) of a user of the
	// console's OpenID Connect log-in, from their sessions.
	providerIdentitiesSQL = `SELECT DISTINCT token_sha256 FROM console_session WHERE user_name = $1 AND oidc_groups IS NOT NULL`
)
