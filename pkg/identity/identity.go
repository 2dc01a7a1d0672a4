// Package identity is the business identity of a message (docs/spec.md §5, PRE-7b): its key
// SNDR|TYPE|STYP|SEQN[|day] (Rule.Key), the binding rule deciding which message owns a key
// within the window (Rule.Bind, pure: the processor reads and stores the bindings), and the rule
// itself: how long a key names the same message (the window) and whether the key includes the
// DTTM day. The rule is stored in the database (identity_rule, one row): the first processor
// start stores its configuration, a processor whose configuration disagrees refuses to start
// (Ensure), and msgxctl identity set changes it with an audit row (Set).
package identity

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Rule is the identity rule.
type Rule struct {
	Window     time.Duration // a same-key message is the same message only within this of the bound one's DTTM
	IncludeDay bool          // the key ends with |YYYYMMDD of DTTM
}

// String is the rule in the words of msgxctl's flags.
func (r Rule) String() string {
	return fmt.Sprintf("--window %s --include-day=%t", Duration(r.Window), r.IncludeDay)
}

// Same reports whether messages with the same key and these DTTMs are the same message: their
// DTTMs are at most Window apart.
func (r Rule) Same(bound, dttm time.Time) bool {
	d := dttm.Sub(bound)
	return d <= r.Window && -d <= r.Window
}

// Command is the msgxctl command that stores r.
func Command(r Rule) string {
	return "msgxctl identity set " + r.String() + ` --reason "…"`
}

// Duration formats whole hours as "168h", anything else as time.Duration does.
func Duration(d time.Duration) string {
	if d > 0 && d%time.Hour == 0 {
		return fmt.Sprintf("%dh", d/time.Hour)
	}
	return d.String()
}

// Stored is the rule as stored, with who set it, when and why.
type Stored struct {
	Rule
	SetAt  time.Time `json:"set_at"`
	SetBy  string    `json:"set_by"`
	Reason string    `json:"reason"`
}

// querier is a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Load reads the stored rule; ok is false when none is stored yet.
func Load(ctx context.Context, q querier) (s Stored, ok bool, err error) {
	var secs int64
	err = q.QueryRow(ctx, loadSQL).Scan(&secs, &s.IncludeDay, &s.SetAt, &s.SetBy, &s.Reason)
	if errors.Is(err, pgx.ErrNoRows) {
		return Stored{}, false, nil
	}
	if err != nil {
		return Stored{}, false, fmt.Errorf("read the identity rule: %w", err)
	}
	s.Window = time.Duration(secs) * time.Second
	return s, true, nil
}

// MismatchError is a configuration that disagrees with the stored rule. Its text is one line
// naming the command that changes the stored rule.
type MismatchError struct {
	Stored, Configured Rule
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("identity rule: the configuration (MSGX_IDENTITY_WINDOW=%s MSGX_IDENTITY_INCLUDE_DAY=%t) disagrees with the rule stored in the database (%s); configure the stored rule, or change it deliberately (docs/runbook.md, identity rule cut-over): %s",
		Duration(e.Configured.Window), e.Configured.IncludeDay, e.Stored, Command(e.Configured))
}

// Ensure checks the configured rule against the stored one at a processor's start: no stored
// rule → the configured one is stored (set_by actor); a different stored rule → a
// *MismatchError.
func Ensure(ctx context.Context, pool *pgxpool.Pool, configured Rule, actor string, now time.Time) error {
	if err := validate(configured); err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockSQL); err != nil {
			return fmt.Errorf("lock the identity rule: %w", err)
		}
		s, ok, err := Load(ctx, tx)
		if err != nil {
			return err
		}
		if ok {
			if s.Rule != configured {
				return &MismatchError{Stored: s.Rule, Configured: configured}
			}
			return nil
		}
		return write(ctx, tx, configured, actor, "first start: the configured rule is stored", now, false)
	})
}

// Set stores r (msgxctl identity set) with an audit row and returns the rule stored before (ok
// false: none).
func Set(ctx context.Context, pool *pgxpool.Pool, r Rule, actor, reason string, now time.Time) (before Stored, ok bool, err error) {
	if err := validate(r); err != nil {
		return Stored{}, false, err
	}
	if reason == "" {
		return Stored{}, false, errors.New("identity set: a --reason is required (it is audited)")
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockSQL); err != nil {
			return fmt.Errorf("lock the identity rule: %w", err)
		}
		if before, ok, err = Load(ctx, tx); err != nil {
			return err
		}
		return write(ctx, tx, r, actor, reason, now, true)
	})
	return before, ok, err
}

// write stores r, with an audit row when audit is set (a change by an operator; the first
// start's row records itself: set_by, set_at, reason); the caller holds lockSQL.
func write(ctx context.Context, tx pgx.Tx, r Rule, actor, reason string, now time.Time, audit bool) error {
	if _, err := tx.Exec(ctx, setSQL, int64(r.Window/time.Second), r.IncludeDay, now, actor, reason); err != nil {
		return fmt.Errorf("store the identity rule: %w", err)
	}
	if !audit {
		return nil
	}
	if _, err := tx.Exec(ctx, auditSQL, actor, reason, r.String(), now); err != nil {
		return fmt.Errorf("audit the identity rule: %w", err)
	}
	return nil
}

func validate(r Rule) error {
	if r.Window < time.Second || r.Window%time.Second != 0 {
		return fmt.Errorf("identity rule: the window must be whole seconds, at least 1s, got %s", r.Window)
	}
	return nil
}
