package privdb

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
)

// Backups and restores of a private plaintext cluster, as an operator makes them: WAL archiving,
// a base backup (pg_basebackup), a restore of it in place of the cluster with or without archive
// recovery, a logical dump (pg_dump) and its restore into a cluster made anew by initdb. The
// restored server takes the cluster's port, so clients reconnect to the same address.

// Backup is a base backup of a cluster: a copy of its data directory with the WAL it needs.
type Backup struct {
	dir  string
	data string
}

// Close removes the backup.
func (b *Backup) Close() error { return os.RemoveAll(b.dir) }

// archiveDir is where the cluster archives its WAL once EnableArchive ran.
func (p *Postgres) archiveDir() string { return filepath.Join(p.dir, "archive") }

// EnableArchive turns WAL archiving on (archive_mode: a fast restart) into a directory of the
// cluster's, so that a base backup taken after it can be recovered to any later point.
func (p *Postgres) EnableArchive(ctx context.Context) error {
	if err := os.MkdirAll(p.archiveDir(), 0o700); err != nil {
		return err
	}
	if err := chown(p.archiveDir(), "postgres"); err != nil {
		return err
	}
	for _, stmt := range []string{
		"ALTER SYSTEM SET archive_mode = on",
		fmt.Sprintf("ALTER SYSTEM SET archive_command = 'test ! -f %s/%%f && cp %%p %s/%%f'", p.archiveDir(), p.archiveDir()),
	} {
		if err := p.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("enable archiving: %w", err)
		}
	}
	return p.Restart()
}

