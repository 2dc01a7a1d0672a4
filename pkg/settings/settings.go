// Package settings holds what every msgx process shares — its role, the process settings
// (environment, logs, HTTP server, PostgreSQL, airport time zone) and the retry policy — and the
// one way a binary reads its configuration (Load). Each stage declares its own settings in its
// own package; each binary composes the parts it runs (cmd/<binary>/config.go), so a binary
// links and validates only its own stages. pkg/config composes every part, for msgxctl and
// docs/configuration.md.
package settings

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/msgx/msgx/pkg/envconf"
)

// Role names a binary; each pipeline role elects its own leader.
type Role string

// The four stages, and the console (which elects no leader).
const (
	RoleIngest     Role = "ingest"
	RoleProcessor  Role = "processor"
	RoleDispatcher Role = "dispatcher"
	RoleJobs       Role = "jobs"
	RoleConsole    Role = "console"
)

// DefaultHTTPAddr is each role's default MSGX_HTTP_ADDR, distinct so that every binary can run on
// one developer machine.
var DefaultHTTPAddr = map[Role]string{
	RoleIngest:     "127.0.0.1:8081",
	RoleProcessor:  "127.0.0.1:8082",
	RoleDispatcher: "127.0.0.1:8083",
	RoleJobs:       "127.0.0.1:8084",
	RoleConsole:    "127.0.0.1:8085",
}

// ShadowMode is shadow mode: msgx runs beside the legacy consumer and writes nothing to the
// AODB's MySQL. The mailbox stages (and msgxctl) read it with their mailbox settings; the
// console, which never connects to MySQL, reads it alone.
type ShadowMode struct {
	Shadow bool `envconfig:"MSGX_SHADOW" default:"false" desc:"shadow mode: write nothing to MySQL (no markers, no compat inserts, no requests)"`
}

// Process are the settings of every process: environment, logs, HTTP server, PostgreSQL, the
// airport's time zone.
type Process struct {
	Env      string `envconfig:"MSGX_ENV" default:"development" desc:"development or production; production refuses unsafe combinations"`
	LogLevel string `envconfig:"MSGX_LOG_LEVEL" default:"info" desc:"zerolog level: debug, info, warn, error"`
	// HTTPAddr's default depends on the role (DefaultHTTPAddr).
	HTTPAddr        string        `envconfig:"MSGX_HTTP_ADDR" doc:"per binary" desc:"listen address for /healthz, /readyz, /metrics (ingest's API listens on MSGX_API_ADDR, the console's pages on MSGX_CONSOLE_ADDR); default per binary: ingest 127.0.0.1:8081, processor 127.0.0.1:8082, dispatcher 127.0.0.1:8083, jobs 127.0.0.1:8084, console 127.0.0.1:8085 (loopback; the Kubernetes manifests set 0.0.0.0:8080)"`
	HTTPReadTimeout time.Duration `envconfig:"MSGX_HTTP_READ_TIMEOUT" default:"10s" desc:"HTTP server read timeout (headers and body)"`
	ShutdownTimeout time.Duration `envconfig:"MSGX_SHUTDOWN_TIMEOUT" default:"20s" desc:"graceful shutdown bound after SIGTERM (Kubernetes terminationGracePeriodSeconds must be longer)"`
	ShutdownDrain   time.Duration `envconfig:"MSGX_SHUTDOWN_DRAIN" default:"5s" desc:"after SIGTERM /readyz answers 503 for this long before the HTTP servers shut down, so that Services stop routing to the pod first (0: no wait)"`
	Pprof           bool          `envconfig:"MSGX_PPROF" default:"false" desc:"serve Go's profiles (net/http/pprof) under /debug/pprof/ on MSGX_HTTP_ADDR: CPU, heap, goroutines of a running binary, for diagnosis (docs/runbook.md); off by default"`
	LivenessStall   time.Duration `envconfig:"MSGX_LIVENESS_STALL" default:"5m" desc:"/healthz answers 503 when a stage loop of the leader has not ticked for this long (a hung loop), so that the kubelet restarts the pod; longer than the slowest normal iteration"`

	PGURL      string        `envconfig:"MSGX_PG_URL" default:"postgres://postgres@127.0.0.1:5432/msgx?sslmode=disable" desc:"PostgreSQL URL (pgx); set search_path in it to use another schema; sslmode etc. for TLS"`
	PGMaxConns int32         `envconfig:"MSGX_PG_MAX_CONNS" default:"8" desc:"maximum connections in the binary's pool (the leader lock uses one more, dedicated)"`
	DBTimeout  time.Duration `envconfig:"MSGX_DB_TIMEOUT" default:"10s" desc:"upper bound of one database statement or transaction round trip"`
	AirportTZ  string        `envconfig:"MSGX_AIRPORT_TZ" default:"Asia/Shanghai" desc:"airport time zone (IANA): operation days and local times"`
}

