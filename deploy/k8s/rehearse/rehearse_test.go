package rehearse_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/deploy/k8s/rehearse"
	"github.com/msgx/msgx/pkg/dev/apachekafka"
	"github.com/msgx/msgx/pkg/dev/stack"
	"github.com/msgx/msgx/pkg/dev/tlsenv"
	"github.com/msgx/msgx/pkg/httpauth"
)

func TestMain(m *testing.M) { os.Exit(tlsenv.Run(m)) }

// form is how big a rehearsal is.
type form struct {
	name     string
	nodes    int     // Apache Kafka nodes
	replicas bool    // every Deployment at the overlay's replica count (else one each)
	flights  int     // of the simulated day
	rate     float64 // messages per second: the day lasts longer than a rolling restart
	rollback float64 // share of mailbox inserts rolled back (each gap is held MSGX_MAX_COMMIT_DELAY)
}

var (
	// shortForm runs in make test: one Kafka node, one replica of each Deployment, a small day.
	shortForm = form{name: "short", nodes: 1, flights: 30, rate: 12}
	// fullForm is make rehearse: three Kafka nodes (RF 3, min ISR 2), the overlay's replica
	// counts, a bigger day with rolled-back mailbox inserts (each holds the watermark for the
	// production MSGX_MAX_COMMIT_DELAY, 30 s).
	fullForm = form{name: "full", nodes: 3, replicas: true, flights: 200, rate: 40, rollback: 0.002}
)

// TestRehearse runs the production overlay for real (docs/deploy.md, "Rehearsal"): the
// platform team's install steps against real servers set up as production expects them, the
// migration Job, every Deployment as local processes with exactly the environment its manifest
// gives it, simulated airport traffic and the demo's checks, msgxctl status and kafka verify as
// deploy/k8s/msgxctl.sh runs them, a console login and the read API with tokens.
// MSGX_REHEARSE=full runs the full form (make rehearse); the short form runs in make test.
func TestRehearse(t *testing.T) {
	if os.Getenv(apachekafka.SkipEnv) == "1" {
		t.Skipf("%s=1: the rehearsal needs a real Apache Kafka broker", apachekafka.SkipEnv)
	}
	f := shortForm
	if os.Getenv("MSGX_REHEARSE") == "full" {
		f = fullForm
	}
	r := newRehearsal(t, f)
	r.install()
	r.migrationJob(nil)
	r.rollOut(nil)
	r.traffic()
	r.operate()
}

// rehearsal is one run's state.
type rehearsal struct {
	t       *testing.T
	ctx     context.Context
	form    form
	rel     *rehearse.Release
	scratch string // mounted files, logs
	binDir  string
	srv     *servers
	secrets rehearse.Secrets
	mapping rehearse.Mapping
	procsMu sync.Mutex
	procs   []*proc           // the running replicas (running, setProc)
	tokens  map[string]string // console and API tokens by client
	flid    int64             // a flight the day made
	// toolShim changes msgxctl's environment (an older release's workaround; nil: none).
	toolShim func([]string) []string
	// platformBin holds this tree's binaries: the platform team's and the DBA's steps use them
	// whatever release runs.
	platformBin string
}

func newRehearsal(t *testing.T, f form) *rehearsal {
	t.Helper()
	rel, err := rehearse.Render("../overlays/production")
	require.NoError(t, err)
	scratch := t.TempDir()
	if keep := os.Getenv("MSGX_REHEARSE_KEEP_LOGS"); keep != "" {
		// The processes' logs outlive the scratch directory (a cleanup runs before its removal).
		t.Cleanup(func() {
			logs, _ := filepath.Glob(filepath.Join(scratch, "*.log"))
			require.NoError(t, os.MkdirAll(keep, 0o755))
			for _, l := range logs {
				b, err := os.ReadFile(l)
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(filepath.Join(keep, filepath.Base(l)), b, 0o644))
			}
			t.Logf("kept %d process logs in %s", len(logs), keep)
		})
	}
	r := &rehearsal{t: t, ctx: context.Background(), form: f, rel: rel, scratch: scratch,
		binDir: filepath.Join(scratch, "usr", "local", "bin"), tokens: map[string]string{}}
	r.platformBin = r.binDir
	built := make(chan error, 1)
	go func() { built <- stack.Build(r.ctx, r.binDir) }()
	prefix := rel.ConfigMaps[configMap(t, rel)]["MSGX_KAFKA_TRANSACTIONAL_ID_PREFIX"]
	if prefix == "" {
		prefix = "msgx-dispatcher" // its default (docs/configuration.md)
	}
	r.srv = startServers(t, f.nodes, prefix)
	require.NoError(t, <-built)
	// Before the servers stop: every replica at once, as a Deployment scaled to zero.
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for _, p := range r.running() {
			wg.Go(func() { p.stop(40 * time.Second) })
		}
		wg.Wait()
	})
	t.Logf("rehearsal (%s form): %d containers rendered from overlays/production; servers: PostgreSQL 127.0.0.1:%d (TLS, verify-full), MariaDB 127.0.0.1:%d (TLS), Apache Kafka %v (TLS, SASL/SCRAM-SHA-512, ACLs)",
		f.name, len(rel.Containers), r.srv.pg.Port, r.srv.my.Port, r.srv.kafka.Addrs())
	return r
}

