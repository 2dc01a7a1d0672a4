// Package roles is the single source of msgx's database roles and their grants (docs/spec.md §14): one
// PostgreSQL role per binary, the migration owner, a read-only role and an operator role for
// msgxctl, and one MySQL/MariaDB user per binary that touches the AODB mailbox. ApplyPG and
// ApplyMySQL create what is missing and grant exactly what the tables below list, idempotently;
// `msgxctl roles apply` runs them, tests run them over a fresh schema, and deploy/k8s runs the
// command in its migration Job.
//
// Leadership rows are guarded by row-level security (migration leader_lease_rls): a role may
// insert or update only the leader_lease row that leader_lease_member maps its database role
// to, so ingest's credentials cannot fence the processor. ApplyPG fills that mapping.
package roles

import (
	"fmt"
	"slices"

	"github.com/msgx/msgx/pkg/flight"
)

// Role is one database identity of msgx, independent of the name it has on a server.
type Role string

const (
	Owner      Role = "owner"      // the migration Job: owns the schema, runs DDL
	Ingest     Role = "ingest"     // cmd/ingest
	Processor  Role = "processor"  // cmd/processor
	Dispatcher Role = "dispatcher" // cmd/dispatcher
	Jobs       Role = "jobs"       // cmd/jobs
	Reader     Role = "reader"     // msgxctl status and show: reads, never writes
	Admin      Role = "admin"      // msgxctl operators: replay, dlq, backfill retry, history
	Console    Role = "console"    // cmd/console: reads what it shows; replay, dlq, requests
)

// PGRoles are the PostgreSQL roles in the order ApplyPG creates them.
var PGRoles = []Role{Owner, Ingest, Processor, Dispatcher, Jobs, Reader, Admin, Console}

// MySQLRoles are the mailbox users: the binaries that read or mark cminmsgs or write coutmsgs.
var MySQLRoles = []Role{Ingest, Processor, Jobs}

// LeaseRoles are the roles that hold a leader_lease row (pkg/leader), named as in that table.
var LeaseRoles = []Role{Ingest, Processor, Dispatcher, Jobs}

// DefaultPrefix makes the production names: msgx_ingest, msgx_processor, …
const DefaultPrefix = "msgx_"

// Name is the server-side name of role r under prefix ("" means DefaultPrefix).
func Name(prefix string, r Role) string {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return prefix + string(r)
}

// Parse returns the Role called s ("ingest", "reader", …).
func Parse(s string) (Role, error) {
	r := Role(s)
	if !slices.Contains(PGRoles, r) {
		return "", fmt.Errorf("unknown role %q (one of %v)", s, PGRoles)
	}
	return r, nil
}

// pgGrant gives privileges on tables (USAGE on sequences, EXECUTE on functions) to one role.
type pgGrant struct {
	role    Role
	privs   string // "SELECT, INSERT", …; "USAGE" for sequences; "EXECUTE" for functions, named with their argument types
	objects []string
}

// flightTables are the flight state: the flight row and its detail tables.
var flightTables = append([]string{"flight"}, flight.DetailTables()...)

// allTables is every table of the schema (the read-only role reads them all).
var allTables = append(slices.Clone(flightTables), "flight_history", "proc_state", "proc_state_hst",
	"inbox_cursor", "inbox_gap", "msg_event", "msg_event_delivered", "msg_event_delivery", "msg_state_log", "msg_state_out", "msg_state_sent", "msg_identity", "ref_master", "req_track",
	"req_open_day", "req_seqn", "req_heal_tally", "schd_snap_log", "leader_lease", "leader_lease_member", "job_state", "replay_audit", "identity_rule", "msg_attempt", "console_session", "console_note", "console_form", "db_timeline", "msg_kafka_held", "marker_debt", "marker_owed", "marker_abandoned", "db_epoch", "db_restore", "token_revoked", "dispatch_send", "schema_migrations")

func with(a []string, more ...string) []string { return append(slices.Clone(a), more...) }

