// Package status reads what operators look at from PostgreSQL: a snapshot of the whole pipeline
// (msgxctl status, the console's pipeline page, the demo's progress line: watermark and gap,
// head, backlog, dead letters, markers, leaders, dispatcher lag and the dispatcher's report of
// its sends), the verdict judged from it (Snapshot.Verdict: the console's live verdict), and one
// message, live or archived, with its attempts and audit rows (ReadMessage: msgxctl show, the
// console's message page). Read-only; every query is cheap (indexed or tiny tables).
package status

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/msgx/msgx/pkg/outbox"
	"github.com/msgx/msgx/pkg/procstate"
)

// Snapshot is the pipeline at one moment.
type Snapshot struct {
	At               time.Time        `json:"at"`
	Watermark        int64            `json:"watermark"`
	GapStart         *int64           `json:"gap_start,omitempty"`
	GapAge           *float64         `json:"gap_age_seconds,omitempty"`
	GapLimit         *float64         `json:"gap_limit_seconds,omitempty"` // ingest's MSGX_MAX_COMMIT_DELAY
	SkippedIDs       int64            `json:"skipped_ids"`
	LateFound        int64            `json:"late_rows_found"`
	Head             *Head            `json:"head,omitempty"`
	ByStatus         map[string]int64 `json:"by_status"`
	DeadByClass      map[string]int64 `json:"dead_by_class"`
	MarkersOwed      int64            `json:"markers_owed"`
	MarkersAbandoned int64            `json:"markers_abandoned"`
	OldestOwed       *float64         `json:"oldest_marker_owed_seconds,omitempty"`
	Leaders          []Leader         `json:"leaders"`
	Outbox           []Target         `json:"outbox"`
	Flights          map[string]int64 `json:"flights_by_state"`
	Sends            []Send           `json:"dispatcher_sends"` // the dispatcher's report of its sends, per target
}

// gapGrace is how long past ingest's limit an open gap may stay before it is overdue: ingest
// skips it at its first step after the limit, and one step takes well under this.
const gapGrace = 30 * time.Second

// GapOverdue reports whether the open gap outlived the age at which ingest judges a gap
// permanent (its MSGX_MAX_COMMIT_DELAY, as ingest recorded it) by more than gapGrace: ingest
// should have skipped it, so it does not step, or its clock or the database's is wrong.
func (s Snapshot) GapOverdue() bool {
	return s.GapAge != nil && s.GapLimit != nil && *s.GapAge > *s.GapLimit+gapGrace.Seconds()
}

// Head is the message the pump works on.
type Head struct {
	MsgID    int64      `json:"msg_id"`
	Status   string     `json:"status"`
	Attempts int        `json:"attempts"`
	Age      float64    `json:"age_seconds"`
	Next     *time.Time `json:"next_attempt_at,omitempty"`
	Reason   string     `json:"reason,omitempty"`
}

// Leader is one role's current term. The leader renews renewed_at at every successful lock
// ping (a third of MSGX_LEADER_SESSION_TIMEOUT at most): a renewal older than the session
// timeout means the holder is gone, paused or cut off (Stale) and no standby took over yet.
type Leader struct {
	Role       string    `json:"role"`
	Epoch      int64     `json:"epoch"`
	Holder     string    `json:"holder"`
	AcquiredAt time.Time `json:"acquired_at"`
	RenewedAt  time.Time `json:"renewed_at"`
	RenewalAge float64   `json:"renewal_age_seconds"`
}