// install runs docs/deploy.md's install steps 2 to 5 as the platform team would: the database
// and its owner, the mailbox users, the topics with the SCRAM user and its ACLs, every Secret
// of the table, and the mapping of the cluster's names to this machine.
func (r *rehearsal) install() {
	t := r.t
	pw := map[string]string{}
	for _, k := range []string{"owner", "ingest", "processor", "dispatcher", "jobs", "reader", "admin", "console"} {
		pw[k] = secret(t)
	}
	r.srv.createDatabase(t, pw["owner"])
	ca, err := os.ReadFile(r.srv.ca.CAFile)
	require.NoError(t, err)

	// The Secrets of docs/deploy.md's table, with generated values of the documented shape.
	pgURL := func(role string) string {
		return fmt.Sprintf("postgres://msgx_%s:%s@127.0.0.1:%d/msgx?sslmode=verify-full&sslrootcert=/etc/msgx/tls/pg-ca.crt", role, pw[role], r.srv.pg.Port)
	}
	mysqlDSN := func(role string) string {
		return fmt.Sprintf("msgx_%s:%s@tcp(127.0.0.1:%d)/%s?parseTime=true&tls=msgx-ca", role, pw["mysql-"+role], r.srv.my.Port, r.srv.mailbox.Name)
	}
	for _, k := range []string{"ingest", "processor", "jobs"} {
		pw["mysql-"+k] = secret(t)
	}
	r.srv.mailboxUsers(t, r, map[string]string{"INGEST": pw["mysql-ingest"], "PROCESSOR": pw["mysql-processor"], "JOBS": pw["mysql-jobs"]})

	r.secrets = rehearse.Secrets{
		"msgx-pg-migrate":     {"url": pgURL("owner")},
		"msgx-pg-roles":       {"url": pgURL("owner")},
		"msgx-role-passwords": {},
		"msgx-kafka":          {"sasl-user": r.srv.dispatcher.User, "sasl-password": r.srv.dispatcher.Password},
		"msgx-kafka-reader":   {"sasl-user": r.srv.reader.User, "sasl-password": r.srv.reader.Password},
		"msgx-tls-ca":         {"pg-ca.crt": string(ca), "mysql-ca.crt": string(ca), "kafka-ca.crt": string(ca)},
	}
	for _, role := range []string{"ingest", "processor", "dispatcher", "jobs", "reader", "admin", "console"} {
		r.secrets["msgx-role-passwords"][role] = pw[role]
		r.secrets["msgx-pg-"+role] = map[string]string{"url": pgURL(role)}
	}
	for _, role := range []string{"ingest", "processor", "jobs"} {
		r.secrets["msgx-mysql-"+role] = map[string]string{"dsn": mysqlDSN(role)}
	}
	apiEntry := r.token(t, "rehearsal-api", httpauth.ScopeRead)
	consoleEntry := r.token(t, "rehearsal-operator", httpauth.ScopeRead, httpauth.ScopeOperate)
	r.secrets["msgx-api-tokens"] = map[string]string{"tokens": apiEntry}
	r.secrets["msgx-console"] = map[string]string{"tokens": consoleEntry, "session-key": secret(t) + secret(t)}

	// The one mapping: the cluster's broker names to the local nodes, the mounts to the scratch
	// directory, the image's binaries to the ones just built.
	brokers := strings.Split(r.rel.ConfigMaps[configMap(t, r.rel)]["MSGX_KAFKA_BROKERS"], ",")
	r.mapping = rehearse.Mapping{"/usr/local/bin": r.binDir}
	for i, b := range brokers {
		r.mapping[b] = r.srv.kafka.Addrs()[i%len(r.srv.kafka.Addrs())]
	}
	for _, c := range r.rel.Containers {
		for _, m := range c.Mounts {
			r.mapping[m.Path] = filepath.Join(r.scratch, m.Path)
		}
	}
	t.Logf("the mapping to this machine (nothing else of the manifests changes):\n%s", r.mapping)
}

