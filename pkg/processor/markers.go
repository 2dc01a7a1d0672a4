package processor

import (
	"context"
	"time"

	"github.com/rs/zerolog"

	"github.com/msgx/msgx/pkg/clock"
)

// markerWriters bounds the immediate marker writes in flight; a batch finding them all busy
// leaves its markers to the jobs stage's backfill sweep (the guarantee, INV-8b).
const markerWriters = 4

// Marker writes the mailbox processed marker (pkg/mailbox): only NULL → at (INV-7). It
// returns how many rows it changed.
type Marker interface {
	MarkProcessed(ctx context.Context, ids []int64, at time.Time, status string) (int64, error)
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
// owed is the sweep's. Written in full, the batch's debt row is deleted and the rows are not
// touched; failed, the debt moves onto the rows with the error; written in part, the debt stays
// for the jobs stage, which moves it onto the rows after the sweep's grace.
func (p *Engine) mark(ids []int64, debt int64, now time.Time, log zerolog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.MarkerTimeout)
	defer cancel()
	n, err := p.marker.MarkProcessed(ctx, ids, clock.WallClock(now, p.cfg.Location), p.cfg.ProcessedValue)
	ctx, cancel = context.WithTimeout(context.Background(), p.cfg.MarkerTimeout)
	defer cancel()
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
		// Some rows were already marked or are missing: the sweep settles each one on its own
		// once the jobs stage has moved the debt onto them.
		log.Debug().Int64("marked", n).Int("owed", len(ids)).Msg("pump: partial marker write left to the sweep")
	}
}
