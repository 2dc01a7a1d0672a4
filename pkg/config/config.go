// Package config composes msgx's settings: it reads the environment (prefix MSGX_) into one
// Config made of each component's own configuration, and validates it. A stage's settings are
// declared once, in the stage's package, as tagged fields of its Config (variable, default,
// description: pkg/envconf, parsed by envconfig): ingest.Config and ingest.CompatConfig, processor.Config,
// kafka.Config, dispatch.Config, jobs.Config, leader.Config. The settings every process shares
// (environment, HTTP server, databases, airport time zone, retry policy) are declared here.
// Adding a setting is one tagged field where it is used, plus `go test ./pkg/config -update`
// to regenerate docs/configuration.md (a test keeps the two in step).
package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/msgx/msgx/pkg/console"
	"github.com/msgx/msgx/pkg/dispatch"
	"github.com/msgx/msgx/pkg/envconf"
	"github.com/msgx/msgx/pkg/httpauth"
	"github.com/msgx/msgx/pkg/ingest"
	"github.com/msgx/msgx/pkg/jobs"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/mailbox"
	"github.com/msgx/msgx/pkg/processor"
	"github.com/msgx/msgx/pkg/request"
)

// Role names a binary; each role elects its own leader.
type Role string

// The four stages.
const (
	RoleIngest     Role = "ingest"
	RoleProcessor  Role = "processor"
	RoleDispatcher Role = "dispatcher"
	RoleJobs       Role = "jobs"
	// RoleConsole is the operator console (cmd/console): it elects no leader.
	RoleConsole Role = "console"
)

// DefaultHTTPAddr is each role's default MSGX_HTTP_ADDR, distinct so that all four binaries
// can run on one developer machine.
var DefaultHTTPAddr = map[Role]string{
	RoleIngest:     "127.0.0.1:8081",
	RoleProcessor:  "127.0.0.1:8082",
	RoleDispatcher: "127.0.0.1:8083",
	RoleJobs:       "127.0.0.1:8084",
	RoleConsole:    "127.0.0.1:8085",
}

// Config is every setting of every binary (and msgxctl): each binary reads and validates all of
// them, so one bad value in a shared ConfigMap stops every binary alike. The order of the fields
// is the order of docs/configuration.md.
type Config struct {
	Process
	Leader leader.Config
	Mailbox
	Retry

	Ingest    ingest.Config
	Compat    ingest.CompatConfig
	API       API
	Processor processor.Config
	Kafka     kafka.Config
	Dispatch  dispatch.Config
	Jobs      jobs.Config
	Requests  request.Config
	Triggers  request.TriggerConfig
	Console   console.Config
}

// Process are the settings of every process: environment, logs, HTTP server, PostgreSQL, the
// airport's time zone.
type Process struct {
	Env      string `envconfig:"MSGX_ENV" default:"development" desc:"development or production; production refuses unsafe combinations"`
	LogLevel string `envconfig:"MSGX_LOG_LEVEL" default:"info" desc:"zerolog level: debug, info, warn, error"`
	// HTTPAddr's default depends on the role (DefaultHTTPAddr).
	HTTPAddr        string        `envconfig:"MSGX_HTTP_ADDR" doc:"per binary" desc:"listen address for /healthz, /readyz, /metrics (ingest's API listens on MSGX_API_ADDR, the console's pages on MSGX_CONSOLE_ADDR); default per binary: ingest 127.0.0.1:8081, processor :8082, dispatcher :8083, jobs :8084, console :8085"`
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

// API are the settings of ingest's API listener (compat entry and read API): its address, who may
// call it (pkg/httpauth) and the read API's own PostgreSQL pool, so that reads never take the
// connections of ingest's poll loop.
type API struct {
	Addr             string          `envconfig:"MSGX_API_ADDR" default:"127.0.0.1:8091" desc:"ingest: listen address of the authenticated API (POST /cminmsgs/send, GET /flights/{flid}, GET /all/flights); the ops endpoints stay on MSGX_HTTP_ADDR"`
	Access           httpauth.Config // tokens, rate and concurrency limits
	PGMaxConns       int32           `envconfig:"MSGX_API_PG_MAX_CONNS" default:"4" desc:"ingest: connections of the API's own PostgreSQL pool (read API and compat enqueue)"`
	StatementTimeout time.Duration   `envconfig:"MSGX_API_STATEMENT_TIMEOUT" default:"5s" desc:"ingest: PostgreSQL statement_timeout of the API's pool"`
}

// Validate reports every bad value, one line each.
func (c API) Validate() error {
	var p envconf.Problems
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		p.Add("MSGX_API_ADDR", "must be host:port, got %q", c.Addr)
	}
	p.Join(c.Access.Validate())
	p.Between("MSGX_API_PG_MAX_CONNS", int64(c.PGMaxConns), 1, 100)
	p.Positive("MSGX_API_STATEMENT_TIMEOUT", c.StatementTimeout)
	return p.Err()
}