// process gives Load the Process of any composition that embeds it.
func (c *Process) process() *Process { return c }

// Production reports whether the process runs with MSGX_ENV=production.
func (c Process) Production() bool { return c.Env == "production" }

// Validate reports every bad value, one line each; in production also the refusals.
func (c Process) Validate() error {
	var p envconf.Problems
	switch c.Env {
	case "development", "production":
	default:
		p.Add("MSGX_ENV", "must be development or production, got %q", c.Env)
	}
	switch strings.ToLower(c.LogLevel) {
	case "debug", "info", "warn", "error":
	default:
		p.Add("MSGX_LOG_LEVEL", "must be debug, info, warn or error, got %q", c.LogLevel)
	}
	if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
		p.Add("MSGX_HTTP_ADDR", "must be host:port, got %q", c.HTTPAddr)
	}
	p.Positive("MSGX_HTTP_READ_TIMEOUT", c.HTTPReadTimeout)
	p.Positive("MSGX_SHUTDOWN_TIMEOUT", c.ShutdownTimeout)
	if c.ShutdownDrain < 0 {
		p.Add("MSGX_SHUTDOWN_DRAIN", "must not be negative, got %s", c.ShutdownDrain)
	}
	p.Positive("MSGX_LIVENESS_STALL", c.LivenessStall)
	if u, err := url.Parse(c.PGURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		p.Add("MSGX_PG_URL", "must be a postgres:// URL")
	}
	if c.PGMaxConns < 2 {
		p.Add("MSGX_PG_MAX_CONNS", "must be at least 2, got %d", c.PGMaxConns)
	}
	p.Positive("MSGX_DB_TIMEOUT", c.DBTimeout)
	if _, err := time.LoadLocation(c.AirportTZ); err != nil || c.AirportTZ == "" {
		p.Add("MSGX_AIRPORT_TZ", "must be an IANA time zone, got %q", c.AirportTZ)
	}
	return p.Err()
}

// ProductionRefusals are the process settings production refuses: a PostgreSQL connection that
// is plaintext or does not verify the server's name (docs/security.md).
func (c Process) ProductionRefusals() error {
	var p envconf.Problems
	if u, err := url.Parse(c.PGURL); err == nil {
		// verify-ca is refused too: it accepts any certificate of the CA, whatever the host.
		if mode := u.Query().Get("sslmode"); mode != "verify-full" {
			if mode == "" {
				mode = "unset (pgx: prefer, unverified)"
			}
			p.Add("MSGX_PG_URL", "production requires sslmode=verify-full (TLS with the server's name verified), got sslmode %s", mode)
		}
	}
	return p.Err()
}

// Location returns the airport time zone (validated by Load).
func (c Process) Location() *time.Location {
	loc, err := time.LoadLocation(c.AirportTZ)
	if err != nil {
		return time.UTC
	}
	return loc
}

// Retry is the retry policy of processing and of delivery (processor and dispatcher).
type Retry struct {
	MaxAttempts int           `envconfig:"MSGX_MAX_ATTEMPTS" default:"5" desc:"processor and dispatcher: attempts before DEAD EXHAUSTED"`
	BackoffBase time.Duration `envconfig:"MSGX_BACKOFF_BASE" default:"1s" desc:"processor and dispatcher: first retry delay, doubled per attempt"`
	BackoffMax  time.Duration `envconfig:"MSGX_BACKOFF_MAX" default:"60s" desc:"processor and dispatcher: retry delay cap"`
}

