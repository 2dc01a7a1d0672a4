package status

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/procstate"
)

// ErrNoMessage is ReadMessage's answer for an id that is neither live nor archived.
var ErrNoMessage = errors.New("no such message")

// Message is one message's row, live (proc_state) or archived (proc_state_hst). Text columns
// read "" when NULL.
type Message struct {
	MsgID int64
	Raw   *string // nil once the raw retention cleared it
	// RawBytes are the mailbox bytes where the text copy is not them: their UTF-8 reading from a
	// declared GB charset (Raw), or text PostgreSQL cannot hold (Raw nil). Nil otherwise.
	RawBytes                              []byte
	SHA256                                string // hex
	Status, Class, Reason                 string
	Attempts                              int
	NextAttemptAt                         *time.Time
	IdentityKey                           string
	ContentDiffers                        bool
	Type, Styp                            string
	ReceivedAt                            *time.Time // the mailbox's wall clock (airport time, no zone)
	EnqueuedAt                            time.Time
	Late                                  bool
	StartedAt, FinishedAt, BackfillNextAt *time.Time
	BackfillAttempts                      int
	BackfillError, BackfillOutcome        string
	BackfillDoneAt, BackfillAbandonedAt   *time.Time
	ProcessingThrough                     *int64
	Crashes, Deaths                       int
	MarkerDebt                            bool // its marker is owed with its batch's (marker_debt)
	Archived                              bool
	ArchivedAt, RawClearedAt              *time.Time // archived rows only
}

// Audit is one audit row naming a message.
type Audit struct {
	Action string    `json:"action"`
	Actor  string    `json:"actor"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// MessageStory is what operators see of one message (msgxctl show, the console's message
// page): its row, every attempt and the audit rows naming it.
type MessageStory struct {
	Message  Message
	Attempts []procstate.Attempt
	Audit    []Audit
}

// Querier runs a query (a *pgxpool.Pool, a pgx.Tx).
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// ReadMessage reads message id, live or archived, with its attempts and audit rows;
// ErrNoMessage when there is none.
func ReadMessage(ctx context.Context, db Querier, id int64) (MessageStory, error) {
	rows, err := db.Query(ctx, messageSQL, id)
	if err != nil {
		return MessageStory{}, fmt.Errorf("read message %d: %w", id, err)
	}
	m, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByPos[Message])
	if errors.Is(err, pgx.ErrNoRows) {
		return MessageStory{}, fmt.Errorf("read message %d: %w", id, ErrNoMessage)
	}
	if err != nil {
		return MessageStory{}, fmt.Errorf("read message %d: %w", id, err)
	}
	st := MessageStory{Message: m}
	if st.Attempts, err = procstate.Attempts(ctx, db, id); err != nil {
		return st, err
	}
	rows, err = db.Query(ctx, messageAuditSQL, id)
	if err != nil {
		return st, fmt.Errorf("read audit of %d: %w", id, err)
	}
	if st.Audit, err = pgx.CollectRows(rows, pgx.RowToStructByPos[Audit]); err != nil {
		return st, fmt.Errorf("read audit of %d: %w", id, err)
	}
	return st, nil
}
