package processor

import (
	"errors"
	"fmt"

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
