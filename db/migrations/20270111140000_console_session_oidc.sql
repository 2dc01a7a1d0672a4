-- migrate:up

-- A session opened through the console's OpenID Connect log-in keeps the user's groups as the
-- provider's ID token gave them: its scope is what the current group mapping gives them, and a
-- console started without OIDC refuses it. NULL: a token's session. Its token_sha256 is the
-- SHA-256 of the provider's issuer and the user's subject.
ALTER TABLE console_session ADD COLUMN oidc_groups text[];

-- migrate:down

DELETE FROM console_session WHERE oidc_groups IS NOT NULL;
ALTER TABLE console_session DROP COLUMN oidc_groups;
