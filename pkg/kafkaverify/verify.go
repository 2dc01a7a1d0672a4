package kafkaverify

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/flightstore"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/outbox"
)

// ReadStored reads what PostgreSQL holds in one read-only snapshot.
func ReadStored(ctx context.Context, db flightstore.Beginner) (Stored, error) {
	var s Stored
	err := pgx.BeginTxFunc(ctx, db, flightstore.ReadOnly, func(tx pgx.Tx) error {
		var err error
		if s.Changes, err = outbox.ChangeEvents(ctx, tx); err != nil {
			return err
		}
		if s.States, err = outbox.ReadStateProgress(ctx, tx); err != nil {
			return err
		}
		if s.Held, err = outbox.ReadHeld(ctx, tx); err != nil {
			return err
		}
		if s.Timelines, s.Timeline, err = outbox.Timelines(ctx, tx); err != nil {
			return err
		}
		s.Flights, err = flightstore.ReadAll(ctx, tx)
		return err
	})
	return s, err
}

// Verify reads PostgreSQL, then both topics (read_committed, each partition up to its
// high-water mark), and compares them. PostgreSQL is read first: every event it shows SENT was
// committed to Kafka before, so it is below the high-water marks read after; what was sent in
// between is counted as not compared, not reported as a difference.
func Verify(ctx context.Context, db flightstore.Beginner, c kafka.Config, loc *time.Location) (Report, error) {
	stored, err := ReadStored(ctx, db)
	if err != nil {
		return Report{}, fmt.Errorf("read PostgreSQL: %w", err)
	}
	stored.Loc = loc
	t := NewTopics(c.TopicChanges, c.TopicState)
	for _, read := range []struct {
		topic string
		add   func(kafka.ConsumedRecord)
	}{{c.TopicChanges, t.AddChange}, {c.TopicState, t.AddState}} {
		_, err := kafka.ReadCommitted(ctx, c, read.topic, func(r kafka.ConsumedRecord) error { read.add(r); return nil })
		if err != nil {
			return Report{}, fmt.Errorf("read topic %s: %w", read.topic, err)
		}
	}
	return Compare(t, stored), nil
}
