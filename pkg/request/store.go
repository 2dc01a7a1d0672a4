package request

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/msgx/msgx/pkg/envconf"
	"github.com/msgx/msgx/pkg/sis"
)

// Config is the requests' settings (pkg/envconf tags, docs/configuration.md); Location is the
// process's airport zone, set by the binary.
type Config struct {
	Timeout       time.Duration `envconfig:"MSGX_REQUEST_TIMEOUT" default:"30m" desc:"requests: an open RQFD/RQRD without an applied response this long after registration is EXPIRED"`
	Sender        string        `envconfig:"MSGX_REQUEST_SNDR" default:"MSGX" desc:"requests: SNDR written in outbound requests (1-4 upper-case letters or digits)"`
	RoutingID     string        `envconfig:"MSGX_REQUEST_ROUTINGID" default:"AODB" desc:"requests: coutmsgs ROUTINGID of outbound requests (the peer used VIEWRQFD / VIEWRQRD)"`
	SweepInterval time.Duration `envconfig:"MSGX_REQUEST_SWEEP_INTERVAL" default:"5s" desc:"jobs: how often the request sweep sends registered requests, marks WAITING and expires"`
	// ClockSkew lets the RESP guard match an answer whose DTTM (the AODB's clock, to the second)
	// lies up to this long before the request's sent time (msgx's clock).
	ClockSkew time.Duration  `envconfig:"MSGX_REQUEST_CLOCK_SKEW" default:"5s" desc:"processor: an answer whose DTTM lies up to this long before its request's sent time still matches (the AODB's clock may run behind msgx's; DTTM has whole seconds); 0..5m, the skew used is recorded on the request"`
	Location  *time.Location // airport zone: META DTTM, RQFD day bounds, DATE_INSERTED
}

// Validate reports every bad value, one line each.
func (c Config) Validate() error {
	var p envconf.Problems
	p.Positive("MSGX_REQUEST_TIMEOUT", c.Timeout)
	p.Positive("MSGX_REQUEST_SWEEP_INTERVAL", c.SweepInterval)
	if c.ClockSkew < 0 || c.ClockSkew > maxClockSkew {
		p.Add("MSGX_REQUEST_CLOCK_SKEW", "must be between 0 and %s, got %s", maxClockSkew, c.ClockSkew)
	}
	if len(c.Sender) < 1 || len(c.Sender) > 4 || strings.Trim(c.Sender, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") != "" {
		p.Add("MSGX_REQUEST_SNDR", "must be 1 to 4 upper-case letters or digits, got %q", c.Sender)
	}
	if len(c.RoutingID) < 1 || len(c.RoutingID) > 23 {
		p.Add("MSGX_REQUEST_ROUTINGID", "must be 1 to 23 characters (coutmsgs ROUTINGID), got %q", c.RoutingID)
	}
	if c.Location == nil {
		p.Add("MSGX_AIRPORT_TZ", "request: Location must be set")
	}
	return p.Err()
}

// maxClockSkew bounds MSGX_REQUEST_CLOCK_SKEW: a larger allowance would let an answer generated
// well before a send (to an older request) pass as its answer.
const maxClockSkew = 5 * time.Minute

// querier is what both a pool and a transaction offer.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Store is req_track.
type Store struct {
	pool *pgxpool.Pool
	cfg  Config
}

// NewStore returns the store.
func NewStore(pool *pgxpool.Pool, cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Store{pool: pool, cfg: cfg}, nil
}

// Config returns the store's configuration.
func (s *Store) Config() Config { return s.cfg }

// ErrNotFound means no request has that id.
var ErrNotFound = errors.New("request: not found")

// Registration is what Register did.
type Registration struct {
	Request Request
	// Superseded are the open requests it expired: every day they owned is now the new request's
	// (RQFD), or the same list (RQRD).
	Superseded []int64
	// Narrowed are the open RQFD it took some days from; they stay open for the others.
	Narrowed []int64
}

