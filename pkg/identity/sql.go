package identity

// Every SQL statement of the identity rule, with bound parameters only; time comes in as a
// parameter (the injected clock).
const (
	loadSQL = `SELECT window_seconds, include_day, set_at, set_by, reason FROM identity_rule`

	// setSQL writes the rule (first processor start, msgxctl identity set).
	setSQL = `
INSERT INTO identity_rule (window_seconds, include_day, set_at, set_by, reason) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (one) DO UPDATE SET window_seconds = EXCLUDED.window_seconds, include_day = EXCLUDED.include_day,
       set_at = EXCLUDED.set_at, set_by = EXCLUDED.set_by, reason = EXCLUDED.reason`

	// lockSQL serialises writers of the rule (the row may not exist yet).
	lockSQL = `LOCK TABLE identity_rule IN SHARE ROW EXCLUSIVE MODE`

	auditSQL = `
INSERT INTO replay_audit (action, actor, reason, selector, ids, at) VALUES ('identity-set', $1, $2, $3, '{}', $4)`
)
