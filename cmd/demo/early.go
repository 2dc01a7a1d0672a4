package main

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"time"

	"github.com/msgx/msgx/pkg/dev/simulate"
	"github.com/msgx/msgx/pkg/dev/sisbuild"
)

// early is the demo's one replayable case: a stand change for a flight the AODB has not announced
// (an update that overtook its flight's schedule). It ends SKIPPED no-match:<flid>, which an
// operator replays by id once the flight exists (msgxctl replay --ids).
type early struct {
	id, flid int64
}

// writeEarly inserts the early update into the mailbox after the day, for a FLID and a SEQN no
// message of the day has.
func writeEarly(ctx context.Context, mailbox *sql.DB, day simulate.Day) (early, error) {
	var flid, seqn int64
	var at time.Time
	for _, m := range day.Messages {
		flid, seqn = max(flid, m.FLID), max(seqn, m.SEQN)
		if m.At.After(at) {
			at = m.At
		}
	}
	e := early{flid: flid + 1000}
	at = at.Add(time.Second)
	raw := sisbuild.Stand(seqn+1000, at, e.flid, "101")
	wall := at.Format("2006-01-02 15:04:05") // the mailbox's zone-less DATETIME
	res, err := mailbox.ExecContext(ctx, insertEarlySQL, raw, wall, "AODB", strconv.FormatInt(seqn+1000, 10), wall)
	if err != nil {
		return early{}, fmt.Errorf("write the early update: %w", err)
	}
	if e.id, err = res.LastInsertId(); err != nil {
		return early{}, fmt.Errorf("write the early update: %w", err)
	}
	return e, nil
}