// Register records a new request REGISTERED in its own transaction (see RegisterTx).
func (s *Store) Register(ctx context.Context, spec Spec, now time.Time) (Registration, error) {
	var reg Registration
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		reg, err = s.RegisterTx(ctx, tx, spec, now)
		return err
	})
	return reg, err
}

// Preview builds the request Register would record, without writing (dry run). Its SEQN is the
// one the counter would give now.
func (s *Store) Preview(ctx context.Context, spec Spec, now time.Time) (Registration, error) {
	if err := spec.Validate(); err != nil {
		return Registration{}, err
	}
	var last int
	if err := s.pool.QueryRow(ctx, `SELECT last FROM req_seqn`).Scan(&last); err != nil {
		return Registration{}, fmt.Errorf("read request SEQN: %w", err)
	}
	r, err := s.build(spec, NextSEQN(last), now)
	if err != nil {
		return Registration{}, err
	}
	reg := Registration{Request: r}
	if r.Kind == List {
		rows, err := s.pool.Query(ctx, openListSQL, r.Sender, r.Scope)
		if err == nil {
			reg.Superseded, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		}
		if err != nil {
			return Registration{}, fmt.Errorf("preview %s %s: %w", r.Kind, r.Scope, err)
		}
		return reg, nil
	}
	rows, err := s.pool.Query(ctx, dayOwnersSQL, r.Sender, r.From, r.To)
	if err != nil {
		return Registration{}, fmt.Errorf("preview %s %s: %w", r.Kind, r.Scope, err)
	}
	var id int64
	var inside bool
	_, err = pgx.ForEachRow(rows, []any{&id, &inside}, func() error {
		if inside {
			reg.Superseded = append(reg.Superseded, id)
		} else {
			reg.Narrowed = append(reg.Narrowed, id)
		}
		return nil
	})
	if err != nil {
		return Registration{}, fmt.Errorf("preview %s %s: %w", r.Kind, r.Scope, err)
	}
	return reg, nil
}

// RegisterTx records a new request REGISTERED inside tx: it takes the next outbound SEQN, takes
// over what open requests of the same sender hold (every day of an RQFD's range: an open RQFD
// left without days is superseded, one left with some is narrowed; the list of an RQRD: the open
// one is superseded), builds the outbound message once and stores it with the request. Nothing
// is sent: Sender does that after the commit.
func (s *Store) RegisterTx(ctx context.Context, tx pgx.Tx, spec Spec, now time.Time) (Registration, error) {
	if err := spec.Validate(); err != nil {
		return Registration{}, err
	}
	var seqn int
	if err := tx.QueryRow(ctx, nextSEQNSQL).Scan(&seqn); err != nil {
		return Registration{}, fmt.Errorf("take request SEQN: %w", err)
	}
	r, err := s.build(spec, seqn, now)
	if err != nil {
		return Registration{}, err
	}
	var reg Registration
	var owners []int64
	if r.Kind == List {
		if reg.Superseded, err = collectIDs(tx.Query(ctx, supersedeListSQL, r.Sender, r.Scope, now)); err != nil {
			return Registration{}, fmt.Errorf("supersede open %s %s: %w", r.Kind, r.Scope, err)
		}
	} else if owners, err = collectIDs(tx.Query(ctx, lockDayOwnersSQL, r.Sender, r.From, r.To)); err != nil {
		return Registration{}, fmt.Errorf("lock open %s of %s: %w", r.Kind, r.Scope, err)
	}
	var from, to *time.Time
	if r.Kind == Schedule {
		from, to = &r.From, &r.To
	}
	if err := tx.QueryRow(ctx, insertSQL, r.Kind, r.Scope, from, to, r.Sender, r.RoutingID, r.SEQN, r.DTTM,
		r.XML, r.Origin, r.Actor, r.Reason, now).Scan(&r.ID); err != nil {
		return Registration{}, fmt.Errorf("register %s %s: %w", r.Kind, r.Scope, err)
	}
	reg.Request = r
	if r.Kind == Schedule {
		if err := s.takeDays(ctx, tx, &reg, owners, now); err != nil {
			return Registration{}, err
		}
	}
	return reg, nil
}

