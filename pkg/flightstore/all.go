package flightstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/flight"
)

// allChunk is how many flights ReadAll loads with one statement.
const allChunk = 1000

// ReadAll is the current state of every stored flight, as Read reads one (MAFL included), read
// in tx: a ReadOnly transaction gives one snapshot of them all.
func ReadAll(ctx context.Context, tx pgx.Tx) (map[int64]*flight.State, error) {
	rows, err := tx.Query(ctx, allFlightsSQL)
	if err != nil {
		return nil, fmt.Errorf("list flights: %w", err)
	}
	flids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("list flights: %w", err)
	}
	out := make(map[int64]*flight.State, len(flids))
	for start := 0; start < len(flids); start += allChunk {
		l, err := Load(ctx, tx, flids[start:min(start+allChunk, len(flids))])
		if err != nil {
			return nil, fmt.Errorf("load flights: %w", err)
		}
		for id, s := range l.States {
			if s != nil {
				out[id] = s
			}
		}
	}
	return out, nil
}
