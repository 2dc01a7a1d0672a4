package chaos

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/dev/privdb"
	"github.com/msgx/msgx/pkg/dev/stack"
)

// The restore scenarios put msgx's PostgreSQL back to a backup while the day is written, each the
// way an operator restores: point-in-time recovery with archive recovery, a physical backup
// started without archive recovery, a logical dump restored into a cluster made anew, and a
// backup from before a timeline change, which needs the operator's msgxctl db restored. The
// restored server takes the suite server's port. Kafka and the mailbox are not rolled back, so
// the restored database is behind what Kafka holds; every event id must still name one record
// (docs/spec.md INV-10c).

// restoredDB is the database the scenarios restore: runOne's.
const restoredDB = "chaos"

// timelineSQL is the server's current timeline (msgx_timeline's expression, on any database).
const timelineSQL = `SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint`

// idsRolledBack is how many event ids the rolled-back batch of the physical restore draws: more
// than the sequence's WAL-logged look-ahead (32), so the restored sequence starts below them.
const idsRolledBack = 50

// Log lines of the dispatcher the scenarios look for.
const (
	logRaised      = "the database was restored behind event ids Kafka holds"
	logNewTimeline = "the database is on a new timeline"
)

func pgRestorePhysical() Scenario {
	return Scenario{
		Name: "pg-restore-physical",
		Did: fmt.Sprintf("a base backup (pg_basebackup) taken while the day is written; a batch rolled back after drawing %d event ids "+
			"(as a fenced or failed batch does); the primary SIGKILLed after more was published, and the backup started in its place "+
			"without archive recovery (same timeline); the binaries keep running", idsRolledBack),
		Expected: "the dispatcher finds Kafka holding ids of the database's generation that it did not draw, raises the restore epoch " +
			"(kind ids-behind) and sends again; event ids unique on each topic; the state topic never goes back; " + allHold,
		Fault: func(ctx context.Context, r *Run) error {
			if err := Sleep(ctx, r.Feed/4); err != nil {
				return err
			}
			bk, err := r.Servers.PG.BaseBackup()
			if err != nil {
				return err
			}
			defer func() { _ = bk.Close() }()
			r.Observe("base backup taken")
			if err := rollBackIDs(ctx, r, idsRolledBack); err != nil {
				return err
			}
			if err := Sleep(ctx, r.Feed/4); err != nil {
				return err
			}
			return restoreInPlace(ctx, r, func() error { return r.Servers.PG.RestoreBackup(bk, privdb.Recovery{}) })
		},
		Check: func(ctx context.Context, r *Run) { checkRestore(ctx, r, []string{"ids-behind"}) },
	}
}

func pgRestorePITR() Scenario {
	return Scenario{
		Name: "pg-restore-pitr",
		Did: "WAL archiving turned on (a fast restart) and a base backup taken while the day is written; the WAL archived up to a " +
			"recovery target; the primary SIGKILLed after more was published, and the backup recovered in its place to the target " +
			"(point-in-time recovery with archive recovery: a new timeline); the binaries keep running",
		Expected: "the new timeline puts every new event id above the published ones (no raise of the restore epoch); the versions " +
			"published after the target are not sent again; event ids unique on each topic; the state topic never goes back; " + allHold,
		Fault: func(ctx context.Context, r *Run) error {
			if err := Sleep(ctx, r.Feed/5); err != nil {
				return err
			}
			pg := r.Servers.PG
			if err := pg.EnableArchive(ctx); err != nil {
				return err
			}
			bk, err := pg.BaseBackup()
			if err != nil {
				return err
			}
			defer func() { _ = bk.Close() }()
			if err := Sleep(ctx, r.Feed/5); err != nil {
				return err
			}
			var target time.Time
			if err := pg.QueryRow(ctx, `SELECT clock_timestamp()`, &target); err != nil {
				return err
			}
			// The archive must hold a commit after the target: recovery stops there.
			if err := Sleep(ctx, 2*time.Second); err != nil {
				return err
			}
			if err := pg.SwitchWAL(ctx); err != nil {
				return err
			}
			r.Observe("archiving on, base backup taken, WAL archived 2s past the recovery target %s", target.UTC().Format("15:04:05.000"))
			if err := Sleep(ctx, r.Feed/5); err != nil {
				return err
			}
			return restoreInPlace(ctx, r, func() error { return pg.RestoreBackup(bk, privdb.Recovery{Target: target}) })
		},
		Check: func(ctx context.Context, r *Run) { checkRestore(ctx, r, nil) },
	}
}

