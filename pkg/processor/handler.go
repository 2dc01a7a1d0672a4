package processor

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/sis"
)

// The plug-in contract: the engine decodes a message, binds its identity and hands it to the
// Handler registered for its sis.Kind (the flight handler, package processor/flights; the
// reference-data handler, package refdata). A handler writes the business change and its events
// in the engine's transaction and answers with an Outcome or a classified error (Errorf).

// Message is one message handed to a handler.
type Message struct {
	ID       int64
	Raw      string
	Decoded  *sis.Message
	Identity string
	Now      time.Time // the engine clock's time for this batch: use it for every timestamp
	Lease    leader.Lease
	// Location is the airport's zone (Config.Location): the message's wall-clock times are its
	// local times, and the events give the instants they name in it.
	Location *time.Location
	// Forced: an operator forced its replay over what later-created messages set (INV-24b).
	Forced bool
}

// Outcome is a handler's successful result. The zero Outcome is SUCCEEDED.
type Outcome struct {
	Skipped bool   // SKIPPED instead of SUCCEEDED (e.g. no-match:FLID)
	Reason  string // recorded on the row
}

// Handler applies one kind of message inside the engine's transaction: its business change and
// its msg_event rows. It must not commit, talk to Kafka or to the mailbox. A returned error rolls
// back everything the handler wrote for this message.
type Handler interface {
	Apply(ctx context.Context, tx pgx.Tx, m Message) (Outcome, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, tx pgx.Tx, m Message) (Outcome, error)

// Apply calls f.
func (f HandlerFunc) Apply(ctx context.Context, tx pgx.Tx, m Message) (Outcome, error) {
	return f(ctx, tx, m)
}

// Batcher is a Handler that can also apply a run of messages of one batch in memory and write
// them together. The engine calls Begin once per batch transaction with every message of the
// batch that this handler serves (some of which may not reach it: duplicates, ignored types), then
// Session.Apply for each message it serves in order, then Session.Flush before the batch
// commits. Session.Apply must leave no trace when it returns an error, so the engine needs no
// savepoint for it. A Flush failure fails the whole batch; the engine then goes on one message
// per transaction, so a message that cannot be written is isolated.
type Batcher interface {
	Handler
	Begin(ctx context.Context, tx pgx.Tx, msgs []Message) (Session, error)
}

// Session is a Batcher's state within one batch transaction.
type Session interface {
	Apply(ctx context.Context, m Message) (Outcome, error)
	Flush(ctx context.Context) error
}
