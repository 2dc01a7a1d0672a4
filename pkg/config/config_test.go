package config

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/settings"

	"github.com/msgx/msgx/pkg/envconf"
	"github.com/msgx/msgx/pkg/jobs"
)

// Tests here set process environment variables, so they do not run in parallel.

func TestDefaultsAreValid(t *testing.T) {
	cfg, err := Load(settings.RoleProcessor)
	require.NoError(t, err)
	require.Equal(t, 5, cfg.MaxAttempts)
	require.Equal(t, 30*time.Second, cfg.Ingest.MaxCommitDelay)
	require.Equal(t, []string{"LDM", "REGN", "RSTA", "EROR"}, cfg.Processor.IgnoreTypes)
	require.Equal(t, "127.0.0.1:8082", cfg.HTTPAddr)
	require.Equal(t, "Asia/Shanghai", cfg.Location().String())
}

func TestBadValuesNameTheVariable(t *testing.T) {
	cases := []struct {
		env, value, want string
	}{
		{"MSGX_MAX_ATTEMPTS", "0", "MSGX_MAX_ATTEMPTS: must be between 1 and 100, got 0"},
		{"MSGX_POLL_INTERVAL", "soon", `MSGX_POLL_INTERVAL: cannot parse "soon" as Duration`},
		{"MSGX_CLAIM_BATCH", "many", `MSGX_CLAIM_BATCH: cannot parse "many" as int`},
		{"MSGX_AIRPORT_TZ", "Mars/Olympus", `MSGX_AIRPORT_TZ: must be an IANA time zone, got "Mars/Olympus"`},
		{"MSGX_HISTORY_SWEEP_AT", "25:99", `MSGX_HISTORY_SWEEP_AT: must be HH:MM (airport time), got "25:99"`},
		{"MSGX_KAFKA_ACKS", "1", "MSGX_KAFKA_ACKS: producer rule D3b"},
		{"MSGX_KAFKA_PRODUCE_TIMEOUT", "0s", "MSGX_KAFKA_PRODUCE_TIMEOUT: must be between 1ms and 5m"},
		{"MSGX_ENV", "staging", `MSGX_ENV: must be development or production, got "staging"`},
	}
	for _, c := range cases {
		t.Run(c.env, func(t *testing.T) {
			t.Setenv(c.env, c.value)
			_, err := Load(settings.RoleIngest)
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want)
			require.NotContains(t, err.Error(), "\n", "one bad value, one line")
		})
	}
}

// Several bad values, some that do not parse and some that are refused, are all reported at once,
// one line each, in declaration order.
func TestEveryBadValueIsReportedAtOnce(t *testing.T) {
	for k, v := range map[string]string{
		"MSGX_POLL_INTERVAL":    "soon",
		"MSGX_CLAIM_BATCH":      "many",
		"MSGX_PG_MAX_CONNS":     "99999999999",
		"MSGX_SHADOW":           "maybe",
		"MSGX_MAX_ATTEMPTS":     "0",
		"MSGX_AIRPORT_TZ":       "Mars/Olympus",
		"MSGX_HISTORY_SWEEP_AT": "25:99",
		"MSGX_KAFKA_ACKS":       "1",
	} {
		t.Setenv(k, v)
	}
	_, err := Load(settings.RoleIngest)
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	require.Equal(t, []string{
		`MSGX_PG_MAX_CONNS: cannot parse "99999999999" as int32`,
		`MSGX_SHADOW: cannot parse "maybe" as bool`,
		`MSGX_POLL_INTERVAL: cannot parse "soon" as Duration`,
		`MSGX_CLAIM_BATCH: cannot parse "many" as int`,
	}, lines[:4], "values that do not parse come first, in declaration order")
	rest := strings.Join(lines[4:], "\n")
	for _, want := range []string{
		"MSGX_KAFKA_ACKS: producer rule D3b",
		`MSGX_AIRPORT_TZ: must be an IANA time zone, got "Mars/Olympus"`,
		"MSGX_MAX_ATTEMPTS: must be between 1 and 100, got 0",
		`MSGX_HISTORY_SWEEP_AT: must be HH:MM (airport time), got "25:99"`,
	} {
		require.Contains(t, rest, want)
	}
	require.Len(t, lines, 8, "one line per bad variable, nothing about the ones that do not parse (they are validated as their defaults): %s", err)
}

