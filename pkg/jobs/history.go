package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/event/change"
	"github.com/msgx/msgx/pkg/flight"
	"github.com/msgx/msgx/pkg/flightstore"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/outbox"
)

// candidate is a flight selected for purging, as it was when selected.
type candidate struct {
	flid    int64
	day     time.Time
	version int64
	updated time.Time
}

// confirmed is a candidate the deleting transaction found unchanged and still eligible.
type confirmed struct {
	flid    int64
	version int64
	state   string
	maid    *int64
}

// historyRow is a flight_history row written by the current transaction.
type historyRow struct {
	id, flid, version int64
}

// history is one run of the history sweep: batches of HistoryBatch flights, each purged in one
// transaction under PIPELINE_LOCK.
func (j *Jobs) history(ctx context.Context, lease leader.Lease, now time.Time) (Result, error) {
	var res Result
	if !j.cfg.HistoryEnabled {
		j.log.Debug().Msg("history: store disabled; nothing is deleted")
		return res, nil
	}
	dayCutoff := clock.WallDay(now.Add(-j.cfg.HistoryRetention), j.cfg.Location)
	quietCutoff := now.Add(-j.cfg.HistoryQuiet)
	deadline := time.Now().Add(j.cfg.RunBudget)
	var after candidate // keyset position: never look at a flight twice in one run
	after.day = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	_, more, err := j.loop(ctx, deadline, j.cfg.HistoryBatch, func() (int, error) {
		rows, err := j.pool.Query(ctx, historyCandidatesSQL, dayCutoff, quietCutoff, after.day, after.flid, j.cfg.HistoryBatch)
		if err != nil {
			return 0, fmt.Errorf("select purge candidates: %w", err)
		}
		cands, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (candidate, error) {
			var c candidate
			return c, r.Scan(&c.flid, &c.day, &c.version, &c.updated)
		})
		if err != nil {
			return 0, fmt.Errorf("select purge candidates: %w", err)
		}
		if len(cands) == 0 {
			return 0, nil
		}
		after = cands[len(cands)-1]
		res.Selected += len(cands)
		n, err := j.purge(ctx, lease, now, cands, dayCutoff, quietCutoff)
		res.Done += n
		return len(cands), err
	})
	res.More = more
	return res, err
}

// purge writes the final state of the candidates still eligible to flight_history, enqueues a
// TOMBSTONE pair for those purged without a prior delete, and deletes them (details cascade):
// one transaction under PIPELINE_LOCK, so it commits all of it or nothing (INV-18).
func (j *Jobs) purge(ctx context.Context, lease leader.Lease, now time.Time, cands []candidate, dayCutoff, quietCutoff time.Time) (int, error) {
	var purged []confirmed
	err := leader.Fenced(ctx, j.pool, lease, func(tx pgx.Tx) error {
		var err error
		purged, err = purgeTx(ctx, tx, now, j.cfg.Location, cands, dayCutoff, quietCutoff)
		return err
	})
	if err != nil {
		return 0, err
	}
	kept := len(cands) - len(purged)
	tombstones := 0
	for _, c := range purged {
		if c.state != flight.Deleted {
			tombstones++
		}
	}
	j.metrics.purged.WithLabelValues(History, "purged").Add(float64(len(purged)))
	j.metrics.purged.WithLabelValues(History, "kept").Add(float64(kept))
	if kept > 0 {
		j.log.Info().Int("kept", kept).Msg("history: flights changed since selection are kept (INV-18)")
	}
	j.log.Debug().Int("purged", len(purged)).Int("tombstones", tombstones).Msg("history: batch purged")
	return len(purged), nil
}

