package chaos

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/msgx/msgx/pkg/dev/apachekafka"
	"github.com/msgx/msgx/pkg/dev/broker"
	"github.com/msgx/msgx/pkg/dev/devca"
	"github.com/msgx/msgx/pkg/dev/privdb"
	"github.com/msgx/msgx/pkg/dev/stack"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/mailbox"
	"github.com/msgx/msgx/pkg/roles"
)

// The suite runs msgx the way production does (docs/security.md): each binary as its own
// least-privilege role (pkg/roles, applied as `msgxctl roles apply --mysql` applies them), over
// TLS verified against the run's CA (PostgreSQL sslmode=verify-full with sslrootcert, the
// mailbox tls=msgx-ca with MSGX_MYSQL_TLS_CA_FILE, Kafka TLS with SASL/SCRAM-SHA-512), and with
// MSGX_ENV=production, so that every production refusal (settings.Check) applies to the settings
// the scenarios use. The servers accept nothing else: PostgreSQL rejects plaintext in pg_hba,
// MariaDB requires secure transport, the broker speaks only TLS and SCRAM; after a restart too.
// The harness inspects the databases as their administrator, over TLS as well.

// Production is the configuration column of a scenario that ran the production way on broker
// (the development broker, or an Apache Kafka cluster: RealKafka.Name).
func Production(broker string) string {
	return "roles + TLS (PG verify-full, MySQL tls=msgx-ca) + Kafka TLS/SCRAM-SHA-512 on " + broker + ", MSGX_ENV=production"
}

// onDevBroker names the development broker (cmd/devbroker) in the Production column.
const onDevBroker = "the dev broker"

// rolePrefix makes production's role and user names (msgx_ingest, …): the servers are the run's own.
const rolePrefix = roles.DefaultPrefix

// kafkaUser is the SCRAM-SHA-512 user of the run's brokers.
const kafkaUser = "msgx"

// caValidity outlasts a whole suite run on a loaded machine.
const caValidity = 24 * time.Hour

// productionShape is what a suite run's servers and brokers share: the CA that signed their
// certificate and the secrets of their administrators and of the Kafka user.
type productionShape struct {
	dir       string // the CA's files; removed by close
	ca        *devca.CA
	files     *privdb.TLS
	pgPW      string
	myPW      string
	kafkaPass string
}

// newProductionShape makes the run's CA and secrets, and registers the harness's own mailbox TLS
// configuration (a name of its own: a test process may hold another CA under msgx-ca).
func newProductionShape() (*productionShape, error) {
	dir, err := os.MkdirTemp("", "msgx-chaos-ca-")
	if err != nil {
		return nil, err
	}
	ca, err := devca.New(dir, caValidity)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("make the run's CA: %w", err)
	}
	name := "msgx-chaos-" + filepath.Base(dir)
	if err := mailbox.RegisterTLSCA(name, ca.CAFile); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return &productionShape{dir: dir, ca: ca,
		files: &privdb.TLS{CAFile: ca.CAFile, CertFile: ca.CertFile, KeyFile: ca.KeyFile, MySQLConfig: name},
		pgPW:  secret(), myPW: secret(), kafkaPass: secret()}, nil
}

func (p *productionShape) close() error { return os.RemoveAll(p.dir) }

// pgOptions and myOptions make TLS-only servers with a password-protected administrator.
func (p *productionShape) pgOptions() privdb.Options {
	return privdb.Options{TLS: p.files, Password: p.pgPW}
}

func (p *productionShape) myOptions() privdb.Options {
	return privdb.Options{TLS: p.files, Password: p.myPW}
}

// env are the production settings of every binary beyond its own logins.
func (p *productionShape) env() []string {
	return []string{"MSGX_ENV=production", "MSGX_MYSQL_TLS_CA_FILE=" + p.ca.CAFile}
}

// kafkaAuth is the development broker's certificate (signed by the run's CA) and SCRAM user; on
// an external cluster only the client side counts.
func (p *productionShape) kafkaAuth() *stack.KafkaAuth {
	return &stack.KafkaAuth{CertFile: p.ca.CertFile, KeyFile: p.ca.KeyFile, CAFile: p.ca.CAFile, User: kafkaUser, Password: p.kafkaPass}
}

// kafkaConfig is the adapter's configuration for brokers of the run: TLS verified against the
// run's CA, SCRAM-SHA-512.
func (p *productionShape) kafkaConfig(brokers []string) kafka.Config {
	return kafka.Config{Brokers: brokers, TLS: true, TLSCAFile: p.ca.CAFile,
		SASLMechanism: broker.SCRAMMechanism, SASLUser: kafkaUser, SASLPassword: p.kafkaPass}
}

