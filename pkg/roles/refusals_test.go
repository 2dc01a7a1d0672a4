package roles_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/mailbox"
	"github.com/msgx/msgx/pkg/procstate"
	"github.com/msgx/msgx/pkg/roles"
	"github.com/msgx/msgx/pkg/status"
)

// exec runs one statement as pool's role.
func exec(pool *pgxpool.Pool, sql string, args ...any) error {
	_, err := pool.Exec(ctx, sql, args...)
	return err
}

// seedFlight gives the schema one flight, one outbox event and one finished message (as the
// superuser, so the refusals below are about the roles, not about empty tables).
func (b *bundle) seedFlight(t *testing.T) {
	t.Helper()
	for _, stmt := range []string{
		`INSERT INTO flight (flid, created_at, updated_at) VALUES (15, $1, $1)`,
		`INSERT INTO proc_state (msg_id, raw, status, enqueued_at, finished_at, error_class, reason)
		      VALUES (1, 'x', 'DEAD', $1, $1, 'INFRA', 'test')`,
		`INSERT INTO msg_event (target, partition_key, event_type, state_version, payload, created_at)
		      VALUES ('KAFKA:msg', '15', 'UPSERT', 1, '{}', $1)`,
	} {
		_, err := b.db.Pool.Exec(ctx, stmt, t0)
		require.NoError(t, err)
	}
}

// TestIngestRefusals: ingest cannot write flight state or the pipeline's outcomes, and its mailbox
// user cannot write markers or touch coutmsgs.
func TestIngestRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seedFlight(t)
	p := b.pools[roles.Ingest]
	for _, stmt := range []string{
		`INSERT INTO flight (flid, created_at, updated_at) VALUES (16, now(), now())`,
		`UPDATE flight SET stnd = 'X' WHERE flid = 15`,
		`DELETE FROM flight WHERE flid = 15`,
		`INSERT INTO flight_stand (flid, psno, ord) VALUES (15, 1, 1)`,
		`UPDATE proc_state SET status = 'PENDING' WHERE msg_id = 1`,
		`INSERT INTO msg_event (target, partition_key, event_type, state_version, payload, created_at) VALUES ('KAFKA:msg', '1', 'UPSERT', 1, '{}', now())`,
		`SELECT count(*) FROM msg_event`,
		`INSERT INTO flight_history (flid, state_version, final_state, purge_reason, purged_at) VALUES (1, 1, '{}', 'x', now())`,
		`INSERT INTO leader_lease_member VALUES (current_user, 'processor')`,
		`CREATE TABLE ingest_was_here (x int)`,
	} {
		requireDenied(t, exec(p, stmt), stmt)
	}
	id, err := b.boxes[roles.Ingest].Insert(ctx, mailbox.NewMessage{Text: flopCncl(1)})
	require.NoError(t, err, "the compat entry's insert is ingest's")
	_, err = b.boxes[roles.Ingest].MarkIf(ctx, []int64{id}, t0, "", func(_ context.Context, ids []int64) ([]int64, error) { return ids, nil })
	requireDenied(t, err, "ingest writes no marker")
	_, err = b.boxes[roles.Ingest].MarkEach(ctx, []int64{id}, t0, "")
	requireDenied(t, err, "ingest writes no marker (backfill path)")
	requireDenied(t, mysqlExec(t, b.users.DSN(roles.Ingest), "INSERT INTO coutmsgs (COUTMSGS_DATE_INSERTED, ROUTINGID) VALUES (NOW(), 'AODB')"))
	requireDenied(t, mysqlExec(t, b.users.DSN(roles.Ingest), "DELETE FROM cminmsgs"))
}

// TestProcessorRefusals: the processor cannot insert into (or read the text of) the mailbox,
// nor move the watermark, nor delete history.
func TestProcessorRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seedFlight(t)
	_, err := b.boxes[roles.Processor].Insert(ctx, mailbox.NewMessage{Text: flopCncl(1)})
	requireDenied(t, err, "the processor inserts nothing into cminmsgs")
	_, err = b.boxes[roles.Processor].ReadAfter(ctx, 0, 10)
	requireDenied(t, err, "the processor does not read the mailbox's text")
	requireDenied(t, mysqlExec(t, b.users.DSN(roles.Processor), "UPDATE cminmsgs SET CMINMSGS_CLOB_MSG = 'x'"))
	requireDenied(t, mysqlExec(t, b.users.DSN(roles.Processor), "INSERT INTO coutmsgs (COUTMSGS_DATE_INSERTED, ROUTINGID) VALUES (NOW(), 'AODB')"))
	p := b.pools[roles.Processor]
	for _, stmt := range []string{
		`UPDATE inbox_cursor SET watermark = 100`,
		`INSERT INTO proc_state (msg_id, enqueued_at) VALUES (2, now())`,
		`DELETE FROM flight_history`,
		`DELETE FROM proc_state`,
		`UPDATE msg_event SET status = 'SENT', sent_at = now()`,
		`INSERT INTO replay_audit (action, actor, reason, selector, ids, at) VALUES ('replay', 'p', 'r', 's', '{1}', now())`,
	} {
		requireDenied(t, exec(p, stmt), stmt)
	}
}

