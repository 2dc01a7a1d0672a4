package flightstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/flight"
)

// History is what msgx knows of one flight: its current state (nil when not stored: never seen,
// or purged), what the history sweep kept each time it purged it, and its versions as the
// outbox recorded them, newest first, each with the message behind it. The outbox keeps SENT
// events for MSGX_EVENT_RETENTION only, so older versions are not listed.
type History struct {
	State    *flight.State
	Purges   []Purge
	Versions []Version
}

// Purge is a flight's final state as the history sweep kept it (flight_history).
type Purge struct {
	StateVersion int64           `json:"state_version"`
	OperationDay string          `json:"operation_day"`
	Reason       string          `json:"purge_reason"`
	PurgedAt     time.Time       `json:"purged_at"`
	FinalState   json.RawMessage `json:"final_state"`
}

// Version is one event of a flight (msg_event): the version it carries, its target and Kafka's
// answer, and the message that caused it (nil when the event names none), with its type.
type Version struct {
	StateVersion int64      `json:"state_version"`
	Target       string     `json:"target"`
	EventID      int64      `json:"event_id"`
	EventType    string     `json:"event_type"`
	Status       string     `json:"status"`
	CreatedAt    time.Time  `json:"created_at"`
	SentAt       *time.Time `json:"sent_at"`
	MsgID        *int64     `json:"msg_id"`
	MsgType      string     `json:"msg_type"`
	MsgStyp      string     `json:"msg_styp"`
}

// ReadHistory reads flid's History in one ReadOnly snapshot, at most limit versions.
func ReadHistory(ctx context.Context, db Beginner, flid int64, limit int) (History, error) {
	var h History
	err := pgx.BeginTxFunc(ctx, db, ReadOnly, func(tx pgx.Tx) error {
		l, err := Load(ctx, tx, []int64{flid})
		if err != nil {
			return err
		}
		h.State = l.States[flid]
		rows, err := tx.Query(ctx, flightPurgesSQL, flid)
		if err != nil {
			return fmt.Errorf("read purges: %w", err)
		}
		if h.Purges, err = pgx.CollectRows(rows, pgx.RowToStructByPos[Purge]); err != nil {
			return fmt.Errorf("read purges: %w", err)
		}
		rows, err = tx.Query(ctx, flightVersionsSQL, strconv.FormatInt(flid, 10), limit)
		if err != nil {
			return fmt.Errorf("read versions: %w", err)
		}
		if h.Versions, err = pgx.CollectRows(rows, pgx.RowToStructByPos[Version]); err != nil {
			return fmt.Errorf("read versions: %w", err)
		}
		return nil
	})
	if err != nil {
		return History{}, fmt.Errorf("read flight %d: %w", flid, err)
	}
	return h, nil
}

// Summary is one line of a flight: who it is, its state and version, its SODT (the airport's wall
// clock, read as UTC) and its code-share master.
type Summary struct {
	FLID    int64      `json:"flid"`
	ALCD    string     `json:"alcd"`
	FLNO    string     `json:"flno"`
	MVIN    string     `json:"mvin"`
	State   string     `json:"state"`
	Version int64      `json:"state_version"`
	SODT    *time.Time `json:"sodt"`
	MAID    *int64     `json:"maid"`
}

// Day lists the stored flights (ACTIVE and DELETED) of an operation day, by FLID: the flights
// GET /all/flights serves for that day.
func Day(ctx context.Context, db Beginner, day time.Time) ([]Summary, error) {
	var out []Summary
	err := pgx.BeginTxFunc(ctx, db, ReadOnly, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, flightsOfDaySQL, day.Format(time.DateOnly))
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, pgx.RowToStructByPos[Summary])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read flights of %s: %w", day.Format(time.DateOnly), err)
	}
	return out, nil
}
