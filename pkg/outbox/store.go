package outbox

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/msgx/msgx/pkg/backoff"
	"github.com/msgx/msgx/pkg/clip"
	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/leader"
)

// The dispatcher's side of the store: claims, outcomes, the backlog.

// Policy is the retry policy (the same as processing: MSGX_MAX_ATTEMPTS, MSGX_BACKOFF_*).
type Policy struct {
	MaxAttempts int
	BackoffBase time.Duration
	BackoffMax  time.Duration
}

// Validate checks the policy.
func (p Policy) Validate() error {
	if p.MaxAttempts < 1 || p.BackoffBase <= 0 || p.BackoffMax < p.BackoffBase {
		return fmt.Errorf("outbox: bad retry policy %+v", p)
	}
	return nil
}

// Backoff is the wait after the n-th failed attempt (n ≥ 1): package backoff's rule.
func (p Policy) Backoff(n int) time.Duration {
	return backoff.Delay(n, p.BackoffBase, p.BackoffMax)
}

// delays is the wait after each attempt that can still fail (n = 1 … MaxAttempts), in
// microseconds: markFailedSQL looks a row's delay up by its attempt number.
func (p Policy) delays() []float64 {
	out := make([]float64, p.MaxAttempts)
	for i := range out {
		out[i] = float64(p.Backoff(i + 1).Microseconds())
	}
	return out
}

// Store is the msg_event store.
type Store struct {
	pool   *pgxpool.Pool
	policy Policy
	delays []float64 // policy.delays()
}

// New returns a store.
func New(pool *pgxpool.Pool, policy Policy) (*Store, error) {
	if err := policy.Validate(); err != nil {
		return nil, err
	}
	return &Store{pool: pool, policy: policy, delays: policy.delays()}, nil
}

// ConnConfig is the connection configuration of the store's pool (for a wake-up listener).
func (s *Store) ConnConfig() *pgx.ConnConfig { return s.pool.Config().ConnConfig }

// Claimed is an event taken for sending.
type Claimed struct {
	EventID      int64
	Target       string
	FLID         string
	Type         string
	StateVersion int64
	MsgID        int64 // 0: none
	Payload      []byte
	Attempts     int
	CreatedAt    time.Time // when the change committed (the event_time header)
	// Represents are the event ids a failed attempt is counted against: this event.
	Represents []int64
}

func scanClaimed(rows pgx.Rows, target string) ([]Claimed, error) {
	defer rows.Close()
	var out []Claimed
	for rows.Next() {
		c := Claimed{Target: target}
		var msgID *int64
		if err := rows.Scan(&c.EventID, &c.FLID, &c.Type, &c.StateVersion, &msgID, &c.Payload, &c.Attempts, &c.CreatedAt); err != nil {
			return nil, err
		}
		if msgID != nil {
			c.MsgID = *msgID
		}
		c.Represents = []int64{c.EventID}
		out = append(out, c)
	}
	return out, rows.Err()
}

// ClaimHeads returns up to limit due KAFKA:msg events, oldest first: of each FLID its run of due
// events from its head (the FLID's oldest unsent event) in event order, up to the first one that
// is not due. A DEAD event or one still backing off holds every later event of its FLID, so a
// record never overtakes a predecessor that was not acknowledged; the caller sends a run in
// order, in one Kafka transaction, and counts a failure only against the first failed event of
// a FLID (the ones after it were not attempted on their own).
//
// It first reads a window of the oldest unsent events (cheap, and fair: oldest first); only when
// that window is full yet yields fewer than limit due events (held FLIDs with long backlogs fill
// it) does it visit every FLID with unsent events, for its head alone. behind reports that more
// due events were already waiting (left out by limit, or beyond a full window), so the caller
// claims again once these are sent instead of waiting for the next wake-up.
func (s *Store) ClaimHeads(ctx context.Context, now time.Time, limit int) (heads []Claimed, behind bool, err error) {
	heads, behind, _, err = s.ClaimHeadsFrom(ctx, now, limit, 0)
	return heads, behind, err
}