// Mailbox are the settings of the legacy MySQL mailbox, shared by ingest, processor and jobs.
type Mailbox struct {
	MySQLDSN           string `envconfig:"MSGX_MYSQL_DSN" default:"root@tcp(127.0.0.1:3306)/msgx_mailbox?parseTime=true" desc:"legacy mailbox DSN (go-sql-driver/mysql format); TLS: tls=true (system roots) or tls=msgx-ca (MSGX_MYSQL_TLS_CA_FILE); production requires one of them"`
	MySQLTLSCAFile     string `envconfig:"MSGX_MYSQL_TLS_CA_FILE" default:"" desc:"PEM CA bundle that verifies the mailbox server for DSNs with tls=msgx-ca"`
	Shadow             bool   `envconfig:"MSGX_SHADOW" default:"false" desc:"shadow mode: write nothing to MySQL (no markers, no compat inserts, no requests)"`
	MailboxProcessedAs string `envconfig:"MSGX_MAILBOX_PROCESSED_VALUE" default:"" desc:"when set, also written to CMINMSGS_STATUS with the processed marker (empty: STATUS untouched)"`
}

// Retry is the retry policy of processing and of delivery (processor and dispatcher).
type Retry struct {
	MaxAttempts int           `envconfig:"MSGX_MAX_ATTEMPTS" default:"5" desc:"processor and dispatcher: attempts before DEAD EXHAUSTED"`
	BackoffBase time.Duration `envconfig:"MSGX_BACKOFF_BASE" default:"1s" desc:"processor and dispatcher: first retry delay, doubled per attempt"`
	BackoffMax  time.Duration `envconfig:"MSGX_BACKOFF_MAX" default:"60s" desc:"processor and dispatcher: retry delay cap"`
}

// d3Overrides are variables someone might set to weaken producer rule D3. They do not exist:
// setting any of them is refused, so nobody believes they took effect.
var d3Overrides = []string{
	"MSGX_KAFKA_ACKS", "MSGX_KAFKA_IDEMPOTENT", "MSGX_KAFKA_MAX_OPEN_REQUESTS",
	"MSGX_KAFKA_MAX_IN_FLIGHT", "MSGX_KAFKA_RETRIES",
}

// removed are variables that no longer exist, with what to do instead: setting one is refused,
// so nobody believes it took effect.
var removed = map[string]string{
	"MSGX_KAFKA_INPROCESS": "the development broker runs as its own process (cmd/devbroker): set MSGX_KAFKA_BROKERS to its address",
}

// Load reads the environment for role (envconfig, pkg/envconf) and validates it. The error is one
// line per bad value, all of them at once: every value that does not parse (validation then sees
// that variable's default) and every one that is refused.
func Load(role Role) (Config, error) {
	cfg := Config{Process: Process{HTTPAddr: DefaultHTTPAddr[role]}}
	parseErr := envconf.Process(&cfg)
	errs := []error{parseErr}
	for _, name := range d3Overrides {
		if _, ok := os.LookupEnv(name); ok {
			errs = append(errs, fmt.Errorf("%s: producer rule D3 (idempotent, acks=all, one request in flight) is not configurable; unset it", name))
		}
	}
	for name, instead := range removed {
		if _, ok := os.LookupEnv(name); ok {
			errs = append(errs, fmt.Errorf("%s: removed; %s", name, instead))
		}
	}
	if err := cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	if role == RoleIngest && cfg.Env == "production" && len(cfg.API.Access.Tokens) == 0 {
		errs = append(errs, errors.New("MSGX_API_TOKENS: production ingest requires API tokens (msgxctl token new); without them every API request is refused"))
	}
	return cfg, errors.Join(errs...)
}

// redacted is what the start-up log shows of a secret.
const redacted = "[redacted]"