// takeDays gives the days of the new RQFD reg.Request to it and supersedes those of owners (the
// open requests that held some of them, locked) that kept none.
func (s *Store) takeDays(ctx context.Context, tx pgx.Tx, reg *Registration, owners []int64, now time.Time) error {
	r := reg.Request
	if _, err := tx.Exec(ctx, takeDaysSQL, r.Sender, r.From, r.To, r.ID); err != nil {
		return fmt.Errorf("register %s %s: take its days: %w", r.Kind, r.Scope, err)
	}
	if len(owners) == 0 {
		return nil
	}
	superseded, err := collectIDs(tx.Query(ctx, supersedeDaylessSQL, owners, now))
	if err != nil {
		return fmt.Errorf("supersede open %s of %s: %w", r.Kind, r.Scope, err)
	}
	reg.Superseded = superseded
	for _, id := range owners {
		if !slices.Contains(superseded, id) {
			reg.Narrowed = append(reg.Narrowed, id)
		}
	}
	return nil
}

// Uncovered returns the parts of spec no open request of the store's sender covers: for an RQFD
// one spec per run of consecutive days no open RQFD owns, for an RQRD spec itself unless one of
// its list is open. It takes the registrations' lock (the SEQN counter row) inside tx first, so
// what it finds uncovered stays so until tx ends: the automatic triggers ask only for these.
func (s *Store) Uncovered(ctx context.Context, tx pgx.Tx, spec Spec) ([]Spec, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	var last int
	if err := tx.QueryRow(ctx, lockSEQNSQL).Scan(&last); err != nil {
		return nil, fmt.Errorf("lock request registrations: %w", err)
	}
	if spec.Kind == List {
		open, err := collectIDs(tx.Query(ctx, openListSQL, s.cfg.Sender, spec.ListCode))
		if err != nil {
			return nil, fmt.Errorf("read open %s %s: %w", spec.Kind, spec.ListCode, err)
		}
		if len(open) > 0 {
			return nil, nil
		}
		return []Spec{spec}, nil
	}
	rows, err := tx.Query(ctx, ownedDaysSQL, s.cfg.Sender, Day(spec.From), Day(spec.To))
	if err != nil {
		return nil, fmt.Errorf("read owned days of %s: %w", spec.Scope(), err)
	}
	owned, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
	if err != nil {
		return nil, fmt.Errorf("read owned days of %s: %w", spec.Scope(), err)
	}
	var out []Spec
	for _, run := range Gaps(spec.From, spec.To, owned) {
		part := spec
		part.From, part.To = run[0], run[1]
		out = append(out, part)
	}
	return out, nil
}

