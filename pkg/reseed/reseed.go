// Package reseed is msgxctl kafka reseed: it republishes flights' current states to the state
// topic (a tombstone for a deleted or purged flight) after the topic lost them, e.g. deleted and
// created again. It publishes nothing itself: it reads what the state topic holds
// (read_committed), and for each flight whose current version the topic lacks it enqueues the
// KAFKA:schd event of that state and lowers the dispatcher's record of what the topic holds
// (msg_state_sent) to what it really holds, in one transaction under PIPELINE_LOCK with an
// audit row. The dispatcher then sends the events like any other, fenced and transactional, in
// order with the flight's other states; it never sends a version at or below what the topic
// holds, since the current version is at least any version the dispatcher sent meanwhile: a
// purged flight's current version is its newest enqueued one (its tombstone's, sent or not), and
// the reseed locks the rows of msg_state_sent it reads, so a flush acknowledging a state
// meanwhile raises the record after the reseed lowered it, never before.
package reseed

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/event/change"
	"github.com/msgx/msgx/pkg/flight"
	"github.com/msgx/msgx/pkg/flightstore"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/kafkaverify"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/outbox"
)

// Action is the replay_audit action of a reseed.
const Action = "kafka-reseed"

// chunk is how many flights one transaction reseeds: PIPELINE_LOCK holds the processor back
// while it runs.
const chunk = 500

// Request says which flights to reseed, who asks and why (DryRun: report, change nothing).
type Request struct {
	FLIDs []int64 // the flights; none with All
	All   bool    // every stored flight and every purged one msgx sent a state of
	Who   outbox.Admin
	Loc   *time.Location // the airport's zone (the values' instants)
	Now   time.Time
}

// Outcomes of one flight.
const (
	Enqueued = "enqueued" // its state (or tombstone) will be sent
	Current  = "current"  // the topic holds its current version already
	Unknown  = "unknown"  // neither stored nor ever sent: nothing to publish
)

// Flight is what the reseed did for one flight.
type Flight struct {
	FLID      int64  `json:"flid"`
	Version   int64  `json:"state_version"` // the version to publish (0: unknown)
	Tombstone bool   `json:"tombstone"`     // deleted or purged
	Held      int64  `json:"topic_version"` // what the topic's last record of it is (0: none)
	Outcome   string `json:"outcome"`
}

// Report is what a reseed did (or, dry, would do).
type Report struct {
	Topic   string   `json:"topic"`
	Read    int      `json:"records_read"`
	Flights []Flight `json:"flights"`
	DryRun  bool     `json:"dry_run"`
}

// Count returns how many flights had outcome o.
func (r Report) Count(o string) int {
	n := 0
	for _, f := range r.Flights {
		if f.Outcome == o {
			n++
		}
	}
	return n
}

// DB is msgx's PostgreSQL (a *pgxpool.Pool).
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Run reads the state topic of c, then reseeds the flights of req in chunks. A topic that is
// missing or cannot be read ends it before anything changes.
func Run(ctx context.Context, db DB, c kafka.Config, req Request) (Report, error) {
	switch {
	case req.All == (len(req.FLIDs) > 0):
		return Report{}, errors.New("reseed: select flights or all of them")
	case req.Who.Actor == "":
		return Report{}, errors.New("reseed: an actor is required (audit)")
	}
	rep := Report{Topic: c.TopicState, DryRun: req.Who.DryRun}
	t := kafkaverify.NewTopics(c.TopicChanges, c.TopicState)
	if _, err := kafka.ReadCommitted(ctx, c, c.TopicState, func(r kafka.ConsumedRecord) error { t.AddState(r); return nil }); err != nil {
		return Report{}, fmt.Errorf("read topic %s: %w", c.TopicState, err)
	}
	rep.Read = t.StateRecords
	held := t.HeldStates()
	flids := slices.Clone(req.FLIDs)
	if req.All {
		rows, _ := db.Query(ctx, allSQL)
		var err error
		if flids, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
			return Report{}, fmt.Errorf("reseed: list the flights: %w", err)
		}
	}
	slices.Sort(flids)
	flids = slices.Compact(flids)
	for part := range slices.Chunk(flids, chunk) {
		done, err := reseedChunk(ctx, db, part, held, req)
		if err != nil {
			return rep, err
		}
		rep.Flights = append(rep.Flights, done...)
	}
	return rep, nil
}