// token makes a bearer token (msgxctl token new) and returns its entry.
func (r *rehearsal) token(t *testing.T, client string, scopes ...httpauth.Scope) string {
	t.Helper()
	token, entry, err := httpauth.NewToken(client, scopes...)
	require.NoError(t, err)
	r.tokens[client] = token
	return fmt.Sprint(entry)
}

// configMap is the name of the overlay's one ConfigMap of settings (msgx-config-<hash>).
func configMap(t *testing.T, rel *rehearse.Release) string {
	t.Helper()
	for name := range rel.ConfigMaps {
		if strings.HasPrefix(name, "msgx-config") {
			return name
		}
	}
	require.FailNow(t, "the overlay has no msgx-config ConfigMap")
	return ""
}

// environ is a container's environment as the kubelet gives it, mapped to this machine, with
// its mounted Secrets written where the mapping puts them.
func (r *rehearsal) environ(c rehearse.Container, listen map[string]string) []string {
	t := r.t
	env, err := r.rel.Environ(c, r.secrets)
	require.NoError(t, err, "the pod would not start")
	files, err := c.Files(r.secrets)
	require.NoError(t, err, "the pod would not start")
	for path, content := range files {
		// Written once, atomically (running processes read the same files, as pods of one
		// Secret do).
		local := r.mapping.Path(path)
		if old, err := os.ReadFile(local); err == nil && string(old) == content {
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(local), 0o755))
		tmp := local + ".new"
		require.NoError(t, os.WriteFile(tmp, []byte(content), 0o444))
		require.NoError(t, os.Rename(tmp, local))
	}
	return r.mapping.With(listen).Apply(env)
}

// container is the rendered container of a workload.
func (r *rehearsal) container(workload, name string) rehearse.Container {
	r.t.Helper()
	for _, c := range r.rel.Containers {
		if c.Workload == workload && c.Name == name {
			return c
		}
	}
	require.FailNow(r.t, "no container", "%s/%s is not in the overlay", workload, name)
	return rehearse.Container{}
}

// migrationJob is rollout.sh's step 3: the Job's init container (msgxctl migrate), then its
// container (msgxctl roles apply), each with its manifest's environment (and shim's change, an
// older release's workaround; nil: none).
func (r *rehearsal) migrationJob(shim func([]string) []string) {
	for _, name := range []string{"migrate", "roles"} {
		c := r.container("msgx-migrate", name)
		env := r.environ(c, nil)
		if shim != nil {
			env = shim(env)
		}
		out := run(r.t, "Job msgx-migrate, container "+name, r.argv(c), env)
		r.t.Logf("msgx-migrate/%s: %s", name, strings.TrimSpace(out))
	}
}

func (r *rehearsal) argv(c rehearse.Container) []string {
	argv := slices.Clone(c.Command)
	argv[0] = r.mapping.Path(argv[0])
	return argv
}

// rollOut is rollout.sh's step 4 and 5: every Deployment's containers (one replica each in the
// short form), each with its own listen addresses, until every one is ready.
func (r *rehearsal) rollOut(shim func([]string) []string) {
	for _, c := range r.rel.Containers {
		if c.Kind != "Deployment" {
			continue
		}
		n := 1
		if r.form.replicas {
			n = c.Replicas
		}
		for i := range n {
			env := r.environ(c, r.listen())
			if shim != nil {
				env = shim(env)
			}
			p := start(r.t, r.scratch, fmt.Sprintf("%s-%d", c.Workload, i), r.argv(c), env)
			r.setProc(-1, p)
		}
	}
	for _, p := range r.running() {
		waitReady(r.t, p, 2*time.Minute)
	}
	r.t.Logf("rolled out: %d processes ready", len(r.running()))
}