func collectIDs(rows pgx.Rows, err error) ([]int64, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// build encodes the outbound message of spec with seqn at now.
func (s *Store) build(spec Spec, seqn int, now time.Time) (Request, error) {
	dttm := now.In(s.cfg.Location).Truncate(time.Second)
	h := sis.RequestHeader{SNDR: s.cfg.Sender, SEQN: seqn, DTTM: dttm, RoutingID: s.cfg.RoutingID}
	r := Request{Kind: spec.Kind, Scope: spec.Scope(), Status: Registered, Origin: spec.Origin, Actor: spec.Actor, Reason: spec.Reason,
		Sender: s.cfg.Sender, RoutingID: s.cfg.RoutingID, SEQN: seqn, DTTM: dttm, RegisteredAt: now}
	var out sis.Outbound
	var err error
	switch spec.Kind {
	case Schedule:
		r.From, r.To = Day(spec.From), Day(spec.To)
		loc := s.cfg.Location
		from := time.Date(r.From.Year(), r.From.Month(), r.From.Day(), 0, 0, 0, 0, loc)
		to := time.Date(r.To.Year(), r.To.Month(), r.To.Day(), 23, 59, 0, 0, loc)
		out, err = sis.EncodeRQFD(h, from, to)
	case List:
		out, err = sis.EncodeRQRD(h, spec.ListCode)
	}
	if err != nil {
		return Request{}, fmt.Errorf("%w: %w", ErrBadSpec, err)
	}
	r.XML = string(out.Text)
	return r, nil
}

// Get returns one request.
func (s *Store) Get(ctx context.Context, id int64) (Request, error) {
	rows, err := s.pool.Query(ctx, getSQL, id)
	if err != nil {
		return Request{}, fmt.Errorf("read request %d: %w", id, err)
	}
	list, err := collect(rows)
	if err != nil {
		return Request{}, fmt.Errorf("read request %d: %w", id, err)
	}
	if len(list) == 0 {
		return Request{}, fmt.Errorf("%w: %d", ErrNotFound, id)
	}
	return list[0], nil
}

// ListOpen returns the open requests, oldest first.
func (s *Store) ListOpen(ctx context.Context) ([]Request, error) {
	return s.list(ctx, s.pool, listOpenSQL)
}

// ByScope returns the latest limit requests of a kind and scope, newest first.
func (s *Store) ByScope(ctx context.Context, kind Kind, scope string, limit int) ([]Request, error) {
	return s.list(ctx, s.pool, listScopeSQL, kind, scope, limit)
}

// ByStatus returns up to limit requests in status, oldest first.
func (s *Store) ByStatus(ctx context.Context, st Status, limit int) ([]Request, error) {
	return s.list(ctx, s.pool, listStatusSQL, st, limit)
}

// CandidatesTx returns the requests of kind an answer may be matched to (Match): SENT and
// WAITING, and those superseded before their answer came, registered less than the timeout
// before now, all locked until tx ends; and the REGISTERED ones, not locked (the guard never
// waits for a sender holding one during its MySQL insert).
func (s *Store) CandidatesTx(ctx context.Context, tx pgx.Tx, kind Kind, now time.Time) ([]Request, error) {
	sent, err := s.list(ctx, tx, candidatesSQL, kind, now.Add(-s.cfg.Timeout))
	if err != nil {
		return nil, err
	}
	registered, err := s.list(ctx, tx, registeredSQL, kind)
	if err != nil {
		return nil, err
	}
	return append(sent, registered...), nil
}

// CompleteTx records the answer msgID of the matched request m inside tx, the transaction that
// applied it: an open request is closed DONE and releases its days; a superseded one records
// the answer and stays EXPIRED. It fails when the request no longer awaits an answer (it was
// locked by CandidatesTx, so this means a bug).
func (s *Store) CompleteTx(ctx context.Context, tx pgx.Tx, m Matched, msgID int64, now time.Time, matchKind string) error {
	id := m.Request.ID
	tag, err := tx.Exec(ctx, completeSQL, id, msgID, now, matchKind, m.Skew.Microseconds())
	if err != nil {
		return fmt.Errorf("close request %d: %w", id, err)
	}
	if tag.RowsAffected() == 1 {
		if _, err := tx.Exec(ctx, releaseDaysSQL, id); err != nil {
			return fmt.Errorf("close request %d: release its days: %w", id, err)
		}
		return nil
	}
	tag, err = tx.Exec(ctx, answerSupersededSQL, id, msgID, now, matchKind, m.Skew.Microseconds())
	if err != nil {
		return fmt.Errorf("record the answer of request %d: %w", id, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("close request %d: it awaits no answer", id)
	}
	return nil
}

// MarkWaiting moves a SENT request to WAITING (the transport sent its outbound row).
func (s *Store) MarkWaiting(ctx context.Context, id int64, now time.Time) (bool, error) {
	tag, err := s.pool.Exec(ctx, markWaitingSQL, id, now)
	if err != nil {
		return false, fmt.Errorf("request %d waiting: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}

// Expired is one request the sweep expired.
type ExpiredRequest struct {
	ID   int64
	Kind Kind
}

// ExpireDue expires up to limit open requests registered Timeout or more before now.
func (s *Store) ExpireDue(ctx context.Context, now time.Time, limit int) ([]ExpiredRequest, error) {
	rows, err := s.pool.Query(ctx, expireDueSQL, now.Add(-s.cfg.Timeout), now, limit)
	if err != nil {
		return nil, fmt.Errorf("expire requests: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ExpiredRequest, error) {
		var e ExpiredRequest
		err := r.Scan(&e.ID, &e.Kind)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("expire requests: %w", err)
	}
	return out, nil
}

// Counts returns the number of requests per kind and status.
func (s *Store) Counts(ctx context.Context) (map[Kind]map[Status]int, error) {
	rows, err := s.pool.Query(ctx, countSQL)
	if err != nil {
		return nil, fmt.Errorf("count requests: %w", err)
	}
	out := map[Kind]map[Status]int{Schedule: {}, List: {}}
	var k Kind
	var st Status
	var n int
	_, err = pgx.ForEachRow(rows, []any{&k, &st, &n}, func() error {
		if out[k] == nil {
			out[k] = map[Status]int{}
		}
		out[k][st] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("count requests: %w", err)
	}
	return out, nil
}

// OldestOpen returns the registration time of the oldest open request per kind.
func (s *Store) OldestOpen(ctx context.Context) (map[Kind]time.Time, error) {
	rows, err := s.pool.Query(ctx, oldestOpenSQL)
	if err != nil {
		return nil, fmt.Errorf("oldest open request: %w", err)
	}
	out := map[Kind]time.Time{}
	var k Kind
	var at time.Time
	_, err = pgx.ForEachRow(rows, []any{&k, &at}, func() error {
		out[k] = at
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("oldest open request: %w", err)
	}
	return out, nil
}

// RegisterAudited registers an operator's request and writes its audit row in one transaction
// (msgxctl request and the console call it).
func (s *Store) RegisterAudited(ctx context.Context, spec Spec, actor, reason string, now time.Time) (Registration, error) {
	var reg Registration
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if reg, err = s.RegisterTx(ctx, tx, spec, now); err != nil {
			return err
		}
		return AuditTx(ctx, tx, actor, reason, string(spec.Kind)+" "+spec.Scope(), []int64{reg.Request.ID}, now)
	})
	return reg, err
}

// AuditTx writes the audit row of an operator's request (replay_audit action 'request').
func AuditTx(ctx context.Context, tx pgx.Tx, actor, reason, selector string, ids []int64, now time.Time) error {
	if _, err := tx.Exec(ctx, auditSQL, actor, reason, selector, ids, now); err != nil {
		return fmt.Errorf("audit request: %w", err)
	}
	return nil
}

func (s *Store) list(ctx context.Context, q querier, sql string, args ...any) ([]Request, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("read requests: %w", err)
	}
	out, err := collect(rows)
	if err != nil {
		return nil, fmt.Errorf("read requests: %w", err)
	}
	return out, nil
}

func collect(rows pgx.Rows) ([]Request, error) {
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Request, error) {
		var r Request
		var from, to, dttm, sent, waiting, closed *time.Time
		var skewMicros int64
		err := row.Scan(&r.ID, &r.Kind, &r.Scope, &from, &to, &r.Status, &r.Origin, &r.Actor,
			&r.Reason, &r.Sender, &r.RoutingID, &r.SEQN, &dttm, &r.XML,
			&r.RegisteredAt, &sent, &waiting, &closed, &r.OutMsgID, &r.ResponseID, &r.CloseReason, &r.MatchKind, &skewMicros)
		r.MatchSkew = time.Duration(skewMicros) * time.Microsecond
		r.From, r.To, r.DTTM = deref(from), deref(to), deref(dttm)
		r.SentAt, r.WaitingAt, r.ClosedAt = deref(sent), deref(waiting), deref(closed)
		return r, err
	})
}

func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