func pgRestoreLogical() Scenario {
	return Scenario{
		Name: "pg-restore-logical",
		Did: "the primary brought to timeline 2 (archive recovery to the end of its WAL) while the day is written; a logical dump " +
			"(pg_dump) of msgx's database; more published; every binary stopped, the primary SIGKILLed, a cluster made anew by initdb " +
			"on its port (another system identifier, timeline 1), the dump restored (pg_restore), the binaries started",
		Expected: "the dispatcher takes the database for restored (not for an old primary: its own records name a higher timeline, " +
			"and another system identifier), raises the restore epoch above every id Kafka holds and sends again; event ids unique " +
			"on each topic; the state topic never goes back; " + allHold,
		Fault: func(ctx context.Context, r *Run) error {
			// Nothing here reads through r.Pool: the harness's guarded pool refuses a server on an
			// older timeline than it has seen, and it must see the restored one only.
			if err := Sleep(ctx, r.Feed/6); err != nil {
				return err
			}
			pg := r.Servers.PG
			if err := pg.NewTimeline(); err != nil {
				return err
			}
			var timeline int64
			if err := pg.QueryRow(ctx, timelineSQL, &timeline); err != nil {
				return err
			}
			if err := Sleep(ctx, r.Feed/6); err != nil {
				return err
			}
			dump, err := pg.Dump(restoredDB)
			if err != nil {
				return err
			}
			defer func() { _ = dump.Close() }()
			r.Observe("the primary on timeline %d; dump taken", timeline)
			if err := Sleep(ctx, r.Feed/6); err != nil {
				return err
			}
			if err := stopBinaries(r); err != nil {
				return err
			}
			at := time.Now()
			if err := pg.Kill(); err != nil {
				return err
			}
			if err := pg.Reinit(); err != nil {
				return err
			}
			// The runbook's order on a new cluster: the database, msgxctl roles apply, pg_restore.
			if err := pg.CreateDatabase(ctx, restoredDB); err != nil {
				return err
			}
			if err := r.Access.ReapplyPG(ctx, pg.SuperURL(restoredDB)); err != nil {
				return err
			}
			if err := pg.RestoreDump(dump, restoredDB); err != nil {
				return err
			}
			if err := startBinaries(ctx, r); err != nil {
				return err
			}
			r.Recovered()
			r.Observe("binaries stopped, new cluster made and the dump restored in %s", time.Since(at).Round(100*time.Millisecond))
			return nil
		},
		Check: func(ctx context.Context, r *Run) { checkRestore(ctx, r, []string{"older-timeline", "other-cluster"}) },
	}
}

func pgRestoreConfirmed() Scenario {
	return Scenario{
		Name: "pg-restore-confirmed",
		Did: "a base backup taken while the day is written; the primary then brought to timeline 2 (as a failover does) and more " +
			"published; every binary stopped, the primary SIGKILLed, the backup started in its place without archive recovery " +
			"(timeline 1, the same cluster), the binaries started; once the dispatcher refuses, msgxctl db restored run",
		Expected: "the dispatcher cannot tell the restored database from an old primary: it sends nothing and records the refusal; " +
			"after msgxctl db restored it raises the restore epoch (kind confirmed) and sends again; event ids unique on each topic; " +
			"the state topic never goes back; " + allHold,
		Fault: func(ctx context.Context, r *Run) error {
			// Nothing here reads through r.Pool (see pg-restore-logical).
			if err := Sleep(ctx, r.Feed/5); err != nil {
				return err
			}
			pg := r.Servers.PG
			bk, err := pg.BaseBackup()
			if err != nil {
				return err
			}
			defer func() { _ = bk.Close() }()
			if err := Sleep(ctx, r.Feed/6); err != nil {
				return err
			}
			if err := pg.NewTimeline(); err != nil {
				return err
			}
			if err := Sleep(ctx, r.Feed/6); err != nil {
				return err
			}
			if err := stopBinaries(r); err != nil {
				return err
			}
			if err := restoreInPlace(ctx, r, func() error { return pg.RestoreBackup(bk, privdb.Recovery{}) }); err != nil {
				return err
			}
			if err := startBinaries(ctx, r); err != nil {
				return err
			}
			at := time.Now()
			refused, err := waitRefused(ctx, r, time.Minute)
			if err != nil {
				return err
			}
			out, err := r.Stack.RunTool(ctx, "msgxctl", "db", "restored", "--actor", "chaos",
				"--reason", "the base backup restored after the primary moved to timeline 2")
			if err != nil {
				return fmt.Errorf("msgxctl db restored: %w: %s", err, out)
			}
			r.Recovered()
			r.Observe("the dispatcher refused %s after the binaries started (Kafka's highest event id %d); msgxctl db restored: %s",
				time.Since(at).Round(100*time.Millisecond), refused, strings.TrimSpace(string(out)))
			return nil
		},
		Check: func(ctx context.Context, r *Run) { checkRestore(ctx, r, []string{"confirmed"}) },
	}
}

// stopBinaries stops every binary: the runbook's first step, and needed when the restored server
// is on a lower timeline than a running process has seen (its guard would refuse it).
func stopBinaries(r *Run) error {
	for _, b := range stack.Binaries {
		if err := r.Stack.StopProc(b); err != nil {
			return fmt.Errorf("stop %s: %w", b, err)
		}
	}
	return nil
}

func startBinaries(ctx context.Context, r *Run) error {
	for _, b := range stack.Binaries {
		if _, err := r.Stack.StartProc(ctx, b); err != nil {
			return fmt.Errorf("start %s: %w", b, err)
		}
	}
	return nil
}

