package rehearse_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/msgx/msgx/pkg/dev/apachekafka"
	"github.com/msgx/msgx/pkg/dev/mailboxtest"
	"github.com/msgx/msgx/pkg/dev/tlsenv"
)

// The topics msgx publishes to: the base ConfigMap sets no MSGX_KAFKA_TOPIC_*, so they are the
// settings' defaults (docs/configuration.md).
const (
	topicChanges = "msgx.flight.changes"
	topicState   = "msgx.flight.state"
	topicBeat    = "msgx.heartbeat"
)

// servers are the real servers, set up as production expects them.
type servers struct {
	ca      *tlsenv.CA
	pg      *tlsenv.Postgres
	my      *tlsenv.MariaDB
	mailbox *mailboxtest.DB // the AODB's mailbox database, its tables made by the AODB
	kafka   *apachekafka.Cluster
	// The SCRAM users: the cluster's administrator (a super user, the platform team's), the
	// dispatcher's principal and a read-only consumer's (msgxctl kafka verify, the checks).
	admin, dispatcher, reader apachekafka.SCRAM
}

func startServers(t *testing.T, nodes int, txnPrefix string) *servers {
	t.Helper()
	s := &servers{ca: tlsenv.Authority(t),
		admin:      apachekafka.SCRAM{User: "platform-admin", Password: secret(t)},
		dispatcher: apachekafka.SCRAM{User: "msgx-dispatcher", Password: secret(t)},
		reader:     apachekafka.SCRAM{User: "msgx-reader", Password: secret(t)},
	}
	type started struct {
		c   *apachekafka.Cluster
		err error
	}
	kc := make(chan started, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), apachekafka.StartTimeout)
		defer cancel()
		// The broker's defaults as shipped (auto.create.topics.enable=true among them).
		c, err := apachekafka.Launch(ctx, nodes, apachekafka.Options{
			SCRAM: &s.admin, Users: []apachekafka.SCRAM{s.dispatcher, s.reader}, Authorizer: true,
			TLS: &apachekafka.TLS{CertFile: s.ca.CertFile, KeyFile: s.ca.KeyFile, Client: s.ca.ClientTLS()},
		})
		kc <- started{c, err}
	}()
	s.pg = tlsenv.PG(t)
	s.my = tlsenv.MySQL(t)
	s.mailbox = s.my.NewDB(t)
	k := <-kc
	require.NoError(t, k.err, "start Apache Kafka (%s prepares the machine)", apachekafka.EnsureScript)
	t.Cleanup(func() { require.NoError(t, k.c.Close()) })
	s.kafka = k.c
	s.platformKafka(t, txnPrefix)
	return s
}

// createDatabase is install step 2: the database msgx and its owner msgx_owner, who may create
// roles (msgx-pg-roles logs in as it).
func (s *servers) createDatabase(t *testing.T, ownerPassword string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.pg.AdminURL())
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, fmt.Sprintf(`CREATE ROLE msgx_owner LOGIN CREATEROLE PASSWORD '%s'`, ownerPassword))
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `CREATE DATABASE msgx OWNER msgx_owner`)
	require.NoError(t, err)
}

// mailboxUsers is install step 3: the AODB's DBA runs msgxctl roles apply --mysql with an
// administrator's DSN over verified TLS (MSGX_ENV=production refuses any other) and the users'
// passwords.
func (s *servers) mailboxUsers(t *testing.T, r *rehearsal, passwords map[string]string) {
	t.Helper()
	env := []string{"MSGX_ENV=production", "MSGX_MYSQL_DSN=" + s.my.DSN(s.my.User, s.my.Password, s.mailbox.Name), "MSGX_MYSQL_TLS_CA_FILE=" + s.ca.CAFile}
	for role, pw := range passwords {
		env = append(env, "MSGX_MYSQL_ROLE_PASSWORD_"+role+"="+pw)
	}
	out := run(t, "install step 3 (mailbox users)", []string{r.platformBin + "/msgxctl", "roles", "apply", "--pg=false", "--mysql", "--mysql-host", "127.0.0.1"}, env)
	t.Logf("install step 3: %s", strings.TrimSpace(out))
}