// ClaimHeadsFrom is ClaimHeads for a caller that claims again and again (the dispatcher): from
// is a lower bound of the unsent KAFKA:msg events' ids (0: none known), and next the bound for
// the following claim, the smallest unsent id the window saw (from when it saw none). The
// window's scan then starts at the oldest unsent event instead of walking the index entries of
// every event sent since the last vacuum (4,000 index pages a claim in a 1,000,000-message
// drain, docs/benchmarks.md).
//
// These are the events held on their rows (PENDING, DEAD); the delivery cursor holds QUEUED
// events on their rows when it passes them unacknowledged, perhaps below a bound, and the
// dispatcher then lowers its bound to them (dispatch's settle). Otherwise the bound holds
// because no unsent event ever appears below it: an event leaves the unsent set
// only for good (SENT, SKIPPED; a replayed DEAD event was unsent all along), and every writer
// takes PIPELINE_LOCK before its event ids (Enqueue), so an event committed after the claim read
// its window has a larger id than every event the window could see. A bound is only good for
// the database it was read from, and until the unsent events are renumbered: a caller starts
// again from 0 after a failover or a restore (each leader term does, after SettleEpoch).
func (s *Store) ClaimHeadsFrom(ctx context.Context, now time.Time, limit int, from int64) (heads []Claimed, behind bool, next int64, err error) {
	window := max(4*limit, 1000)
	rows, err := s.pool.Query(ctx, claimWindowSQL, now, limit, window, from)
	if err != nil {
		return nil, false, from, fmt.Errorf("claim heads: %w", err)
	}
	var out []Claimed
	full := false
	next = from
	for rows.Next() {
		c := Claimed{Target: event.TargetMsg}
		var msgID *int64
		if err := rows.Scan(&c.EventID, &c.FLID, &c.Type, &c.StateVersion, &msgID, &c.Payload, &c.Attempts, &c.CreatedAt, &full, &behind, &next); err != nil {
			rows.Close()
			return nil, false, from, fmt.Errorf("claim heads: %w", err)
		}
		if msgID != nil {
			c.MsgID = *msgID
		}
		c.Represents = []int64{c.EventID}
		out = append(out, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, false, from, fmt.Errorf("claim heads: %w", err)
	}
	if len(out) == limit || (len(out) > 0 && !full) {
		return out, behind || full, next, nil
	}
	if len(out) == 0 {
		// Nothing due in the window: was it full? Ask cheaply before the full scan.
		var n int
		if err := s.pool.QueryRow(ctx, countWindowSQL, window, from).Scan(&n); err != nil {
			return nil, false, from, fmt.Errorf("claim heads: %w", err)
		}
		if n < window {
			return nil, false, from, nil
		}
	}
	heads, err = s.claimAllHeads(ctx, now, limit)
	return heads, false, next, err
}

// Claim is one claim of KAFKA:msg events (Store.Claim): the due events, oldest first, each
// FLID's in order, and what Settle needs to record their delivery.
type Claim struct {
	Events []Claimed
	// More: more due events were already waiting; claim again once these are settled.
	More bool
	// Queued: the events are QUEUED ones above the delivery cursor, which Settle moves to Upto;
	// else they are held on their rows (PENDING), and Settle marks each.
	Queued bool
	From   int64   // the cursor the claim read above (0 when the claim covers nothing)
	Upto   int64   // the highest event id the claim covers: the cursor's next position
	Held   []int64 // the QUEUED events at or below Upto of held FLIDs, not claimed
}

// Claim claims up to limit due KAFKA:msg events. The events held on their rows come first (a
// failing FLID's, ClaimHeadsFrom, with from its bound and next the bound for the following
// claim): a FLID with one holds its QUEUED events, which follow it. Only when none is due does it
// claim QUEUED events above the delivery cursor, oldest first, reading at most window of them:
// those of FLIDs with no PENDING or DEAD event, up to the limit-th (the window's events after it
// are left for the next claim). A claim of QUEUED events may hold no event to
// send (its window was all held FLIDs'): Settle still moves the cursor over it.
func (s *Store) Claim(ctx context.Context, now time.Time, limit, window int, from int64) (c Claim, next int64, err error) {
	heads, behind, next, err := s.ClaimHeadsFrom(ctx, now, limit, from)
	if err != nil || len(heads) > 0 {
		return Claim{Events: heads, More: behind}, next, err
	}
	c = Claim{Queued: true}
	window = max(window, limit)
	rows, err := s.pool.Query(ctx, claimQueuedSQL, window)
	if err != nil {
		return Claim{}, next, fmt.Errorf("claim queued: %w", err)
	}
	defer rows.Close()
	seen := 0
	for len(c.Events) < limit && rows.Next() {
		e := Claimed{Target: event.TargetMsg}
		var due bool
		var msgID *int64
		if err := rows.Scan(&e.EventID, &due, &e.FLID, &e.Type, &e.StateVersion, &msgID, &e.Payload, &e.Attempts, &e.CreatedAt, &c.From); err != nil {
			return Claim{}, next, fmt.Errorf("claim queued: %w", err)
		}
		seen++
		c.Upto = e.EventID
		if !due {
			c.Held = append(c.Held, e.EventID)
			continue
		}
		if msgID != nil {
			e.MsgID = *msgID
		}
		e.Represents = []int64{e.EventID}
		c.Events = append(c.Events, e)
	}
	rows.Close() // the rows after the limit-th due one are read and dropped: Err covers them too
	if err := rows.Err(); err != nil {
		return Claim{}, next, fmt.Errorf("claim queued: %w", err)
	}
	c.More = len(c.Events) == limit || seen == window
	return c, next, nil
}

// Settle records what became of a claim's events under lease: sent were acknowledged (with the
// ones Kafka already held), failures failed (an attempt counted against each: backoff, or DEAD);
// the rest (held behind a failed one, or not sent) stay unsent. For a claim of QUEUED events it
// first moves the delivery cursor to c.Upto, holding on its row (PENDING) every event up to it
// that was not acknowledged; the failures are then counted on those rows. It returns what became
// of each failed event.
func (s *Store) Settle(ctx context.Context, lease leader.Lease, c Claim, sent []int64, failures []Failure, now time.Time) ([]Outcome, error) {
	if c.Queued {
		acked := make(map[int64]bool, len(sent))
		for _, id := range sent {
			acked[id] = true
		}
		unsent := slices.Clone(c.Held)
		for _, e := range c.Events {
			if !acked[e.EventID] {
				unsent = append(unsent, e.EventID)
			}
		}
		if err := s.advance(ctx, lease, c.From, c.Upto, unsent, now); err != nil {
			return nil, err
		}
	} else if _, err := s.MarkSent(ctx, lease, sent, now); err != nil {
		return nil, err
	}
	if len(failures) == 0 {
		return nil, nil
	}
	return s.MarkFailed(ctx, lease, failures, now)
}

// advance moves the delivery cursor from from to upto under lease, in one statement: the events
// up to upto count as delivered at now, except those of unsent, which become PENDING (held on
// their row, as a failed or held event always was). leader.ErrFenced when lease is no longer the
// role's current term; an error when the cursor is no longer at from (nothing changed).
func (s *Store) advance(ctx context.Context, lease leader.Lease, from, upto int64, unsent []int64, now time.Time) error {
	if upto <= from && len(unsent) == 0 {
		return nil
	}
	var epoch *int64
	var at int64
	if err := s.pool.QueryRow(ctx, advanceSQL, upto, now, lease.Role, lease.Epoch, from, unsent).Scan(&epoch, &at); err != nil {
		return fmt.Errorf("advance the delivery cursor: %w", err)
	}
	if epoch == nil || *epoch != lease.Epoch {
		return fmt.Errorf("advance the delivery cursor: %w", leader.ErrFenced)
	}
	if at != from {
		return fmt.Errorf("advance the delivery cursor: it is at %d, not %d as claimed", at, from)
	}
	return nil
}

// claimAllHeads is the complete claim: a skip scan over every FLID with unsent events.
func (s *Store) claimAllHeads(ctx context.Context, now time.Time, limit int) ([]Claimed, error) {
	rows, err := s.pool.Query(ctx, claimHeadsSQL, now, limit)
	if err != nil {
		return nil, fmt.Errorf("claim heads: %w", err)
	}
	out, err := scanClaimed(rows, event.TargetMsg)
	if err != nil {
		return nil, fmt.Errorf("claim heads: %w", err)
	}
	return out, nil
}

// FoldStates moves at most limit rows of msg_state_log, from event_id from in id order, into
// msg_state_out under the lease: the newest state of each FLID becomes its row (foldStatesSQL).
// from is a lower bound of the rows left (0: none known); it returns how many rows it moved and
// the next bound.
func (s *Store) FoldStates(ctx context.Context, fence leader.Fence, from int64, limit int) (int, int64, error) {
	var n int
	var last int64
	err := leader.Fenced(ctx, s.pool, fence, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, foldStatesSQL, from, limit).Scan(&n, &last)
	})
	if err != nil {
		return 0, from, fmt.Errorf("fold states: %w", err)
	}
	if n == 0 {
		return 0, from, nil
	}
	return n, last + 1, nil
}

