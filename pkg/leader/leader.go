// Package leader elects one active instance per role with a PostgreSQL advisory lock, fenced by
// an epoch.
//
//	standby ──pg_try_advisory_lock ok──▶ epoch+1 in leader_lease ──▶ leader (work runs)
//	   ▲                                                                 │
//	   └──── lock ping fails / work fenced / work ends / steps down ◀────┘
//
// The lock lives on a dedicated session whose idle_session_timeout is the lease: the leader
// pings it well within that time, so a leader that dies, is paused (SIGSTOP) or is cut off loses
// the session, and with it the lock, after at most the timeout. A standby then takes the lock and
// increments the role's epoch in leader_lease.
//
// Fencing: every protected transaction calls Lease.Check, which reads the role's epoch FOR SHARE
// and fails with ErrFenced when it is not the lease's own. The new leader's epoch increment
// conflicts with that share lock, so an old leader's transaction either commits before the
// takeover completes or is rejected; it can never commit after a new leader started work.
//
// Lock keys are (hashtext(current_schema()), role key), so deployments in different schemas of
// one database do not contend. Key 0 of a schema is the migration lock, key 1 PIPELINE_LOCK.
package leader

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/rs/zerolog"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/envconf"
	"github.com/msgx/msgx/pkg/obs"
)

// ErrFenced means the lease's epoch is no longer the role's current one: another instance took
// over. The work must stop without committing.
var ErrFenced = errors.New("leadership lost: epoch fenced by a newer leader")

// ErrPooler means the lock session is not pinned to one backend (a transaction-pooling proxy
// such as PgBouncer in transaction mode sits in between); session advisory locks cannot work.
var ErrPooler = errors.New("leader lock is not held by this session's backend: a transaction-pooling proxy? connect msgx directly to PostgreSQL or through a session-pooling proxy")

// ErrStepDown, returned by the work (wrapping its cause), gives the leadership up: the instance
// goes back to standby and campaigns again only after StepDownPause, so that another instance,
// which may be able to do the work, takes it first.
var ErrStepDown = errors.New("stepping down")

// Refused reports whether err is PostgreSQL refusing this process a privilege (42501). The
// grants are per release (roles apply), so while a rollout or a rollback runs another release's
// grants, the other release's instances may be allowed what this one is refused: work that
// meets a refusal steps down (ErrStepDown) rather than keep the lock and retry.
func Refused(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42501"
}

// PipelineLockKey is the second key of PIPELINE_LOCK (see PipelineLockSQL).
const PipelineLockKey = 1

// PipelineLockSQL takes PIPELINE_LOCK for the rest of the transaction (INV-18): every
// flight-writing transaction (processor, history sweep) runs it first.
const PipelineLockSQL = `SELECT pg_advisory_xact_lock(hashtext(current_schema()), 1)`

// roleKeys are the second lock keys of each role's leader lock.
var roleKeys = map[string]int32{"ingest": 11, "processor": 12, "dispatcher": 13, "jobs": 14}

const (
	tryLockSQL = `SELECT pg_try_advisory_lock(hashtext(current_schema()), $1)`
	// holdsLockSQL is true only if this very backend holds the lock: through a transaction-pooling
	// proxy the statement may land on another backend, and then it is false.
	holdsLockSQL = `SELECT EXISTS (
	SELECT 1 FROM pg_locks
	 WHERE locktype = 'advisory' AND granted AND pid = pg_backend_pid()
	   AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
	   AND classid = hashtext(current_schema())::oid AND objid = $1::oid AND objsubid = 2)`
	bumpEpochSQL = `
INSERT INTO leader_lease AS l (role, epoch, holder, backend_pid, acquired_at, renewed_at)
VALUES ($1, 1, $2, pg_backend_pid(), $3, $3)
ON CONFLICT (role) DO UPDATE
   SET epoch = l.epoch + 1, holder = EXCLUDED.holder, backend_pid = EXCLUDED.backend_pid,
       acquired_at = EXCLUDED.acquired_at, renewed_at = EXCLUDED.renewed_at
RETURNING epoch`
	checkEpochSQL = `SELECT epoch FROM leader_lease WHERE role = $1 FOR SHARE`
	// renewSQL records a successful lock ping in the row of the current term, so operators see
	// how long ago a leader last proved it holds the lock (msgxctl status: renewal age).
	renewSQL = `UPDATE leader_lease SET renewed_at = $3 WHERE role = $1 AND epoch = $2`
	// renewLockTimeout bounds the renewal's wait behind a protected transaction's share lock on
	// the row: the renewal is informational and never holds up the work for long.
	renewLockTimeout = `SET LOCAL lock_timeout = '500ms'`
)