// productionEnv is a production configuration every refusal accepts: PostgreSQL verify-full,
// MySQL tls=true, Kafka TLS with SCRAM, API tokens.
var productionEnv = map[string]string{
	"MSGX_ENV":                  "production",
	"MSGX_PG_URL":               "postgres://msgx_ingest@db.example:5432/msgx?sslmode=verify-full&sslrootcert=/etc/msgx/ca.pem",
	"MSGX_MYSQL_DSN":            "msgx_ingest@tcp(aodb.example:3306)/msgx_mailbox?parseTime=true&tls=true",
	"MSGX_KAFKA_TLS":            "true",
	"MSGX_KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
	"MSGX_KAFKA_SASL_USER":      "msgx",
	"MSGX_KAFKA_SASL_PASSWORD":  "secret",
	"MSGX_API_TOKENS":           "aodb:send:" + strings.Repeat("ab", 32),
}

func setProduction(t *testing.T) {
	for k, v := range productionEnv {
		t.Setenv(k, v)
	}
}

func TestProductionAcceptsTheSafeConfiguration(t *testing.T) {
	setProduction(t)
	for _, role := range []settings.Role{settings.RoleIngest, settings.RoleProcessor, settings.RoleDispatcher, settings.RoleJobs} {
		_, err := Load(role)
		require.NoError(t, err, role)
	}
	t.Setenv("MSGX_MYSQL_DSN", "msgx_ingest@tcp(aodb.example:3306)/msgx_mailbox?tls=msgx-ca")
	t.Setenv("MSGX_MYSQL_TLS_CA_FILE", "/etc/msgx/aodb-ca.pem")
	_, err := Load(settings.RoleIngest)
	require.NoError(t, err, "a private CA for the mailbox")
	t.Setenv("MSGX_API_TOKENS", "")
	_, err = Load(settings.RoleProcessor)
	require.NoError(t, err, "only ingest serves the API")
}

