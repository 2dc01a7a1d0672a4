package dispatch_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/kafkatest"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/dispatch"
	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/outbox"
)

// deposingSender wraps the bundle's sender: after a send it may depose the leader (the term's
// lease moves on) before the dispatcher settles, as a crash or a takeover between the Kafka
// commit and the cursor move.
type deposingSender struct {
	dispatch.Sender
	mu     sync.Mutex
	depose func()
}

func (s *deposingSender) Send(ctx context.Context, recs []kafka.Record) []error {
	errs := s.Sender.Send(ctx, recs)
	s.mu.Lock()
	f := s.depose
	s.depose = nil
	s.mu.Unlock()
	if f != nil {
		f()
	}
	return errs
}

// TestCursorProtocolUnderRandomFaults: random retryable and fatal failures, replays of dead
// letters, new events between steps, and terms ending between the Kafka commit and the cursor's
// move (a new term then reads the tail): every FLID's versions reach the topic complete and in
// order (duplicates aside), none lost. Six seeds of 800 rounds, twelve FLIDs, a batch of 7.
func TestCursorProtocolUnderRandomFaults(t *testing.T) {
	t.Parallel()
	for _, seed := range []uint64{11, 12, 13, 14, 15, 16} {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			t.Parallel()
			b := setup(t, options{policy: outbox.Policy{MaxAttempts: 3, BackoffBase: time.Second, BackoffMax: 2 * time.Second}, batch: 7})
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(seed, 99))
			var rmu sync.Mutex
			roll := func() float64 { rmu.Lock(); defer rmu.Unlock(); return rng.Float64() }
			rs := &deposingSender{Sender: b.sender}
			epoch := int64(7)
			newTerm := func() (*dispatch.Dispatcher, leader.Lease) {
				epoch++
				_, err := b.db.Pool.Exec(ctx, `UPDATE leader_lease SET epoch = $1 WHERE role = 'dispatcher'`, epoch)
				require.NoError(t, err)
				d, err := dispatch.New(dispatch.Config{TopicChanges: b.kcfg.TopicChanges, TopicState: b.kcfg.TopicState, Batch: 7, LagSample: 1,
					TailReader: func(ctx context.Context, topic string, since time.Time, fn func(kafka.ConsumedRecord) error) error {
						_, err := kafka.ReadCommittedSince(ctx, b.kcfg, topic, since, fn)
						return err
					}}, b.store, rs, b.clock, prometheus.NewRegistry(), zerolog.Nop())
				require.NoError(t, err)
				lease := leader.Lease{Role: "dispatcher", Epoch: epoch}
				require.NoError(t, d.ReadTail(ctx, lease))
				return d, lease
			}
			d, lease := newTerm()
			fatal := map[string]bool{}
			b.sender.setPoison(func(r kafka.Record) error {
				k := r.Key + "/" + header(r, "state_version")
				if fatal[k] {
					return &kafka.Error{Op: "produce", Err: sarama.ErrMessageSizeTooLarge}
				}
				if roll() < 0.08 {
					return &kafka.Error{Op: "produce", Err: errors.New("injected: this record failed")}
				}
				return nil
			})
			const flids = 12
			next := map[int64]int64{}
			for round := 0; round < 800; round++ {
				var evs []event.Event
				for range int(roll() * 4) {
					f := int64(1 + int(roll()*flids))
					next[f]++
					evs = append(evs, msgEvent(f, next[f]))
					if roll() < 0.01 {
						fatal[strconv.FormatInt(f, 10)+"/"+strconv.FormatInt(next[f], 10)] = true
					}
				}
				if len(evs) > 0 {
					require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, evs...))
				}
				if roll() < 0.05 {
					rs.mu.Lock()
					rs.depose = func() {
						_, _ = b.db.Pool.Exec(ctx, `UPDATE leader_lease SET epoch = epoch + 1000 WHERE role = 'dispatcher'`)
					}
					rs.mu.Unlock()
				}
				_, err := d.StepMsg(ctx, lease)
				if errors.Is(err, leader.ErrFenced) {
					_, err = b.db.Pool.Exec(ctx, `UPDATE leader_lease SET epoch = $1 WHERE role = 'dispatcher'`, epoch)
					require.NoError(t, err)
					d, lease = newTerm()
				} else {
					require.NoError(t, err)
				}
				rs.mu.Lock()
				rs.depose = nil
				rs.mu.Unlock()
				if roll() < 0.05 {
					// an operator replays every dead letter once the poison is fixed
					for k := range fatal {
						if roll() < 0.5 {
							delete(fatal, k)
						}
					}
					_, err := b.store.Replay(ctx, outbox.Selector{IDs: b.db.Int64s(t, `SELECT event_id FROM msg_event WHERE status = 'DEAD'`)}, outbox.Admin{Actor: "ops"}, t0)
					if err != nil {
						require.ErrorContains(t, err, "select ids")
					}
				}
				b.clock.Advance(time.Duration(roll()*1500) * time.Millisecond)
			}
			b.sender.setPoison(nil)
			for i := 0; i < 500; i++ {
				if ids := b.db.Int64s(t, `SELECT event_id FROM msg_event WHERE status = 'DEAD'`); len(ids) > 0 {
					_, err := b.store.Replay(ctx, outbox.Selector{IDs: ids}, outbox.Admin{Actor: "ops"}, t0)
					require.NoError(t, err)
				}
				res, err := d.StepMsg(ctx, lease)
				require.NoError(t, err)
				b.clock.Advance(2 * time.Second)
				var unsent int
				require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM `+testdb.AllEvents+` WHERE status <> 'SENT'`).Scan(&unsent))
				if unsent == 0 && res.Claimed == 0 {
					break
				}
			}
			var unsent int
			require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM `+testdb.AllEvents+` WHERE status <> 'SENT'`).Scan(&unsent))
			require.Zero(t, unsent, "every event delivered")
			want := map[string]int64{}
			for f, v := range next {
				want[strconv.FormatInt(f, 10)] = v
			}
			recs := kafkatest.ConsumeAll(t, b.broker.Addrs(), b.kcfg.TopicChanges, time.Minute)
			dups := checkStream(t, recs, want)
			t.Logf("seed %d: %d terms, %d records, %d duplicates", seed, epoch-7, len(recs), len(dups))
		})
	}
}
