package ingest

import (
	"time"

	"github.com/msgx/msgx/pkg/envconf"
)

// Config tunes the poll loop. Each setting's variable and default are in its tags (pkg/envconf,
// docs/configuration.md); zero fields take the defaults (docs/spec.md §4). PollInterval and DBTimeout
// are the mailbox's and the process's, set by the binary.
type Config struct {
	// PollInterval is the mailbox's MSGX_POLL_INTERVAL (mailbox.Config), set by the binary.
	PollInterval   time.Duration `default:"50ms"`
	ClaimBatch     int           `envconfig:"MSGX_CLAIM_BATCH" default:"500" desc:"ingest: mailbox rows read per poll"`
	Gather         time.Duration `envconfig:"MSGX_INGEST_GATHER" default:"100ms" desc:"ingest: wait between polls under load (the last poll enqueued at least a tenth of MSGX_CLAIM_BATCH) instead of MSGX_POLL_INTERVAL, so every stage commits fewer, larger batches at a high arrival rate; no effect unless longer than MSGX_POLL_INTERVAL"`
	MaxCommitDelay time.Duration `envconfig:"MSGX_MAX_COMMIT_DELAY" default:"30s" desc:"ingest: age after which a gap in mailbox ids is judged permanent and skipped; production refuses less than 30s (Q2), it is not a speed setting"`
	ReprobeWindow  time.Duration `envconfig:"MSGX_GAP_REPROBE_WINDOW" default:"24h" desc:"ingest: how long skipped ids are re-probed for a late commit"`
	// ReprobeEvery is the period of the re-probe of skipped ids.
	ReprobeEvery time.Duration `default:"10s"`
	// ReprobeRanges bounds the id ranges (islands of skipped ids) probed at once.
	ReprobeRanges int `default:"100"`
	// MaxSkip bounds the ids one step may skip; a larger permanent gap (an AUTO_INCREMENT jump)
	// is skipped over several steps inside the same aged window.
	MaxSkip int64 `default:"10000"`
	// ProofSettle is the least time, on the mailbox server's clock, between the read of InnoDB's
	// transaction list that gives a horizon and the later read that proves it (proof.go): longer
	// than an inserting session takes from allocating its id to registering its transaction.
	ProofSettle time.Duration `default:"100ms"`
	// DBTimeout bounds one mailbox read or one PostgreSQL transaction.
	DBTimeout time.Duration `default:"10s"`
}

// MinMaxCommitDelay is the least MSGX_MAX_COMMIT_DELAY production accepts: the mailbox's commit
// bound the design assumes (Q2, PRE-2). A shorter one skips ids whose commit is still in flight,
// and a row found later is processed out of order (late), so it is not a speed setting.
const MinMaxCommitDelay = 30 * time.Second

// ProductionRefusals are the ingest settings production refuses: a gap age below the floor.
func (c Config) ProductionRefusals() error {
	var p envconf.Problems
	if c.MaxCommitDelay < MinMaxCommitDelay {
		p.Add("MSGX_MAX_COMMIT_DELAY", "production refuses less than %s (Q2: a gap younger than it may be a commit in flight), got %s", MinMaxCommitDelay, c.MaxCommitDelay)
	}
	return p.Err()
}

func (c Config) withDefaults() Config {
	envconf.FillZero(&c)
	return c
}

// Validate reports every bad value, one line each (New fills zero fields with their defaults
// first; the binary's configuration is validated as read).
func (c Config) Validate() error {
	var p envconf.Problems
	p.Positive("ingest: poll interval", c.PollInterval)
	p.Between("MSGX_CLAIM_BATCH", int64(c.ClaimBatch), 1, 10000)
	if c.Gather <= 0 || c.Gather > 5*time.Second {
		p.Add("MSGX_INGEST_GATHER", "must be above 0 and at most 5s, got %s", c.Gather)
	}
	p.Positive("MSGX_MAX_COMMIT_DELAY", c.MaxCommitDelay)
	p.Positive("MSGX_GAP_REPROBE_WINDOW", c.ReprobeWindow)
	p.Positive("ingest: reprobe period", c.ReprobeEvery)
	p.Positive("ingest: db timeout", c.DBTimeout)
	p.Positive("ingest: proof settle", c.ProofSettle)
	if c.ReprobeRanges < 1 {
		p.Add("ingest: reprobe ranges", "must be positive, got %d", c.ReprobeRanges)
	}
	if c.MaxSkip < 1 {
		p.Add("ingest: max skip", "must be positive, got %d", c.MaxSkip)
	}
	return p.Err()
}
