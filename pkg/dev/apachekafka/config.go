package apachekafka

import (
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Options shape the nodes a cluster starts. The zero value is a plaintext cluster sized for a
// small shared machine.
type Options struct {
	// Config overrides or adds server properties on every node, over the defaults
	// (e.g. log.segment.ms, log.cleaner.backoff.ms for compaction tests).
	Config map[string]string
	// NodeConfig overrides server properties on one node (by node id, 1..n), over Config.
	NodeConfig map[int32]map[string]string
	// JVM replaces the default JVM options (heap, collector) when non-nil.
	JVM []string
	// SCRAM makes the client listener require SASL/SCRAM with this user, created at format time.
	// It is the user of the cluster's own admin client (a super user when Authorizer is set).
	SCRAM *SCRAM
	// Users are more SCRAM users created at format time (with SCRAM's mechanism), e.g. the
	// principals of the clients under test.
	Users []SCRAM
	// Authorizer turns on Kafka's StandardAuthorizer: only SCRAM's user (and the brokers'
	// plaintext internal and controller listeners) are super users, every other principal
	// needs ACLs (CreateACLs).
	Authorizer bool
	// TLS makes the client listener speak TLS with this certificate.
	TLS *TLS
	// Dir is where the nodes keep their configuration, data and logs; empty: a new temporary
	// directory, removed by Close. A given Dir is left in place.
	Dir string
}

// SCRAM is the SASL/SCRAM user of the client listener.
type SCRAM struct {
	Mechanism      string // SCRAM-SHA-256 or SCRAM-SHA-512 (empty: SCRAM-SHA-512)
	User, Password string
}

// TLS is the client listener's certificate: PEM files, the key unencrypted PKCS #8, and the
// configuration the cluster's own admin client dials with (it must trust the certificate).
type TLS struct {
	CertFile, KeyFile string
	Client            *tls.Config
}

// Validate reports options a cluster cannot start with.
func (o Options) Validate() error {
	if s := o.SCRAM; s != nil {
		if s.User == "" || s.Password == "" {
			return fmt.Errorf("scram: user and password are required")
		}
		if strings.ContainsAny(s.User, `",=[]\`) {
			return fmt.Errorf("scram: user %q: the storage tool cannot take any of \" , = [ ] \\ in a name", s.User)
		}
		if m := s.mechanism(); m != "SCRAM-SHA-256" && m != "SCRAM-SHA-512" {
			return fmt.Errorf("scram: unknown mechanism %q", m)
		}
	}
	for _, u := range o.Users {
		if o.SCRAM == nil {
			return fmt.Errorf("scram users need SCRAM (the listener's mechanism and the admin)")
		}
		if u.User == "" || u.Password == "" || strings.ContainsAny(u.User, `",=[]\`) {
			return fmt.Errorf("scram user %q: a name without \" , = [ ] \\ and a password are required", u.User)
		}
	}
	if o.Authorizer && o.SCRAM == nil {
		return fmt.Errorf("authorizer: needs SCRAM (its user is the admin's super user)")
	}
	if t := o.TLS; t != nil && (t.CertFile == "" || t.KeyFile == "" || t.Client == nil) {
		return fmt.Errorf("tls: cert file, key file and client configuration are required")
	}
	return nil
}

// scramIterations is Kafka's minimum iteration count for SCRAM credentials.
const scramIterations = 4096

// credential is the user's SCRAM credential as the storage tool's --add-scram takes it: the salted
// password computed here, so the tool never parses the password (its parser splits on commas).
func (s *SCRAM) credential() (string, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("scram salt: %w", err)
	}
	h, size := sha512.New, sha512.Size
	if s.mechanism() == "SCRAM-SHA-256" {
		h, size = sha256.New, sha256.Size
	}
	salted, err := pbkdf2.Key(h, s.Password, salt, scramIterations, size)
	if err != nil {
		return "", fmt.Errorf("scram salted password: %w", err)
	}
	enc := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("%s=[name=%q,salt=%q,saltedpassword=%q,iterations=%d]",
		s.mechanism(), s.User, enc(salt), enc(salted), scramIterations), nil
}

func (s *SCRAM) mechanism() string {
	if s.Mechanism == "" {
		return "SCRAM-SHA-512"
	}
	return s.Mechanism
}

// defaultJVM sizes a broker for a small machine shared with other processes: a small heap, the
// serial collector (no parallel GC threads), only the quick JIT compiler (starting a JVM spends
// most of its CPU compiling; a throughput measurement should pass JVM without it) and no
// perf-data file in /tmp.
var defaultJVM = []string{
	"-Xms256m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:+ExitOnOutOfMemoryError",
	"-XX:-UsePerfData", "-Djava.awt.headless=true",
}

// ports are a node's listeners on 127.0.0.1: clients, the other brokers, the controllers.
type ports struct{ client, internal, controller int }

