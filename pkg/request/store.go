package request

import (
	"context"
	"errors"
	"fmt"
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
	Timeout       time.Duration  `envconfig:"MSGX_REQUEST_TIMEOUT" default:"30m" desc:"requests: an open RQFD/RQRD without an applied response this long after registration is EXPIRED"`
	Sender        string         `envconfig:"MSGX_REQUEST_SNDR" default:"MSGX" desc:"requests: SNDR written in outbound requests (1-4 upper-case letters or digits)"`
	RoutingID     string         `envconfig:"MSGX_REQUEST_ROUTINGID" default:"AODB" desc:"requests: coutmsgs ROUTINGID of outbound requests (the peer used VIEWRQFD / VIEWRQRD)"`
	SweepInterval time.Duration  `envconfig:"MSGX_REQUEST_SWEEP_INTERVAL" default:"5s" desc:"jobs: how often the request sweep sends registered requests, marks WAITING and expires"`
	Location      *time.Location // airport zone: META DTTM, RQFD day bounds, DATE_INSERTED
}

// Validate reports every bad value, one line each.
func (c Config) Validate() error {
	var p envconf.Problems
	p.Positive("MSGX_REQUEST_TIMEOUT", c.Timeout)
	p.Positive("MSGX_REQUEST_SWEEP_INTERVAL", c.SweepInterval)
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
	// Superseded are the open requests it expired before it was registered: for an RQFD every
	// open one that held a day of its range, for an RQRD the open one of its list.
	Superseded []int64
	// Asked is the scope asked for. An RQFD that supersedes open requests also asks for every
	// day they asked for (Request.Scope is the wider range), so no day stays unasked.
	Asked string
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
	if err := s.pool.QueryRow(ctx, readSEQNSQL).Scan(&last); err != nil {
		return Registration{}, fmt.Errorf("read request SEQN: %w", err)
	}
	reg := Registration{Asked: spec.Scope()}
	var err error
	if spec.Kind == List {
		reg.Superseded, err = collectIDs(s.pool.Query(ctx, openListSQL, s.cfg.Sender, spec.ListCode))
	} else {
		spec, reg.Superseded, err = s.cover(ctx, s.pool, spec, false)
	}
	if err != nil {
		return Registration{}, fmt.Errorf("preview %s %s: %w", spec.Kind, reg.Asked, err)
	}
	if reg.Request, err = s.build(spec, NextSEQN(last), now); err != nil {
		return Registration{}, err
	}
	return reg, nil
}

// RegisterTx records a new request REGISTERED inside tx. It takes the next outbound SEQN, then
// expires the open requests of the same sender it replaces (superseded, INV-25): for an RQFD
// every open one holding a day of its range, whose days the new request asks for as well
// (cover), so each operation day stays held by one open request and no day the AODB was asked
// for is left unasked; for an RQRD the open one of its list. It builds the outbound message once
// and stores it with the request. Nothing is sent: Sender does that after the commit.
func (s *Store) RegisterTx(ctx context.Context, tx pgx.Tx, spec Spec, now time.Time) (Registration, error) {
	if err := spec.Validate(); err != nil {
		return Registration{}, err
	}
	var seqn int
	if err := tx.QueryRow(ctx, nextSEQNSQL).Scan(&seqn); err != nil {
		return Registration{}, fmt.Errorf("take request SEQN: %w", err)
	}
	reg := Registration{Asked: spec.Scope()}
	var err error
	if spec.Kind == List {
		reg.Superseded, err = collectIDs(tx.Query(ctx, supersedeListSQL, s.cfg.Sender, spec.ListCode, now))
	} else {
		var owners []int64
		if spec, owners, err = s.cover(ctx, tx, spec, true); err != nil {
			return Registration{}, err
		}
		reg.Superseded, err = collectIDs(tx.Query(ctx, supersedeDaysSQL, owners, now))
	}
	if err != nil {
		return Registration{}, fmt.Errorf("register %s %s: supersede the open requests: %w", spec.Kind, reg.Asked, err)
	}
	r, err := s.build(spec, seqn, now)
	if err != nil {
		return Registration{}, err
	}
	var from, to *time.Time
	if r.Kind == Schedule {
		from, to = &r.From, &r.To
	}
	if err := tx.QueryRow(ctx, insertSQL, r.Kind, r.Scope, from, to, r.Sender, r.RoutingID, r.SEQN, r.DTTM,
		r.XML, r.Origin, r.Actor, r.Reason, now).Scan(&r.ID); err != nil {
		return Registration{}, fmt.Errorf("register %s %s: %w", r.Kind, r.Scope, err)
	}
	if r.Kind == Schedule {
		tag, err := tx.Exec(ctx, takeDaysSQL, r.Sender, r.From, r.To, r.ID, reg.Superseded)
		if err != nil {
			return Registration{}, fmt.Errorf("register %s %s: take its days: %w", r.Kind, r.Scope, err)
		}
		if n := spanDays(spec); tag.RowsAffected() != int64(n) {
			return Registration{}, fmt.Errorf("register %s %s: took %d of its %d days: another open request holds the others", r.Kind, r.Scope, tag.RowsAffected(), n)
		}
	}
	reg.Request = r
	return reg, nil
}