// waitRefused waits until the dispatcher recorded that it refuses to send from the restored
// database, and returns the highest event id Kafka held then.
func waitRefused(ctx context.Context, r *Run, timeout time.Duration) (int64, error) {
	conn, err := pgx.Connect(ctx, r.Servers.PG.SuperURL(restoredDB))
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	for deadline := time.Now().Add(timeout); ; {
		var id *int64
		if err := conn.QueryRow(ctx, `SELECT refused_kafka_event_id FROM db_epoch`).Scan(&id); err != nil {
			return 0, err
		}
		if id != nil {
			return *id, nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("the dispatcher did not refuse the restored database within %s", timeout)
		}
		if err := Sleep(ctx, 200*time.Millisecond); err != nil {
			return 0, err
		}
	}
}

// rollBackIDs draws n event ids in a transaction that rolls back: what a batch that fails or is
// fenced after its COPY leaves behind (a sequence does not roll back).
func rollBackIDs(ctx context.Context, r *Run, n int) error {
	conn, err := pgx.Connect(ctx, r.Servers.PG.SuperURL(restoredDB))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var last int64
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT max(nextval('msg_event_event_id_seq')) FROM generate_series(1, $1)`, n).Scan(&last); err != nil {
			return err
		}
		return errRollBack
	})
	if !errors.Is(err, errRollBack) {
		return fmt.Errorf("draw event ids: %w", err)
	}
	r.Observe("a batch drew %d event ids up to sequence %d and rolled back", n, last)
	return nil
}

var errRollBack = errors.New("roll back")

// restoreInPlace SIGKILLs the primary and runs restore, which starts the restored server on its
// port, and observes the server it came back as.
func restoreInPlace(ctx context.Context, r *Run, restore func() error) error {
	at := time.Now()
	if err := r.Servers.PG.Kill(); err != nil {
		return err
	}
	if err := restore(); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	r.Recovered()
	var timeline, seq int64
	if err := r.Servers.PG.QueryRow(ctx, timelineSQL, &timeline); err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, r.Servers.PG.SuperURL(restoredDB))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, `SELECT last_value FROM msg_event_event_id_seq`).Scan(&seq); err != nil {
		return err
	}
	r.Observe("primary killed and the backup restored in its place in %s: timeline %d, event id sequence at %d",
		time.Since(at).Round(100*time.Millisecond), timeline, seq)
	return nil
}

// checkRestore checks what the dispatcher did after the restore: the raise of the restore epoch
// (one of kinds; none when kinds is nil), its log line, and that it sent events of the database's
// generation since.
func checkRestore(ctx context.Context, r *Run, kinds []string) {
	var got []string
	var epoch, generation, renumbered, sentSince, held, beyond int64
	rows, err := r.Pool.Query(ctx, `SELECT kind, renumbered FROM db_restore ORDER BY epoch`)
	if err != nil {
		r.Problem("read the raises of the restore epoch: %v", err)
		return
	}
	var k string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&k, &n}, func() error {
		got, renumbered = append(got, k), renumbered+n
		return nil
	}); err != nil {
		r.Problem("read the raises of the restore epoch: %v", err)
		return
	}
	err = r.Pool.QueryRow(ctx, `SELECT (SELECT epoch FROM db_epoch), msgx_id_generation(),
		(SELECT count(*) FROM msg_event_delivery WHERE status = 'SENT' AND event_id >> 40 = msgx_id_generation()),
		(SELECT count(*) FROM msg_kafka_held), (SELECT count(*) FILTER (WHERE NOT stored) FROM msg_kafka_held)`).
		Scan(&epoch, &generation, &sentSince, &held, &beyond)
	if err != nil {
		r.Problem("read the restore epoch: %v", err)
		return
	}
	logs, _ := filepath.Glob(filepath.Join(r.LogDir, "dispatcher*.log"))
	raisedLogged, timelineLogged := 0, 0
	for _, f := range logs {
		n, _ := countLines(f, logRaised)
		raisedLogged += n
		n, _ = countLines(f, logNewTimeline)
		timelineLogged += n
	}
	switch {
	case kinds == nil && len(got) > 0:
		r.Problem("the restore epoch was raised (%s): the new timeline should have been enough", strings.Join(got, ", "))
	case kinds != nil && len(got) != 1:
		r.Problem("the restore epoch was raised %d times (%s), want once (%s)", len(got), strings.Join(got, ", "), strings.Join(kinds, " or "))
	case kinds != nil && !slices.Contains(kinds, got[0]):
		r.Problem("the restore epoch was raised as %s, want %s", got[0], strings.Join(kinds, " or "))
	case kinds != nil && raisedLogged == 0:
		r.Problem("no dispatcher log line %q", logRaised)
	}
	if sentSince == 0 {
		r.Problem("the dispatcher sent no event of the database's id generation %d: it is not sending again", generation)
	}
	r.Observe("restore epoch %d (raises: %s), id generation %d, %d unsent events renumbered; %d events of generation %d sent since; "+
		"%d change records on Kafka unknown as sent, %d of them without their event in the database; dispatcher log lines: %d raise, %d new timeline",
		epoch, orNone(got), generation, renumbered, sentSince, generation, held, beyond, raisedLogged, timelineLogged)
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
