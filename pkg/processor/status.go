package processor

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/sis"
)

// Status is the status of a proc_state row (the state machine of doc.go).
type Status string

// Statuses of a proc_state row.
const (
	StatusPending   Status = "PENDING"   // waiting for the engine (new, or replayed)
	StatusFailed    Status = "FAILED"    // retryable failure; holds the head until next_attempt_at
	StatusSucceeded Status = "SUCCEEDED" // applied
	StatusSkipped   Status = "SKIPPED"   // terminal without a change (duplicate, ignored, no match)
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

// permanent reports whether the class makes a message DEAD at once.
func (c Class) permanent() bool { return c == ClassMalformed || c == ClassProtocol }

// Error is a classified processing failure. Processors return it (with Errorf) for MALFORMED,
// PROTOCOL, CODEC_ERROR or UNSUPPORTED; any other error counts as INFRA.
type Error struct {
	Class  Class
	Reason string
}

func (e *Error) Error() string { return string(e.Class) + ": " + e.Reason }

// Errorf returns a classified error.
func Errorf(class Class, format string, args ...any) error {
	return &Error{Class: class, Reason: fmt.Sprintf(format, args...)}
}

// classify maps any error to its class and reason; this is the one place errors are classified.
func classify(err error) (Class, string) {
	var pe *Error
	if errors.As(err, &pe) {
		return pe.Class, pe.Reason
	}
	var se *sis.Error
	if errors.As(err, &se) {
		return Class(se.Class), se.Error()
	}
	return ClassInfra, err.Error()
}

// status is the status an error of class c gives a message: DEAD for a permanent class, else
// FAILED (retried).
func (c Class) status() Status {
	if c.permanent() {
		return StatusDead
	}
	return StatusFailed
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
