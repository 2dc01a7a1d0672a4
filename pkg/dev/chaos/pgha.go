package chaos

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/msgx/msgx/pkg/daemon"
	"github.com/msgx/msgx/pkg/dev/privdb"
	"github.com/msgx/msgx/pkg/dev/stack"
	"github.com/msgx/msgx/pkg/roles"
)

// PGStandby runs a scenario on its own private primary with a streaming standby (pg_basebackup),
// every binary on a multi-host URL with target_session_attrs=read-write (Run.Standby is the standby).
type PGStandby struct {
	Sync bool // synchronous_standby_names = '*': commits wait for the standby
}

// haPair is a PGStandby scenario's primary and standby.
type haPair struct {
	primary, standby *privdb.Postgres
	sync             bool
}

// withStandbyPair starts the scenario's own primary when it asks for one (else srv as it is).
func withStandbyPair(srv *Servers, sc Scenario) (*Servers, *haPair, error) {
	if sc.PGStandby == nil {
		return srv, nil, nil
	}
	pg, err := privdb.StartPostgresWith(srv.shape.pgOptions())
	if err != nil {
		return nil, nil, fmt.Errorf("start the primary: %w", err)
	}
	return &Servers{PG: pg, MySQL: srv.MySQL, shape: srv.shape}, &haPair{primary: pg, sync: sc.PGStandby.Sync}, nil
}

// startStandby copies the prepared primary (its roles included) to a standby, waits until it
// streams (and is synchronous when asked), and returns pgURL and every role's URL naming both
// servers.
func (h *haPair) startStandby(ctx context.Context, pgURL string, a stack.Access) (string, stack.Access, error) {
	s, err := h.primary.StartStandby()
	if err != nil {
		return "", a, fmt.Errorf("start the standby: %w", err)
	}
	h.standby = s
	if err := h.primary.WaitStreaming(ctx, false); err != nil {
		return "", a, err
	}
	if h.sync {
		if err := h.primary.SetSynchronous(ctx, "*"); err != nil {
			return "", a, err
		}
		if err := h.primary.WaitStreaming(ctx, true); err != nil {
			return "", a, err
		}
	}
	if pgURL, err = h.bothHosts(pgURL); err != nil {
		return "", a, err
	}
	both := stack.Access{Prefix: a.Prefix, PG: map[roles.Role]string{}, MySQL: a.MySQL}
	for r, u := range a.PG {
		if both.PG[r], err = h.bothHosts(u); err != nil {
			return "", a, err
		}
	}
	return pgURL, both, nil
}

// bothHosts is pgURL on the primary and the standby, for the server that takes writes.
func (h *haPair) bothHosts(pgURL string) (string, error) {
	u, err := url.Parse(pgURL)
	if err != nil {
		return "", err
	}
	u.Host = fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d", h.primary.Port, h.standby.Port)
	q := u.Query()
	q.Set("target_session_attrs", "read-write")
	u.RawQuery = q.Encode()
	return u.String(), nil
}

func (h *haPair) close() error {
	var err error
	if h.standby != nil {
		err = h.standby.Close()
	}
	return errors.Join(err, h.primary.Close())
}

// harnessPool is the harness's own pool on pgURL, guarded as the binaries' pools are (it leaves
// a read-only server and refuses a stray old primary on a multi-host URL).
func harnessPool(ctx context.Context, pgURL string) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(pgURL)
	if err != nil {
		return nil, err
	}
	guard := daemon.GuardReadOnly(pc, zerolog.Nop())
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, err
	}
	guard.Attach(pool)
	return pool, nil
}

