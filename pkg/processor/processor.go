package processor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/sis"
)

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

// Message is one message handed to a processor.
type Message struct {
	ID       int64
	Raw      string
	Decoded  *sis.Message
	Identity string
	Now      time.Time // the pump clock's time for this batch: use it for every timestamp
	Lease    leader.Lease
}

// Outcome is a processor's successful result. The zero Outcome is SUCCEEDED.
type Outcome struct {
	Skipped bool   // SKIPPED instead of SUCCEEDED (e.g. no-match:FLID)
	Reason  string // recorded on the row
}

// Processor applies one kind of message inside the pump's transaction: its business change and
// its msg_event rows. It must not commit, talk to Kafka or to the mailbox. A returned error rolls
// back everything the processor wrote for this message.
type Processor interface {
	Apply(ctx context.Context, tx pgx.Tx, m Message) (Outcome, error)
}

// ProcessorFunc adapts a function to Processor.
type ProcessorFunc func(ctx context.Context, tx pgx.Tx, m Message) (Outcome, error)

// Apply calls f.
func (f ProcessorFunc) Apply(ctx context.Context, tx pgx.Tx, m Message) (Outcome, error) {
	return f(ctx, tx, m)
}

// Batcher is a Processor that can also apply a run of messages of one batch in memory and write
// them together. The pump calls Begin once per batch transaction with every message of the batch
// that this processor serves (some of which may not reach it: duplicates, ignored types), then
// Session.Apply for each message it serves in order, then Session.Flush before the batch
// commits. Session.Apply must leave no trace when it returns an error, so the pump needs no
// savepoint for it. A Flush failure fails the whole batch; the pump then goes on one message
// per transaction, so a message that cannot be written is isolated.
type Batcher interface {
	Processor
	Begin(ctx context.Context, tx pgx.Tx, msgs []Message) (Session, error)
}

// Session is a Batcher's state within one batch transaction.
type Session interface {
	Apply(ctx context.Context, m Message) (Outcome, error)
	Flush(ctx context.Context) error
}
