package status

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// FlightVersion is a flight a message changed and the version the change gave it.
type FlightVersion struct {
	FLID         int64 `json:"flid"`
	StateVersion int64 `json:"state_version"`
}

// FlightsChanged lists the flights message msgID changed, by FLID and version, while the
// outbox keeps their events (MSGX_EVENT_RETENTION); none for a message that changed nothing.
func FlightsChanged(ctx context.Context, db Querier, msgID int64) ([]FlightVersion, error) {
	rows, err := db.Query(ctx, messageFlightsSQL, msgID)
	if err != nil {
		return nil, fmt.Errorf("read flights of message %d: %w", msgID, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[FlightVersion])
	if err != nil {
		return nil, fmt.Errorf("read flights of message %d: %w", msgID, err)
	}
	return out, nil
}