// TestDispatcherRefusals: the dispatcher has no mailbox user at all and cannot read the
// messages' PostgreSQL copy or flight state; it only reads and marks the outbox.
func TestDispatcherRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seedFlight(t)
	cfg, err := mysql.ParseDSN(b.users.DSN(roles.Ingest))
	require.NoError(t, err)
	cfg.User = roles.Name(b.users.Prefix, roles.Dispatcher)
	requireDenied(t, mysqlExec(t, cfg.FormatDSN(), "SELECT CMINMSGS_ID FROM cminmsgs"), "no dispatcher user in the mailbox")
	p := b.pools[roles.Dispatcher]
	for _, stmt := range []string{
		`SELECT raw FROM proc_state`,
		`SELECT raw FROM proc_state_hst`,
		`SELECT count(*) FROM flight`,
		`INSERT INTO msg_event (target, partition_key, event_type, state_version, payload, created_at) VALUES ('KAFKA:msg', '1', 'UPSERT', 1, '{}', now())`,
		`DELETE FROM msg_event`,
	} {
		requireDenied(t, exec(p, stmt), stmt)
	}
	require.NoError(t, exec(p, `UPDATE msg_event SET attempts = attempts + 1 WHERE partition_key = '15'`))
	// The end-to-end lag reads when each message was enqueued, nothing else of proc_state.
	require.NoError(t, exec(p, `SELECT msg_id, enqueued_at FROM proc_state`))
}