// Lease is one term of leadership.
type Lease struct {
	Role  string
	Epoch int64
	// Beat and Quit, when set, record that the named stage loop of this term ticked, or ended
	// (pkg/daemon's liveness: /healthz fails when a running loop stops ticking). Loops call
	// Tick once per iteration, and Stopped when they end before the term does.
	Beat func(loop string)
	Quit func(loop string)
}

// Tick records one iteration of the named stage loop (no-op without Beat).
func (l Lease) Tick(loop string) {
	if l.Beat != nil {
		l.Beat(loop)
	}
}

// Stopped records that the named loop ended: it is no longer expected to tick (no-op without
// Quit).
func (l Lease) Stopped(loop string) {
	if l.Quit != nil {
		l.Quit(loop)
	}
}

// Check fails with ErrFenced unless the lease is still the role's current term. Call it inside
// every protected transaction, before its writes; the share lock it takes holds off a takeover
// until the transaction ends.
func (l Lease) Check(ctx context.Context, tx pgx.Tx) error {
	var epoch int64
	err := tx.QueryRow(ctx, checkEpochSQL, l.Role).Scan(&epoch)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrFenced
	}
	if err != nil {
		return fmt.Errorf("check leader epoch: %w", err)
	}
	if epoch != l.Epoch {
		return ErrFenced
	}
	return nil
}

// Fence is what a protected transaction checks before its writes: Lease is the one
// implementation; tests may hand in another.
type Fence interface {
	Check(ctx context.Context, tx pgx.Tx) error
}

var _ Fence = Lease{}

// Beginner starts a transaction (a pool, a connection or a transaction for a nested one).
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Fenced runs fn in a transaction of db that first checks fence: the transaction commits only
// if this instance still leads (fn's error or ErrFenced roll it back).
func Fenced(ctx context.Context, db Beginner, fence Fence, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if err := fence.Check(ctx, tx); err != nil {
			return err
		}
		return fn(tx)
	})
}

// Config tunes an Elector. SessionTimeout and Retry are settings (variable, default:
// pkg/envconf, docs/configuration.md); the binary sets Role and Holder.
type Config struct {
	Role   string
	Holder string // who we are, for leader_lease and logs (pod name, host:pid)
	// SessionTimeout is the idle_session_timeout of the lock session: the lease.
	SessionTimeout time.Duration `envconfig:"MSGX_LEADER_SESSION_TIMEOUT" default:"5s" desc:"the leader's lock session is ended by PostgreSQL when silent this long (a paused or cut-off leader loses the lock); standbys take over after it"`
	// Retry is the standby's lock attempt period.
	Retry time.Duration `envconfig:"MSGX_LEADER_RETRY" default:"1s" desc:"how often a standby tries to take the leader lock; also the leader's lock ping period (capped at a third of the session timeout)"`
	Now   func() time.Time
	// Hint, when set, names the fix of a campaign error (a database or schema not there yet);
	// it is logged beside the error.
	Hint func(error) string
}

// Validate reports every bad setting, one line each.
func (c Config) Validate() error {
	var p envconf.Problems
	p.Positive("MSGX_LEADER_SESSION_TIMEOUT", c.SessionTimeout)
	if c.SessionTimeout > 0 && c.SessionTimeout < time.Second {
		p.Add("MSGX_LEADER_SESSION_TIMEOUT", "must be at least 1s, got %s", c.SessionTimeout)
	}
	p.Positive("MSGX_LEADER_RETRY", c.Retry)
	return p.Err()
}

// Elector campaigns for one role and runs the work while leader.
type Elector struct {
	cfg     Config
	key     int32
	connect func(ctx context.Context) (*pgx.Conn, error)
	log     zerolog.Logger

	leader atomic.Bool
	epoch  atomic.Int64
	// OnChange, when set before Run, is told every change of leadership (metrics).
	OnChange func(leader bool, epoch int64)
}

