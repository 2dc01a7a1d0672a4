package jobs

import (
	"errors"
	"fmt"
	"time"

	"github.com/msgx/msgx/pkg/envconf"
	"github.com/msgx/msgx/pkg/replication"
)

// Config tunes the jobs. Fields with an env tag are the stage's settings; fields with only a
// default are tuning values without a variable; both defaults live in the tags (pkg/envconf,
// docs/configuration.md). Shadow, ProcessedValue, MarkTimeout, Standbys and Location are the
// process's, set by the binary. Zero values are not defaults: start from Defaults().
type Config struct {
	BackfillInterval time.Duration `envconfig:"MSGX_BACKFILL_INTERVAL" default:"30s" desc:"jobs: backfill sweep period"`
	BackoffBase      time.Duration `envconfig:"MSGX_BACKFILL_BACKOFF_BASE" default:"30s" desc:"jobs: first marker retry delay, doubled per attempt"`
	BackoffMax       time.Duration `envconfig:"MSGX_BACKFILL_BACKOFF_MAX" default:"15m" desc:"jobs: marker retry delay cap"`
	Overdue          time.Duration `envconfig:"MSGX_OVERDUE_BACKFILL" default:"24h" desc:"jobs: a marker still failing this long after enqueued_at is abandoned and listed for reconciliation (R); production refuses less than 24h (Q6), it is not a speed setting"`
	Shadow           bool          // write nothing to MySQL: the backfill sweep does nothing
	ProcessedValue   string        // also written to CMINMSGS_STATUS with the marker
	MarkTimeout      time.Duration `default:"2s"` // bound of one mailbox call (keep it under the PG idle-in-transaction timeout)
	// Standbys holds the sweep's markers back until the standbys have the rows' commits
	// (MSGX_MARKER_STANDBYS; nil: no wait), set by the binary.
	Standbys *replication.Waiter

	HistoryEnabled   bool          `envconfig:"MSGX_HISTORY_ENABLED" default:"true" desc:"jobs: history store on; when false the history sweep deletes nothing"`
	HistorySweepAt   TimeOfDay     `envconfig:"MSGX_HISTORY_SWEEP_AT" default:"03:30" desc:"jobs: airport-time HH:MM of the daily history sweep"`
	HistoryRetention time.Duration `envconfig:"MSGX_HISTORY_RETENTION" default:"72h" desc:"jobs: flights whose operation day is older than this are purged into flight_history"`
	HistoryQuiet     time.Duration `envconfig:"MSGX_HISTORY_QUIET" default:"24h" desc:"jobs: an ACTIVE flight is purged only when not updated for this long"`
	HistoryBatch     int           `default:"100"` // flights per transaction (PIPELINE_LOCK is held for one of them)

	RetentionInterval      time.Duration `default:"1m"` // period of the retention/archive job
	EventRetention         time.Duration `envconfig:"MSGX_EVENT_RETENTION" default:"168h" desc:"jobs: delivered msg_event rows (and the delivery cursor's moves) and SENT msg_state_out rows are deleted after this"`
	ProcStateRetention     time.Duration `envconfig:"MSGX_PROC_STATE_RETENTION" default:"720h" desc:"jobs: terminal proc_state rows with a settled marker move to proc_state_hst after this"`
	ProcStateHstRetention  time.Duration `envconfig:"MSGX_PROC_STATE_HST_RETENTION" default:"8760h" desc:"jobs: archived proc_state_hst rows are deleted this long after archived_at (abandoned markers not reconciled are kept)"`
	IdentityMargin         time.Duration `envconfig:"MSGX_IDENTITY_MARGIN" default:"24h" desc:"jobs: identity bindings are deleted when bound longer ago than the stored identity window plus this margin"`
	RawRetention           time.Duration `envconfig:"MSGX_RAW_RETENTION" default:"2160h" desc:"jobs: the raw text copy of archived messages is cleared after this"`
	SnapLogRetention       time.Duration `envconfig:"MSGX_SNAP_LOG_RETENTION" default:"2160h" desc:"jobs: a schd_snap_log row is deleted this long after its scope ended and it was received (scope_end, recv_at)"`
	ReqTrackRetention      time.Duration `envconfig:"MSGX_REQ_TRACK_RETENTION" default:"720h" desc:"jobs: closed req_track rows are deleted after this"`
	FlightHistoryRetention time.Duration `envconfig:"MSGX_FLIGHT_HISTORY_RETENTION" default:"8760h" desc:"jobs: flight_history rows are deleted after this"`

	Batch     int           `envconfig:"MSGX_JOB_BATCH" default:"1000" desc:"jobs: rows per job transaction (bounds every run)"`
	RunTxs    int           `default:"20"`  // transactions per task and run (with Batch: the run's row bound)
	RunBudget time.Duration `default:"10s"` // wall time of one run of one job; a run stops after the transaction that passes it
	Tick      time.Duration `default:"1s"`  // how often the scheduler wakes up to look at the (injected) clock

	Location *time.Location // airport time zone
}

