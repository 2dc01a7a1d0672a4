package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/identity"
	"github.com/msgx/msgx/pkg/leader"
)

// task is one retention or archive statement: it handles one batch of rows older than a cut-off.
type task struct {
	name  string
	sql   string
	keep  time.Duration
	stamp bool // the statement takes now as $3 (archived_at, raw_cleared_at)
}

// tasks are the retention tasks; rule is the stored identity rule (nil: none stored yet, the
// identity bindings are kept).
func (j *Jobs) tasks(rule *identity.Rule) []task {
	ts := []task{
		{name: "archive", sql: archiveSQL(j.cfg.Shadow), keep: j.cfg.ProcStateRetention, stamp: true},
		{name: "raw", sql: clearRawSQL, keep: j.cfg.RawRetention, stamp: true},
		{name: "proc_state_hst", sql: deleteArchivedSQL, keep: j.cfg.ProcStateHstRetention},
		{name: "msg_event", sql: deleteSentEventsSQL, keep: j.cfg.EventRetention},
		{name: "msg_event delivered", sql: deleteDeliveredEventsSQL, keep: j.cfg.EventRetention},
		{name: "msg_event_delivered", sql: deleteCursorMovesSQL, keep: j.cfg.EventRetention},
		{name: "msg_state_out", sql: deleteSentStatesSQL, keep: j.cfg.EventRetention},
		{name: "schd_snap_log", sql: deleteSnapLogSQL, keep: j.cfg.SnapLogRetention},
		{name: "req_track", sql: deleteReqTrackSQL, keep: j.cfg.ReqTrackRetention},
		{name: "flight_history", sql: deleteFlightHistorySQL, keep: j.cfg.FlightHistoryRetention},
	}
	if rule != nil {
		ts = append(ts, task{name: "msg_identity", sql: deleteIdentitySQL, keep: rule.Window + j.cfg.IdentityMargin})
	}
	return ts
}

// retention is one run of the retention/archive job: each task in turn, each in transactions
// of at most Batch rows, all of them within the run's budget.
func (j *Jobs) retention(ctx context.Context, lease leader.Lease, now time.Time) (Result, error) {
	var res Result
	deadline := time.Now().Add(j.cfg.RunBudget)
	var errs []error
	var rule *identity.Rule
	switch s, ok, err := identity.Load(ctx, j.pool); {
	case err != nil:
		errs = append(errs, err) // the other tasks still run
	case ok:
		rule = &s.Rule
	default:
		j.log.Debug().Msg("retention: no identity rule stored yet; identity bindings are kept")
	}
	for _, t := range j.tasks(rule) {
		if time.Now().After(deadline) {
			res.More = true
			break
		}
		args := []any{now.Add(-t.keep), j.cfg.Batch}
		if t.stamp {
			args = append(args, now)
		}
		n, more, err := j.loop(ctx, deadline, j.cfg.Batch, func() (int, error) {
			var n int64
			err := leader.Fenced(ctx, j.pool, lease, func(tx pgx.Tx) error {
				tag, err := tx.Exec(ctx, t.sql, args...)
				n = tag.RowsAffected()
				return err
			})
			if err != nil {
				return 0, fmt.Errorf("retention %s: %w", t.name, err)
			}
			return int(n), nil
		})
		res.Selected += n
		res.Done += n
		res.More = res.More || more
		j.metrics.purged.WithLabelValues(Retention, t.name).Add(float64(n))
		if err != nil {
			if errors.Is(err, leader.ErrFenced) || ctx.Err() != nil {
				return res, err
			}
			errs = append(errs, err) // the other tasks still run
		}
	}
	return res, errors.Join(errs...)
}