// cover returns the RQFD spec widened over the open RQFD of the store's sender that hold any of
// its days, and those requests: every day they asked for is inside the widened range, and no open
// request outside them holds a day of it. A widened range longer than MaxDays is refused
// (ErrBadSpec): the request would have to ask for more than one request may. Inside a
// registration (lock) the requests are locked in req_id order, as the RESP guard locks them; one
// that closed meanwhile is left out and the range is taken again from the others.
func (s *Store) cover(ctx context.Context, q querier, spec Spec, lock bool) (Spec, []int64, error) {
	wide := spec
	var owners []owner
	for {
		var err error
		if owners, err = readOwners(q.Query(ctx, dayOwnersSQL, s.cfg.Sender, Day(wide.From), Day(wide.To))); err != nil {
			return Spec{}, nil, fmt.Errorf("read the open requests of %s: %w", wide.Scope(), err)
		}
		next := hull(spec, owners)
		done := next.From.Equal(Day(wide.From)) && next.To.Equal(Day(wide.To))
		if wide = next; done || spanDays(wide) > MaxDays {
			break
		}
	}
	if n := spanDays(wide); n > MaxDays {
		return Spec{}, nil, fmt.Errorf("%w: RQFD %s would replace the open request(s) %v and ask for their days too, %s: %d days, at most %d; ask for the days outside them, or wait until they close",
			ErrBadSpec, spec.Scope(), ownerIDs(owners), wide.Scope(), n, MaxDays)
	}
	if lock {
		var err error
		if owners, err = readOwners(q.Query(ctx, lockDayOwnersSQL, s.cfg.Sender, Day(wide.From), Day(wide.To))); err != nil {
			return Spec{}, nil, fmt.Errorf("lock the open requests of %s: %w", wide.Scope(), err)
		}
		wide = hull(spec, owners)
	}
	return wide, ownerIDs(owners), nil
}

// owner is an open RQFD that holds days of a range, with the range it asked for.
type owner struct {
	id       int64
	from, to time.Time
}

func ownerIDs(owners []owner) []int64 {
	ids := make([]int64, len(owners))
	for i, o := range owners {
		ids[i] = o.id
	}
	return ids
}

func readOwners(rows pgx.Rows, err error) ([]owner, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (owner, error) {
		var o owner
		err := row.Scan(&o.id, &o.from, &o.to)
		return o, err
	})
}

// hull is spec over the smallest range holding its own days and every day owners asked for.
func hull(spec Spec, owners []owner) Spec {
	spec.From, spec.To = Day(spec.From), Day(spec.To)
	for _, o := range owners {
		if f := Day(o.from); f.Before(spec.From) {
			spec.From = f
		}
		if t := Day(o.to); t.After(spec.To) {
			spec.To = t
		}
	}
	return spec
}

// spanDays is the number of operation days of an RQFD spec.
func spanDays(spec Spec) int { return int(Day(spec.To).Sub(Day(spec.From))/(24*time.Hour)) + 1 }

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

// CandidatesTx returns the requests of kind an answer may be matched to (Match): the open ones
// registered less than the timeout before now, so that an answer to a request past its timeout
// changes nothing whether or not the sweep has expired it yet (Due). The SENT and WAITING ones are
// locked until tx ends; the REGISTERED ones are not (the guard never waits for a sender holding
// one during its MySQL insert).
func (s *Store) CandidatesTx(ctx context.Context, tx pgx.Tx, kind Kind, now time.Time) ([]Request, error) {
	since := now.Add(-s.cfg.Timeout)
	sent, err := s.list(ctx, tx, candidatesSQL, kind, since)
	if err != nil {
		return nil, err
	}
	registered, err := s.list(ctx, tx, registeredSQL, kind, since)
	if err != nil {
		return nil, err
	}
	return append(sent, registered...), nil
}

// CompleteTx closes the matched request m DONE with its answer msgID inside tx, the transaction
// that applied the answer, and releases its days. It fails when the request is no longer SENT or
// WAITING (CandidatesTx locked it, so this means a bug).
func (s *Store) CompleteTx(ctx context.Context, tx pgx.Tx, m Matched, msgID int64, now time.Time, matchKind string) error {
	id := m.Request.ID
	tag, err := tx.Exec(ctx, completeSQL, id, msgID, now, matchKind)
	if err != nil {
		return fmt.Errorf("close request %d: %w", id, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("close request %d: it awaits no answer", id)
	}
	if _, err := tx.Exec(ctx, releaseDaysSQL, id); err != nil {
		return fmt.Errorf("close request %d: release its days: %w", id, err)
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
		err := row.Scan(&r.ID, &r.Kind, &r.Scope, &from, &to, &r.Status, &r.Origin, &r.Actor,
			&r.Reason, &r.Sender, &r.RoutingID, &r.SEQN, &dttm, &r.XML,
			&r.RegisteredAt, &sent, &waiting, &closed, &r.OutMsgID, &r.ResponseID, &r.CloseReason, &r.MatchKind)
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
