package privdb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// StartStandby makes a streaming standby of the running cluster p (pg_basebackup, standby.signal
// and primary_conninfo written by -R) on a port of its own, made as p is (a TLS cluster's standby
// streams over verified TLS and serves TLS with its own copy of the certificate), and starts it.
func (p *Postgres) StartStandby() (*Postgres, error) {
	dir, err := newDir("pg-standby")
	if err != nil {
		return nil, err
	}
	s := &Postgres{opts: p.opts, dir: dir, data: filepath.Join(dir, "data")}
	if err := s.startStandby(p); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Postgres) startStandby(primary *Postgres) error {
	var conf string
	if t := s.opts.TLS; t != nil {
		cert, key, err := t.install(s.dir)
		if err != nil {
			return err
		}
		if err := copyFile(t.CAFile, filepath.Join(s.dir, "ca.pem"), 0o644); err != nil {
			return err
		}
		conf = fmt.Sprintf("ssl_cert_file = '%s'\nssl_key_file = '%s'\n", cert, key)
	}
	if err := chown(s.dir, "postgres"); err != nil {
		return err
	}
	if err := primary.baseBackup(s.data, s.replicationConninfo(primary), "-R"); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	s.Port = port
	// Later lines override the primary's port, socket directory and certificate files.
	conf = fmt.Sprintf("\nport = %d\nunix_socket_directories = '%s'\nhot_standby = on\n%s", s.Port, s.dir, conf)
	f, err := os.OpenFile(filepath.Join(s.data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(conf); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := chown(s.data, "postgres"); err != nil {
		return err
	}
	return s.Start()
}

// StartWithStandby starts a private cluster made as opts say and a streaming standby of it, and
// waits until the standby streams (asynchronously). On an error nothing is left running.
func StartWithStandby(ctx context.Context, opts Options) (primary, standby *Postgres, err error) {
	if primary, err = StartPostgresWith(opts); err != nil {
		return nil, nil, err
	}
	if standby, err = primary.StartStandby(); err != nil {
		return nil, nil, errors.Join(err, primary.Close())
	}
	if err := primary.WaitStreaming(ctx, false); err != nil {
		return nil, nil, errors.Join(err, standby.Close(), primary.Close())
	}
	return primary, standby, nil
}

// replicationConninfo is how standby s reaches primary: the superuser over TCP, with its password
// and verified TLS (against s's copy of the CA) when the cluster has them. pg_basebackup -R keeps
// it as the standby's primary_conninfo.
func (s *Postgres) replicationConninfo(primary *Postgres) string {
	ci := fmt.Sprintf("host=127.0.0.1 port=%d user=postgres", primary.Port)
	if s.opts.Password != "" {
		ci += " password=" + s.opts.Password
	}
	if s.opts.TLS != nil {
		ci += " sslmode=verify-full sslrootcert=" + filepath.Join(s.dir, "ca.pem")
	}
	return ci
}

// Promote promotes the standby and waits until it accepts writes.
func (p *Postgres) Promote() error {
	if err := pgCtl(p.data, "-w", "-t", "60", "promote"); err != nil {
		return fmt.Errorf("promote: %w", err)
	}
	return nil
}

// Exec runs statements as the superuser on database postgres.
func (p *Postgres) Exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, p.AdminURL())
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// SetSynchronous makes commits wait for any standby (names "*") or for none ("").
func (p *Postgres) SetSynchronous(ctx context.Context, names string) error {
	if err := p.Exec(ctx, fmt.Sprintf("ALTER SYSTEM SET synchronous_standby_names = '%s'", names)); err != nil {
		return err
	}
	return p.Exec(ctx, "SELECT pg_reload_conf()")
}

// WaitStreaming waits until a standby streams from the primary p (and, when sync, is synchronous).
func (p *Postgres) WaitStreaming(ctx context.Context, sync bool) error {
	conn, err := pgx.Connect(ctx, p.AdminURL())
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	deadline := time.Now().Add(60 * time.Second)
	for {
		var n int
		err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming' AND ($1 = false OR sync_state = 'sync')`, sync).Scan(&n)
		if err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no standby streaming from port %d", p.Port)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// PauseWALSenders stops (SIGSTOP) the primary's WAL senders: the standby falls behind from now
// on. It returns a function that resumes them.
func (p *Postgres) PauseWALSenders(ctx context.Context) (func(), error) {
	conn, err := pgx.Connect(ctx, p.AdminURL())
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT pid FROM pg_stat_replication`)
	if err != nil {
		return nil, err
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, err
	}
	if len(pids) == 0 {
		return nil, fmt.Errorf("no WAL sender on port %d", p.Port)
	}
	for _, pid := range pids {
		if err := syscall.Kill(int(pid), syscall.SIGSTOP); err != nil {
			return nil, fmt.Errorf("SIGSTOP WAL sender %d: %w", pid, err)
		}
	}
	return func() {
		for _, pid := range pids {
			_ = syscall.Kill(int(pid), syscall.SIGCONT)
		}
	}, nil
}

// ReplayedLSNGap is how many bytes of WAL the primary wrote that the standby has not replayed.
func (p *Postgres) ReplayedLSNGap(ctx context.Context) (int64, error) {
	conn, err := pgx.Connect(ctx, p.AdminURL())
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var gap int64
	err = conn.QueryRow(ctx, `SELECT coalesce(max(pg_current_wal_lsn() - replay_lsn), 0)::bigint FROM pg_stat_replication`).Scan(&gap)
	return gap, err
}

// Kill SIGKILLs the cluster's postmaster and every child of it (a crash of the whole server,
// paused WAL senders included), and waits until the postmaster is gone.
func (p *Postgres) Kill() error {
	b, err := os.ReadFile(filepath.Join(p.data, "postmaster.pid"))
	if err != nil {
		return fmt.Errorf("read postmaster.pid: %w", err)
	}
	var pid int
	if _, err := fmt.Sscanf(string(b), "%d", &pid); err != nil {
		return fmt.Errorf("read postmaster.pid: %w", err)
	}
	children, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("SIGKILL postmaster %d: %w", pid, err)
	}
	for _, f := range strings.Fields(string(children)) {
		if c, err := strconv.Atoi(f); err == nil {
			_ = syscall.Kill(c, syscall.SIGKILL)
		}
	}
	for deadline := time.Now().Add(30 * time.Second); alive(pid) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	_ = os.Remove(filepath.Join(p.data, "postmaster.pid"))
	return nil
}

// QueryRow runs a one-value query as the superuser on database postgres.
func (p *Postgres) QueryRow(ctx context.Context, sql string, into any) error {
	conn, err := pgx.Connect(ctx, p.AdminURL())
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.QueryRow(ctx, sql).Scan(into)
}