// apacheKafka adds the client listener's TLS and SCRAM-SHA-512 user to an Apache Kafka cluster's options.
func (p *productionShape) apacheKafka(o apachekafka.Options) apachekafka.Options {
	o.TLS = &apachekafka.TLS{CertFile: p.ca.CertFile, KeyFile: p.ca.KeyFile, Client: p.ca.ClientTLS()}
	o.SCRAM = &apachekafka.SCRAM{Mechanism: broker.SCRAMMechanism, User: kafkaUser, Password: p.kafkaPass}
	return o
}

// roleEnv is each binary's own logins (stack.Access.RoleEnv), its mailbox DSN naming
// tls=msgx-ca: the configuration a binary registers from MSGX_MYSQL_TLS_CA_FILE.
func roleEnv(a stack.Access) (map[string][]string, error) {
	env := a.RoleEnv()
	for b, kvs := range env {
		for i, kv := range kvs {
			dsn, ok := strings.CutPrefix(kv, "MSGX_MYSQL_DSN=")
			if !ok {
				continue
			}
			cfg, err := mysql.ParseDSN(dsn)
			if err != nil {
				return nil, fmt.Errorf("%s's mailbox DSN: %w", b, err)
			}
			cfg.TLSConfig, cfg.TLS = mailbox.TLSConfigCA, nil
			kvs[i] = "MSGX_MYSQL_DSN=" + cfg.FormatDSN()
		}
	}
	return env, nil
}

// sessionsSQL lists the binaries' PostgreSQL sessions (application_name msgx-<binary>[-leader|-api])
// with their role and whether they are encrypted.
const sessionsSQL = `SELECT a.application_name, a.usename::text, coalesce(s.ssl, false)
FROM pg_stat_activity a LEFT JOIN pg_stat_ssl s USING (pid)
WHERE a.datname = current_database() AND a.application_name LIKE 'msgx-%'`

// checkSessions is the evidence of the configuration column: every PostgreSQL session of a
// binary is its own role's and encrypted, and every mailbox session but the harness's is a
// binary's own user (the mailbox server takes TLS only).
func checkSessions(ctx context.Context, r *Run) error {
	rows, err := r.Pool.Query(ctx, sessionsSQL)
	if err != nil {
		return fmt.Errorf("list the binaries' sessions: %w", err)
	}
	defer rows.Close()
	var problems []string
	n := 0
	for rows.Next() {
		var app, user string
		var ssl bool
		if err := rows.Scan(&app, &user, &ssl); err != nil {
			return err
		}
		n++
		bin := strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(app, "msgx-"), "-leader"), "-api")
		if want := roles.Name(rolePrefix, roles.Role(bin)); user != want || !ssl {
			problems = append(problems, fmt.Sprintf("%s connects as %s (want %s), TLS %t", app, user, want, ssl))
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if n == 0 {
		problems = append(problems, "no binary has a PostgreSQL session")
	}
	users, err := mailboxUsers(ctx, r)
	if err != nil {
		return err
	}
	var own []string
	for _, b := range roles.MySQLRoles {
		own = append(own, roles.Name(rolePrefix, b))
	}
	for _, u := range users {
		if u != privdb.AdminUser && !slices.Contains(own, u) {
			problems = append(problems, "a mailbox session as "+u)
		}
	}
	if ingest := roles.Name(rolePrefix, roles.Ingest); !slices.Contains(users, ingest) {
		problems = append(problems, "no mailbox session as "+ingest+" (ingest polls as its own user)")
	}
	if len(problems) > 0 {
		return errors.New("not the production configuration: " + strings.Join(problems, "; "))
	}
	return nil
}

// mailboxUsers are the users of the mailbox server's client sessions.
func mailboxUsers(ctx context.Context, r *Run) ([]string, error) {
	rows, err := r.Mailbox.QueryContext(ctx, `SELECT DISTINCT USER FROM information_schema.PROCESSLIST WHERE USER NOT IN ('system user', 'event_scheduler', 'unauthenticated user')`)
	if err != nil {
		return nil, fmt.Errorf("list the mailbox sessions: %w", err)
	}
	defer rows.Close()
	var users []string
	for rows.Next() {
		var u string
		if err := rows.Scan(&u); err != nil {
			return nil, err
		}
		users = append(users, u)
	}
	return users, rows.Err()
}

// secret is a random password.
func secret() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