// StateClaims is what one KAFKA:schd flush visited.
type StateClaims struct {
	// Due are the newest states of the visited FLIDs that are due and newer than the version
	// the state topic already holds: one record each.
	Due []Claimed
	// Stale are newest states at or below the version already sent (a replayed older dead
	// letter, a duplicate): settled without sending (MarkStatesSent).
	Stale []Claimed
	// Visited is how many FLIDs the claim read (at most its limit).
	Visited int
	// Next is the cursor of the next flush: the last visited FLID when the limit stopped the
	// visit, "" when it reached the end (the next flush starts over).
	Next string
}

// ClaimStates visits at most limit FLIDs with an unsent state, in FLID order after the cursor
// after ("": from the start), by index: its cost does not grow with the number of flights.
func (s *Store) ClaimStates(ctx context.Context, now time.Time, limit int, after string) (StateClaims, error) {
	var out StateClaims
	rows, err := s.pool.Query(ctx, claimStatesSQL, now, limit, after)
	if err != nil {
		return out, fmt.Errorf("claim states: %w", err)
	}
	defer rows.Close()
	last := ""
	for rows.Next() {
		c := Claimed{Target: event.TargetSchd}
		var msgID *int64
		var due bool
		var sent int64
		if err := rows.Scan(&c.EventID, &c.FLID, &c.Type, &c.StateVersion, &msgID, &c.Payload, &c.Attempts, &c.CreatedAt, &due, &sent); err != nil {
			return out, fmt.Errorf("claim states: %w", err)
		}
		if msgID != nil {
			c.MsgID = *msgID
		}
		c.Represents = []int64{c.EventID}
		out.Visited++
		last = c.FLID
		switch {
		case c.StateVersion <= sent:
			out.Stale = append(out.Stale, c)
		case due:
			out.Due = append(out.Due, c)
		}
	}
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("claim states: %w", err)
	}
	if out.Visited >= limit {
		out.Next = last
	}
	return out, nil
}