// Leaders reads every role's current term (leader_lease), renewal ages as of now.
func Leaders(ctx context.Context, pool *pgxpool.Pool, now time.Time) ([]Leader, error) {
	rows, err := pool.Query(ctx, leadersSQL)
	if err != nil {
		return nil, fmt.Errorf("read leaders: %w", err)
	}
	var out []Leader
	var l Leader
	if _, err := pgx.ForEachRow(rows, []any{&l.Role, &l.Epoch, &l.Holder, &l.AcquiredAt, &l.RenewedAt}, func() error {
		l.RenewalAge = now.Sub(l.RenewedAt).Seconds()
		out = append(out, l)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read leaders: %w", err)
	}
	return out, nil
}

// Stale reports whether the last renewal is older than sessionTimeout.
func (l Leader) Stale(sessionTimeout time.Duration) bool {
	return l.RenewalAge > sessionTimeout.Seconds()
}

// Target is the outbox lag of one delivery target.
type Target struct {
	Target  string   `json:"target"`
	Pending int64    `json:"pending"`
	Dead    int64    `json:"dead"`
	Oldest  *float64 `json:"oldest_pending_seconds,omitempty"`
}

// Options tune ReadWith.
type Options struct {
	// OpenOnly counts only PENDING, FAILED and DEAD messages (through their partial indexes),
	// not the finished ones, so the snapshot costs the same with any history (the console
	// refreshes it every few seconds).
	OpenOnly bool
}

// Read takes a snapshot; now is the caller's clock.
func Read(ctx context.Context, pool *pgxpool.Pool, now time.Time) (Snapshot, error) {
	return ReadWith(ctx, pool, now, Options{})
}

// readCursor reads the watermark, the open gap (its age and ingest's limit for it) and the gap
// ledger's counts.
func (s *Snapshot) readCursor(ctx context.Context, pool *pgxpool.Pool, now time.Time) error {
	var (
		gapSeen  *time.Time
		gapLimit *time.Duration
	)
	if err := pool.QueryRow(ctx, cursorSQL).Scan(&s.Watermark, &s.GapStart, &gapSeen, &gapLimit); err != nil {
		return fmt.Errorf("read inbox cursor: %w", err)
	}
	if gapLimit != nil {
		l := gapLimit.Seconds()
		s.GapLimit = &l
	}
	if gapSeen != nil {
		a := now.Sub(*gapSeen).Seconds()
		s.GapAge = &a
	}
	if err := pool.QueryRow(ctx, gapsSQL).Scan(&s.SkippedIDs, &s.LateFound); err != nil {
		return fmt.Errorf("read gap ledger: %w", err)
	}
	return nil
}

// ReadWith is Read with options.
func ReadWith(ctx context.Context, pool *pgxpool.Pool, now time.Time, opt Options) (Snapshot, error) {
	s := Snapshot{At: now, ByStatus: map[string]int64{}, DeadByClass: map[string]int64{}, Flights: map[string]int64{}}
	if err := s.readCursor(ctx, pool, now); err != nil {
		return s, err
	}
	var h Head
	var enq time.Time
	switch err := pool.QueryRow(ctx, headSQL).Scan(&h.MsgID, &h.Status, &h.Attempts, &enq, &h.Next, &h.Reason); err {
	case nil:
		h.Age = now.Sub(enq).Seconds()
		s.Head = &h
	case pgx.ErrNoRows:
	default:
		return s, fmt.Errorf("read head: %w", err)
	}
	if err := counts(ctx, pool, deadSQL, s.DeadByClass); err != nil {
		return s, fmt.Errorf("count dead letters: %w", err)
	}
	if opt.OpenOnly {
		if err := counts(ctx, pool, openSQL, s.ByStatus); err != nil {
			return s, fmt.Errorf("count open messages: %w", err)
		}
		for _, n := range s.DeadByClass {
			s.ByStatus["DEAD"] += n
		}
	} else {
		byStatus, err := procstate.CountByStatus(ctx, pool)
		if err != nil {
			return s, err
		}
		for st, n := range byStatus {
			s.ByStatus[string(st)] = n
		}
	}
	var oldest *time.Time
	if err := pool.QueryRow(ctx, markersSQL).Scan(&s.MarkersOwed, &oldest); err != nil {
		return s, fmt.Errorf("count markers: %w", err)
	}
	if err := pool.QueryRow(ctx, abandonedSQL).Scan(&s.MarkersAbandoned); err != nil {
		return s, fmt.Errorf("count abandoned markers: %w", err)
	}
	if oldest != nil {
		a := now.Sub(*oldest).Seconds()
		s.OldestOwed = &a
	}
	leaders, err := Leaders(ctx, pool, now)
	if err != nil {
		return s, err
	}
	s.Leaders = leaders
	backlog, err := outbox.Backlog(ctx, pool)
	if err != nil {
		return s, fmt.Errorf("read outbox: %w", err)
	}
	for _, b := range backlog {
		t := Target{Target: b.Target, Pending: b.Pending, Dead: b.Dead}
		if !b.OldestPending.IsZero() {
			a := now.Sub(b.OldestPending).Seconds()
			t.Oldest = &a
		}
		s.Outbox = append(s.Outbox, t)
	}
	if err := counts(ctx, pool, flightsSQL, s.Flights); err != nil {
		return s, fmt.Errorf("count flights: %w", err)
	}
	return s, s.readSends(ctx, pool, now)
}

func counts(ctx context.Context, pool *pgxpool.Pool, q string, into map[string]int64) error {
	rows, err := pool.Query(ctx, q)
	if err != nil {
		return err
	}
	var k string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&k, &n}, func() error { into[k] = n; return nil })
	return err
}

// Counts formats counts as "A 1, B 2" sorted by key ("-" when empty), for human output.
func Counts(m map[string]int64) string {
	if len(m) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
