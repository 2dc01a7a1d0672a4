// Package config reads msgx's settings from the environment (prefix MSGX_) with envconfig.
// It is the only place that knows variable names; components take plain values from it.
// docs/configuration.md documents every variable; a test keeps the two in step.
package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/kelseyhightower/envconfig"
)

// Role names a binary; each role elects its own leader.
type Role string

// The four stages.
const (
	RoleIngest     Role = "ingest"
	RoleProcessor  Role = "processor"
	RoleDispatcher Role = "dispatcher"
	RoleJobs       Role = "jobs"
)

// DefaultHTTPAddr is each role's default MSGX_HTTP_ADDR, distinct so that all four binaries
// can run on one developer machine.
var DefaultHTTPAddr = map[Role]string{
	RoleIngest:     "127.0.0.1:8081",
	RoleProcessor:  "127.0.0.1:8082",
	RoleDispatcher: "127.0.0.1:8083",
	RoleJobs:       "127.0.0.1:8084",
}

// Config is every setting of every binary. Field tags give the variable (MSGX_ + envconfig tag)
// and its default. HTTPAddr has no tag default: it depends on the role (DefaultHTTPAddr).
type Config struct {
	Env      string `envconfig:"ENV" default:"development" desc:"development or production; production refuses stubs, the in-process broker and unsafe combinations"`
	LogLevel string `envconfig:"LOG_LEVEL" default:"info" desc:"zerolog level: debug, info, warn, error"`
	HTTPAddr string `envconfig:"HTTP_ADDR" desc:"listen address for /healthz, /readyz, /metrics (and ingest's API); default per binary: ingest 127.0.0.1:8081, processor :8082, dispatcher :8083, jobs :8084"`

	PGURL      string        `envconfig:"PG_URL" default:"postgres://postgres@127.0.0.1:5432/msgx?sslmode=disable" desc:"PostgreSQL URL (pgx); set search_path in it to use another schema; sslmode etc. for TLS"`
	PGMaxConns int32         `envconfig:"PG_MAX_CONNS" default:"8" desc:"maximum connections in the binary's pool (the leader lock uses one more, dedicated)"`
	MySQLDSN   string        `envconfig:"MYSQL_DSN" default:"root@tcp(127.0.0.1:3306)/msgx_mailbox?parseTime=true" desc:"legacy mailbox DSN (go-sql-driver/mysql format; tls=… for TLS)"`
	DBTimeout  time.Duration `envconfig:"DB_TIMEOUT" default:"10s" desc:"upper bound of one database statement or transaction round trip"`

	LeaderSessionTimeout time.Duration `envconfig:"LEADER_SESSION_TIMEOUT" default:"5s" desc:"the leader's lock session is ended by PostgreSQL when silent this long (a paused or cut-off leader loses the lock); standbys take over after it"`
	LeaderRetry          time.Duration `envconfig:"LEADER_RETRY" default:"1s" desc:"how often a standby tries to take the leader lock; also the leader's lock ping period (capped at a third of the session timeout)"`
	ShutdownTimeout      time.Duration `envconfig:"SHUTDOWN_TIMEOUT" default:"20s" desc:"graceful shutdown bound after SIGTERM (Kubernetes terminationGracePeriodSeconds must be longer)"`

	PollInterval       time.Duration `envconfig:"POLL_INTERVAL" default:"1s" desc:"ingest: wait between mailbox polls when the last poll was not a full batch"`
	ClaimBatch         int           `envconfig:"CLAIM_BATCH" default:"50" desc:"ingest: mailbox rows read per poll"`
	MaxCommitDelay     time.Duration `envconfig:"MAX_COMMIT_DELAY" default:"30s" desc:"ingest: age after which a gap in mailbox ids is judged permanent and skipped"`
	GapReprobeWindow   time.Duration `envconfig:"GAP_REPROBE_WINDOW" default:"24h" desc:"ingest: how long skipped ids are re-probed for a late commit"`
	HTTPMaxBody        int64         `envconfig:"HTTP_MAX_BODY" default:"1048576" desc:"ingest: maximum body of POST /cminmsgs/send in bytes (larger → 413)"`
	HTTPReadTimeout    time.Duration `envconfig:"HTTP_READ_TIMEOUT" default:"10s" desc:"HTTP server read timeout (headers and body)"`
	CompatEntry        bool          `envconfig:"COMPAT_ENTRY" default:"true" desc:"ingest: serve POST /cminmsgs/send (inserts into the mailbox)"`
	Shadow             bool          `envconfig:"SHADOW" default:"false" desc:"shadow mode: write nothing to MySQL (no markers, no compat inserts, no requests)"`
	MailboxProcessedAs string        `envconfig:"MAILBOX_PROCESSED_VALUE" default:"" desc:"when set, also written to CMINMSGS_STATUS with the processed marker (empty: STATUS untouched)"`

	IdentityIncludeDay bool          `envconfig:"IDENTITY_INCLUDE_DAY" default:"false" desc:"processor: add the DTTM date to the identity SNDR|TYPE|STYP|SEQN"`
	IgnoreTypes        []string      `envconfig:"IGNORE_TYPES" default:"LDM,REGN,RSTA,EROR" desc:"processor: message TYPEs marked SKIPPED ignored:<TYPE> after identity binding"`
	MaxAttempts        int           `envconfig:"MAX_ATTEMPTS" default:"5" desc:"processor and dispatcher: attempts before DEAD EXHAUSTED"`
	BackoffBase        time.Duration `envconfig:"BACKOFF_BASE" default:"1s" desc:"processor and dispatcher: first retry delay, doubled per attempt"`
	BackoffMax         time.Duration `envconfig:"BACKOFF_MAX" default:"60s" desc:"processor and dispatcher: retry delay cap"`
	HeadDeadline       time.Duration `envconfig:"HEAD_DEADLINE" default:"10m" desc:"processor: a head message still open this long after its first processing ends DEAD EXHAUSTED"`
	PumpBatch          int           `envconfig:"PUMP_BATCH" default:"500" desc:"processor: consecutive head messages committed in one transaction (a savepoint each; flight messages share one in-memory session); the text loaded per batch is also capped at 8 MiB"`
	AirportTZ          string        `envconfig:"AIRPORT_TZ" default:"Asia/Shanghai" desc:"airport time zone (IANA): operation days and local times"`

	KafkaBrokers        []string      `envconfig:"KAFKA_BROKERS" default:"127.0.0.1:9092" desc:"dispatcher: Kafka bootstrap brokers"`
	KafkaClientID       string        `envconfig:"KAFKA_CLIENT_ID" default:"msgx-dispatcher" desc:"dispatcher: Kafka client id"`
	KafkaVersion        string        `envconfig:"KAFKA_VERSION" default:"2.8.0" desc:"dispatcher: Kafka protocol version (at least 0.11.0 for idempotence)"`
	KafkaTopicChanges   string        `envconfig:"KAFKA_TOPIC_CHANGES" default:"msgx.flight.changes" desc:"dispatcher: topic of KAFKA:msg (one event per flight change)"`
	KafkaTopicState     string        `envconfig:"KAFKA_TOPIC_STATE" default:"msgx.flight.state" desc:"dispatcher: compacted topic of KAFKA:schd (latest full state per FLID)"`
	KafkaDialTimeout    time.Duration `envconfig:"KAFKA_DIAL_TIMEOUT" default:"10s" desc:"dispatcher: broker dial timeout (bounded, D3)"`
	KafkaIOTimeout      time.Duration `envconfig:"KAFKA_IO_TIMEOUT" default:"30s" desc:"dispatcher: broker read and write timeout (bounded, D3)"`
	KafkaProduceTimeout time.Duration `envconfig:"KAFKA_PRODUCE_TIMEOUT" default:"10s" desc:"dispatcher: produce request timeout (bounded, D3)"`
	KafkaTLS            bool          `envconfig:"KAFKA_TLS" default:"false" desc:"dispatcher: connect to brokers with TLS"`
	KafkaTLSCAFile      string        `envconfig:"KAFKA_TLS_CA_FILE" default:"" desc:"dispatcher: PEM CA bundle for broker TLS (empty: system roots)"`
	KafkaSASLMechanism  string        `envconfig:"KAFKA_SASL_MECHANISM" default:"" desc:"dispatcher: empty, PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"`
	KafkaSASLUser       string        `envconfig:"KAFKA_SASL_USER" default:"" desc:"dispatcher: SASL user (from a Secret)"`
	KafkaSASLPassword   string        `envconfig:"KAFKA_SASL_PASSWORD" default:"" desc:"dispatcher: SASL password (from a Secret)"`
	DispatchBatch       int           `envconfig:"DISPATCH_BATCH" default:"500" desc:"dispatcher: KAFKA:msg events sent per batch"`
	SchdFlushPeriod     time.Duration `envconfig:"SCHD_FLUSH_PERIOD" default:"3s" desc:"dispatcher: KAFKA:schd aggregation period"`
	SchdFlushLimit      int           `envconfig:"SCHD_FLUSH_LIMIT" default:"500" desc:"dispatcher: FLIDs per KAFKA:schd flush"`

	BackfillInterval       time.Duration `envconfig:"BACKFILL_INTERVAL" default:"30s" desc:"jobs: backfill sweep period"`
	BackfillBackoffBase    time.Duration `envconfig:"BACKFILL_BACKOFF_BASE" default:"30s" desc:"jobs: first marker retry delay, doubled per attempt"`
	BackfillBackoffMax     time.Duration `envconfig:"BACKFILL_BACKOFF_MAX" default:"15m" desc:"jobs: marker retry delay cap"`
	OverdueBackfill        time.Duration `envconfig:"OVERDUE_BACKFILL" default:"24h" desc:"jobs: a marker still failing this long after enqueued_at is abandoned and listed for reconciliation (R)"`
	HistoryEnabled         bool          `envconfig:"HISTORY_ENABLED" default:"true" desc:"jobs: history store on; when false the history sweep deletes nothing"`
	HistorySweepAt         string        `envconfig:"HISTORY_SWEEP_AT" default:"03:30" desc:"jobs: airport-time HH:MM of the daily history sweep"`
	HistoryRetention       time.Duration `envconfig:"HISTORY_RETENTION" default:"72h" desc:"jobs: flights whose operation day is older than this are purged into flight_history"`
	HistoryQuiet           time.Duration `envconfig:"HISTORY_QUIET" default:"24h" desc:"jobs: an ACTIVE flight is purged only when not updated for this long"`
	EventRetention         time.Duration `envconfig:"EVENT_RETENTION" default:"168h" desc:"jobs: SENT msg_event rows are deleted after this"`
	ProcStateRetention     time.Duration `envconfig:"PROC_STATE_RETENTION" default:"720h" desc:"jobs: terminal proc_state rows with a settled marker move to proc_state_hst after this"`
	RawRetention           time.Duration `envconfig:"RAW_RETENTION" default:"2160h" desc:"jobs: the raw text copy of archived messages is cleared after this"`
	SnapLogRetention       time.Duration `envconfig:"SNAP_LOG_RETENTION" default:"2160h" desc:"jobs: schd_snap_log rows are deleted after this"`
	ReqTrackRetention      time.Duration `envconfig:"REQ_TRACK_RETENTION" default:"720h" desc:"jobs: closed req_track rows are deleted after this"`
	FlightHistoryRetention time.Duration `envconfig:"FLIGHT_HISTORY_RETENTION" default:"8760h" desc:"jobs: flight_history rows are deleted after this"`
	JobBatch               int           `envconfig:"JOB_BATCH" default:"1000" desc:"jobs: rows per job transaction (bounds every run)"`

	RequestTimeout   time.Duration `envconfig:"REQUEST_TIMEOUT" default:"30m" desc:"requests: an RQFD/RQRD without response after this is EXPIRED"`
	RequestSender    string        `envconfig:"REQUEST_SNDR" default:"MSGX" desc:"requests: SNDR written in outbound requests"`
	RequestRoutingID string        `envconfig:"REQUEST_ROUTINGID" default:"AODB" desc:"requests: coutmsgs ROUTINGID"`
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

// Load reads the environment for role and validates it. The error is one line per bad value.
func Load(role Role) (Config, error) {
	return load(role, os.LookupEnv)
}

func load(role Role, lookup func(string) (string, bool)) (Config, error) {
	cfg := Config{HTTPAddr: DefaultHTTPAddr[role]}
	if err := envconfig.Process("MSGX", &cfg); err != nil {
		return Config{}, readable(err)
	}
	var errs []error
	for _, name := range d3Overrides {
		if _, ok := lookup(name); ok {
			errs = append(errs, fmt.Errorf("%s: producer rule D3 (idempotent, acks=all, one request in flight) is not configurable; unset it", name))
		}
	}
	for name, instead := range removed {
		if _, ok := lookup(name); ok {
			errs = append(errs, fmt.Errorf("%s: removed; %s", name, instead))
		}
	}
	if err := cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	return cfg, errors.Join(errs...)
}

// readable turns envconfig's parse error into "MSGX_X: cannot parse "v" as <type>".
func readable(err error) error {
	var pe *envconfig.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: cannot parse %q as %s", pe.KeyName, pe.Value, strings.TrimPrefix(pe.TypeName, "time."))
	}
	return err
}

