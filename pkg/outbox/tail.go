package outbox

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/leader"
)

// Timeline is the database's current timeline and the highest one recorded before this call
// (0: none); the current one is recorded. A current timeline above the recorded one means the
// database was promoted (or restored) since msgx last looked.
func (s *Store) Timeline(ctx context.Context, now time.Time) (current, previous int64, err error) {
	if err := s.pool.QueryRow(ctx, timelineSQL, now).Scan(&current, &previous); err != nil {
		return 0, 0, fmt.Errorf("read timeline: %w", err)
	}
	return current, previous, nil
}

// TailFrom is the time from which the topics may hold records this database does not know as
// sent: the dispatcher's newest commit the database kept (tailFromSQL), less margin. Zero:
// nothing sent yet, read the topics whole.
func (s *Store) TailFrom(ctx context.Context, margin time.Duration) (time.Time, error) {
	var at *time.Time
	if err := s.pool.QueryRow(ctx, tailFromSQL).Scan(&at); err != nil {
		return time.Time{}, fmt.Errorf("read tail start: %w", err)
	}
	if at == nil {
		return time.Time{}, nil
	}
	return at.Add(-margin), nil
}

// Held is a change record the changes topic holds.
type Held struct {
	FLID         string
	StateVersion int64
	EventID      int64
	ValueSHA256  [32]byte
	Time         time.Time
	// Beyond: the database did not have the record's event when it was found (read only).
	Beyond bool
}

// ValueSHA256 is the digest Held records of a record value (the claim's Payload).
func ValueSHA256(value []byte) [32]byte { return sha256.Sum256(value) }

// HeldCount is what RecordHeld added.
type HeldCount struct {
	Held   int // records the database did not know as sent
	Beyond int // of which the database does not have the record's event: work it lost (a lost tail)
}

// RecordHeld records, under the lease, the change records of recs the database has no SENT
// event for, so that their versions are not sent again, and counts them.
func (s *Store) RecordHeld(ctx context.Context, fence leader.Fence, recs []Held) (HeldCount, error) {
	var c HeldCount
	if len(recs) == 0 {
		return c, nil
	}
	n := len(recs)
	keys, versions, ids := make([]string, n), make([]int64, n), make([]int64, n)
	shas, times := make([][]byte, n), make([]time.Time, n)
	for i, r := range recs {
		keys[i], versions[i], ids[i], shas[i], times[i] = r.FLID, r.StateVersion, r.EventID, r.ValueSHA256[:], r.Time
	}
	err := leader.Fenced(ctx, s.pool, fence, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, recordHeldSQL, keys, versions, ids, shas, times)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var stored bool
			if err := rows.Scan(&stored); err != nil {
				return err
			}
			c.Held++
			if !stored {
				c.Beyond++
			}
		}
		return rows.Err()
	})
	if err != nil {
		return HeldCount{}, fmt.Errorf("record held change records: %w", err)
	}
	return c, nil
}

// HeldChanges returns the held change records by FLID and version.
func (s *Store) HeldChanges(ctx context.Context) (map[string]map[int64]Held, error) {
	return ReadHeld(ctx, s.pool)
}

// ReadHeld returns the held change records by FLID and version (msg_kafka_held). They are kept:
// they say why an event is SENT with another event id than its version's record on Kafka.
func ReadHeld(ctx context.Context, q Querier) (map[string]map[int64]Held, error) {
	rows, err := q.Query(ctx, heldSQL)
	if err != nil {
		return nil, fmt.Errorf("read held change records: %w", err)
	}
	defer rows.Close()
	out := map[string]map[int64]Held{}
	for rows.Next() {
		var h Held
		var sha []byte
		if err := rows.Scan(&h.FLID, &h.StateVersion, &h.EventID, &sha, &h.Time, &h.Beyond); err != nil {
			return nil, fmt.Errorf("read held change records: %w", err)
		}
		if len(sha) != len(h.ValueSHA256) {
			return nil, errors.New("read held change records: bad digest length")
		}
		copy(h.ValueSHA256[:], sha)
		if out[h.FLID] == nil {
			out[h.FLID] = map[int64]Held{}
		}
		out[h.FLID][h.StateVersion] = h
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read held change records: %w", err)
	}
	return out, nil
}

// Timelines are the database timelines msgx recorded, oldest first, and the current one (0: the
// server is a standby).
func Timelines(ctx context.Context, q Querier) (recorded []int64, current int64, err error) {
	rows, err := q.Query(ctx, timelinesSQL)
	if err != nil {
		return nil, 0, fmt.Errorf("read timelines: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var t int64
		if err := rows.Scan(&t, &current); err != nil {
			return nil, 0, fmt.Errorf("read timelines: %w", err)
		}
		if t != 0 {
			recorded = append(recorded, t)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("read timelines: %w", err)
	}
	return recorded, current, nil
}
