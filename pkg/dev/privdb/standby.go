package privdb

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// StartStandby makes a streaming standby of the running plaintext cluster p (pg_basebackup,
// standby.signal and primary_conninfo written by -R) on a port of its own, and starts it.
func (p *Postgres) StartStandby() (*Postgres, error) {
	dir, err := newDir("pg-standby")
	if err != nil {
		return nil, err
	}
	s := &Postgres{opts: p.opts, dir: dir, data: filepath.Join(dir, "data")}
	if err := p.baseBackup(dir, s.data, "-R"); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if s.Port, err = freePort(); err != nil {
		return nil, err
	}
	// Later lines override the primary's port and socket directory.
	conf := fmt.Sprintf("\nport = %d\nunix_socket_directories = '%s'\nhot_standby = on\n", s.Port, dir)
	f, err := os.OpenFile(filepath.Join(s.data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	if _, err := f.WriteString(conf); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	if err := chown(s.data, "postgres"); err != nil {
		return nil, err
	}
	if err := s.Start(); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
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