// pgGrants is what each PostgreSQL role may do. Comments say which code needs it; a grant
// nobody needs is a defect, and so is a missing one (pkg/roles tests run the stages as their
// roles).
var pgGrants = []pgGrant{
	// every binary: leader election and fencing (Lease.Check reads its row FOR SHARE, which needs
	// UPDATE); row-level security limits INSERT/UPDATE to the role's own row.
	{Ingest, "SELECT, INSERT, UPDATE", []string{"leader_lease"}},
	{Processor, "SELECT, INSERT, UPDATE", []string{"leader_lease"}},
	{Dispatcher, "SELECT, INSERT, UPDATE", []string{"leader_lease"}},
	{Jobs, "SELECT, INSERT, UPDATE", []string{"leader_lease"}},
	{Ingest, "SELECT", []string{"leader_lease_member"}},
	{Processor, "SELECT", []string{"leader_lease_member"}},
	{Dispatcher, "SELECT", []string{"leader_lease_member"}},
	{Jobs, "SELECT", []string{"leader_lease_member"}},

	// ingest: proc_state enqueue (ON CONFLICT DO NOTHING), watermark and gap ledger; the read
	// API reads flights.
	{Ingest, "SELECT, INSERT", []string{"proc_state"}},
	{Ingest, "SELECT, INSERT, UPDATE", []string{"inbox_cursor", "inbox_gap"}},
	{Ingest, "SELECT", flightTables},
	{Ingest, "SELECT", []string{"token_revoked"}}, // the API refuses revoked tokens (httpauth.RevokedSet)

	// processor: the pump and everything one message's transaction writes. flight_history is
	// read for every FLID not stored yet (a purged FLID's version continues).
	{Processor, "SELECT, UPDATE", []string{"proc_state"}},
	{Processor, "SELECT", []string{"inbox_cursor", "flight_history"}},
	{Processor, "SELECT, INSERT", []string{"msg_event", "schd_snap_log"}},
	{Processor, "INSERT", []string{"msg_state_log"}}, // a flight's newest state of the transaction
	// processor: identity bindings (a reused key is bound again, the keys are locked FOR UPDATE);
	// the identity rule stored by the first start (pkg/identity; LOCK TABLE needs UPDATE).
	{Processor, "SELECT, INSERT, UPDATE", []string{"msg_identity", "identity_rule"}},
	// processor: the attempt history, with each outcome; an attempt that ended without one is
	// recorded for the messages of its batch that have no CRASHED row for it (read).
	{Processor, "SELECT, INSERT", []string{"msg_attempt"}},
	{Processor, "SELECT, INSERT, UPDATE, DELETE", with(flightTables, "ref_master")},
	// processor: the RESP guard locks open requests and closes one DONE; the automatic triggers
	// (bootstrap, self-heal) register requests (SEQN counter, superseding; the req_track row with origin, actor and reason
	// is their audit record) and count
	// unknown flights (docs/requests.md).
	{Processor, "SELECT, INSERT, UPDATE", []string{"req_track", "req_heal_tally"}},
	// processor: a registration takes the days it asks for, a closed request releases its own.
	{Processor, "SELECT, INSERT, UPDATE, DELETE", []string{"req_open_day"}},
	{Processor, "SELECT, UPDATE", []string{"req_seqn"}},
	// processor: the marker debt of each batch (written with the terminal status, deleted by the
	// immediate marker).
	{Processor, "SELECT, INSERT, DELETE", []string{"marker_debt"}},
	// processor: the immediate marker's guard locks its batch's debt row (FOR UPDATE SKIP LOCKED,
	// INV-8d), which PostgreSQL allows only with UPDATE on some column; it updates none.
	{Processor, "UPDATE (finished_at)", []string{"marker_debt"}},
	{Processor, "SELECT", []string{"marker_owed"}}, // the marker-owed gauge
	{Processor, "USAGE", []string{"msg_event_event_id_seq", "schd_snap_log_snap_id_seq", "req_track_req_id_seq"}},

	// dispatcher: the outbox, status only (and ids at a raise of the restore epoch); the state
	// topic's sent versions (upserted).
	{Dispatcher, "SELECT, UPDATE", []string{"msg_event"}},
	// dispatcher: the change topic's delivery cursor, moved one row per transaction.
	{Dispatcher, "SELECT, INSERT", []string{"msg_event_delivered"}},
	// dispatcher: the fold moves KAFKA:schd events a previous release's processor wrote to
	// msg_event (while the Deployments roll) into msg_state_out, through a function that runs as
	// its owner and removes only those.
	{Dispatcher, "EXECUTE", []string{"msgx_take_legacy_states()"}},
	// dispatcher: the state log folded into one row per FLID, whose delivery it records.
	{Dispatcher, "SELECT, UPDATE, DELETE", []string{"msg_state_log"}},
	{Dispatcher, "SELECT, INSERT, UPDATE", []string{"msg_state_out"}},
	{Dispatcher, "SELECT, INSERT, UPDATE", []string{"msg_state_sent"}},
	{Dispatcher, "SELECT (watermark)", []string{"inbox_cursor"}}, // the heartbeat
	// dispatcher: the timelines it ran on (a promotion), and the change records the changes
	// topic holds beyond what the database knew as sent (read at the start of each term).
	{Dispatcher, "SELECT, INSERT", []string{"db_timeline"}},
	{Dispatcher, "SELECT, INSERT, DELETE", []string{"msg_kafka_held"}},
	// dispatcher: what it records of the database at each term start (server seen, an operator's
	// confirmation cleared) and the raises of the restore epoch; the raise itself goes through
	// msgx_raise_epoch (it rewrites msgx_event_id, which only its owner may), and the renumbering
	// of the unsent events draws their new ids (the sequence; its last value is compared with the
	// ids Kafka holds).
	{Dispatcher, "SELECT, UPDATE", []string{"db_epoch"}},
	{Dispatcher, "SELECT, INSERT", []string{"db_restore"}},
	{Dispatcher, "EXECUTE", []string{"msgx_raise_epoch(bigint)"}},
	{Dispatcher, "USAGE", []string{"msg_event_event_id_seq"}},
	// dispatcher: enqueued_at of a sample of the sent events' messages
	// (msgx_end_to_end_lag_seconds), those two columns only (never raw).
	{Dispatcher, "SELECT (msg_id, enqueued_at)", []string{"proc_state"}},
	// dispatcher: the report of its sends (blocked since, the brokers concerned) the operators'
	// status reads, one row per target, upserted under the lease.
	{Dispatcher, "SELECT, INSERT, UPDATE", []string{"dispatch_send"}},

	// jobs: backfill, history sweep (flight_history + TOMBSTONE + delete under PIPELINE_LOCK),
	// retention and archive, request timeouts, job bookkeeping.
	{Jobs, "SELECT, INSERT, UPDATE, DELETE", []string{"proc_state", "proc_state_hst"}},
	// jobs: the backfill moves batch debts past their grace onto their rows.
	{Jobs, "SELECT, DELETE", []string{"marker_debt"}},
	{Jobs, "SELECT", []string{"marker_owed", "marker_abandoned"}}, // the backfill gauges
	// jobs: a deleted proc_state_hst row takes its attempts along (the trigger msg_attempt_cascade).
	{Jobs, "SELECT, DELETE", []string{"msg_attempt"}},
	{Jobs, "SELECT, DELETE", with(flightTables, "schd_snap_log")},
	{Jobs, "UPDATE", []string{"flight"}}, // the history sweep locks its candidates (FOR UPDATE OF f)
	{Jobs, "SELECT, INSERT, DELETE", []string{"flight_history", "msg_event"}},
	{Jobs, "SELECT, DELETE", []string{"msg_event_delivered"}}, // retention of the cursor's old moves
	{Jobs, "INSERT", []string{"msg_state_log"}},               // a purge's TOMBSTONE state
	{Jobs, "SELECT, DELETE", []string{"msg_state_out"}},       // retention
	{Jobs, "SELECT, UPDATE, DELETE", []string{"req_track"}},
	// jobs: a send renumbers a request whose SEQN the mailbox shows in use (after a failover
	// that lost the counter's last advances) and raises the counter.
	{Jobs, "SELECT, UPDATE", []string{"req_seqn"}},
	{Jobs, "SELECT, DELETE", []string{"req_open_day"}}, // an expired request releases its days
	{Jobs, "SELECT, INSERT, UPDATE", []string{"job_state"}},
	{Jobs, "SELECT, INSERT", []string{"replay_audit"}},
	{Jobs, "SELECT, DELETE", []string{"msg_identity"}}, // identity retention (window + margin)
	{Jobs, "SELECT", []string{"identity_rule"}},
	{Jobs, "USAGE", []string{"flight_history_history_id_seq", "msg_event_event_id_seq", "replay_audit_audit_id_seq"}},

	// reader (msgxctl status, show): read everything, write nothing.
	{Reader, "SELECT", allTables},

	// admin (msgxctl operators): read everything; the audited actions.
	{Admin, "SELECT", allTables},
	{Admin, "UPDATE", []string{"proc_state", "msg_event", "msg_state_out", "inbox_cursor", "inbox_gap", "job_state"}},
	{Admin, "INSERT, DELETE", []string{"proc_state", "proc_state_hst"}}, // backfill retry of archived rows
	{Admin, "DELETE", []string{"msg_attempt"}},                          // the trigger msg_attempt_cascade on that DELETE (it keeps rows moved back)
	{Admin, "INSERT", []string{"msg_attempt"}},                          // a replay writes the attempt a row kept on itself (outcome_epoch) first
	{Admin, "INSERT", []string{"replay_audit", "inbox_gap"}},
	{Admin, "INSERT, UPDATE", []string{"identity_rule"}}, // msgxctl identity set
	{Admin, "INSERT, UPDATE", []string{"req_track"}},     // msgxctl request registers (the jobs stage sends)
	{Admin, "UPDATE", []string{"req_seqn"}},
	{Admin, "INSERT, UPDATE", []string{"req_open_day"}},   // a registration takes its days
	{Admin, "INSERT", []string{"msg_state_log"}},          // msgxctl kafka reseed enqueues state events
	{Admin, "UPDATE, DELETE", []string{"msg_state_sent"}}, // and lowers the record of what the state topic holds
	{Admin, "USAGE", []string{"replay_audit_audit_id_seq", "req_track_req_id_seq", "msg_event_event_id_seq"}},
	{Admin, "EXECUTE", []string{"msgx_lock_debts(bigint[])"}}, // a replay locks the debts naming its rows first (INV-8d)
	// msgxctl db restored: an operator's confirmation of a restore, nothing else of db_epoch.
	{Admin, "UPDATE (confirmed_by, confirmed_reason, confirmed_at)", []string{"db_epoch"}},
	// msgxctl token revoke: the revoked token (httpauth.Revoke), audited.
	{Admin, "INSERT", []string{"token_revoked"}},

	// console (cmd/console): reads every table it shows; writes only through the functions
	// msgxctl uses, each with its audit row: procstate.Replay (proc_state, msg_attempt), outbox Replay/Skip
	// (msg_event, msg_state_out), request RegisterAudited (req_track, req_seqn, req_open_day). No backfill, gap or history
	// action, no DELETE.
	{Console, "SELECT", allTables},
	{Console, "UPDATE", []string{"proc_state", "msg_event", "msg_state_out"}},
	{Console, "INSERT", []string{"replay_audit"}},
	{Console, "INSERT", []string{"msg_attempt"}}, // procstate.Replay writes the attempt a row kept on itself first
	{Console, "INSERT, UPDATE", []string{"req_track"}},
	{Console, "UPDATE", []string{"req_seqn"}},
	{Console, "INSERT, UPDATE", []string{"req_open_day"}},
	{Console, "USAGE", []string{"replay_audit_audit_id_seq", "req_track_req_id_seq"}},
	{Console, "EXECUTE", []string{"msgx_lock_debts(bigint[])"}}, // as msgxctl's replay
	// console: its server-side sessions (login inserts, logout revokes, expired rows are deleted
	// at login), the request forms' one-time ids and the operators' notes on dead letters.
	{Console, "INSERT, UPDATE, DELETE", []string{"console_session", "console_form"}},
	{Console, "INSERT", []string{"console_note"}},
	{Console, "USAGE", []string{"console_note_note_id_seq"}},
}