var errDryRun = errors.New("dry run")

// reseedChunk reseeds flids in one transaction.
func reseedChunk(ctx context.Context, db DB, flids []int64, held map[string]kafkaverify.Held, req Request) ([]Flight, error) {
	var out []Flight
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		out = nil
		if _, err := tx.Exec(ctx, leader.PipelineLockSQL); err != nil { // no flight changes meanwhile
			return fmt.Errorf("reseed: take PIPELINE_LOCK: %w", err)
		}
		stored, err := flightstore.Load(ctx, tx, flids)
		if err != nil {
			return err
		}
		keys := keysOf(flids)
		sent, err := versions(ctx, tx, sentSQL, keys) // the version the dispatcher records the topic holds
		if err != nil {
			return fmt.Errorf("reseed: read msg_state_sent: %w", err)
		}
		var purged []string // not stored but sent: their tombstones' versions
		for i, id := range flids {
			if stored.States[id] == nil && sent[keys[i]] > 0 {
				purged = append(purged, keys[i])
			}
		}
		newest, err := versions(ctx, tx, purgedSQL, purged)
		if err != nil {
			return fmt.Errorf("reseed: read the purged flights' versions: %w", err)
		}
		var evs []event.Event
		var lowerKeys []string
		var lowerTo, enqueued []int64
		for i, id := range flids {
			f := Flight{FLID: id, Held: held[keys[i]].Version}
			s := stored.States[id]
			var ev event.Event
			switch {
			case s != nil:
				f.Version, f.Tombstone = s.Version, s.Status == flight.Deleted
				ev = change.StateOf(s, s.LastMsgID, req.Loc)
			case sent[keys[i]] > 0: // purged: its tombstone is its newest version, sent or not yet
				f.Version, f.Tombstone = max(sent[keys[i]], newest[keys[i]]), true
				ev = event.StateEvent(id, event.Tombstone, f.Version, 0, nil)
			default:
				f.Outcome = Unknown
				out = append(out, f)
				continue
			}
			if f.Held >= f.Version {
				f.Outcome = Current
				out = append(out, f)
				continue
			}
			f.Outcome = Enqueued
			out = append(out, f)
			evs = append(evs, ev)
			enqueued = append(enqueued, id)
			if sent[keys[i]] > f.Held {
				lowerKeys, lowerTo = append(lowerKeys, keys[i]), append(lowerTo, f.Held)
			}
		}
		if len(evs) == 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, lowerSentSQL, lowerKeys, lowerTo); err != nil {
			return fmt.Errorf("reseed: lower msg_state_sent: %w", err)
		}
		if err := outbox.Enqueue(ctx, tx, req.Now, evs...); err != nil {
			return err
		}
		if err := outbox.Audit(ctx, tx, Action, req.Who, selector(req), enqueued, req.Now); err != nil {
			return err
		}
		if req.Who.DryRun {
			return errDryRun
		}
		return nil
	})
	if err != nil && !errors.Is(err, errDryRun) {
		return nil, err
	}
	return out, nil
}

// keysOf returns the partition keys of flids.
func keysOf(flids []int64) []string {
	keys := make([]string, len(flids))
	for i, id := range flids {
		keys[i] = strconv.FormatInt(id, 10)
	}
	return keys
}

// versions runs query (partition_key, version rows) for keys.
func versions(ctx context.Context, tx pgx.Tx, query string, keys []string) (map[string]int64, error) {
	out := map[string]int64{}
	if len(keys) == 0 {
		return out, nil
	}
	rows, _ := tx.Query(ctx, query, keys)
	var key string
	var version int64
	_, err := pgx.ForEachRow(rows, []any{&key, &version}, func() error { out[key] = version; return nil })
	return out, err
}

func selector(req Request) string {
	if req.All {
		return "--all"
	}
	return fmt.Sprintf("--flids %v", req.FLIDs)
}