// New returns an Elector whose lock sessions come from connConfig (a copy is changed to set the
// session timeout and application name).
func New(cfg Config, connConfig *pgx.ConnConfig, log zerolog.Logger) (*Elector, error) {
	key, ok := roleKeys[cfg.Role]
	if !ok {
		return nil, fmt.Errorf("leader: unknown role %q", cfg.Role)
	}
	if cfg.SessionTimeout < time.Second || cfg.Retry <= 0 {
		return nil, fmt.Errorf("leader: session timeout must be ≥ 1s and retry > 0")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cc := connConfig.Copy()
	cc.RuntimeParams["idle_session_timeout"] = fmt.Sprint(cfg.SessionTimeout.Milliseconds())
	// A leader paused inside its renewal transaction must lose the session (and the row lock) as
	// fast as one paused outside it.
	cc.RuntimeParams["idle_in_transaction_session_timeout"] = fmt.Sprint(cfg.SessionTimeout.Milliseconds())
	cc.RuntimeParams["application_name"] = "msgx-" + cfg.Role + "-leader"
	return &Elector{
		cfg: cfg, key: key, log: log.With().Str("role", cfg.Role).Str("holder", cfg.Holder).Logger(),
		connect: func(ctx context.Context) (*pgx.Conn, error) { return pgx.ConnectConfig(ctx, cc) },
	}, nil
}

// IsLeader reports whether this instance currently leads, and its epoch.
func (e *Elector) IsLeader() (bool, int64) { return e.leader.Load(), e.epoch.Load() }

// pingPeriod keeps the lock session well inside its idle timeout.
func (e *Elector) pingPeriod() time.Duration {
	return min(e.cfg.Retry, e.cfg.SessionTimeout/3)
}

// logCampaignFailure logs a failed campaign: the first of a run of failures at once, then once
// per obs.RepeatEvery with the number of tries (the campaign retries every Retry, wall paced).
func (e *Elector) logCampaignFailure(failing *obs.Repeats, err error) {
	n, due := failing.Due(time.Now())
	if !due {
		return
	}
	ev := e.log.Warn().Err(err).Int("tries", n)
	if e.cfg.Hint != nil {
		if hint := e.cfg.Hint(err); hint != "" {
			ev = ev.Str("hint", hint)
		}
	}
	ev.Msg("leader campaign failed; retrying")
}

// Run campaigns until ctx ends. While leader it runs work with a context that is cancelled as
// soon as leadership is lost. work returning nil, ErrFenced or ErrStepDown (or the
// cancellation) sends the instance back to standby, after ErrStepDown for StepDownPause; any
// other error ends Run with that error.
func (e *Elector) Run(ctx context.Context, work func(ctx context.Context, lease Lease) error) error {
	failing := obs.Repeats{Every: obs.RepeatEvery}
	stepDowns := 0 // in a row
	for ctx.Err() == nil {
		conn, lease, err := e.acquire(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, ErrPooler) {
				return err
			}
			e.logCampaignFailure(&failing, err)
			if !clock.WallSleep(ctx, e.cfg.Retry) {
				return nil
			}
			continue
		}
		failing.Reset()
		began := time.Now()
		err = e.lead(ctx, conn, lease, work)
		e.setLeader(false, 0)
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_ = conn.Close(closeCtx) // closing the session releases the lock
		cancel()
		pause := e.cfg.Retry
		if errors.Is(err, errSteppedDown) {
			if time.Since(began) >= maxStepDownPause {
				stepDowns = 0 // the term did its work for a while: not the same refusal
			}
			stepDowns++
			pause, err = e.stepDownPause(stepDowns), nil
		} else {
			stepDowns = 0
		}
		if err != nil {
			return err
		}
		if ctx.Err() == nil {
			e.log.Warn().Int64("epoch", lease.Epoch).Dur("campaign_in", pause).Msg("stepped down; back to standby")
			if !clock.WallSleep(ctx, pause) {
				return nil
			}
		}
	}
	return nil
}

// StepDownPause is how long an instance that stepped down (ErrStepDown) waits before it
// campaigns again: three lock attempts of every other instance (Retry each). It doubles with
// each step-down in a row, up to maxStepDownPause: where every instance is refused (a grant
// revoked by mistake), each term would otherwise start its work again, and the processor
// record its head's attempt, every few seconds.
func (e *Elector) StepDownPause() time.Duration { return e.stepDownPause(1) }

// maxStepDownPause bounds the pause after step-downs in a row (the processor's retry pause,
// MSGX_BACKOFF_MAX, has the same default).
const maxStepDownPause = time.Minute

func (e *Elector) stepDownPause(inARow int) time.Duration {
	first := 3 * e.cfg.Retry
	d := first
	for n := 1; n < inARow && d < maxStepDownPause; n++ {
		d *= 2
	}
	return max(first, min(d, maxStepDownPause))
}