// MarkStatesSent records, under the lease, that the state topic holds each claimed state: it
// raises each FLID's sent version and settles the FLID's unsent state as SENT (PENDING and DEAD
// alike) unless a newer one was written since the claim. It returns how many states it settled.
func (s *Store) MarkStatesSent(ctx context.Context, fence leader.Fence, states []Claimed, now time.Time) (int64, error) {
	if len(states) == 0 {
		return 0, nil
	}
	keys, versions := make([]string, len(states)), make([]int64, len(states))
	for i, c := range states {
		keys[i], versions[i] = c.FLID, c.StateVersion
	}
	var n int64
	err := leader.Fenced(ctx, s.pool, fence, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, markStatesSentSQL, keys, versions, now)
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("mark states sent: %w", err)
	}
	return n, nil
}

// CheckLease fails (leader.ErrFenced) unless fence is still the role's current lease.
func (s *Store) CheckLease(ctx context.Context, fence leader.Fence) error {
	if err := leader.Fenced(ctx, s.pool, fence, func(pgx.Tx) error { return nil }); err != nil {
		return fmt.Errorf("check lease: %w", err)
	}
	return nil
}

// MarkSent marks the events SENT under lease, in one statement and one round trip (the lease
// check is inside it: markSentSQL). It returns how many rows changed (an operator may have
// skipped one meanwhile), leader.ErrFenced when lease is no longer the role's current term.
func (s *Store) MarkSent(ctx context.Context, lease leader.Lease, ids []int64, now time.Time) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	var epoch *int64
	var n int64
	if err := s.pool.QueryRow(ctx, markSentSQL, ids, now, lease.Role, lease.Epoch).Scan(&epoch, &n); err != nil {
		return 0, fmt.Errorf("mark sent: %w", err)
	}
	if epoch == nil || *epoch != lease.Epoch {
		return 0, fmt.Errorf("mark sent: %w", leader.ErrFenced)
	}
	return n, nil
}