// Each unsafe production setting is refused with its own single line.
func TestProductionRefusals(t *testing.T) {
	cases := []struct {
		name string
		role settings.Role
		env  map[string]string
		want string
	}{
		{"shadow with compat", settings.RoleDispatcher, map[string]string{"MSGX_SHADOW": "true"},
			"MSGX_COMPAT_ENTRY: must be false in production shadow mode"},
		{"pg plaintext", settings.RoleProcessor, map[string]string{"MSGX_PG_URL": "postgres://u@db:5432/msgx?sslmode=disable"},
			"MSGX_PG_URL: production requires sslmode=verify-full (TLS with the server's name verified), got sslmode disable"},
		{"pg sslmode unset", settings.RoleProcessor, map[string]string{"MSGX_PG_URL": "postgres://u@db:5432/msgx"},
			"MSGX_PG_URL: production requires sslmode=verify-full (TLS with the server's name verified), got sslmode unset"},
		{"pg require", settings.RoleJobs, map[string]string{"MSGX_PG_URL": "postgres://u@db:5432/msgx?sslmode=require"},
			"got sslmode require"},
		{"pg verify-ca", settings.RoleJobs, map[string]string{"MSGX_PG_URL": "postgres://u@db:5432/msgx?sslmode=verify-ca"},
			"got sslmode verify-ca"},
		{"mysql plaintext", settings.RoleIngest, map[string]string{"MSGX_MYSQL_DSN": "u@tcp(aodb:3306)/msgx_mailbox?parseTime=true"},
			"MSGX_MYSQL_DSN: production requires TLS with a verified server: no tls= (plaintext)"},
		{"mysql skip-verify", settings.RoleIngest, map[string]string{"MSGX_MYSQL_DSN": "u@tcp(aodb:3306)/msgx_mailbox?tls=skip-verify"},
			"MSGX_MYSQL_DSN: production requires TLS with a verified server: tls=skip-verify does not verify the server"},
		{"mysql preferred", settings.RoleIngest, map[string]string{"MSGX_MYSQL_DSN": "u:p?w)@tcp(aodb:3306)/msgx_mailbox?tls=preferred"},
			"tls=preferred does not verify the server"},
		{"mysql private CA without file", settings.RoleJobs, map[string]string{"MSGX_MYSQL_DSN": "u@tcp(aodb:3306)/msgx_mailbox?tls=msgx-ca"},
			"MSGX_MYSQL_DSN: production requires TLS with a verified server: tls=msgx-ca needs MSGX_MYSQL_TLS_CA_FILE"},
		{"kafka plaintext", settings.RoleDispatcher, map[string]string{"MSGX_KAFKA_TLS": "false"},
			"MSGX_KAFKA_TLS: production requires TLS to the Kafka brokers (MSGX_KAFKA_TLS=true)"},
		{"sasl plain without tls", settings.RoleDispatcher, map[string]string{"MSGX_KAFKA_TLS": "false", "MSGX_KAFKA_SASL_MECHANISM": "PLAIN"},
			"MSGX_KAFKA_SASL_MECHANISM: PLAIN without MSGX_KAFKA_TLS=true sends the Kafka password in clear; production refuses it"},
		{"dispatcher send hold (a test hook)", settings.RoleDispatcher, map[string]string{"MSGX_DEV_HOLD_SEND": "/tmp/hold"},
			"MSGX_DEV_HOLD_SEND: a test hook; production refuses it"},
		{"api without tokens", settings.RoleIngest, map[string]string{"MSGX_API_TOKENS": ""},
			"MSGX_API_TOKENS: production ingest requires API tokens (msgxctl token new)"},
		{"commit delay below its floor", settings.RoleIngest, map[string]string{"MSGX_MAX_COMMIT_DELAY": "5s"},
			"MSGX_MAX_COMMIT_DELAY: production refuses less than 30s (Q2: a gap younger than it may be a commit in flight), got 5s"},
		{"R below its floor", settings.RoleJobs, map[string]string{"MSGX_OVERDUE_BACKFILL": "1h"},
			"MSGX_OVERDUE_BACKFILL: production refuses less than 24h0m0s (Q6: R must outlast a night-long mailbox outage), got 1h0m0s"},
		{"processed value not agreed", settings.RoleProcessor, map[string]string{"MSGX_MAILBOX_PROCESSED_VALUE": "DONE"},
			`MSGX_MAILBOX_PROCESSED_VALUE: production requires a value the AODB team agreed to (MSGX_MAILBOX_PROCESSED_VALUES_ALLOWED: none), got "DONE"`},
		{"processed value outside the allowed ones", settings.RoleJobs, map[string]string{
			"MSGX_MAILBOX_PROCESSED_VALUE": "DONE", "MSGX_MAILBOX_PROCESSED_VALUES_ALLOWED": "PROCESSED,HANDLED"},
			`MSGX_MAILBOX_PROCESSED_VALUE: production requires a value the AODB team agreed to (MSGX_MAILBOX_PROCESSED_VALUES_ALLOWED: PROCESSED,HANDLED), got "DONE"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			setProduction(t)
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			_, err := Load(c.role)
			require.Error(t, err)
			require.Len(t, strings.Split(err.Error(), "\n"), 1, "one line per refusal: %q", err)
			require.Contains(t, err.Error(), c.want)

			t.Setenv("MSGX_ENV", "development")
			_, err = Load(c.role)
			require.NoError(t, err, "development accepts it")
		})
	}
	setProduction(t)
	t.Setenv("MSGX_SHADOW", "true")
	t.Setenv("MSGX_COMPAT_ENTRY", "false")
	_, err := Load(settings.RoleDispatcher)
	require.NoError(t, err, "production shadow mode without the compat entry is allowed")
}

// The floors and the allow-list refuse only what they name: the floors themselves, a longer
// value, an agreed processed value and the empty one (STATUS untouched) are accepted.
func TestProductionAcceptsTheFloorsAndAnAgreedProcessedValue(t *testing.T) {
	setProduction(t)
	t.Setenv("MSGX_MAX_COMMIT_DELAY", "30s")
	t.Setenv("MSGX_OVERDUE_BACKFILL", "24h")
	t.Setenv("MSGX_MAILBOX_PROCESSED_VALUES_ALLOWED", "PROCESSED,HANDLED")
	for _, value := range []string{"", "PROCESSED", "HANDLED"} {
		t.Setenv("MSGX_MAILBOX_PROCESSED_VALUE", value)
		for _, role := range []settings.Role{settings.RoleIngest, settings.RoleProcessor, settings.RoleJobs} {
			_, err := Load(role)
			require.NoError(t, err, "%s with processed value %q", role, value)
		}
	}
	t.Setenv("MSGX_MAX_COMMIT_DELAY", "2m")
	t.Setenv("MSGX_OVERDUE_BACKFILL", "48h")
	_, err := Load(settings.RoleJobs)
	require.NoError(t, err, "longer than the floors")
}

// The dispatcher's in-process broker is gone: its variable is refused in every environment,
// with what to do instead.
func TestRemovedInProcessBrokerIsRefused(t *testing.T) {
	setProduction(t)
	for _, env := range []string{"development", "production"} {
		t.Setenv("MSGX_ENV", env)
		t.Setenv("MSGX_KAFKA_INPROCESS", "true")
		_, err := Load(settings.RoleDispatcher)
		require.EqualError(t, err, "MSGX_KAFKA_INPROCESS: removed; the development broker runs as its own process (cmd/devbroker): set MSGX_KAFKA_BROKERS to its address")
	}
}

// A component's own defaults (what its tests start from) are the documented ones.
func TestComponentDefaultsAreTheDocumentedOnes(t *testing.T) {
	cfg, err := Load(settings.RoleJobs)
	require.NoError(t, err)
	want := jobs.Defaults()
	want.Location = nil // the process's, set by JobsConfig
	require.Equal(t, want, cfg.Jobs)

	jc := cfg.JobsConfig()
	require.Equal(t, "Asia/Shanghai", jc.Location.String())
	require.Equal(t, 2500*time.Millisecond, jc.MarkTimeout, "half the leader session timeout, under MSGX_DB_TIMEOUT")
	require.Equal(t, 100, jc.HistoryBatch)
	require.Equal(t, "03:30", jc.HistorySweepAt.String())
	// Each binary's own derivations are tested beside it (cmd/<binary>/config_test.go).
}

// Every bad value is reported, one line each, whichever component declares it.
func TestEveryBadValueOneLineEach(t *testing.T) {
	for k, v := range map[string]string{
		"MSGX_CLAIM_BATCH": "0", "MSGX_PUMP_BATCH": "0", "MSGX_DISPATCH_BATCH": "0", "MSGX_JOB_BATCH": "0",
		"MSGX_LEADER_SESSION_TIMEOUT": "500ms", "MSGX_HTTP_MAX_BODY": "1", "MSGX_KAFKA_SASL_MECHANISM": "GSSAPI",
		"MSGX_REQUEST_SNDR": "TOOLONG", "MSGX_BACKOFF_BASE": "2m",
	} {
		t.Setenv(k, v)
	}
	_, err := Load(settings.RoleIngest)
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	require.Len(t, lines, 9, "%q", err)
	for _, name := range []string{"MSGX_CLAIM_BATCH", "MSGX_PUMP_BATCH", "MSGX_DISPATCH_BATCH", "MSGX_JOB_BATCH",
		"MSGX_LEADER_SESSION_TIMEOUT", "MSGX_HTTP_MAX_BODY", "MSGX_KAFKA_SASL_MECHANISM", "MSGX_REQUEST_SNDR", "MSGX_BACKOFF_BASE"} {
		require.Contains(t, err.Error(), name+": ")
	}
}

// The start-up log's configuration shows every variable, with the passwords and tokens hidden.
func TestRedacted(t *testing.T) {
	t.Setenv("MSGX_PG_URL", "postgres://msgx:pg-secret@db:5432/msgx?sslmode=disable")
	t.Setenv("MSGX_MYSQL_DSN", "msgx:my-secret@tcp(aodb:3306)/msgx_mailbox?parseTime=true")
	t.Setenv("MSGX_KAFKA_SASL_PASSWORD", "kafka-secret")
	t.Setenv("MSGX_API_TOKENS", "aodb:send:"+strings.Repeat("ab", 32))
	t.Setenv("MSGX_CONSOLE_SESSION_KEY", strings.Repeat("k", 32))
	cfg, err := Load(settings.RoleIngest)
	require.NoError(t, err)
	r := cfg.Redacted()
	require.Len(t, r, len(envconf.Fields(Config{})), "every variable")
	require.Equal(t, "postgres://msgx:%5Bredacted%5D@db:5432/msgx?sslmode=disable", r["MSGX_PG_URL"])
	require.Equal(t, "msgx:[redacted]@tcp(aodb:3306)/msgx_mailbox?parseTime=true", r["MSGX_MYSQL_DSN"])
	require.Equal(t, "[redacted]", r["MSGX_KAFKA_SASL_PASSWORD"])
	require.Equal(t, "[redacted]", r["MSGX_API_TOKENS"])
	require.Equal(t, "[redacted]", r["MSGX_CONSOLE_SESSION_KEY"])
	require.Equal(t, "30s", r["MSGX_MAX_COMMIT_DELAY"])
	require.Equal(t, "127.0.0.1:8081", r["MSGX_HTTP_ADDR"])
	require.Empty(t, r["MSGX_CONSOLE_TOKENS"], "empty stays empty")
	for name, v := range r {
		for _, secret := range []string{"pg-secret", "my-secret", "kafka-secret", "abab", "kkkk"} {
			require.NotContains(t, v, secret, name)
		}
	}
}
