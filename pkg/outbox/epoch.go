package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/leader"
)

// Event ids are generation × 2^40 + the outbox sequence, the generation being the database's
// timeline plus its restore epoch (msgx_event_id). A restore that puts the database behind ids it
// published without raising the timeline enough would draw those ids again; the dispatcher then
// raises the epoch above every id Kafka holds (SettleEpoch), so that no id names two records.

// GenerationOf is the id generation an event id carries (its high bits).
func GenerationOf(eventID int64) int64 { return eventID >> 40 }

// Kinds of a raise of the restore epoch: why the dispatcher found the database behind the ids.
const (
	// RestoreIDsBehind: Kafka holds ids of the database's own generation that it did not draw or
	// gives to other events: a physical backup started without archive recovery, or a logical dump
	// restored where the timeline is the same.
	RestoreIDsBehind = "ids-behind"
	// RestoreOtherCluster: the server's system identifier is not the one msgx last saw (a logical
	// dump restored into another cluster), and Kafka holds ids of a higher generation.
	RestoreOtherCluster = "other-cluster"
	// RestoreOlderTimeline: the database is on an older timeline than it recorded itself, or holds
	// event ids of a higher generation than it draws: a logical dump restored onto a lower timeline.
	RestoreOlderTimeline = "older-timeline"
	// RestoreConfirmed: an operator said the database was restored on purpose (msgxctl db
	// restored) where it could also be an old primary.
	RestoreConfirmed = "confirmed"
)

