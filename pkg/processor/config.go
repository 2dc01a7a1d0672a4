package processor

import (
	"strings"
	"time"

	"github.com/msgx/msgx/pkg/envconf"
)

// Validate reports every bad value of the stage's settings, one line each.
func (c Config) Validate() error {
	var p envconf.Problems
	p.Between("MSGX_PUMP_BATCH", int64(c.Batch), 1, 10000)
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
