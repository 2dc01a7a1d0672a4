package request

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/mailbox/outbound"
)

// Outbox is the outbound mailbox (pkg/mailbox; the tests assert that it is one, and a
// RecentOutbox).
type Outbox interface {
	// FindOutbound returns the row holding exactly text with routingID inserted since a wall clock.
	FindOutbound(ctx context.Context, routingID, text string, since time.Time) (outbound.Row, bool, error)
	// InsertOutbound writes a row and returns its id once it is committed.
	InsertOutbound(ctx context.Context, msg outbound.Message) (int64, error)
	// OutboundSent returns COUTMSGS_DATE_SENT of the rows the transport sent.
	OutboundSent(ctx context.Context, ids []int64) (map[int64]time.Time, error)
}

// ErrShadow means nothing is sent: shadow mode writes nothing to MySQL.
var ErrShadow = errors.New("request: shadow mode sends nothing")

// Sender writes registered requests to coutmsgs, at most once each.
type Sender struct {
	store  *Store
	out    Outbox
	clock  clock.Clock
	shadow bool

	// step, when set (tests), is called at each step of a send with its name; an error stops the
	// send there as a crash would (the PostgreSQL transaction is not committed).
	step func(name string) error
}

// Send steps, in order.
const (
	StepLocked   = "locked"    // the request row is locked, nothing looked up yet
	StepLookedUp = "looked-up" // coutmsgs was searched for the message
	StepInserted = "inserted"  // the coutmsgs row is committed, SENT is not
	StepMarked   = "marked"    // SENT written, not committed
)

// NewSender returns a sender. out may be nil only in shadow mode.
func NewSender(store *Store, out Outbox, clk clock.Clock, shadow bool) (*Sender, error) {
	if out == nil && !shadow {
		return nil, errors.New("request: an outbound mailbox is required unless in shadow mode")
	}
	return &Sender{store: store, out: out, clock: clk, shadow: shadow}, nil
}

// Outcome is what Send did.
type Outcome struct {
	Request Request
	// Found: the outbound row already existed (an earlier send crashed before its commit) and
	// was only recorded, not written again.
	Found bool
	// Already: the request was no longer REGISTERED; nothing was done.
	Already bool
}

// lookBack bounds the coutmsgs look-up before DTTM (the wall clock the row was written with is
// the send time, at or after DTTM; a day absorbs any zone confusion of the mailbox's DATETIME).
const lookBack = 24 * time.Hour

// Send writes request id to coutmsgs and records it SENT. The request row stays locked from the
// look-up to the commit, so two senders never both insert; a crash after the insert leaves it
// REGISTERED and the next Send finds the row by its exact text instead of writing it again. The
// sent time is always the outbound row's insert time: the clock's now for a row written here,
// COUTMSGS_DATE_INSERTED (airport wall clock) for a row an interrupted send wrote.
func (s *Sender) Send(ctx context.Context, id int64) (Outcome, error) {
	if s.shadow {
		return Outcome{}, ErrShadow
	}
	var res Outcome
	err := pgx.BeginFunc(ctx, s.store.pool, func(tx pgx.Tx) error {
		list, err := s.store.list(ctx, tx, getForSendSQL, id)
		if err != nil {
			return err
		}
		if len(list) == 0 {
			return fmt.Errorf("%w: %d", ErrNotFound, id)
		}
		r := list[0]
		res.Request = r
		if r.Status != Registered {
			res.Already = true
			return nil
		}
		if err := s.at(StepLocked); err != nil {
			return err
		}
		row, found, err := s.out.FindOutbound(ctx, r.RoutingID, r.XML, r.DTTM.Add(-lookBack))
		if err != nil {
			return fmt.Errorf("send request %d: %w", id, err)
		}
		if err := s.at(StepLookedUp); err != nil {
			return err
		}
		if !found {
			if r, row, found, err = s.reconcile(ctx, tx, r); err != nil {
				return fmt.Errorf("send request %d: %w", id, err)
			}
			res.Request = r
		}
		outID, sentAt := row.ID, s.insertedAt(row.Inserted)
		if !found {
			sentAt = s.clock.Now()
			outID, err = s.out.InsertOutbound(ctx, outbound.Message{Text: r.XML, RoutingID: r.RoutingID,
				Inserted: sentAt.In(s.store.cfg.Location)})
			if err != nil {
				return fmt.Errorf("send request %d: %w", id, err)
			}
		}
		res.Found = found
		if err := s.at(StepInserted); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, markSentSQL, id, outID, sentAt); err != nil {
			return fmt.Errorf("record request %d sent: %w", id, err)
		}
		if err := s.at(StepMarked); err != nil {
			return err
		}
		res.Request.Status, res.Request.OutMsgID, res.Request.SentAt = Sent, outID, sentAt
		return nil
	})
	if err != nil {
		return Outcome{}, err
	}
	return res, nil
}

// insertedAt reads a coutmsgs DATE_INSERTED (wall-clock fields labelled UTC) in the airport zone.
func (s *Sender) insertedAt(wall time.Time) time.Time {
	return time.Date(wall.Year(), wall.Month(), wall.Day(), wall.Hour(), wall.Minute(), wall.Second(), 0, s.store.cfg.Location)
}

func (s *Sender) at(step string) error {
	if s.step == nil {
		return nil
	}
	return s.step(step)
}