// SwitchWAL closes the current WAL segment and waits until the archiver has archived it: every
// commit before the call is then in the archive.
func (p *Postgres) SwitchWAL(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, p.AdminURL())
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var seg string
	if err := conn.QueryRow(ctx, `SELECT pg_walfile_name(pg_switch_wal())`).Scan(&seg); err != nil {
		return fmt.Errorf("switch WAL: %w", err)
	}
	for deadline := time.Now().Add(60 * time.Second); ; {
		var archived bool
		if err := conn.QueryRow(ctx, `SELECT coalesce(last_archived_wal >= $1, false) FROM pg_stat_archiver`, seg).Scan(&archived); err != nil {
			return err
		}
		if archived {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("WAL segment %s not archived within 60s", seg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// BaseBackup takes a base backup of the running cluster (pg_basebackup, its WAL streamed along,
// so the backup can be started without an archive).
func (p *Postgres) BaseBackup() (*Backup, error) {
	dir, err := newDir("pg-backup")
	if err != nil {
		return nil, err
	}
	b := &Backup{dir: dir, data: filepath.Join(dir, "data")}
	ci, err := p.toolConninfo(dir, "postgres")
	if err != nil {
		_ = b.Close()
		return nil, err
	}
	if err := p.baseBackup(b.data, ci); err != nil {
		_ = b.Close()
		return nil, err
	}
	return b, nil
}

// baseBackup copies the running cluster into data (pg_basebackup over conninfo, its WAL streamed
// along, a fast checkpoint), with the extra options.
func (p *Postgres) baseBackup(data, conninfo string, extra ...string) error {
	bb, err := pgBin("pg_basebackup")
	if err != nil {
		return err
	}
	args := append([]string{bb, "-D", data, "-d", conninfo, "-X", "stream", "--no-sync", "-c", "fast"}, extra...)
	if err := runAs("postgres", args...); err != nil {
		return fmt.Errorf("pg_basebackup: %w", err)
	}
	return nil
}

// toolConninfo is how a PostgreSQL client tool run as postgres from dir reaches database db of the
// cluster: the superuser over TCP, with its password and verified TLS when the cluster has them
// (against a copy of the CA in dir, which the postgres user can read).
func (p *Postgres) toolConninfo(dir, db string) (string, error) {
	ci := fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=%s", p.Port, db)
	if p.opts.Password != "" {
		ci += " password=" + p.opts.Password
	}
	if p.opts.TLS != nil {
		ca := filepath.Join(dir, "ca.pem")
		if err := copyFile(p.opts.TLS.CAFile, ca, 0o644); err != nil {
			return "", err
		}
		ci += " sslmode=verify-full sslrootcert=" + ca
	}
	return ci, chown(dir, "postgres")
}

// Recovery says how a restored backup starts.
type Recovery struct {
	// Target, when set, is a point-in-time recovery with archive recovery to that time (from the
	// cluster's WAL archive, EnableArchive): the server ends it on a new timeline. Zero: the backup
	// starts without archive recovery (crash recovery to the end of the backup, on the backup's
	// timeline).
	Target time.Time
}

// RestoreBackup replaces the stopped (or killed) cluster's data with backup b and starts it on
// the cluster's port, as r says.
func (p *Postgres) RestoreBackup(b *Backup, r Recovery) error {
	if err := p.Stop("immediate"); err != nil {
		return err
	}
	if err := os.RemoveAll(p.data); err != nil {
		return err
	}
	if out, err := exec.Command("cp", "-a", b.data, p.data).CombinedOutput(); err != nil {
		return fmt.Errorf("copy the backup: %w: %s", err, out)
	}
	if r.Target.IsZero() {
		if err := chown(p.data, "postgres"); err != nil {
			return err
		}
		return p.Start()
	}
	return p.startRecovery(fmt.Sprintf("restore_command = 'cp %s/%%f %%p'\nrecovery_target_time = '%s'\nrecovery_target_action = 'promote'\n",
		p.archiveDir(), r.Target.UTC().Format("2006-01-02 15:04:05.999999-07")))
}

// NewTimeline stops the cluster cleanly and starts it with archive recovery to the end of its own
// WAL: the server comes back on the next timeline, as after a promotion, with nothing lost.
func (p *Postgres) NewTimeline() error {
	if err := p.Stop("fast"); err != nil {
		return err
	}
	// No archive (its WAL is in pg_wal); no target left from an earlier point-in-time recovery.
	return p.startRecovery("restore_command = '/bin/false'\nrecovery_target_time = ''\n")
}

// startRecovery starts the stopped cluster in archive recovery (recovery.signal) with the
// recovery settings conf, and waits until the recovery ended on a new timeline and the server
// accepts writes (it accepts read-only connections before: hot standby).
func (p *Postgres) startRecovery(conf string) error {
	if err := appendFile(filepath.Join(p.data, "postgresql.conf"), "\n"+conf); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(p.data, "recovery.signal"), nil, 0o600); err != nil {
		return err
	}
	if err := chown(p.data, "postgres"); err != nil {
		return err
	}
	if err := p.Start(); err != nil {
		return err
	}
	return p.waitPromoted()
}

// waitPromoted waits until the server is out of recovery.
func (p *Postgres) waitPromoted() error {
	ctx := context.Background()
	for deadline := time.Now().Add(60 * time.Second); ; {
		var recovering bool
		if err := p.QueryRow(ctx, `SELECT pg_is_in_recovery()`, &recovering); err != nil {
			return fmt.Errorf("wait for the end of recovery: %w", err)
		}
		if !recovering {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("PostgreSQL on port %d still in recovery after 60s", p.Port)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Dump is a logical dump (pg_dump, custom format) of one database.
type Dump struct {
	File string
	dir  string
}

// Close removes the dump.
func (d *Dump) Close() error { return os.RemoveAll(d.dir) }

// Dump writes a logical dump of database db.
func (p *Postgres) Dump(db string) (*Dump, error) {
	dir, err := newDir("pg-dump")
	if err != nil {
		return nil, err
	}
	d := &Dump{File: filepath.Join(dir, db+".dump"), dir: dir}
	ci, err := p.toolConninfo(dir, db)
	if err != nil {
		_ = d.Close()
		return nil, err
	}
	bin, err := pgBin("pg_dump")
	if err != nil {
		return nil, err
	}
	if err := runAs("postgres", bin, "-d", ci, "-Fc", "-f", d.File); err != nil {
		_ = d.Close()
		return nil, fmt.Errorf("pg_dump: %w", err)
	}
	return d, nil
}

// Reinit replaces the stopped (or killed) cluster with one made anew by initdb on the same port:
// another system identifier, timeline 1, no databases of its own.
func (p *Postgres) Reinit() error {
	if err := p.Stop("immediate"); err != nil {
		return err
	}
	if err := os.RemoveAll(p.data); err != nil {
		return err
	}
	port := p.Port
	if err := p.init(); err != nil {
		return err
	}
	p.Port = port
	if err := appendFile(filepath.Join(p.data, "postgresql.conf"), fmt.Sprintf("\nport = %d\n", port)); err != nil {
		return err
	}
	return p.Start()
}

// CreateDatabase creates database db.
func (p *Postgres) CreateDatabase(ctx context.Context, db string) error {
	if err := p.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{db}.Sanitize()); err != nil {
		return fmt.Errorf("create database %s: %w", db, err)
	}
	return nil
}

// RestoreDump restores dump d into database db, which exists (pg_restore, stopping at the first
// error).
func (p *Postgres) RestoreDump(d *Dump, db string) error {
	bin, err := pgBin("pg_restore")
	if err != nil {
		return err
	}
	ci, err := p.toolConninfo(d.dir, db)
	if err != nil {
		return err
	}
	if err := runAs("postgres", bin, "--exit-on-error", "-d", ci, d.File); err != nil {
		return fmt.Errorf("pg_restore: %w", err)
	}
	return nil
}

func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
