package processor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"

	"github.com/msgx/msgx/pkg/clock"
)

// markerWriters bounds the immediate marker writes in flight; a batch finding them all busy
// leaves its markers to the jobs stage's backfill sweep (the guarantee, INV-8c).
const markerWriters = 4

// Marker writes the mailbox processed marker (pkg/mailbox.MarkIf): only NULL → at (INV-7), and
// only for the rows guard allows while the mailbox rows are locked; guard's answer must hold
// until MarkIf returns, the mailbox write committed. It returns how many rows it wrote.
type Marker interface {
	MarkIf(ctx context.Context, ids []int64, at time.Time, status string,
		guard func(ctx context.Context, unmarked []int64) ([]int64, error)) (int64, error)
}

// markImmediately starts the one immediate marker attempt for a committed batch's terminal rows,
// whose debt is the marker_debt row debt, in its own goroutine when a writer slot is free;
// otherwise (and in shadow mode, or without a marker) the jobs stage's sweep writes them.
func (p *Engine) markImmediately(ids []int64, debt int64, now time.Time) {
	if len(ids) == 0 || p.cfg.Shadow || p.marker == nil {
		return
	}
	select {
	case p.writers <- struct{}{}:
	default:
		p.batchLog.Debug().Int("count", len(ids)).Msg("pump: every immediate marker writer is busy; the sweep writes these")
		return
	}
	p.markers.Add(1)
	log := p.batchLog // the next batch replaces p.batchLog while this write runs
	go func() {
		defer func() { <-p.writers; p.markers.Done() }()
		p.mark(ids, debt, now, log)
	}()
}

// WaitMarkers waits for the immediate marker writes in flight (each bounded by MarkerTimeout).
func (p *Engine) WaitMarkers() { p.markers.Wait() }

// mark is the immediate marker attempt for a committed batch's terminal rows, logged on the
// batch's log. It runs off the FIFO path (markImmediately starts it), bounded by MarkerTimeout,
// so a mailbox row lock or a half-open MySQL connection never stalls processing; what it leaves
// owed is the sweep's. Nothing is written before the standbys have the batch's commit
// (standbysHave). Written in full, the batch's debt row is deleted and the rows are not
// touched; failed, the debt moves onto the rows with the error; written in part, the debt stays
// for the jobs stage, which moves it onto the rows after the sweep's grace.
//
// No marker for an open row (INV-8c, INV-8d): a replay may reopen a row of the batch at any
// time, also while this write waits on a mailbox row lock, and a reopened row leaves its batch's
// debt in the same transaction. So the mailbox rows are locked first, and only then, with nothing
// written yet, is the batch's debt row locked in PostgreSQL (guard); the mailbox write covers the
// rows it still names alone, and its lock is held until that write has committed. A replay that
// committed before the guard is seen (its row is not named); one that comes after waits for the
// mailbox commit, as behind the sweep. The guard never waits for a PostgreSQL lock (SKIP LOCKED)
// while it holds mailbox locks: a debt locked by someone else is left to the sweep, and no wait
// across the two databases can form a cycle. One row lock a batch, not one a message.
func (p *Engine) mark(ids []int64, debt int64, now time.Time, log zerolog.Logger) {
	if !p.standbysHave(ids, log) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.MarkerTimeout)
	defer cancel()
	var guard pgx.Tx
	n, err := p.marker.MarkIf(ctx, ids, clock.WallClock(now, p.cfg.Location), p.cfg.ProcessedValue,
		func(ctx context.Context, unmarked []int64) ([]int64, error) {
			tx, err := p.pool.Begin(ctx)
			if err != nil {
				return nil, fmt.Errorf("lock the batch's debt: %w", err)
			}
			guard = tx
			var named []int64
			switch err := tx.QueryRow(ctx, markerGuardSQL, debt).Scan(&named); {
			case errors.Is(err, pgx.ErrNoRows): // locked by someone else, or moved onto the rows
				return nil, nil
			case err != nil:
				return nil, fmt.Errorf("lock the batch's debt: %w", err)
			}
			return intersect(unmarked, named), nil
		})
	ctx, cancel = context.WithTimeout(context.Background(), p.cfg.MarkerTimeout)
	defer cancel()
	if guard != nil {
		// The mailbox write is over: the rows it covered may be reopened now. The transaction
		// wrote nothing; a failed rollback closes its connection, which releases the lock too.
		if rerr := guard.Rollback(ctx); rerr != nil {
			log.Debug().Err(rerr).Msg("pump: end the immediate marker's lock on its debt")
		}
	}
	switch {
	case err != nil:
		log.Warn().Err(err).Int("count", len(ids)).Msg("pump: immediate marker failed; the backfill sweep retries")
		if _, uerr := p.pool.Exec(ctx, markerFailedSQL, ids, now.Add(30*time.Second), err.Error(), debt); uerr != nil {
			log.Warn().Err(uerr).Msg("pump: record marker failure")
		}
	case n == int64(len(ids)):
		if _, err := p.pool.Exec(ctx, markerPaidSQL, ids, now, debt); err != nil {
			log.Warn().Err(err).Msg("pump: record markers written")
		}
	default:
		// Some rows were already marked or are missing, were reopened, or their debt was held
		// by someone else when the mailbox was written: the sweep settles each one on its own
		// once the jobs stage has moved the debt onto the rows still terminal.
		log.Debug().Int64("marked", n).Int("owed", len(ids)).Msg("pump: partial marker write left to the sweep")
	}
}

// standbysHave reports whether the standbys the rule asks for (MSGX_MARKER_STANDBYS) have
// replayed the batch's commit, waiting for them within the rule's bound (INV-8c): a marker the
// AODB sees may get its row purged, and a promoted standby without the commit would need that row
// to process the messages again. The batch committed before this runs, so the WAL position the
// wait reads is past its commit. When they have not, nothing is written: the batch's debt stays,
// and the jobs stage moves it onto the rows after the sweep's grace, as for a partial write.
func (p *Engine) standbysHave(ids []int64, log zerolog.Logger) bool {
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.Standbys.Bound()+p.cfg.MarkerTimeout)
	defer cancel()
	return p.cfg.Standbys.Await(ctx, p.pool, len(ids), log) == nil
}

// intersect returns the ids of a that b holds too, in a's order.
func intersect(a, b []int64) []int64 {
	in := make(map[int64]struct{}, len(b))
	for _, id := range b {
		in[id] = struct{}{}
	}
	return slices.DeleteFunc(slices.Clone(a), func(id int64) bool {
		_, ok := in[id]
		return !ok
	})
}