// Validate checks every value and returns one line per bad one.
func (c Config) Validate() error {
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("MSGX_"+name+": "+format, args...))
	}
	positive := func(name string, d time.Duration) {
		if d <= 0 {
			bad(name, "must be a positive duration, got %s", d)
		}
	}

	switch c.Env {
	case "development", "production":
	default:
		bad("ENV", "must be development or production, got %q", c.Env)
	}
	switch strings.ToLower(c.LogLevel) {
	case "debug", "info", "warn", "error":
	default:
		bad("LOG_LEVEL", "must be debug, info, warn or error, got %q", c.LogLevel)
	}
	if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
		bad("HTTP_ADDR", "must be host:port, got %q", c.HTTPAddr)
	}
	if u, err := url.Parse(c.PGURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		bad("PG_URL", "must be a postgres:// URL")
	}
	if c.PGMaxConns < 2 {
		bad("PG_MAX_CONNS", "must be at least 2, got %d", c.PGMaxConns)
	}
	if c.MySQLDSN == "" {
		bad("MYSQL_DSN", "must be set")
	}
	positive("DB_TIMEOUT", c.DBTimeout)
	positive("LEADER_SESSION_TIMEOUT", c.LeaderSessionTimeout)
	positive("LEADER_RETRY", c.LeaderRetry)
	if c.LeaderSessionTimeout > 0 && c.LeaderSessionTimeout < time.Second {
		bad("LEADER_SESSION_TIMEOUT", "must be at least 1s, got %s", c.LeaderSessionTimeout)
	}
	positive("SHUTDOWN_TIMEOUT", c.ShutdownTimeout)

	positive("POLL_INTERVAL", c.PollInterval)
	if c.ClaimBatch < 1 || c.ClaimBatch > 10000 {
		bad("CLAIM_BATCH", "must be between 1 and 10000, got %d", c.ClaimBatch)
	}
	positive("MAX_COMMIT_DELAY", c.MaxCommitDelay)
	positive("GAP_REPROBE_WINDOW", c.GapReprobeWindow)
	if c.HTTPMaxBody < 1024 || c.HTTPMaxBody > 16<<20 {
		bad("HTTP_MAX_BODY", "must be between 1024 and 16777216 bytes (MEDIUMTEXT), got %d", c.HTTPMaxBody)
	}
	positive("HTTP_READ_TIMEOUT", c.HTTPReadTimeout)
	if len(c.MailboxProcessedAs) > 20 {
		bad("MAILBOX_PROCESSED_VALUE", "must fit CMINMSGS_STATUS varchar(20), got %d characters", len(c.MailboxProcessedAs))
	}

	if c.MaxAttempts < 1 || c.MaxAttempts > 100 {
		bad("MAX_ATTEMPTS", "must be between 1 and 100, got %d", c.MaxAttempts)
	}
	positive("BACKOFF_BASE", c.BackoffBase)
	positive("BACKOFF_MAX", c.BackoffMax)
	if c.BackoffBase > c.BackoffMax {
		bad("BACKOFF_BASE", "must not exceed MSGX_BACKOFF_MAX (%s), got %s", c.BackoffMax, c.BackoffBase)
	}
	positive("HEAD_DEADLINE", c.HeadDeadline)
	if c.PumpBatch < 1 || c.PumpBatch > 10000 {
		bad("PUMP_BATCH", "must be between 1 and 10000, got %d", c.PumpBatch)
	}
	if _, err := time.LoadLocation(c.AirportTZ); err != nil || c.AirportTZ == "" {
		bad("AIRPORT_TZ", "must be an IANA time zone, got %q", c.AirportTZ)
	}
	for _, t := range c.IgnoreTypes {
		if t == "" || strings.TrimSpace(t) != t {
			bad("IGNORE_TYPES", "must be a comma-separated list of TYPEs without blanks, got %q", strings.Join(c.IgnoreTypes, ","))
			break
		}
	}

	if len(c.KafkaBrokers) == 0 {
		bad("KAFKA_BROKERS", "must list at least one broker")
	}
	if c.KafkaTopicChanges == "" || c.KafkaTopicState == "" || c.KafkaTopicChanges == c.KafkaTopicState {
		bad("KAFKA_TOPIC_CHANGES", "and MSGX_KAFKA_TOPIC_STATE must be set and differ")
	}
	for name, d := range map[string]time.Duration{"KAFKA_DIAL_TIMEOUT": c.KafkaDialTimeout, "KAFKA_IO_TIMEOUT": c.KafkaIOTimeout, "KAFKA_PRODUCE_TIMEOUT": c.KafkaProduceTimeout} {
		if d <= 0 || d > 5*time.Minute {
			bad(name, "must be between 1ms and 5m (D3: bounded), got %s", d)
		}
	}
	switch c.KafkaSASLMechanism {
	case "", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
	default:
		bad("KAFKA_SASL_MECHANISM", "must be empty, PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, got %q", c.KafkaSASLMechanism)
	}
	if c.KafkaSASLMechanism != "" && c.KafkaSASLUser == "" {
		bad("KAFKA_SASL_USER", "must be set when MSGX_KAFKA_SASL_MECHANISM is %s", c.KafkaSASLMechanism)
	}
	if c.DispatchBatch < 1 || c.DispatchBatch > 10000 {
		bad("DISPATCH_BATCH", "must be between 1 and 10000, got %d", c.DispatchBatch)
	}
	positive("SCHD_FLUSH_PERIOD", c.SchdFlushPeriod)
	if c.SchdFlushLimit < 1 || c.SchdFlushLimit > 10000 {
		bad("SCHD_FLUSH_LIMIT", "must be between 1 and 10000, got %d", c.SchdFlushLimit)
	}

	positive("BACKFILL_INTERVAL", c.BackfillInterval)
	positive("BACKFILL_BACKOFF_BASE", c.BackfillBackoffBase)
	positive("BACKFILL_BACKOFF_MAX", c.BackfillBackoffMax)
	positive("OVERDUE_BACKFILL", c.OverdueBackfill)
	if _, err := time.Parse("15:04", c.HistorySweepAt); err != nil {
		bad("HISTORY_SWEEP_AT", "must be HH:MM (airport time), got %q", c.HistorySweepAt)
	}
	positive("HISTORY_RETENTION", c.HistoryRetention)
	positive("HISTORY_QUIET", c.HistoryQuiet)
	positive("EVENT_RETENTION", c.EventRetention)
	positive("PROC_STATE_RETENTION", c.ProcStateRetention)
	positive("RAW_RETENTION", c.RawRetention)
	positive("SNAP_LOG_RETENTION", c.SnapLogRetention)
	positive("REQ_TRACK_RETENTION", c.ReqTrackRetention)
	positive("FLIGHT_HISTORY_RETENTION", c.FlightHistoryRetention)
	if c.JobBatch < 1 || c.JobBatch > 100000 {
		bad("JOB_BATCH", "must be between 1 and 100000, got %d", c.JobBatch)
	}
	positive("REQUEST_TIMEOUT", c.RequestTimeout)
	if c.RequestSender == "" || len(c.RequestSender) > 4 {
		bad("REQUEST_SNDR", "must be 1 to 4 characters, got %q", c.RequestSender)
	}
	if c.RequestRoutingID == "" || len(c.RequestRoutingID) > 23 {
		bad("REQUEST_ROUTINGID", "must be 1 to 23 characters (coutmsgs ROUTINGID), got %q", c.RequestRoutingID)
	}

	if c.Env == "production" {
		if c.Shadow && c.CompatEntry {
			bad("COMPAT_ENTRY", "must be false in production shadow mode (MSGX_SHADOW=true writes nothing to MySQL)")
		}
	}
	return errors.Join(errs...)
}

// Location returns the airport time zone (validated by Load).
func (c Config) Location() *time.Location {
	loc, err := time.LoadLocation(c.AirportTZ)
	if err != nil {
		return time.UTC
	}
	return loc
}
