package processor

import (
	"strings"
	"time"

	"github.com/msgx/msgx/pkg/envconf"
	"github.com/msgx/msgx/pkg/replication"
)

// Config tunes the engine. The tagged fields are the stage's settings (variable, default:
// pkg/envconf, docs/configuration.md; checked by Validate); the others are the process's, set by
// the binary. New gives four fields a default when they are zero (Location UTC, MarkerTimeout,
// PoisonCrashes and IdentityWindow as their variables' defaults); any other zero is used as is.
type Config struct {
	Batch              int           `envconfig:"MSGX_PUMP_BATCH" default:"2000" desc:"processor: consecutive head messages committed in one transaction (a savepoint each; flight messages share one in-memory session); the text loaded per batch is also capped at 8 MiB"`
	MaxAttempts        int           // MSGX_MAX_ATTEMPTS
	BackoffBase        time.Duration // MSGX_BACKOFF_BASE
	BackoffMax         time.Duration // MSGX_BACKOFF_MAX
	HeadDeadline       time.Duration `envconfig:"MSGX_HEAD_DEADLINE" default:"10m" desc:"processor: a FAILED head whose retries have gone on this long (counting only time the engine was running, INV-23d) ends DEAD EXHAUSTED"`
	PoisonCrashes      int           `envconfig:"MSGX_POISON_CRASHES" default:"3" desc:"processor: a message whose attempt, run alone, ended with the process dying this many times in a row is poison: DEAD EXHAUSTED (INV-23d)"`
	FlightCache        int           `envconfig:"MSGX_FLIGHT_CACHE" default:"4000" desc:"processor: flights whose full state is kept between batches, so a batch reads in full only the flights changed since (each entry is checked against its flight row's xmin before use); 0 turns the cache off"`
	IdlePoll           time.Duration // wait when there is no work (ingest's new rows)
	IgnoreTypes        []string      `envconfig:"MSGX_IGNORE_TYPES" default:"LDM,REGN,RSTA,EROR" desc:"processor: message TYPEs marked SKIPPED ignored:<TYPE> after identity binding"`
	IdentityIncludeDay bool          `envconfig:"MSGX_IDENTITY_INCLUDE_DAY" default:"false" desc:"processor: add the DTTM date to the identity SNDR|TYPE|STYP|SEQN; part of the stored identity rule (change it with msgxctl identity set, docs/runbook.md)"`
	IdentityWindow     time.Duration `envconfig:"MSGX_IDENTITY_WINDOW" default:"168h" desc:"processor: a same-key message is the same message (a duplicate) only when the bound one's DTTM is within this of its own; outside it the key was reused (a new message); part of the stored identity rule"`
	Location           *time.Location
	Shadow             bool          // write nothing to MySQL
	ProcessedValue     string        // also written to CMINMSGS_STATUS with the marker
	MarkerTimeout      time.Duration // bound of one immediate marker write (0: 10 s)
	// ReadAhead reads and decodes the next batch while one commits (lookahead.go): a second
	// batch of decoded messages in memory, which pays only where the memory limit leaves room
	// for it (ReadAheadMemory).
	ReadAhead bool
	// Standbys holds each immediate marker back until the standbys have the batch's commit
	// (MSGX_MARKER_STANDBYS; nil: no wait).
	Standbys *replication.Waiter
}

// ReadAheadMemory is the smallest Go memory limit with which the processor reads ahead. Under
// the 44 MiB default (no GOMEMLIMIT) the second decoded batch made the processor's collector
// work harder for no faster drain (docs/decisions.md).
const ReadAheadMemory = 128 << 20

// maxBatch is the largest batch MSGX_PUMP_BATCH allows.
const maxBatch = 10000

// Validate reports every bad value of the stage's settings, one line each.
func (c Config) Validate() error {
	var p envconf.Problems
	p.Between("MSGX_PUMP_BATCH", int64(c.Batch), 1, maxBatch)
	p.Positive("MSGX_HEAD_DEADLINE", c.HeadDeadline)
	if c.IdentityWindow < time.Second || c.IdentityWindow%time.Second != 0 {
		p.Add("MSGX_IDENTITY_WINDOW", "must be whole seconds, at least 1s, got %s", c.IdentityWindow)
	}
	p.Between("MSGX_FLIGHT_CACHE", int64(c.FlightCache), 0, 1_000_000)
	p.Between("MSGX_POISON_CRASHES", int64(c.PoisonCrashes), 1, 100)
	for _, t := range c.IgnoreTypes {
		if t == "" || strings.TrimSpace(t) != t {
			p.Add("MSGX_IGNORE_TYPES", "must be a comma-separated list of TYPEs without blanks, got %q", strings.Join(c.IgnoreTypes, ","))
			break
		}
	}
	return p.Err()
}
