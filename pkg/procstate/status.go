// Package procstate is what every reader and writer of proc_state shares: the status of a
// message, the error classes, the reasons a message ends SKIPPED with (each written by one
// constructor and read by one parser), the replay rule and Replay itself, and the attempt
// history. The processor stage writes these rows; the console, msgxctl and the status snapshot
// read them and replay through this package, never through the processor's engine.
package procstate

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
)

// Status is the status of a proc_state row (the state machine of pkg/processor's doc.go).
type Status string

// Statuses of a proc_state row.
const (
	StatusPending   Status = "PENDING"   // waiting for the engine (new, or replayed)
	StatusFailed    Status = "FAILED"    // retryable failure; holds the head until next_attempt_at
	StatusSucceeded Status = "SUCCEEDED" // applied
	StatusSkipped   Status = "SKIPPED"   // terminal without a change (a Skip reason)
	StatusDead      Status = "DEAD"      // terminal failure (permanent class, or exhausted)
)

// Open reports whether the status still waits for the engine (PENDING or FAILED).
func (s Status) Open() bool { return s == StatusPending || s == StatusFailed }

// Terminal reports whether the status is final (SUCCEEDED, SKIPPED or DEAD): the mailbox marker
// is owed (INV-8c).
func (s Status) Terminal() bool { return s == StatusSucceeded || s == StatusSkipped || s == StatusDead }

// Class is the pipeline error class recorded on a proc_state row (docs/spec.md §5).
type Class string

// Error classes.
const (
	ClassMalformed   Class = "MALFORMED"   // DEAD at once, never replayed
	ClassProtocol    Class = "PROTOCOL"    // DEAD at once, never replayed
	ClassCodec       Class = "CODEC_ERROR" // FAILED, retried, replayable
	ClassUnsupported Class = "UNSUPPORTED" // FAILED, retried, replayable
	ClassInfra       Class = "INFRA"       // FAILED, retried, replayable
	ClassExhausted   Class = "EXHAUSTED"   // DEAD after max attempts or the head deadline, replayable
)

// Classes are every error class (proc_state_error_class_check).
var Classes = []Class{ClassMalformed, ClassProtocol, ClassCodec, ClassUnsupported, ClassInfra, ClassExhausted}

// ReplayableClasses are the classes replay may requeue. MALFORMED and PROTOCOL are final: the
// same bytes would fail the same way.
var ReplayableClasses = []Class{ClassCodec, ClassUnsupported, ClassInfra, ClassExhausted}

// Permanent reports whether the class makes a message DEAD at once (and never replayed).
func (c Class) Permanent() bool { return c == ClassMalformed || c == ClassProtocol }

// Replayable is the replay rule for one message: FAILED or DEAD of a ReplayableClasses class, or
// SKIPPED no-match (by id: it applies once its flight is live). It returns why not when it is
// not replayable.
func Replayable(status Status, class Class, reason string) (bool, string) {
	switch {
	case status == StatusSkipped && IsNoMatch(reason):
		return true, ""
	case status == StatusSkipped:
		return false, "SKIPPED " + reason + " is not replayed (only SKIPPED " + string(SkipNoMatch) + ":*)"
	case status != StatusFailed && status != StatusDead:
		return false, "status " + string(status) + " is not FAILED, DEAD or SKIPPED " + string(SkipNoMatch) + ":*"
	case !slices.Contains(ReplayableClasses, class):
		return false, "class " + string(class) + " is never replayed"
	}
	return true, ""
}

// Querier runs a query (a pool, a connection or a transaction).
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// CountByStatus counts proc_state rows by status: the given statuses only (each present, 0 when
// none), or every status when none is given. It is the one such count (the engine's backlog
// gauge, the operators' status snapshot).
func CountByStatus(ctx context.Context, db Querier, statuses ...Status) (map[Status]int64, error) {
	var rows pgx.Rows
	var err error
	out := make(map[Status]int64, max(len(statuses), 5))
	if len(statuses) == 0 {
		rows, err = db.Query(ctx, countAllByStatusSQL)
	} else {
		names := make([]string, len(statuses))
		for i, s := range statuses {
			names[i], out[s] = string(s), 0
		}
		rows, err = db.Query(ctx, countByStatusSQL, names)
	}
	if err != nil {
		return nil, fmt.Errorf("count proc_state by status: %w", err)
	}
	var st string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&st, &n}, func() error { out[Status(st)] = n; return nil }); err != nil {
		return nil, fmt.Errorf("count proc_state by status: %w", err)
	}
	return out, nil
}
