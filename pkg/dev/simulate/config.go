package simulate

import (
	"errors"
	"fmt"
	"time"
)

// Config describes the simulated day. Zero values select the defaults noted on
// each field; BadShare and Additions are taken literally (0 = none), use
// DefaultConfig for the recommended values.
type Config struct {
	// Seed makes the day reproducible: the same Config gives byte-identical messages.
	Seed uint64
	// Flights is the number of FLTR records in the daily schedule snapshot
	// (default 1,200), code-share children included.
	Flights int
	// Additions is the number of flights added during the day by SCHD ADFT.
	Additions int
	// BadShare is the probability that a bad message (malformed, protocol error or
	// duplicate by identity, in equal parts) follows an operational message.
	BadShare float64
	// Date is the operation day (its calendar date in Location counts; default 2026-03-15).
	Date time.Time
	// Location is the airport time zone (default Asia/Shanghai).
	Location *time.Location
	// Home is the home airport IATA code (default CTU).
	Home string
	// Sender is META/SNDR (default AODB).
	Sender string
	// FirstFLID is the first AODB flight id (default 100001).
	FirstFLID int64
	// FirstSEQN is the first META/SEQN (default 1000). SEQN lands in the mailbox's
	// mediumint SUBSYSTEM_SEQUENCE column, so a day must stay below 8,388,607.
	FirstSEQN int64
}

// DefaultConfig returns the recommended day: 1,200 flights, 24 ADFT additions, 2% bad messages.
func DefaultConfig() Config {
	return Config{Flights: 1200, Additions: 24, BadShare: 0.02}
}

// DefaultDate is the operation day used when Config.Date is zero.
var DefaultDate = time.Date(2026, time.March, 15, 0, 0, 0, 0, time.UTC)

// Validate reports an unusable configuration.
func (c Config) Validate() error {
	var errs []error
	if c.Flights < 0 || c.Flights > 100_000 {
		errs = append(errs, fmt.Errorf("flights %d outside 0..100000", c.Flights))
	}
	if c.Additions < 0 || c.Additions > 10_000 {
		errs = append(errs, fmt.Errorf("additions %d outside 0..10000", c.Additions))
	}
	if c.BadShare < 0 || c.BadShare > 0.5 {
		errs = append(errs, fmt.Errorf("bad share %v outside 0..0.5", c.BadShare))
	}
	if c.Home != "" && len(c.Home) != 3 {
		errs = append(errs, fmt.Errorf("home airport %q is not an IATA code", c.Home))
	}
	if len(c.Sender) > 4 {
		errs = append(errs, fmt.Errorf("sender %q longer than 4 characters (SUBSYSTEM_NAME)", c.Sender))
	}
	if c.FirstFLID < 0 || c.FirstSEQN < 0 {
		errs = append(errs, errors.New("first FLID/SEQN must not be negative"))
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	if c.Flights == 0 {
		c.Flights = 1200
	}
	if c.Location == nil {
		loc, err := time.LoadLocation("Asia/Shanghai")
		if err != nil {
			loc = time.FixedZone("CST", 8*3600)
		}
		c.Location = loc
	}
	if c.Date.IsZero() {
		c.Date = DefaultDate
	}
	y, m, d := c.Date.Date()
	c.Date = time.Date(y, m, d, 0, 0, 0, 0, c.Location)
	if c.Home == "" {
		c.Home = "CTU"
	}
	if c.Sender == "" {
		c.Sender = "AODB"
	}
	if c.FirstFLID == 0 {
		c.FirstFLID = 100001
	}
	if c.FirstSEQN == 0 {
		c.FirstSEQN = 1000
	}
	return c
}

// Today returns c with Date set to today's date in its airport zone (the default zone when
// unset): the day a processor's bootstrap request asks for.
func (c Config) Today() Config {
	loc := c.withDefaults().Location
	y, m, d := time.Now().In(loc).Date()
	c.Location, c.Date = loc, time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	return c
}