// Redacted returns every variable's effective value by name, for the start-up log: passwords in
// MSGX_PG_URL and MSGX_MYSQL_DSN, and every password, token and key variable, are redacted.
func (c Config) Redacted() map[string]string {
	vals := envconf.Values(c)
	for name, v := range vals {
		switch {
		case v == "":
		case name == "MSGX_PG_URL":
			vals[name] = redactURL(v)
		case name == "MSGX_MYSQL_DSN":
			vals[name] = redactDSN(v)
		case strings.Contains(name, "PASSWORD"), strings.Contains(name, "TOKEN"), strings.HasSuffix(name, "_KEY"), strings.Contains(name, "SECRET"):
			vals[name] = redacted
		}
	}
	return vals
}

// redactURL hides the password of a PostgreSQL URL, in its user info or its query.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return redacted // cannot tell where the password is
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", redacted)
		u.RawQuery = q.Encode()
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), redacted)
	}
	return u.String()
}

// redactDSN hides the password of a go-sql-driver/mysql DSN.
func redactDSN(s string) string {
	dc, err := mysql.ParseDSN(s)
	if err != nil {
		return redacted
	}
	if dc.Passwd != "" {
		dc.Passwd = redacted
	}
	return dc.FormatDSN()
}

// Validate checks every value and returns one line per bad one.
func (c Config) Validate() error {
	var p envconf.Problems
	p.Join(c.Process.Validate())
	p.Join(c.Leader.Validate())
	p.Join(c.Mailbox.Validate())
	p.Join(c.Retry.Validate())
	p.Join(c.Ingest.Validate())
	p.Join(c.Compat.Validate())
	p.Join(c.API.Validate())
	p.Join(c.Processor.Validate())
	p.Join(c.Kafka.Validate())
	p.Join(c.Dispatch.Validate())
	jc := c.Jobs // its own settings; derived values follow from settings checked above
	jc.Location = c.Location()
	p.Join(jc.Validate())
	p.Join(c.RequestConfig().Validate())
	p.Join(c.TriggerConfig().Validate())
	p.Join(c.Console.Validate())
	if c.Env == "production" {
		p.Join(c.productionRefusals())
	}
	return p.Err()
}

// productionRefusals are the combinations MSGX_ENV=production refuses, one line each: shadow
// mode with the compat entry, and every connection that is plaintext or does not verify its
// server (docs/security.md).
func (c Config) productionRefusals() error {
	var p envconf.Problems
	if c.Shadow && c.Compat.Enabled {
		p.Add("MSGX_COMPAT_ENTRY", "must be false in production shadow mode (MSGX_SHADOW=true writes nothing to MySQL)")
	}
	if u, err := url.Parse(c.PGURL); err == nil {
		// verify-ca is refused too: it accepts any certificate of the CA, whatever the host.
		if mode := u.Query().Get("sslmode"); mode != "verify-full" {
			if mode == "" {
				mode = "unset (pgx: prefer, unverified)"
			}
			p.Add("MSGX_PG_URL", "production requires sslmode=verify-full (TLS with the server's name verified), got sslmode %s", mode)
		}
	}
	if why := mailbox.VerifiedTLS(c.MySQLDSN, c.MySQLTLSCAFile); why != "" {
		p.Add("MSGX_MYSQL_DSN", "production requires TLS with a verified server: %s", why)
	}
	if c.Dispatch.HoldFile != "" {
		p.Add("MSGX_DEV_HOLD_SEND", "a test hook; production refuses it")
	}
	switch {
	case !c.Kafka.TLS && strings.EqualFold(c.Kafka.SASLMechanism, "PLAIN"):
		p.Add("MSGX_KAFKA_SASL_MECHANISM", "PLAIN without MSGX_KAFKA_TLS=true sends the Kafka password in clear; production refuses it")
	case !c.Kafka.TLS:
		p.Add("MSGX_KAFKA_TLS", "production requires TLS to the Kafka brokers (MSGX_KAFKA_TLS=true)")
	}
	return p.Err()
}

// Validate reports every bad value, one line each.
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

// Location returns the airport time zone (validated by Load).
func (c Process) Location() *time.Location {
	loc, err := time.LoadLocation(c.AirportTZ)
	if err != nil {
		return time.UTC
	}
	return loc
}

// Validate reports every bad value, one line each.
func (c Mailbox) Validate() error {
	var p envconf.Problems
	if c.MySQLDSN == "" {
		p.Add("MSGX_MYSQL_DSN", "must be set")
	}
	if len(c.MailboxProcessedAs) > 20 {
		p.Add("MSGX_MAILBOX_PROCESSED_VALUE", "must fit CMINMSGS_STATUS varchar(20), got %d characters", len(c.MailboxProcessedAs))
	}
	return p.Err()
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
