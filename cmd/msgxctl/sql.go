package main

// The SQL of msgxctl's own reads (the commands that change state call the packages that own it).

// showSQL reads one message, live or archived, without its text (raw_length says how long).
const showSQL = `
SELECT to_jsonb(p) - 'raw' - 'raw_sha256' || jsonb_build_object('raw_sha256', encode(raw_sha256, 'hex'),
       'raw_length', length(raw)) FROM proc_state p WHERE msg_id = $1
UNION ALL
SELECT to_jsonb(h) - 'raw' - 'raw_sha256' || jsonb_build_object('raw_sha256', encode(raw_sha256, 'hex'),
       'raw_length', length(raw), 'archived', true) FROM proc_state_hst h WHERE msg_id = $1`

// showRawSQL reads one message's text (NULL once the raw retention cleared it).
const showRawSQL = `SELECT raw FROM proc_state WHERE msg_id = $1 UNION ALL SELECT raw FROM proc_state_hst WHERE msg_id = $1`

// showAuditSQL finds the audit rows naming a message (dlq-* rows name event ids instead).
const showAuditSQL = `SELECT action, actor, reason, at FROM replay_audit
 WHERE $1 = ANY(ids) AND action IN ('replay', 'backfill-retry', 'gap-skip') ORDER BY at`
