package mailbox

import (
	"slices"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/msgx/msgx/pkg/envconf"
	"github.com/msgx/msgx/pkg/settings"
)

// Config are the settings of the legacy MySQL mailbox, shared by the stages that use it (ingest,
// processor, jobs), with shadow mode.
type Config struct {
	MySQLDSN       string `envconfig:"MSGX_MYSQL_DSN" default:"root@tcp(127.0.0.1:3306)/msgx_mailbox?parseTime=true" desc:"legacy mailbox DSN (go-sql-driver/mysql format); TLS: tls=true (system roots) or tls=msgx-ca (MSGX_MYSQL_TLS_CA_FILE); production requires one of them"`
	MySQLTLSCAFile string `envconfig:"MSGX_MYSQL_TLS_CA_FILE" default:"" desc:"PEM CA bundle that verifies the mailbox server for DSNs with tls=msgx-ca"`
	settings.ShadowMode
	ProcessedValue string `envconfig:"MSGX_MAILBOX_PROCESSED_VALUE" default:"" desc:"when set, also written to CMINMSGS_STATUS with the processed marker (empty: STATUS untouched); production requires one of MSGX_MAILBOX_PROCESSED_VALUES_ALLOWED"`
	// ProcessedValuesAllowed are the STATUS values the AODB team agreed msgx may write (Q7): other
	// systems filter on CMINMSGS_STATUS, so production refuses any other processed value.
	ProcessedValuesAllowed []string `envconfig:"MSGX_MAILBOX_PROCESSED_VALUES_ALLOWED" default:"" desc:"comma-separated CMINMSGS_STATUS values the AODB team agreed msgx may write as MSGX_MAILBOX_PROCESSED_VALUE; production refuses any other non-empty value (empty list: none agreed)"`
	// PollInterval is ingest's poll period; the processor's fallback poll follows it.
	PollInterval time.Duration `envconfig:"MSGX_POLL_INTERVAL" default:"50ms" desc:"ingest: wait between mailbox polls when the last poll was not a full batch (the processor's fallback poll is never slower)"`
}

// Validate reports every bad value, one line each.
func (c Config) Validate() error {
	var p envconf.Problems
	if c.MySQLDSN == "" {
		p.Add("MSGX_MYSQL_DSN", "must be set")
	}
	if len(c.ProcessedValue) > 20 {
		p.Add("MSGX_MAILBOX_PROCESSED_VALUE", "must fit CMINMSGS_STATUS varchar(20), got %d characters", len(c.ProcessedValue))
	}
	p.Positive("MSGX_POLL_INTERVAL", c.PollInterval)
	return p.Err()
}

// ProductionRefusals are the mailbox settings production refuses: a connection that is
// plaintext or does not verify the server (docs/security.md), and a processed value the AODB
// team did not agree to (Q7; the empty value leaves STATUS untouched and is always allowed).
func (c Config) ProductionRefusals() error {
	var p envconf.Problems
	if why := VerifiedTLS(c.MySQLDSN, c.MySQLTLSCAFile); why != "" {
		p.Add("MSGX_MYSQL_DSN", "production requires TLS with a verified server: %s", why)
	}
	if c.ProcessedValue != "" && !slices.Contains(c.ProcessedValuesAllowed, c.ProcessedValue) {
		allowed := strings.Join(c.ProcessedValuesAllowed, ",")
		if allowed == "" {
			allowed = "none"
		}
		p.Add("MSGX_MAILBOX_PROCESSED_VALUE", "production requires a value the AODB team agreed to (MSGX_MAILBOX_PROCESSED_VALUES_ALLOWED: %s), got %q", allowed, c.ProcessedValue)
	}
	return p.Err()
}

// Redact hides the password of MSGX_MYSQL_DSN in the start-up log's values.
func (c Config) Redact(values map[string]string) {
	dsn := values["MSGX_MYSQL_DSN"]
	if dsn == "" {
		return
	}
	dc, err := mysql.ParseDSN(dsn)
	if err != nil {
		values["MSGX_MYSQL_DSN"] = "[redacted]"
		return
	}
	if dc.Passwd != "" {
		dc.Passwd = "[redacted]"
	}
	values["MSGX_MYSQL_DSN"] = dc.FormatDSN()
}
