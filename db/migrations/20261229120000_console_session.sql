-- migrate:up

-- The console's sessions live server-side (docs/security.md): the cookie carries a random id,
-- this table its SHA-256 with the user, scope and the hash of the token that logged in. A
-- session counts only while it is unrevoked, unexpired and its token is still configured, so
-- logout, removing the token and a restart with a new token list all end it.
CREATE TABLE console_session (
    session_sha256 bytea PRIMARY KEY,
    user_name      text NOT NULL,
    scope          text NOT NULL,
    token_sha256   bytea NOT NULL,
    created_at     timestamptz NOT NULL,
    expires_at     timestamptz NOT NULL,
    revoked_at     timestamptz
);
CREATE INDEX console_session_expires ON console_session (expires_at);

-- Operators' notes and acknowledgements on dead letters (the console's triage; audited by who
-- and when). A message may carry several; the latest acknowledgement wins.
CREATE TABLE console_note (
    note_id      bigserial PRIMARY KEY,
    msg_id       bigint NOT NULL,
    actor        text NOT NULL,
    note         text NOT NULL,
    acknowledged boolean NOT NULL,
    at           timestamptz NOT NULL
);
CREATE INDEX console_note_msg ON console_note (msg_id, note_id);

-- A request form's one-time id (rendered into the form): a form posted again (reload, back,
-- double click) finds its id taken and shows the request it registered instead of registering
-- another (which would expire the first).
CREATE TABLE console_form (
    form_id    text PRIMARY KEY,
    req_id     bigint,
    created_at timestamptz NOT NULL
);

-- The console's triage lists replayable SKIPPED no-match messages beside the DEAD ones; this
-- index finds them without reading every SKIPPED row.
CREATE INDEX proc_state_no_match ON proc_state (msg_id) WHERE status = 'SKIPPED' AND reason LIKE 'no-match:%';

-- migrate:down

DROP INDEX proc_state_no_match;
DROP TABLE console_form;
DROP TABLE console_note;
DROP TABLE console_session;