// restart replaces every replica as a rollout of the same release does: rollout.sh applies every
// Deployment at once, so they all roll at the same time, each pod by pod with the manifests'
// strategy (maxSurge 1, maxUnavailable 0: rollDeployments). Each role's new leader starts its
// term (the dispatcher's reads what the topics took since its last commit).
func (r *rehearsal) restart() {
	r.rollDeployments(func(p *proc) ([]string, []string) { return p.cmd.Args, r.relisten(p.env) }, "restarted")
	r.t.Logf("restarted: %d processes replaced, every Deployment at once, pod by pod", len(r.running()))
}

// listenPorts are the container ports the manifests listen on (MSGX_HTTP_ADDR, MSGX_API_ADDR,
// MSGX_CONSOLE_ADDR): each process gets its own loopback address for each.
var listenPorts = []string{"8080", "8091", "8092"}

// listen maps each listen address of the manifests to a free loopback address.
func (r *rehearsal) listen() map[string]string {
	m := map[string]string{}
	for _, port := range listenPorts {
		m["0.0.0.0:"+port] = freeAddr(r.t)
	}
	return m
}

// relisten is env with fresh listen addresses (a second replica on this machine).
func (r *rehearsal) relisten(env []string) []string {
	out := slices.Clone(env)
	for i, kv := range out {
		name, _, _ := strings.Cut(kv, "=")
		if name == "MSGX_HTTP_ADDR" || name == "MSGX_API_ADDR" || name == "MSGX_CONSOLE_ADDR" {
			out[i] = name + "=" + freeAddr(r.t)
		}
	}
	return out
}

// preStop is the manifests' preStop sleep: the kubelet waits it before SIGTERM.
const preStop = 5 * time.Second

// rollDeployments replaces every replica, the Deployments at once and each pod by pod: the
// replacement (next gives its command and environment) is started and waited for, joins the
// running replicas, then the old one gets the preStop sleep, SIGTERM and at most
// terminationGracePeriodSeconds, and leaves them.
func (r *rehearsal) rollDeployments(next func(old *proc) (argv, env []string), tag string) {
	type step struct {
		old       *proc
		argv, env []string
	}
	byWorkload := map[string][]step{}
	for _, p := range r.running() { // every replacement's command and environment, made here
		argv, env := next(p)
		w := workloadOf(p.name)
		byWorkload[w] = append(byWorkload[w], step{p, argv, env})
	}
	errs := make(chan error, len(byWorkload))
	for w, steps := range byWorkload {
		go func() {
			for i, s := range steps {
				np, err := launch(r.scratch, fmt.Sprintf("%s-%d-%s", w, i, tag), s.argv, s.env)
				if err == nil {
					r.setProc(-1, np) // before the old one stops: a watcher sees both
					err = ready(np, 2*time.Minute)
				}
				if err != nil {
					errs <- err
					return
				}
				time.Sleep(preStop) // the kubelet's preStop hook, not a wait for a condition
				s.old.stop(40 * time.Second)
				r.dropProc(s.old)
			}
			errs <- nil
		}()
	}
	for range byWorkload {
		require.NoError(r.t, <-errs)
	}
}

// workloadOf is the Deployment a replica's name starts with (msgx-ingest-0-… → msgx-ingest).
func workloadOf(name string) string {
	parts := strings.SplitN(name, "-", 3)
	return parts[0] + "-" + parts[1]
}

// running are the running replicas.
func (r *rehearsal) running() []*proc {
	r.procsMu.Lock()
	defer r.procsMu.Unlock()
	return slices.Clone(r.procs)
}

// setProc puts p at index i of the replicas (-1: appends it).
func (r *rehearsal) setProc(i int, p *proc) {
	r.procsMu.Lock()
	defer r.procsMu.Unlock()
	if i < 0 {
		r.procs = append(r.procs, p)
		return
	}
	r.procs[i] = p
}

// dropProc removes a replica that has stopped.
func (r *rehearsal) dropProc(p *proc) {
	r.procsMu.Lock()
	defer r.procsMu.Unlock()
	r.procs = slices.DeleteFunc(r.procs, func(q *proc) bool { return q == p })
}

// proc is the first replica of a Deployment.
func (r *rehearsal) proc(workload string) *proc {
	for _, p := range r.running() {
		if strings.HasPrefix(p.name, workload+"-") {
			return p
		}
	}
	require.FailNow(r.t, "no process", "%s is not running", workload)
	return nil
}

func secret(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}
