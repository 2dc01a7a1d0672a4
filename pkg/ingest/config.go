package ingest

import (
	"errors"
	"fmt"
	"time"
)

// Config tunes the poll loop. Zero fields take the defaults of docs/spec.md §4 (see withDefaults).
type Config struct {
	// PollInterval is the wait after a poll that did not return a full batch.
	PollInterval time.Duration
	// ClaimBatch is the number of mailbox rows read per poll.
	ClaimBatch int
	// MaxCommitDelay is the age after which a gap is judged permanent and its ids skipped.
	MaxCommitDelay time.Duration
	// ReprobeWindow is how long skipped ids are re-probed for a late commit.
	ReprobeWindow time.Duration
	// ReprobeEvery is the period of the re-probe of skipped ids.
	ReprobeEvery time.Duration
	// ReprobeRanges bounds the id ranges (islands of skipped ids) probed at once.
	ReprobeRanges int
	// MaxSkip bounds the ids one step may skip; a larger permanent gap (an AUTO_INCREMENT jump)
	// is skipped over several steps inside the same aged window.
	MaxSkip int64
	// DBTimeout bounds one mailbox read or one PostgreSQL transaction.
	DBTimeout time.Duration
}

// Defaults of the settings that have no MSGX_ variable.
const (
	DefaultReprobeEvery  = 10 * time.Second
	DefaultReprobeRanges = 100
	DefaultMaxSkip       = 10000
)

func (c Config) withDefaults() Config {
	set := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	set(&c.PollInterval, time.Second)
	set(&c.MaxCommitDelay, 30*time.Second)
	set(&c.ReprobeWindow, 24*time.Hour)
	set(&c.ReprobeEvery, DefaultReprobeEvery)
	set(&c.DBTimeout, 10*time.Second)
	if c.ClaimBatch == 0 {
		c.ClaimBatch = 50
	}
	if c.ReprobeRanges == 0 {
		c.ReprobeRanges = DefaultReprobeRanges
	}
	if c.MaxSkip == 0 {
		c.MaxSkip = DefaultMaxSkip
	}
	return c
}

// Validate reports every bad value (after defaults), one line each.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	for name, d := range map[string]time.Duration{
		"poll interval": c.PollInterval, "max commit delay": c.MaxCommitDelay,
		"reprobe window": c.ReprobeWindow, "reprobe period": c.ReprobeEvery, "db timeout": c.DBTimeout,
	} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("ingest: %s must be positive, got %s", name, d))
		}
	}
	if c.ClaimBatch < 1 || c.ClaimBatch > 10000 {
		errs = append(errs, fmt.Errorf("ingest: claim batch must be between 1 and 10000, got %d", c.ClaimBatch))
	}
	if c.ReprobeRanges < 1 {
		errs = append(errs, fmt.Errorf("ingest: reprobe ranges must be positive, got %d", c.ReprobeRanges))
	}
	if c.MaxSkip < 1 {
		errs = append(errs, fmt.Errorf("ingest: max skip must be positive, got %d", c.MaxSkip))
	}
	return errors.Join(errs...)
}