// Progress is the pipeline's progress a heartbeat reports: ingest's watermark and, per target,
// the oldest event not sent yet (0: none).
type Progress struct {
	Watermark    int64
	OldestUnsent map[string]int64
}

// Progress reads the heartbeat's progress under lease: leader.ErrFenced when the lease is no
// longer this leader's, so a deposed leader reports nothing.
func (s *Store) Progress(ctx context.Context, lease leader.Lease) (Progress, error) {
	var epoch *int64
	var msg, schd int64
	p := Progress{}
	if err := s.pool.QueryRow(ctx, progressSQL, lease.Role).Scan(&epoch, &p.Watermark, &msg, &schd); err != nil {
		return Progress{}, fmt.Errorf("read progress: %w", err)
	}
	if epoch == nil || *epoch != lease.Epoch {
		return Progress{}, fmt.Errorf("read progress: %w", leader.ErrFenced)
	}
	p.OldestUnsent = map[string]int64{event.TargetMsg: msg, event.TargetSchd: schd}
	return p, nil
}

// OriginTimes returns when ingest enqueued each of the messages (proc_state.enqueued_at), for
// the end-to-end lag: one query for a batch. Messages not in proc_state are left out.
func (s *Store) OriginTimes(ctx context.Context, msgIDs []int64) (map[int64]time.Time, error) {
	out := make(map[int64]time.Time, len(msgIDs))
	if len(msgIDs) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, originTimesSQL, msgIDs)
	if err != nil {
		return nil, fmt.Errorf("origin times: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var at time.Time
		if err := rows.Scan(&id, &at); err != nil {
			return nil, fmt.Errorf("origin times: %w", err)
		}
		out[id] = at
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("origin times: %w", err)
	}
	return out, nil
}

// Failure is one failed attempt of the events in IDs.
type Failure struct {
	IDs   []int64
	Err   string
	Fatal bool // non-retryable: DEAD at once
}

// StateFailure is one failed KAFKA:schd record: version Version of FLID.
type StateFailure struct {
	FLID    string
	Version int64
	Err     string
	Fatal   bool
}

// Outcome is what a failure did to one event.
type Outcome struct {
	EventID       int64
	Status        string // PENDING (will retry) or DEAD
	Attempts      int
	NextAttemptAt time.Time // zero when DEAD
}

