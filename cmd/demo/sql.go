package main

// The demo's queries: it observes the pipeline as the databases' administrator.
const (
	// bootstrapSQL: the processor's bootstrap request (req_track.origin 'bootstrap').
	bootstrapSQL = `SELECT req_id, scope, status, scope_from, scope_to FROM req_track WHERE origin = 'bootstrap' ORDER BY req_id LIMIT 1`
	// activeFlightsSQL counts the ACTIVE flights.
	activeFlightsSQL = `SELECT count(*) FROM flight WHERE state = 'ACTIVE'`
	// skippedByReasonSQL counts the SKIPPED messages by the first word of their reason.
	skippedByReasonSQL = `SELECT split_part(reason, ':', 1), count(*) FROM proc_state WHERE status = 'SKIPPED' GROUP BY 1`
	// requestsSQL counts the requests by type and final state.
	requestsSQL = `SELECT req_type || ' ' || status, count(*) FROM req_track GROUP BY 1`
	// sentByTargetSQL counts the SENT msg_event rows by target (the state topic's are in
	// msg_state_out, one per flight).
	sentByTargetSQL = `SELECT target, count(*) FROM msg_event_delivery WHERE status = 'SENT' GROUP BY 1`
	// enqueuedSQL: when ingest enqueued each message (its watermark passed the id).
	enqueuedSQL = `SELECT msg_id, enqueued_at FROM proc_state`
	// sessionsSQL lists the binaries' PostgreSQL sessions (application_name msgx-<binary>[-…])
	// with the role each logged in as.
	sessionsSQL = `SELECT DISTINCT application_name, usename::text FROM pg_stat_activity
 WHERE datname = current_database() AND application_name LIKE 'msgx-%'`
	// mailboxUsersSQL lists the accounts connected to the mailbox server (MySQL).
	mailboxUsersSQL = `SELECT DISTINCT USER FROM information_schema.PROCESSLIST WHERE DB = DATABASE()`
	// earlyOutcomeSQL is a message's status and reason.
	earlyOutcomeSQL = `SELECT status || ' ' || COALESCE(reason, '') FROM proc_state WHERE msg_id = $1`
	// insertEarlySQL writes the early update (MySQL), as the AODB writes a FLOP STND.
	insertEarlySQL = `INSERT INTO cminmsgs (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS,
  CMINMSGS_SUBSYSTEM_NAME, CMINMSGS_SUBSYSTEM_SEQUENCE, CMINMSGS_SUBSYSTEM_DATE_SENT,
  CMINMSGS_SUBSYSTEM_SUBTYPE, CMINMSGS_SUBSYSTEM_TYPE) VALUES (?, ?, 'VALID', ?, ?, ?, 'STND', 'FLOP')`
)