// pgFailover kills the primary while the day is written and promotes the standby: synchronous,
// or asynchronous with the WAL senders paused 4 s before (a real lag, so a lost tail).
func pgFailover(sync bool) Scenario {
	name, did := "pg-failover-sync", "the primary SIGKILLed while the day is written and its synchronous standby promoted (every binary on a multi-host URL)"
	expected := "every binary works on the promoted server; event ids name one record each; " + allHold
	if !sync {
		name = "pg-failover-lost-tail"
		did = "the primary's WAL senders paused (SIGSTOP) 4 s, the primary SIGKILLed and its asynchronous standby promoted without the last transactions"
		expected = "the lost work is done again from the mailbox; no event id names two records; the state topic never goes back; change versions Kafka holds are not re-sent; the loss is reported (log, metric); " + allHold
	}
	return Scenario{
		Name: name, Did: did, Expected: expected, PGStandby: &PGStandby{Sync: sync},
		Fault: func(ctx context.Context, r *Run) error {
			if err := Sleep(ctx, r.Feed/3); err != nil {
				return err
			}
			if !sync {
				if _, err := r.Servers.PG.PauseWALSenders(ctx); err != nil {
					return err
				}
				if err := Sleep(ctx, 4*time.Second); err != nil {
					return err
				}
				gap, err := r.Servers.PG.ReplayedLSNGap(ctx)
				if err != nil {
					return err
				}
				r.Observe("standby %d kB of WAL behind when the primary was killed", gap/1024)
			}
			at := time.Now()
			if err := r.Servers.PG.Kill(); err != nil {
				return err
			}
			if err := r.Standby.Promote(); err != nil {
				return err
			}
			r.Observe("standby promoted %s after the kill", time.Since(at).Round(10*time.Millisecond))
			r.Recovered()
			return nil
		},
		Check: func(ctx context.Context, r *Run) { checkFailover(ctx, r, sync) },
	}
}

// checkFailover checks that the dispatcher saw the new timeline and reported a lost tail
// exactly when the promoted server had lost change records Kafka held.
func checkFailover(ctx context.Context, r *Run, sync bool) {
	var timelines, beyond, held int
	if err := r.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM db_timeline), (SELECT count(*) FILTER (WHERE NOT stored) FROM msg_kafka_held), (SELECT count(*) FROM msg_kafka_held)`).
		Scan(&timelines, &beyond, &held); err != nil {
		r.Problem("read the failover records: %v", err)
		return
	}
	if timelines < 2 {
		r.Problem("the dispatcher recorded %d timeline(s), not the promotion's new one", timelines)
	}
	logs, _ := filepath.Glob(filepath.Join(r.LogDir, "dispatcher*.log"))
	reported := false
	for _, f := range logs {
		b, _ := os.ReadFile(f)
		reported = reported || strings.Contains(string(b), "Kafka holds change records this database has no event for")
	}
	switch {
	case sync && beyond > 0:
		r.Problem("a synchronous failover lost %d change records Kafka held", beyond)
	case beyond > 0 && !reported:
		r.Problem("%d change records lost by the database but no log line reports it", beyond)
	}
	r.Observe("%d timelines recorded; %d change records on Kafka unknown as sent to the promoted server, %d of them lost by it (reported: %t)", timelines, held, beyond, reported)
}

// pgStray is the lost-tail failover, then the old primary started again as it was (writable, on
// the old timeline: a stray no HA manager fenced) while the day is still written, then the
// processor and the dispatcher SIGKILLed (fresh processes connect from the multi-host URL, whose
// first host is the stray).
func pgStray() Scenario {
	sc := pgFailover(false)
	sc.Name = "pg-failover-stray"
	sc.Did = "the lost-tail failover, then the old primary started again writable on its old timeline (a stray listed first in the URL), then processor and dispatcher SIGKILLed"
	sc.Expected = "no binary works on the stray (no msgx session on it, nothing written to it); " + sc.Expected
	failover := sc.Fault
	sc.Fault = func(ctx context.Context, r *Run) error {
		if err := failover(ctx, r); err != nil {
			return err
		}
		if err := r.Servers.PG.Start(); err != nil {
			return fmt.Errorf("start the stray: %w", err)
		}
		r.Observe("old primary started again as a stray")
		for _, b := range []string{"processor", "dispatcher"} {
			if err := Sleep(ctx, 2*time.Second); err != nil {
				return err
			}
			if _, err := r.Kill(ctx, b); err != nil {
				return err
			}
		}
		r.Recovered()
		return nil
	}
	check := sc.Check
	sc.Check = func(ctx context.Context, r *Run) {
		check(ctx, r)
		var sessions int
		if err := r.Servers.PG.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'msgx-%'`, &sessions); err != nil {
			r.Problem("read the stray's sessions: %v", err)
			return
		}
		if sessions > 0 {
			r.Problem("%d msgx sessions on the stray old primary", sessions)
		}
		r.Observe("%d msgx sessions on the stray at the end", sessions)
	}
	return sc
}