// errSteppedDown is lead's answer when the work stepped down.
var errSteppedDown = errors.New("the work stepped down")

// acquire blocks until this instance holds the lock and has bumped the epoch.
func (e *Elector) acquire(ctx context.Context) (*pgx.Conn, Lease, error) {
	conn, err := e.connect(ctx)
	if err != nil {
		return nil, Lease{}, fmt.Errorf("connect lock session: %w", err)
	}
	fail := func(err error) (*pgx.Conn, Lease, error) {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, Lease{}, err
	}
	e.log.Info().Msg("standby: campaigning for leadership")
	for {
		var got bool
		if err := conn.QueryRow(ctx, tryLockSQL, e.key).Scan(&got); err != nil {
			return fail(fmt.Errorf("try leader lock: %w", err))
		}
		if got {
			break
		}
		if !clock.WallSleep(ctx, min(e.cfg.Retry, e.cfg.SessionTimeout/3)) {
			return fail(ctx.Err())
		}
	}
	var held bool
	if err := conn.QueryRow(ctx, holdsLockSQL, e.key).Scan(&held); err != nil {
		return fail(fmt.Errorf("verify leader lock: %w", err))
	}
	if !held {
		return fail(ErrPooler)
	}
	var epoch int64
	if err := conn.QueryRow(ctx, bumpEpochSQL, e.cfg.Role, e.cfg.Holder, e.cfg.Now()).Scan(&epoch); err != nil {
		return fail(fmt.Errorf("bump leader epoch: %w", err))
	}
	return conn, Lease{Role: e.cfg.Role, Epoch: epoch}, nil
}

// lead runs work while pinging the lock session.
func (e *Elector) lead(ctx context.Context, conn *pgx.Conn, lease Lease, work func(context.Context, Lease) error) error {
	e.setLeader(true, lease.Epoch)
	log := e.log.With().Int64("epoch", lease.Epoch).Logger()
	log.Info().Msg("leader: work starts")

	workCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- work(workCtx, lease) }()

	ticker := time.NewTicker(e.pingPeriod())
	defer ticker.Stop()
	for {
		select {
		case err := <-done:
			switch {
			case err == nil, ctx.Err() != nil && errors.Is(err, context.Canceled):
				return nil
			case errors.Is(err, ErrFenced):
				log.Warn().Msg("leader: work fenced by a newer epoch")
				return nil
			case errors.Is(err, ErrStepDown):
				log.Warn().Err(err).Msg("leader: the work steps down; releasing the lock")
				return errSteppedDown
			default:
				return fmt.Errorf("%s work: %w", e.cfg.Role, err)
			}
		case <-ctx.Done():
			cancel()
			<-done
			log.Info().Msg("leader: shutting down, releasing the lock")
			return nil
		case <-ticker.C:
			var held bool
			pingCtx, pingCancel := context.WithTimeout(ctx, e.cfg.SessionTimeout)
			err := conn.QueryRow(pingCtx, holdsLockSQL, e.key).Scan(&held)
			pingCancel()
			if ctx.Err() != nil {
				continue // shutdown: handled by the ctx.Done case
			}
			if err != nil || !held {
				log.Error().Err(err).Bool("held", held).Msg("leader: lock session lost; stopping work")
				cancel()
				werr := <-done
				if werr != nil && !errors.Is(werr, context.Canceled) && !errors.Is(werr, ErrFenced) {
					log.Warn().Err(werr).Msg("leader: work ended with an error after losing the lock")
				}
				return nil
			}
			if err := e.renew(ctx, conn, lease); err != nil && ctx.Err() == nil {
				log.Debug().Err(err).Msg("leader: renewal not recorded (the lock is held; only renewed_at is late)")
			}
		}
	}
}

// renew sets renewed_at of the lease's row (the lock session proved it holds the lock).
func (e *Elector) renew(ctx context.Context, conn *pgx.Conn, lease Lease) error {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.SessionTimeout)
	defer cancel()
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, renewLockTimeout); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, renewSQL, lease.Role, lease.Epoch, e.cfg.Now())
		return err
	})
}

func (e *Elector) setLeader(leader bool, epoch int64) {
	e.leader.Store(leader)
	e.epoch.Store(epoch)
	if e.OnChange != nil {
		e.OnChange(leader, epoch)
	}
}
