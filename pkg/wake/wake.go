// Package wake lets one stage wake the next at once instead of waiting for its next poll:
// the writer calls Notify inside the transaction that creates work (PostgreSQL delivers the
// notification only if that transaction commits), and the reader's idle wait returns early.
// Polling stays the fallback, so a lost notification only costs one poll interval.
//
// Channels are per schema ("<schema>.<topic>"), so deployments (and tests) that share a
// database do not wake each other.
package wake

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"

	"github.com/msgx/msgx/pkg/backoff"
)

// Topics.
const (
	Inbox  = "inbox"  // ingest advanced W or enqueued: the pump has work
	Outbox = "outbox" // msg_event rows were written: the dispatcher has work
)

const notifySQL = `SELECT pg_notify(current_schema() || '.' || $1, '')`

// Notify queues a wake-up of topic; it is sent when tx commits.
func Notify(ctx context.Context, tx pgx.Tx, topic string) error {
	if _, err := tx.Exec(ctx, notifySQL, topic); err != nil {
		return fmt.Errorf("notify %s: %w", topic, err)
	}
	return nil
}

// Listener waits for wake-ups of one topic on its own connection.
type Listener struct {
	c   chan struct{}
	log zerolog.Logger
}

// Listen starts listening on a dedicated connection from connConfig until ctx ends. Connection
// failures are retried in the background; meanwhile Wait simply times out (polling).
func Listen(ctx context.Context, connConfig *pgx.ConnConfig, topic string, log zerolog.Logger) *Listener {
	l := &Listener{c: make(chan struct{}, 1), log: log}
	go l.loop(ctx, connConfig, topic)
	return l
}

func (l *Listener) loop(ctx context.Context, cc *pgx.ConnConfig, topic string) {
	const first, most = 100 * time.Millisecond, 5 * time.Second // the retry waits while the connection is lost
	pause := first
	for ctx.Err() == nil {
		err := l.listen(ctx, cc, topic)
		if ctx.Err() != nil {
			return
		}
		l.log.Warn().Err(err).Str("topic", topic).Msg("wake: listener lost; polling until it is back")
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = backoff.Next(pause, first, most)
	}
}

func (l *Listener) listen(ctx context.Context, cc *pgx.ConnConfig, topic string) error {
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var schema string
	if err := conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{schema + "." + topic}.Sanitize()); err != nil {
		return err
	}
	l.signal() // anything that happened before LISTEN is picked up by one poll
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		l.signal()
	}
}

func (l *Listener) signal() {
	select {
	case l.c <- struct{}{}:
	default:
	}
}

// Wait returns after d, on a wake-up, or when ctx ends (false then).
func (l *Listener) Wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	var c chan struct{}
	if l != nil {
		c = l.c
	}
	select {
	case <-ctx.Done():
		return false
	case <-c:
		return true
	case <-t.C:
		return true
	}
}