// purgeTx is the transaction of purge; it returns the candidates it purged. The history
// documents are built before PIPELINE_LOCK, so the lock is held only for the re-check and the
// delete. A document stays only for a flight the re-check finds at the very state_version (and
// updated_at) it was built from.
func purgeTx(ctx context.Context, tx pgx.Tx, now time.Time, loc *time.Location, cands []candidate, dayCutoff, quietCutoff time.Time) ([]confirmed, error) {
	n := len(cands)
	flids, versions, updated := make([]int64, n), make([]int64, n), make([]time.Time, n)
	for i, c := range cands {
		flids[i], versions[i], updated[i] = c.flid, c.version, c.updated
	}
	docs, err := finalStates(ctx, tx, loc, flids, versions)
	if err != nil {
		return nil, err
	}
	rows, err := tx.Query(ctx, historyInsertSQL, flids, versions, updated, docs, now)
	if err != nil {
		return nil, fmt.Errorf("write flight history: %w", err)
	}
	written, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (historyRow, error) {
		var h historyRow
		return h, r.Scan(&h.id, &h.flid, &h.version)
	})
	if err != nil {
		return nil, fmt.Errorf("write flight history: %w", err)
	}
	if _, err := tx.Exec(ctx, leader.PipelineLockSQL); err != nil {
		return nil, fmt.Errorf("take pipeline lock: %w", err)
	}
	rows, err = tx.Query(ctx, historyRecheckSQL, flids, versions, updated, dayCutoff, quietCutoff)
	if err != nil {
		return nil, fmt.Errorf("re-check purge candidates: %w", err)
	}
	purged, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (confirmed, error) {
		var c confirmed
		return c, r.Scan(&c.flid, &c.version, &c.state, &c.maid)
	})
	if err != nil {
		return nil, fmt.Errorf("re-check purge candidates: %w", err)
	}
	documents, err := dropStaleHistory(ctx, tx, written, purged)
	if err != nil || len(purged) == 0 {
		return purged, err
	}
	if documents != len(purged) {
		return nil, fmt.Errorf("purge: %d history documents for %d flights", documents, len(purged))
	}
	return purged, removePurged(ctx, tx, now, loc, purged)
}

// finalStates are the history documents of flids, in order: each flight's state as msgx
// publishes it (flight.State.AppendJSONIn in the airport's zone), so a purged flight reads like a
// live one. A flight gone or changed since its selection gets an empty document, which the
// insert's join drops with the flight.
func finalStates(ctx context.Context, tx pgx.Tx, loc *time.Location, flids, versions []int64) ([]string, error) {
	stored, err := flightstore.Load(ctx, tx, flids)
	if err != nil {
		return nil, fmt.Errorf("read flights to purge: %w", err)
	}
	docs := make([]string, len(flids))
	var buf []byte
	for i, flid := range flids {
		if st := stored.States[flid]; st != nil && st.Version == versions[i] {
			buf = st.AppendJSONIn(buf[:0], loc)
			docs[i] = string(buf)
		} else {
			docs[i] = "{}"
		}
	}
	return docs, nil
}

// dropStaleHistory deletes the history documents written for flights the re-check did not
// confirm at the version they were built from, and returns how many documents remain.
func dropStaleHistory(ctx context.Context, tx pgx.Tx, written []historyRow, purged []confirmed) (int, error) {
	keep := make(map[int64]int64, len(purged))
	for _, c := range purged {
		keep[c.flid] = c.version
	}
	var stale []int64
	for _, h := range written {
		if v, ok := keep[h.flid]; !ok || v != h.version {
			stale = append(stale, h.id)
		}
	}
	if len(stale) > 0 {
		if _, err := tx.Exec(ctx, historyDropSQL, stale); err != nil {
			return 0, fmt.Errorf("drop stale flight history: %w", err)
		}
	}
	return len(written) - len(stale), nil
}

// removePurged enqueues the TOMBSTONE pairs of the purged flights not deleted before, takes
// the purged children out of their masters' MAFL, and deletes the purged flights.
func removePurged(ctx context.Context, tx pgx.Tx, now time.Time, loc *time.Location, purged []confirmed) error {
	ids := make([]int64, len(purged))
	gone := make([]*flight.State, len(purged))
	var events []event.Event
	for i, c := range purged {
		ids[i] = c.flid
		gone[i] = &flight.State{FLID: c.flid, Status: c.state}
		if c.maid != nil {
			gone[i].F[flight.MAID] = flight.Int(*c.maid)
		}
		if c.state == flight.Deleted {
			continue // its delete already produced its TOMBSTONE
		}
		events = event.Purged(events, c.flid, flight.PurgeVersion(c.version))
	}
	// INV-22b: the masters of purged ACTIVE children lose them from their MAFL.
	masters, err := flight.Unlinked(ctx, flightstore.Loader{Tx: tx}, gone)
	if err != nil {
		return fmt.Errorf("purge: derive the masters' MAFL: %w", err)
	}
	if err := flightstore.Save(ctx, tx, masters, nil, now); err != nil {
		return fmt.Errorf("purge: bump the masters: %w", err)
	}
	for _, m := range masters {
		events = change.Append(events, loc, event.Source{Reason: event.ReasonChildPurged}, m.Old, m.Next)
	}
	if err := outbox.Enqueue(ctx, tx, now, events...); err != nil {
		return err
	}
	tag, err := tx.Exec(ctx, historyDeleteSQL, ids)
	if err != nil {
		return fmt.Errorf("delete purged flights: %w", err)
	}
	if tag.RowsAffected() != int64(len(ids)) {
		return fmt.Errorf("delete purged flights: %d of %d deleted", tag.RowsAffected(), len(ids))
	}
	return nil
}