// Confirmation is an operator's word that the database was restored on purpose (msgxctl db
// restored), given while the dispatcher refuses it and kept until its next try.
type Confirmation struct {
	By     string    `json:"by"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// Identity is the server msgx runs on and what msgx recorded of its database.
type Identity struct {
	SystemID     int64 // the server's system identifier (0: withheld)
	Timeline     int64 // the server's current timeline
	Epoch        int64 // the restore epoch
	SeenSystemID int64 // the system identifier the dispatcher last saw (0: none yet)
	SeenTimeline int64 // the timeline it last saw (0: none yet)
	SeenAt       time.Time
	MaxTimeline  int64 // the highest timeline recorded (db_timeline; 0: none)
	MaxEventID   int64 // the highest event id msg_event, msg_state_log or msg_state_out holds (0: none)
	// RefusedAt is when the dispatcher last refused to send from the database (zero: not since
	// its last term start), RefusedKafkaID the highest event id Kafka held then.
	RefusedAt      time.Time
	RefusedKafkaID int64
	Confirmed      *Confirmation
}

// Generation is the id generation of the events drawn now.
func (i Identity) Generation() int64 { return i.Timeline + i.Epoch }

// RowQuerier runs a one-row query: a pool, a connection or a transaction.
type RowQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Identity reads the server's identity and what msgx recorded of the database.
func (s *Store) Identity(ctx context.Context) (Identity, error) { return ReadIdentity(ctx, s.pool) }

// ReadIdentity reads the server's identity and what msgx recorded of the database. It fails on a
// standby (no timeline to draw ids on).
func ReadIdentity(ctx context.Context, q RowQuerier) (Identity, error) {
	var i Identity
	var by, reason *string
	var at, seen, refused *time.Time
	err := q.QueryRow(ctx, identitySQL).Scan(&i.SystemID, &i.Timeline, &i.Epoch, &i.SeenSystemID, &i.SeenTimeline, &seen,
		&i.MaxTimeline, &i.MaxEventID, &refused, &i.RefusedKafkaID, &by, &reason, &at)
	if err != nil {
		return Identity{}, fmt.Errorf("read the database's identity: %w", err)
	}
	if seen != nil {
		i.SeenAt = *seen
	}
	if refused != nil {
		i.RefusedAt = *refused
	}
	if at != nil && by != nil && reason != nil {
		i.Confirmed = &Confirmation{By: *by, Reason: *reason, At: *at}
	}
	return i, nil
}

// KafkaEvent is the identity of a record Kafka holds: its event id and the event it names.
type KafkaEvent struct {
	EventID      int64
	Target       string
	FLID         string
	StateVersion int64
}

// EpochRequest is what the dispatcher settles at the start of a term (SettleEpoch).
type EpochRequest struct {
	Now time.Time
	// Kind, when set, raises the epoch whatever Records show, with Detail saying why.
	Kind   string
	Detail string
	// KafkaMax is the highest event id the topics hold (0: none): a raise puts the generation
	// above it.
	KafkaMax int64
	// Records are the records of the topics' tail in the database's current generation; one
	// that is not the database's own raises the epoch (RestoreIDsBehind).
	Records []KafkaEvent
}

// EpochOutcome is what SettleEpoch did.
type EpochOutcome struct {
	Raised      bool
	Kind        string
	Detail      string
	From, To    int64 // the restore epoch before and after
	Generation  int64 // the id generation events are drawn in now
	Renumbered  int64 // unsent events given new ids
	ForeignMax  int64 // with RestoreIDsBehind: the highest id Kafka holds that is not the database's
	ForeignRecs int64 // with RestoreIDsBehind: how many records were not the database's
}

// SettleEpoch records, under the lease, the server the term started on, and raises the restore
// epoch when req asks (Kind) or when a record of req.Records is not the database's own: then the
// generation goes above every id Kafka and msg_event hold, and every unsent event below it gets
// a new id in that generation, in the old order. It holds PIPELINE_LOCK, like every writer of
// event ids (Enqueue), so no event takes an id while it decides. The last refusal and an
// operator's confirmation are cleared: this term start goes on.
func (s *Store) SettleEpoch(ctx context.Context, fence leader.Fence, req EpochRequest) (EpochOutcome, error) {
	var out EpochOutcome
	err := leader.Fenced(ctx, s.pool, fence, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, leader.PipelineLockSQL); err != nil {
			return fmt.Errorf("take pipeline lock: %w", err)
		}
		var epoch, timeline, sysID, dbMax int64
		if err := tx.QueryRow(ctx, lockEpochSQL).Scan(&epoch, &timeline, &sysID, &dbMax); err != nil {
			return fmt.Errorf("read the restore epoch: %w", err)
		}
		out.From, out.To, out.Generation = epoch, epoch, timeline+epoch
		out.Kind, out.Detail = req.Kind, req.Detail
		if out.Kind == "" && len(req.Records) > 0 {
			if err := foreign(ctx, tx, req.Records, timeline+epoch, &out); err != nil {
				return err
			}
		}
		if out.Kind != "" {
			if err := raise(ctx, tx, req, timeline, sysID, max(req.KafkaMax, dbMax), &out); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, seenSQL, sysID, timeline, req.Now); err != nil {
			return fmt.Errorf("record the server seen: %w", err)
		}
		return nil
	})
	if err != nil {
		return EpochOutcome{}, fmt.Errorf("settle the restore epoch: %w", err)
	}
	return out, nil
}

// foreign checks recs, of id generation gen, against the database (foreignIDsSQL); a record that
// is not the database's own makes out a RestoreIDsBehind raise.
func foreign(ctx context.Context, tx pgx.Tx, recs []KafkaEvent, gen int64, out *EpochOutcome) error {
	n := len(recs)
	ids, targets, keys, versions := make([]int64, n), make([]string, n), make([]string, n), make([]int64, n)
	for i, r := range recs {
		ids[i], targets[i], keys[i], versions[i] = r.EventID, r.Target, r.FLID, r.StateVersion
	}
	if err := tx.QueryRow(ctx, foreignIDsSQL, ids, targets, keys, versions, gen).Scan(&out.ForeignRecs, &out.ForeignMax); err != nil {
		return fmt.Errorf("compare Kafka's event ids: %w", err)
	}
	if out.ForeignRecs > 0 {
		out.Kind = RestoreIDsBehind
		out.Detail = fmt.Sprintf("Kafka holds %d records of id generation %d that this database did not draw or gives to other events (the highest %d): "+
			"it is behind ids it published without a higher timeline (a physical backup started without archive recovery, or a logical dump restored)",
			out.ForeignRecs, gen, out.ForeignMax)
	}
	return nil
}

// ErrEpochLimit means a raise would take the id generation to 8192 or beyond (ids past 2^53).
var ErrEpochLimit = errors.New("the id generation would reach 8192: event ids would pass 2^53")

// raise puts the id generation above top's (the highest id Kafka or msg_event holds), renumbers
// the unsent events below it, and logs the raise.
func raise(ctx context.Context, tx pgx.Tx, req EpochRequest, timeline, sysID, top int64, out *EpochOutcome) error {
	gen := max(GenerationOf(top), out.Generation) + 1
	if gen >= 8192 {
		return fmt.Errorf("raise the restore epoch: %w (timeline %d)", ErrEpochLimit, timeline)
	}
	out.To = gen - timeline
	if _, err := tx.Exec(ctx, raiseEpochSQL, out.To); err != nil {
		return fmt.Errorf("raise the restore epoch to %d: %w", out.To, err)
	}
	var renumbered int64
	if err := tx.QueryRow(ctx, renumberSQL, gen).Scan(&renumbered); err != nil {
		return fmt.Errorf("renumber the unsent events: %w", err)
	}
	out.Raised, out.Generation, out.Renumbered = true, gen, renumbered
	if _, err := tx.Exec(ctx, restoreLogSQL, out.To, out.From, req.Now, out.Kind, out.Detail, sysID, timeline, req.KafkaMax, out.Renumbered); err != nil {
		return fmt.Errorf("record the raise of the restore epoch: %w", err)
	}
	return nil
}

// RecordRefusal records, under the lease, that the dispatcher refuses to send from the database:
// Kafka holds ids of a newer generation, the highest kafkaMax (ConfirmRestore needs it).
func (s *Store) RecordRefusal(ctx context.Context, fence leader.Fence, now time.Time, kafkaMax int64) error {
	err := leader.Fenced(ctx, s.pool, fence, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, refusedSQL, now, kafkaMax)
		return err
	})
	if err != nil {
		return fmt.Errorf("record the refusal: %w", err)
	}
	return nil
}

// ErrNothingToConfirm means the dispatcher does not refuse the database: there is no restore to
// confirm (a confirmation given ahead would wait, and could adopt an old primary later).
var ErrNothingToConfirm = errors.New("the dispatcher does not refuse this database (it has not found Kafka ahead of it since its last term start): nothing to confirm")

// ConfirmRestore records an operator's word that the database was restored on purpose, while the
// dispatcher refuses it (RecordRefusal; ErrNothingToConfirm otherwise): its next try raises the
// restore epoch above the ids Kafka holds even though the database could also be an old primary
// left behind by a failover (docs/runbook.md). It writes a 'db-restored' audit row in the same
// transaction.
func ConfirmRestore(ctx context.Context, db Beginner, who Admin, now time.Time) error {
	if who.Actor == "" {
		return errors.New("confirm restore: an actor is required")
	}
	if who.Reason == "" {
		return errors.New("confirm restore: a reason is required")
	}
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, confirmRestoreSQL, who.Actor, who.Reason, now)
		if err != nil {
			return err
		}
		if tag.RowsAffected() != 1 {
			return ErrNothingToConfirm
		}
		_, err = tx.Exec(ctx, auditSQL, "db-restored", who.Actor, who.Reason, "", []int64{}, now)
		return err
	})
	if err != nil {
		return fmt.Errorf("confirm restore: %w", err)
	}
	return nil
}

// Restore is one raise of the restore epoch (db_restore).
type Restore struct {
	Epoch         int64     `json:"epoch"`
	PreviousEpoch int64     `json:"previous_epoch"`
	RaisedAt      time.Time `json:"raised_at"`
	Kind          string    `json:"kind"`
	Detail        string    `json:"detail"`
	SystemID      int64     `json:"system_identifier"` // 0: withheld
	Timeline      int64     `json:"timeline"`
	KafkaEventID  int64     `json:"kafka_event_id"`
	Renumbered    int64     `json:"renumbered"`
}

// Restores returns every raise of the restore epoch, oldest first.
func Restores(ctx context.Context, q Querier) ([]Restore, error) {
	rows, err := q.Query(ctx, restoresSQL)
	if err != nil {
		return nil, fmt.Errorf("read the restore epochs: %w", err)
	}
	var r Restore
	out := []Restore{}
	_, err = pgx.ForEachRow(rows, []any{&r.Epoch, &r.PreviousEpoch, &r.RaisedAt, &r.Kind, &r.Detail, &r.SystemID, &r.Timeline, &r.KafkaEventID, &r.Renumbered},
		func() error {
			out = append(out, r)
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("read the restore epochs: %w", err)
	}
	return out, nil
}