// TestLeaderLeaseOwnRowOnly: no role can take, bump or lock another role's leader_lease row —
// not through the Elector, not by hand — and msgxctl's roles none at all.
func TestLeaderLeaseOwnRowOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	binaries := roles.LeaseRoles
	// The real Elector connected as the wrong role: first when the row does not exist (INSERT),
	// then when it does and its owner is down (the lock is free; UPDATE of the row).
	intrude := func(phase string) {
		for _, as := range binaries {
			for _, victim := range binaries {
				if victim != as {
					err := campaignAs(t, b.roles.URL(as), victim)
					require.ErrorContains(t, err, "bump leader epoch", "%s: %s as %s", phase, as, victim)
					require.ErrorContains(t, err, "row-level security", "%s: %s as %s", phase, as, victim)
				}
			}
		}
	}
	intrude("no rows yet")
	epochs := map[roles.Role]int64{}
	for _, r := range binaries {
		l, stop := b.leadUntil(t, r)
		stop()
		epochs[r] = l.Epoch
	}
	intrude("owners down")

	// By hand, while every owner leads.
	for _, r := range binaries {
		epochs[r] = b.lead(t, r).Epoch
	}
	for _, as := range []roles.Role{roles.Ingest, roles.Processor, roles.Dispatcher, roles.Jobs, roles.Reader, roles.Admin} {
		p := b.pools[as]
		for _, victim := range binaries {
			if victim == as {
				continue
			}
			name := fmt.Sprintf("%s on %s's row", as, victim)
			tag, err := p.Exec(ctx, `UPDATE leader_lease SET epoch = epoch + 1 WHERE role = $1`, string(victim))
			if err == nil {
				require.Zero(t, tag.RowsAffected(), "%s: the row is not theirs to update", name)
			} else {
				requireDenied(t, err, name)
			}
			requireDenied(t, exec(p, `INSERT INTO leader_lease VALUES ($1, 99, 'x', 0, now(), now())
				ON CONFLICT (role) DO UPDATE SET epoch = leader_lease.epoch + 1`, string(victim)), name+": upsert")
			requireDenied(t, exec(p, `DELETE FROM leader_lease WHERE role = $1`, string(victim)), name+": delete")
			// Nor can a role hold off the victim's takeovers with a share lock on its row.
			err = pgx.BeginFunc(ctx, p, func(tx pgx.Tx) error {
				return leader.Lease{Role: string(victim), Epoch: epochs[victim]}.Check(ctx, tx)
			})
			if !errors.Is(err, leader.ErrFenced) {
				requireDenied(t, err, name+": FOR SHARE")
			}
		}
	}
	for r, want := range epochs {
		var got int64
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT epoch FROM leader_lease WHERE role = $1`, string(r)).Scan(&got))
		require.Equal(t, want, got, "%s's epoch is untouched", r)
	}
}

// TestReaderCannotReplay: msgxctl's read-only role reads the status and a message but cannot
// replay or skip anything; the operator role can.
func TestReaderCannotReplay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seedFlight(t)
	_, err := status.Read(ctx, b.pools[roles.Reader], t0)
	require.NoError(t, err)
	req := procstate.ReplayRequest{IDs: []int64{1}, Actor: "test", Reason: "role test", Now: t0}
	_, err = procstate.Replay(ctx, b.pools[roles.Reader], req)
	requireDenied(t, err, "reader replays nothing")
	for _, stmt := range []string{
		`UPDATE msg_event SET status = 'PENDING'`,
		`INSERT INTO replay_audit (action, actor, reason, selector, ids, at) VALUES ('replay', 'p', 'r', 's', '{1}', now())`,
		`UPDATE job_state SET requested_at = now()`,
		`UPDATE inbox_cursor SET watermark = 100`,
	} {
		requireDenied(t, exec(b.pools[roles.Reader], stmt), stmt)
	}
	var st string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT status FROM proc_state WHERE msg_id = 1`).Scan(&st))
	require.Equal(t, "DEAD", st)

	rep, err := procstate.Replay(ctx, b.pools[roles.Admin], req)
	require.NoError(t, err, "the operator role replays")
	require.Len(t, rep.Items, 1)
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT status FROM proc_state WHERE msg_id = 1`).Scan(&st))
	require.Equal(t, "PENDING", st)
}

func mysqlExec(t *testing.T, dsn, stmt string) error {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	require.NoError(t, err)
	defer db.Close()
	_, err = db.ExecContext(ctx, stmt)
	return err
}

// TestConsoleActsOnlyThroughItsFunctions: the console's role replays a message (the audited
// function) but changes nothing else: no watermark, gap, job, history or mailbox-side table.
func TestConsoleActsOnlyThroughItsFunctions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seedFlight(t)
	pool := b.pools[roles.Console]
	_, err := status.Read(ctx, pool, t0)
	require.NoError(t, err, "the console reads the status")
	for _, stmt := range []string{
		`UPDATE inbox_cursor SET watermark = 100`,
		`INSERT INTO inbox_gap (msg_id, first_seen_at, skipped_at, reprobe_until) VALUES (99, now(), now(), now())`,
		`UPDATE job_state SET requested_at = now()`,
		`DELETE FROM proc_state`,
		`DELETE FROM flight`,
		`UPDATE flight SET flno = 'X'`,
		`INSERT INTO proc_state (msg_id, raw, status, enqueued_at) VALUES (50, 'x', 'PENDING', now())`,
		`UPDATE replay_audit SET actor = 'someone else'`,
		`DELETE FROM replay_audit`,
		`UPDATE marker_debt SET ids = '{2}'`,
	} {
		requireDenied(t, exec(pool, stmt), stmt)
	}
	_, err = b.db.Pool.Exec(ctx, `INSERT INTO marker_debt (ids, finished_at) VALUES ('{1,2}', $1)`, t0)
	require.NoError(t, err)
	rep, err := procstate.Replay(ctx, pool, procstate.ReplayRequest{IDs: []int64{1}, Actor: "console:op", Reason: "role test", Now: t0})
	require.NoError(t, err, "the console replays through procstate.Replay")
	require.Len(t, rep.Items, 1)
	var debt []int64
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT ids FROM marker_debt`).Scan(&debt))
	require.Equal(t, []int64{2}, debt, "the reopened row left its batch's debt (INV-8d), without a grant on marker_debt")
	var actor string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT actor FROM replay_audit WHERE action = 'replay'`).Scan(&actor))
	require.Equal(t, "console:op", actor)
}

// TestJobsRefusals: the jobs stage writes markers, requests and history but cannot create flight
// state, move the watermark or the gap ledger, change an event's delivery or the audit, nor
// write message text, delete mailbox rows or change a request already written.
func TestJobsRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seedFlight(t)
	p := b.pools[roles.Jobs]
	for _, stmt := range []string{
		`INSERT INTO flight (flid, created_at, updated_at) VALUES (16, now(), now())`,
		`UPDATE inbox_cursor SET watermark = 100`,
		`INSERT INTO inbox_gap (msg_id, first_seen_at, skipped_at, reprobe_until) VALUES (99, now(), now(), now())`,
		`UPDATE msg_event SET status = 'SENT', sent_at = now()`,
		`UPDATE replay_audit SET actor = 'someone else'`,
		`DELETE FROM replay_audit`,
		`INSERT INTO msg_identity (msg_id) VALUES (1)`,
	} {
		requireDenied(t, exec(p, stmt), stmt)
	}
	dsn := b.users.DSN(roles.Jobs)
	for _, stmt := range []string{
		"UPDATE cminmsgs SET CMINMSGS_CLOB_MSG = 'x'",
		"INSERT INTO cminmsgs (CMINMSGS_CLOB_MSG) VALUES ('<MSG/>')",
		"DELETE FROM cminmsgs",
		"UPDATE coutmsgs SET COUTMSGS_CLOB_MSG = 'x'",
		"DELETE FROM coutmsgs",
	} {
		requireDenied(t, mysqlExec(t, dsn, stmt), stmt)
	}
	require.NoError(t, exec(p, `UPDATE proc_state SET backfill_next_at = now() WHERE msg_id = 1`), "the backfill's own columns are jobs'")
}