// pgMember makes a role a member of one of PostgreSQL's predefined roles (server-wide).
type pgMember struct {
	role Role
	of   string
}

// pgMembers are the predefined roles msgx's roles are members of. ApplyPG grants these and takes
// any other membership in the same predefined roles from msgx's roles.
var pgMembers = []pgMember{
	// processor and jobs: the standbys' replay positions (pg_stat_replication), which a marker
	// waits for (pkg/replication, MSGX_MARKER_STANDBYS). The least predefined role that shows
	// them; it also shows every session's statistics and the text of its current statement.
	{Processor, "pg_read_all_stats"},
	{Jobs, "pg_read_all_stats"},
}

// pgManaged are the predefined roles of pgMembers, each once.
func pgManaged() []string {
	var out []string
	for _, m := range pgMembers {
		if !slices.Contains(out, m.of) {
			out = append(out, m.of)
		}
	}
	return out
}

// mysqlGrant is one GRANT on a mailbox table; columns empty means the whole table.
type mysqlGrant struct {
	role  Role
	privs string // "SELECT (CMINMSGS_ID, …), UPDATE (…)" or "INSERT"
	table string
}

// mysqlGrants are docs/spec.md §14's mailbox grants. The AODB team owns the mailbox: msgx gets column
// grants on two tables and nothing else. The marker is CMINMSGS_DATE_PROCESSED (+ CMINMSGS_STATUS
// when MSGX_MAILBOX_PROCESSED_VALUE is set), written only NULL → value (INV-7); the marker
// UPDATE's WHERE and the backfill's SELECT … FOR UPDATE read CMINMSGS_ID and the marker columns.
//
// The request writer (RQFD/RQRD into coutmsgs, docs/requests.md) runs only in cmd/jobs (the
// request sweep sends what msgxctl and the triggers registered), so only the jobs user touches
// coutmsgs: the look-up before a send reads the message, ROUTINGID and DATE_INSERTED; WAITING
// reads DATE_SENT.
var mysqlGrants = []mysqlGrant{
	// ingest: poll cminmsgs after W; the compat entry POST /cminmsgs/send inserts into it.
	{Ingest, "SELECT", "cminmsgs"},
	{Ingest, "INSERT (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_SUBSYSTEM_NAME, " +
		"CMINMSGS_SUBSYSTEM_SEQUENCE, CMINMSGS_SUBSYSTEM_DATE_SENT, CMINMSGS_SUBSYSTEM_SUBTYPE, " +
		"CMINMSGS_SUBSYSTEM_TYPE, CMINMSGS_STATUS)", "cminmsgs"},
	// processor: the immediate marker after each terminal commit.
	{Processor, markerPrivs, "cminmsgs"},
	// jobs: the backfill sweep's markers; the request writer's coutmsgs rows.
	{Jobs, markerPrivs, "cminmsgs"},
	{Jobs, "SELECT (COUTMSGS_ID, COUTMSGS_CLOB_MSG, COUTMSGS_DATE_INSERTED, COUTMSGS_DATE_SENT, ROUTINGID), " +
		"INSERT (COUTMSGS_CLOB_MSG, COUTMSGS_DATE_INSERTED, ROUTINGID)", "coutmsgs"},
}

const markerPrivs = "SELECT (CMINMSGS_ID, CMINMSGS_DATE_PROCESSED, CMINMSGS_STATUS), " +
	"UPDATE (CMINMSGS_DATE_PROCESSED, CMINMSGS_STATUS)"
