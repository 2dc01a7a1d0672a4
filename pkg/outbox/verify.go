package outbox

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Querier runs a query: a pgx.Tx (one snapshot for a whole comparison) or a pool.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// ChangeEvent is one KAFKA:msg event as it is compared with the changes topic (msgxctl kafka
// verify).
type ChangeEvent struct {
	EventID      int64
	FLID         string
	StateVersion int64
	Status       string
	// ValueSHA256 is the SHA-256 of the record value the dispatcher sends for the event (its
	// payload); nil for an event without payload (a null value).
	ValueSHA256 []byte
}

// ChangeEvents returns every KAFKA:msg event msg_event holds (SENT ones older than the event
// retention are deleted), by FLID and version.
func ChangeEvents(ctx context.Context, q Querier) ([]ChangeEvent, error) {
	rows, err := q.Query(ctx, changeEventsSQL)
	if err != nil {
		return nil, fmt.Errorf("read change events: %w", err)
	}
	var e ChangeEvent
	var out []ChangeEvent
	_, err = pgx.ForEachRow(rows, []any{&e.EventID, &e.FLID, &e.StateVersion, &e.Status, &e.ValueSHA256}, func() error {
		out = append(out, e)
		e.ValueSHA256 = nil
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read change events: %w", err)
	}
	return out, nil
}

// StateProgress is where each FLID's KAFKA:schd events stand.
type StateProgress struct {
	Sent   map[string]int64 // the highest version sent to the state topic (msg_state_sent)
	Unsent map[string]int64 // the newest version of an unsent (PENDING or DEAD) event
}

// ReadStateProgress reads the state topic's sent versions and the unsent KAFKA:schd events.
func ReadStateProgress(ctx context.Context, q Querier) (StateProgress, error) {
	p := StateProgress{Sent: map[string]int64{}, Unsent: map[string]int64{}}
	for _, r := range []struct {
		sql  string
		into map[string]int64
	}{{stateSentSQL, p.Sent}, {unsentStatesSQL, p.Unsent}} {
		rows, err := q.Query(ctx, r.sql)
		if err != nil {
			return p, fmt.Errorf("read state progress: %w", err)
		}
		var k string
		var v int64
		if _, err := pgx.ForEachRow(rows, []any{&k, &v}, func() error { r.into[k] = v; return nil }); err != nil {
			return p, fmt.Errorf("read state progress: %w", err)
		}
	}
	return p, nil
}