// platformKafka is install step 4: the topics (the state topic compacted) and exactly the ACLs
// of docs/kafka.md for the dispatcher's principal, and Read and Describe on both topics for the
// read-only consumer (kafka.md: "msgxctl kafka verify … needs only Read and Describe").
func (s *servers) platformKafka(t *testing.T, txnPrefix string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, s.kafka.CreateTopic(ctx, topicChanges, 6, nil))
	require.NoError(t, s.kafka.CreateTopic(ctx, topicState, 6, map[string]string{"cleanup.policy": "compact"}))
	require.NoError(t, s.kafka.CreateTopic(ctx, topicBeat, 1, nil))
	acls := docACLs(t, "User:"+s.dispatcher.User, txnPrefix)
	for _, topic := range []string{topicChanges, topicState, topicBeat} {
		for _, op := range []kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationDescribe} {
			acls = append(acls, apachekafka.ACL{Principal: "User:" + s.reader.User, Resource: kmsg.ACLResourceTypeTopic,
				Name: topic, Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: op})
		}
	}
	require.NoError(t, s.kafka.CreateACLs(ctx, acls...))
	t.Logf("install step 4: topics %s, %s (compacted) and %s; ACLs: %v", topicChanges, topicState, topicBeat, acls)
}

// docACLs reads the table "ACLs for the dispatcher's principal" of docs/kafka.md: each row's
// resources, pattern and operations, for principal, with the transactional id prefix txnPrefix.
// A row the brokers of Kafka 3.0 and later do not need (cluster IdempotentWrite) is skipped.
func docACLs(t *testing.T, principal, txnPrefix string) []apachekafka.ACL {
	t.Helper()
	b, err := os.ReadFile("../../../docs/kafka.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(b), "### ACLs for the dispatcher's principal")
	require.True(t, ok, "docs/kafka.md has no ACL table")
	resources := map[string]kmsg.ACLResourceType{"Topic": kmsg.ACLResourceTypeTopic, "TransactionalId": kmsg.ACLResourceTypeTransactionalId, "Cluster": kmsg.ACLResourceTypeCluster}
	patterns := map[string]kmsg.ACLResourcePatternType{"literal": kmsg.ACLResourcePatternTypeLiteral, "prefixed": kmsg.ACLResourcePatternTypePrefixed}
	quoted := regexp.MustCompile("`([^`]+)`")
	var acls []apachekafka.ACL
	lines := strings.Split(strings.TrimLeft(section, "\n"), "\n")
	require.True(t, len(lines) > 2 && strings.HasPrefix(lines[0], "| Resource"), "docs/kafka.md: the ACL table must follow its heading")
	for _, line := range lines[2:] { // the header and its rule
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) < 3 {
			break
		}
		kind := strings.Fields(cells[0])[0]
		if strings.Contains(cells[2], "older than 3.0") {
			continue
		}
		res, ok := resources[kind]
		require.True(t, ok, "docs/kafka.md ACL row %q: unknown resource", line)
		pat, ok := patterns[cells[1]]
		require.True(t, ok, "docs/kafka.md ACL row %q: unknown pattern", line)
		for _, name := range quoted.FindAllStringSubmatch(cells[0], -1) {
			n := strings.ReplaceAll(name[1], "<MSGX_KAFKA_TRANSACTIONAL_ID_PREFIX>", txnPrefix)
			for _, op := range quoted.FindAllStringSubmatch(cells[2], -1) {
				o, err := kmsg.ParseACLOperation(strings.ToLower(op[1]))
				require.NoError(t, err, "docs/kafka.md ACL row %q", line)
				acls = append(acls, apachekafka.ACL{Principal: principal, Resource: res, Name: n, Pattern: pat, Operation: o})
			}
		}
	}
	require.NotEmpty(t, acls, "docs/kafka.md's ACL table gave no ACL")
	return acls
}