// serverProperties is one node's configuration: a combined broker and controller of a static
// quorum (every node votes), with replication settings that make a three-node cluster behave as
// production does (acks=all needs two in-sync replicas) and thread counts kept small.
func serverProperties(o Options, id int32, all []ports, dir string) map[string]string {
	n := len(all)
	p := all[id-1]
	voters := make([]string, n)
	for i, q := range all {
		voters[i] = fmt.Sprintf("%d@127.0.0.1:%d", i+1, q.controller)
	}
	rf, isr := strconv.Itoa(n), strconv.Itoa(min(n, 2))
	props := map[string]string{
		"process.roles":                                    "broker,controller",
		"node.id":                                          strconv.Itoa(int(id)),
		"controller.quorum.voters":                         strings.Join(voters, ","),
		"listeners":                                        fmt.Sprintf("CLIENT://127.0.0.1:%d,INTERNAL://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", p.client, p.internal, p.controller),
		"advertised.listeners":                             fmt.Sprintf("CLIENT://127.0.0.1:%d,INTERNAL://127.0.0.1:%d", p.client, p.internal),
		"listener.security.protocol.map":                   "CLIENT:" + clientProtocol(o) + ",INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"inter.broker.listener.name":                       "INTERNAL",
		"controller.listener.names":                        "CONTROLLER",
		"log.dirs":                                         filepath.Join(dir, "data"),
		"num.network.threads":                              "2",
		"num.io.threads":                                   "2",
		"num.replica.fetchers":                             "1",
		"num.recovery.threads.per.data.dir":                "1",
		"background.threads":                               "2",
		"log.cleaner.threads":                              "1",
		"log.cleaner.dedupe.buffer.size":                   strconv.Itoa(16 << 20),
		"default.replication.factor":                       rf,
		"min.insync.replicas":                              isr,
		"offsets.topic.replication.factor":                 rf,
		"offsets.topic.num.partitions":                     "10",
		"transaction.state.log.replication.factor":         rf,
		"transaction.state.log.min.isr":                    isr,
		"transaction.state.log.num.partitions":             "10",
		"share.coordinator.state.topic.replication.factor": rf,
		"share.coordinator.state.topic.min.isr":            isr,
		"group.initial.rebalance.delay.ms":                 "0",
	}
	if s := o.SCRAM; s != nil {
		mech := s.mechanism()
		props["sasl.enabled.mechanisms"] = mech
		props["listener.name.client."+strings.ToLower(mech)+".sasl.jaas.config"] = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
		if o.Authorizer {
			// The plaintext internal and controller listeners (loopback, the nodes' own
			// traffic) authenticate as ANONYMOUS.
			props["authorizer.class.name"] = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
			props["super.users"] = "User:ANONYMOUS;User:" + s.User
		}
	}
	if o.TLS != nil {
		props["listener.name.client.ssl.keystore.type"] = "PEM"
		props["listener.name.client.ssl.keystore.location"] = filepath.Join(dir, "keystore.pem")
	}
	maps.Copy(props, o.Config)
	maps.Copy(props, o.NodeConfig[id])
	return props
}

func clientProtocol(o Options) string {
	switch {
	case o.SCRAM != nil && o.TLS != nil:
		return "SASL_SSL"
	case o.SCRAM != nil:
		return "SASL_PLAINTEXT"
	case o.TLS != nil:
		return "SSL"
	}
	return "PLAINTEXT"
}

// log4j2Properties sends the node's log to standard output, which the node appends to its
// server.log together with anything the JVM itself prints.
const log4j2Properties = `status = warn
appender.out.type = Console
appender.out.name = out
appender.out.target = SYSTEM_OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.out.ref = out
logger.request.name = kafka.request.logger
logger.request.level = warn
`

// writeNodeFiles writes a node's server.properties, log4j2.properties and, with TLS, the PEM
// key store (key and certificate in one file, as Kafka reads it).
func writeNodeFiles(o Options, dir string, props map[string]string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("node dir: %w", err)
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(props)) {
		fmt.Fprintf(&b, "%s=%s\n", k, escapeProperty(props[k]))
	}
	if err := os.WriteFile(filepath.Join(dir, "server.properties"), []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("server.properties: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "log4j2.properties"), []byte(log4j2Properties), 0o644); err != nil {
		return fmt.Errorf("log4j2.properties: %w", err)
	}
	if o.TLS == nil {
		return nil
	}
	var pem []byte
	for _, f := range []string{o.TLS.KeyFile, o.TLS.CertFile} {
		data, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("key store: %w", err)
		}
		pem = append(pem, data...)
	}
	if err := os.WriteFile(filepath.Join(dir, "keystore.pem"), pem, 0o600); err != nil {
		return fmt.Errorf("key store: %w", err)
	}
	return nil
}

// escapeProperty escapes a value for a Java properties file.
func escapeProperty(v string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`, "\r", `\r`).Replace(v)
}