// MarkFailed counts a failed attempt for every event of failures (one statement, under the
// lease) and returns what became of each.
func (s *Store) MarkFailed(ctx context.Context, fence leader.Fence, failures []Failure, now time.Time) ([]Outcome, error) {
	var ids []int64
	var msgs []string
	var fatal []bool
	for _, f := range failures {
		for _, id := range f.IDs {
			ids, msgs, fatal = append(ids, id), append(msgs, clip.String(f.Err, maxNote)), append(fatal, f.Fatal)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	out, err := s.markFailed(ctx, fence, markFailedSQL, ids, msgs, fatal, now)
	if err != nil {
		return nil, fmt.Errorf("mark failed: %w", err)
	}
	return out, nil
}

// markFailed runs one of the failure statements ($1..$3 the rows, $4 now, $5, $6 the policy,
// extra from $7).
func (s *Store) markFailed(ctx context.Context, fence leader.Fence, sql string, sel, msgs any, fatal []bool, now time.Time, extra ...any) ([]Outcome, error) {
	var out []Outcome
	err := leader.Fenced(ctx, s.pool, fence, func(tx pgx.Tx) error {
		args := append([]any{sel, msgs, fatal, now, s.policy.MaxAttempts, s.delays}, extra...)
		rows, err := tx.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var o Outcome
			var next *time.Time
			if err := rows.Scan(&o.EventID, &o.Status, &o.Attempts, &next); err != nil {
				return err
			}
			if next != nil {
				o.NextAttemptAt = *next
			}
			out = append(out, o)
		}
		return rows.Err()
	})
	return out, err
}

// MarkStatesFailed counts a failed attempt for every PENDING KAFKA:schd event each failed
// record represents (its FLID's, at or below its version), under the lease.
func (s *Store) MarkStatesFailed(ctx context.Context, fence leader.Fence, failures []StateFailure, now time.Time) ([]Outcome, error) {
	if len(failures) == 0 {
		return nil, nil
	}
	n := len(failures)
	keys, msgs, fatal, versions := make([]string, n), make([]string, n), make([]bool, n), make([]int64, n)
	for i, f := range failures {
		keys[i], msgs[i], fatal[i], versions[i] = f.FLID, clip.String(f.Err, maxNote), f.Fatal, f.Version
	}
	out, err := s.markFailed(ctx, fence, markStatesFailedSQL, keys, msgs, fatal, now, versions)
	if err != nil {
		return nil, fmt.Errorf("mark states failed: %w", err)
	}
	return out, nil
}

// maxNote bounds, in characters, the free text an event's last_error keeps (a failure's error,
// an operator's skip note).
const maxNote = 2000

// TargetStats is the backlog of one target.
type TargetStats struct {
	Target        string
	Pending       int64
	Dead          int64
	OldestPending time.Time // zero when nothing is pending
}

// Stats returns the backlog per target (targets without unsent events are absent).
func (s *Store) Stats(ctx context.Context) ([]TargetStats, error) { return Backlog(ctx, s.pool) }

// Backlog returns the backlog per target, in target order (targets without unsent events are
// absent): what the dispatcher's gauges and msgxctl status show.
func Backlog(ctx context.Context, q Querier) ([]TargetStats, error) {
	rows, err := q.Query(ctx, statsSQL)
	if err != nil {
		return nil, fmt.Errorf("outbox stats: %w", err)
	}
	out, err := pgx.AppendRows([]TargetStats(nil), rows, func(row pgx.CollectableRow) (TargetStats, error) {
		var st TargetStats
		var oldest *time.Time
		err := row.Scan(&st.Target, &st.Pending, &st.Dead, &oldest)
		if oldest != nil {
			st.OldestPending = *oldest
		}
		return st, err
	})
	if err != nil {
		return nil, fmt.Errorf("outbox stats: %w", err)
	}
	return out, nil
}