// Validate reports every bad value, one line each.
func (c Retry) Validate() error {
	var p envconf.Problems
	p.Between("MSGX_MAX_ATTEMPTS", int64(c.MaxAttempts), 1, 100)
	p.Positive("MSGX_BACKOFF_BASE", c.BackoffBase)
	p.Positive("MSGX_BACKOFF_MAX", c.BackoffMax)
	if c.BackoffBase > c.BackoffMax {
		p.Add("MSGX_BACKOFF_BASE", "must not exceed MSGX_BACKOFF_MAX (%s), got %s", c.BackoffMax, c.BackoffBase)
	}
	return p.Err()
}

// Composition is a binary's whole configuration: a struct that embeds Process, has a field per
// part it runs, and validates them all (one line per bad value, production refusals included).
type Composition interface {
	process() *Process
	Validate() error
}

// d3Overrides are variables someone might set to weaken producer rule D3b. They do not exist:
// setting any of them is refused by every binary, so nobody believes they took effect.
var d3Overrides = []string{
	"MSGX_KAFKA_ACKS", "MSGX_KAFKA_IDEMPOTENT", "MSGX_KAFKA_MAX_OPEN_REQUESTS",
	"MSGX_KAFKA_MAX_IN_FLIGHT", "MSGX_KAFKA_RETRIES",
}

// removed are variables that no longer exist, with what to do instead: setting one is refused,
// so nobody believes it took effect.
var removed = map[string]string{
	"MSGX_KAFKA_INPROCESS":    "the development broker runs as its own process (cmd/devbroker): set MSGX_KAFKA_BROKERS to its address",
	"MSGX_REQUEST_CLOCK_SKEW": "an answer whose DTTM lies before its request's sent time is refused (docs/requests.md): unset it, and keep the AODB's clock synchronised",
}

// Load reads the environment into a new C (the binary's composition) for role and validates
// it. The error is one line per bad value, all of them at once: every value that does not parse
// (validation then sees that variable's default), every variable that does not exist any more,
// and every value validation refuses.
func Load[C any, P interface {
	*C
	Composition
}](role Role) (C, error) {
	var cfg C
	P(&cfg).process().HTTPAddr = DefaultHTTPAddr[role]
	errs := []error{envconf.Process(&cfg)}
	for _, name := range d3Overrides {
		if _, ok := os.LookupEnv(name); ok {
			errs = append(errs, fmt.Errorf("%s: producer rule D3b (idempotent, transactional, acks=all, one request in flight) is not configurable; unset it", name))
		}
	}
	for name, instead := range removed {
		if _, ok := os.LookupEnv(name); ok {
			errs = append(errs, fmt.Errorf("%s: removed; %s", name, instead))
		}
	}
	errs = append(errs, P(&cfg).Validate())
	return cfg, errors.Join(errs...)
}

// Part is one piece of a binary's composition: settings that validate themselves.
type Part interface{ Validate() error }

// Refuser is a Part with settings that production refuses (docs/security.md).
type Refuser interface{ ProductionRefusals() error }

// Check validates the process settings and every part, one line per bad value; in production
// (MSGX_ENV) also what the process and every part that is a Refuser refuse.
func Check(p Process, parts ...Part) error {
	var pr envconf.Problems
	pr.Join(p.Validate())
	for _, part := range parts {
		pr.Join(part.Validate())
	}
	if p.Production() {
		pr.Join(p.ProductionRefusals())
		for _, part := range parts {
			if r, ok := part.(Refuser); ok {
				pr.Join(r.ProductionRefusals())
			}
		}
	}
	return pr.Err()
}

// ValidateOnly is part without its production refusals: a composition that carries settings of
// another binary (msgxctl's, every binary's) checks their values but not what only that binary
// must refuse.
func ValidateOnly(part Part) Part { return validateOnly{part} }

type validateOnly struct{ part Part }

func (v validateOnly) Validate() error { return v.part.Validate() }

// Refusal is a production refusal that spans parts (err, nil when there is none), as a Part.
func Refusal(err error) Part { return refusal{err} }

type refusal struct{ err error }

func (refusal) Validate() error { return nil }

func (r refusal) ProductionRefusals() error { return r.err }