// Defaults returns the documented defaults (the tags; docs/spec.md §10, §12), in UTC.
func Defaults() Config {
	var c Config
	envconf.Defaults(&c)
	c.Location = time.UTC
	return c
}

// TimeOfDay is a wall-clock time of day, the duration since midnight; its text is "HH:MM".
type TimeOfDay time.Duration

// UnmarshalText parses "HH:MM".
func (t *TimeOfDay) UnmarshalText(b []byte) error {
	v, err := time.Parse("15:04", string(b))
	if err != nil {
		return fmt.Errorf("must be HH:MM (airport time), got %q", b)
	}
	*t = TimeOfDay(time.Duration(v.Hour())*time.Hour + time.Duration(v.Minute())*time.Minute)
	return nil
}

// String returns "HH:MM".
func (t TimeOfDay) String() string {
	d := time.Duration(t)
	return fmt.Sprintf("%02d:%02d", int(d.Hours()), int(d.Minutes())%60)
}

// MinOverdue is the least R (MSGX_OVERDUE_BACKFILL) production accepts (Q6): an owed marker is
// given up only after the mailbox failed for longer than a night-long outage. A shorter R makes
// people reconcile rows a later sweep would have marked, so it is not a speed setting.
const MinOverdue = 24 * time.Hour

// ProductionRefusals are the jobs settings production refuses: R below its floor.
func (c Config) ProductionRefusals() error {
	var p envconf.Problems
	if c.Overdue < MinOverdue {
		p.Add("MSGX_OVERDUE_BACKFILL", "production refuses less than %s (Q6: R must outlast a night-long mailbox outage), got %s", MinOverdue, c.Overdue)
	}
	return p.Err()
}

// Validate reports every bad value, one line each (naming the variable of a setting).
func (c Config) Validate() error {
	var p envconf.Problems
	for _, s := range []struct {
		name string
		d    time.Duration
	}{
		{"MSGX_BACKFILL_INTERVAL", c.BackfillInterval}, {"MSGX_BACKFILL_BACKOFF_BASE", c.BackoffBase},
		{"MSGX_BACKFILL_BACKOFF_MAX", c.BackoffMax}, {"MSGX_OVERDUE_BACKFILL", c.Overdue},
		{"MSGX_HISTORY_RETENTION", c.HistoryRetention}, {"MSGX_HISTORY_QUIET", c.HistoryQuiet},
		{"MSGX_EVENT_RETENTION", c.EventRetention}, {"MSGX_PROC_STATE_RETENTION", c.ProcStateRetention},
		{"MSGX_RAW_RETENTION", c.RawRetention}, {"MSGX_PROC_STATE_HST_RETENTION", c.ProcStateHstRetention},
		{"MSGX_IDENTITY_MARGIN", c.IdentityMargin}, {"MSGX_SNAP_LOG_RETENTION", c.SnapLogRetention},
		{"MSGX_REQ_TRACK_RETENTION", c.ReqTrackRetention}, {"MSGX_FLIGHT_HISTORY_RETENTION", c.FlightHistoryRetention},
		{"jobs: MarkTimeout", c.MarkTimeout}, {"jobs: RetentionInterval", c.RetentionInterval},
		{"jobs: RunBudget", c.RunBudget}, {"jobs: Tick", c.Tick},
	} {
		p.Positive(s.name, s.d)
	}
	if c.BackoffBase > c.BackoffMax {
		p.Add("MSGX_BACKFILL_BACKOFF_BASE", "must not exceed MSGX_BACKFILL_BACKOFF_MAX (%s), got %s", c.BackoffMax, c.BackoffBase)
	}
	if c.HistorySweepAt < 0 || time.Duration(c.HistorySweepAt) >= 24*time.Hour {
		p.Add("MSGX_HISTORY_SWEEP_AT", "must be a time of day, got %s", time.Duration(c.HistorySweepAt))
	}
	p.Between("MSGX_JOB_BATCH", int64(c.Batch), 1, 100000)
	if c.HistoryBatch < 1 || c.RunTxs < 1 {
		p.Add("jobs: HistoryBatch and RunTxs", "must be at least 1")
	}
	if c.Location == nil {
		p.Join(errors.New("jobs: Location must be set"))
	}
	return p.Err()
}
