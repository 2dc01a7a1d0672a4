package processor

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/msgx/msgx/pkg/procstate"
	"github.com/msgx/msgx/pkg/sis"
)

// Error is a classified processing failure. Processors return it (with Errorf) for MALFORMED,
// PROTOCOL, CODEC_ERROR or UNSUPPORTED; any other error counts as INFRA.
type Error struct {
	Class  procstate.Class
	Reason string
}

func (e *Error) Error() string { return string(e.Class) + ": " + e.Reason }

// Errorf returns a classified error.
func Errorf(class procstate.Class, format string, args ...any) error {
	return &Error{Class: class, Reason: fmt.Sprintf(format, args...)}
}

// classify maps any error to its class and reason; this is the one place errors are classified.
func classify(err error) (procstate.Class, string) {
	var pe *Error
	if errors.As(err, &pe) {
		return pe.Class, pe.Reason
	}
	var se *sis.Error
	if errors.As(err, &se) {
		return procstate.Class(se.Class), se.Error()
	}
	return procstate.ClassInfra, err.Error()
}

// statusOf is the status an error of class c gives a message: DEAD for a permanent class, else
// FAILED (retried).
func statusOf(c procstate.Class) procstate.Status {
	if c.Permanent() {
		return procstate.StatusDead
	}
	return procstate.StatusFailed
}

// environmental reports whether err is PostgreSQL refusing or failing the work for a reason
// that is not the message's: a privilege missing (a grant revoked, as a rollback's roles apply
// does before the pods roll), the connection or the server going away, the server out of
// resources (disk full, too many connections) or read-only (a standby), a serialization failure
// or a deadlock. Such an attempt is
// not charged to the message (INV-23d): the step ends with the error and the loop retries the
// head after its backoff, however long the cause lasts, instead of ending message after message
// DEAD EXHAUSTED. A statement cancelled (57014, e.g. a statement timeout) may be the message's
// doing and stays charged.
func environmental(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code == "57014" {
		return false
	}
	switch pe.Code[:2] {
	case "08", "57", "58": // connection, operator intervention, system error
		return true
	}
	switch pe.Code {
	case "42501", "25006", "40001", "40P01", "55P03", // privilege, read-only, serialization, deadlock, lock not available
		"53100", "53300": // disk full, too many connections (not out of memory or a configuration limit: a message may cause those)
		return true
	}
	return false
}

// refused reports whether err is PostgreSQL failing the work while it answers, for a reason a
// quick retry does not change: every environmental error but a lost connection or server (08,
// 57P01–57P03: a wake-up says it is back), a read-only server (25006: the pool finds the new
// primary) and a serialization failure or deadlock (40001, 40P01: transient).
func refused(err error) bool {
	var pe *pgconn.PgError
	if !environmental(err) || !errors.As(err, &pe) {
		return false
	}
	switch pe.Code {
	case "25006", "40001", "40P01", "57P01", "57P02", "57P03":
		return false
	}
	return !strings.HasPrefix(pe.Code, "08")
}
