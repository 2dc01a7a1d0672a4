package jobs

import (
	"errors"
	"fmt"
	"time"
)

// Config tunes the jobs. Zero values are not defaults: the binary fills them from pkg/config;
// tests start from Defaults().
type Config struct {
	BackfillInterval time.Duration // backfill sweep period (30s)
	BackoffBase      time.Duration // first marker retry delay, doubled per attempt (30s)
	BackoffMax       time.Duration // marker retry delay cap (15m)
	Overdue          time.Duration // R: a marker still failing this long after enqueued_at is abandoned (24h)
	Shadow           bool          // write nothing to MySQL: the backfill sweep does nothing
	ProcessedValue   string        // also written to CMINMSGS_STATUS with the marker
	MarkTimeout      time.Duration // bound of one mailbox call (keep it under the PG idle-in-transaction timeout)

	HistoryEnabled   bool          // history store on; when false the history sweep deletes nothing
	HistorySweepAt   time.Duration // airport wall-clock time of day of the daily sweep (03:30)
	HistoryRetention time.Duration // operation days older than this are purged (72h)
	HistoryQuiet     time.Duration // an ACTIVE flight is purged only when not updated this long (24h)
	HistoryBatch     int           // flights per transaction (PIPELINE_LOCK is held for one of them)

	RetentionInterval      time.Duration // period of the retention/archive job
	EventRetention         time.Duration // SENT msg_event
	ProcStateRetention     time.Duration // terminal, settled proc_state → proc_state_hst
	RawRetention           time.Duration // raw copy of archived rows
	SnapLogRetention       time.Duration // schd_snap_log
	ReqTrackRetention      time.Duration // closed req_track
	FlightHistoryRetention time.Duration // flight_history

	Batch     int           // rows per transaction
	RunTxs    int           // transactions per task and run (with Batch: the run's row bound)
	RunBudget time.Duration // wall time of one run of one job; a run stops after the transaction that passes it
	Tick      time.Duration // how often the scheduler wakes up to look at the (injected) clock

	Location *time.Location // airport time zone
}

// Defaults returns the documented defaults (docs/spec.md §10, §12).
func Defaults() Config {
	return Config{
		BackfillInterval: 30 * time.Second, BackoffBase: 30 * time.Second, BackoffMax: 15 * time.Minute,
		Overdue: 24 * time.Hour, MarkTimeout: 2 * time.Second,
		HistoryEnabled: true, HistorySweepAt: 3*time.Hour + 30*time.Minute,
		HistoryRetention: 72 * time.Hour, HistoryQuiet: 24 * time.Hour, HistoryBatch: 100,
		RetentionInterval: time.Minute, EventRetention: 7 * 24 * time.Hour,
		ProcStateRetention: 30 * 24 * time.Hour, RawRetention: 90 * 24 * time.Hour,
		SnapLogRetention: 90 * 24 * time.Hour, ReqTrackRetention: 30 * 24 * time.Hour,
		FlightHistoryRetention: 365 * 24 * time.Hour,
		Batch:                  1000, RunTxs: 20, RunBudget: 10 * time.Second, Tick: time.Second,
		Location: time.UTC,
	}
}

// ParseTimeOfDay turns "HH:MM" into the duration since midnight.
func ParseTimeOfDay(s string) (time.Duration, error) {
	t, err := time.Parse("15:04", s)
	if err != nil {
		return 0, fmt.Errorf("time of day %q: want HH:MM", s)
	}
	return time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute, nil
}

// Validate reports every bad value.
func (c Config) Validate() error {
	var errs []error
	for name, d := range map[string]time.Duration{
		"BackfillInterval": c.BackfillInterval, "BackoffBase": c.BackoffBase, "BackoffMax": c.BackoffMax,
		"Overdue": c.Overdue, "MarkTimeout": c.MarkTimeout, "HistoryRetention": c.HistoryRetention,
		"HistoryQuiet": c.HistoryQuiet, "RetentionInterval": c.RetentionInterval,
		"EventRetention": c.EventRetention, "ProcStateRetention": c.ProcStateRetention,
		"RawRetention": c.RawRetention, "SnapLogRetention": c.SnapLogRetention,
		"ReqTrackRetention": c.ReqTrackRetention, "FlightHistoryRetention": c.FlightHistoryRetention,
		"RunBudget": c.RunBudget, "Tick": c.Tick,
	} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("jobs: %s must be positive, got %s", name, d))
		}
	}
	if c.BackoffBase > c.BackoffMax {
		errs = append(errs, fmt.Errorf("jobs: BackoffBase %s exceeds BackoffMax %s", c.BackoffBase, c.BackoffMax))
	}
	if c.HistorySweepAt < 0 || c.HistorySweepAt >= 24*time.Hour {
		errs = append(errs, fmt.Errorf("jobs: HistorySweepAt must be a time of day, got %s", c.HistorySweepAt))
	}
	if c.Batch < 1 || c.HistoryBatch < 1 || c.RunTxs < 1 {
		errs = append(errs, fmt.Errorf("jobs: Batch, HistoryBatch and RunTxs must be at least 1"))
	}
	if c.Location == nil {
		errs = append(errs, errors.New("jobs: Location must be set"))
	}
	return errors.Join(errs...)
}
