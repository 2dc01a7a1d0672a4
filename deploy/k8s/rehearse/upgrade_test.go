package rehearse_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/deploy/k8s/rehearse"
	"github.com/msgx/msgx/pkg/dev/simulate"
	"github.com/msgx/msgx/pkg/dev/stack"
	"github.com/msgx/msgx/pkg/dev/verify"
)

// release is one release's overlay and binaries.
type release struct {
	name   string
	rel    *rehearse.Release
	binDir string
}

// checkout renders the production overlay of commit and builds its binaries, in a git worktree
// of this repository (removed when the test ends).
func checkout(t *testing.T, commit string) *release {
	t.Helper()
	root, err := stack.Root()
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "release")
	git := func(args ...string) {
		out, err := exec.Command("git", append([]string{"-C", root}, args...)...).CombinedOutput()
		require.NoError(t, err, "git %s: %s", strings.Join(args, " "), out)
	}
	git("worktree", "add", "--detach", dir, commit)
	t.Cleanup(func() { git("worktree", "remove", "--force", dir) })
	bin := filepath.Join(dir, ".rehearse-bin")
	cmd := exec.Command("go", "build", "-o", bin+"/", "./cmd/ingest", "./cmd/processor", "./cmd/dispatcher", "./cmd/jobs", "./cmd/console", "./cmd/msgxctl")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "build %s: %s", commit, out)
	rel, err := rehearse.Render(filepath.Join(dir, "deploy", "k8s", "overlays", "production"))
	require.NoError(t, err, "render %s's production overlay", commit)
	return &release{name: commit, rel: rel, binDir: bin}
}

// consoleOnly applies shim to the console's environment only (the Deployments' other binaries
// need no workaround).
func consoleOnly(shim func([]string) []string) func([]string) []string {
	return func(env []string) []string {
		for _, kv := range env {
			if strings.HasPrefix(kv, "MSGX_CONSOLE_SESSION_KEY=") { // the console's own Secret
				return shim(env)
			}
		}
		return env
	}
}

// olderReleaseShim is what an operator of a release before the one that fixed it had to add to
// run its production overlay: its console and msgxctl (the migration Job) refused the
// ConfigMap without a mailbox DSN (they never connect to MySQL). A TLS-shaped DSN satisfies the
// check; nothing connects with it.
func olderReleaseShim(env []string) []string {
	for _, kv := range env {
		if strings.HasPrefix(kv, "MSGX_MYSQL_DSN=") {
			return env
		}
	}
	return append(slices.Clone(env), "MSGX_MYSQL_DSN=unused:unused@tcp(127.0.0.1:1)/unused?tls=true")
}

// TestRehearseUpgrade (make rehearse-upgrade FROM=<commit>) starts the release FROM in the
// production configuration with the overlay's replica counts, writes simulated traffic
// throughout, follows docs/deploy.md's upgrade to this tree (the migration Job while the old
// binaries run, then every Deployment at once, each pod by pod) and its rollback to FROM
// the same way, then checks the demo's checks (0 lost, versions in order, duplicates only as
// identical records) and kafka verify, and reports how long each role had no leader and the
// latency from mailbox commit to Kafka while the releases rolled.
func TestRehearseUpgrade(t *testing.T) {
	from := os.Getenv("MSGX_REHEARSE_FROM")
	if from == "" {
		t.Skip("MSGX_REHEARSE_FROM=<commit> (make rehearse-upgrade) runs the upgrade rehearsal")
	}
	old := checkout(t, from)
	f := form{name: "upgrade", nodes: 1, replicas: true, flights: 300, rate: 15}
	r := newRehearsal(t, f)
	this := &release{name: "this tree", rel: r.rel, binDir: r.binDir}
	r.use(old)
	r.install()
	r.migrationJob(olderReleaseShim)
	r.rollOut(consoleOnly(olderReleaseShim))
	watch := watchLeaders(r)

	cfg := simulate.DefaultConfig()
	cfg.Seed, cfg.Flights, cfg.Additions = 43, f.flights, f.flights/50
	day := simulate.Generate(cfg.Today())
	lat := stack.NewLatencies()
	consumer, err := stack.ConsumeWith(r.readerConfig(), []string{topicChanges, topicState}, lat.Arrive)
	require.NoError(t, err)
	t.Cleanup(func() { _ = consumer.Close() })
	w, err := simulate.NewWriter(r.srv.mailbox.SQL, simulate.WriterConfig{
		Conns: 4, Pace: simulate.PaceSteady, Rate: f.rate, HoldShare: 0.05, Seed: 43, Committed: lat.Commit,
	})
	require.NoError(t, err)
	ctx, stopWriting := context.WithCancel(r.ctx)
	defer stopWriting()
	var written simulate.Written
	var writeErr error
	var writing sync.WaitGroup
	writing.Go(func() { written, writeErr = w.Write(ctx, day.Messages) })

	steps := []struct {
		name string
		to   *release
		shim func([]string) []string
	}{{"upgrade to " + this.name, this, nil}, {"rollback to " + old.name, old, olderReleaseShim}}
	for _, s := range steps {
		began := time.Now()
		stopped := 0
		if s.to == old {
			stopped = r.undoChangeCursor(old)
		}
		r.use(s.to)
		r.migrationJob(s.shim)
		r.rollDeployments(func(old *proc) ([]string, []string) {
			workload := workloadOf(old.name)
			c := r.container(workload, strings.TrimPrefix(workload, "msgx-"))
			env := r.environ(c, r.listen())
			if s.shim != nil && workload == "msgx-console" {
				env = s.shim(env)
			}
			return r.argv(c), env
		}, strings.ReplaceAll(s.to.name, " ", "-"))
		r.scaleUp("msgx-dispatcher", stopped)
		if stopped > 0 {
			r.standInsForThisTreesReaders()
		}
		t.Logf("%s: every Deployment rolled (at once, pod by pod) from %s in %s", s.name, began.Format("15:04:05.000"), time.Since(began).Round(time.Millisecond))
	}
	writing.Wait()
	require.NoError(t, writeErr)
	gaps := watch.stop()
	// docs/deploy.md, "Roll back": after a rollback past the state outbox's migration, FROM's
	// reseed republishes the states its dispatcher does not read (a no-op otherwise).
	r.toolShim = olderReleaseShim // rolled back: FROM's msgxctl
	t.Logf("msgxctl kafka reseed --all after the rollback:\n%s", r.msgxctl("kafka", "reseed", "--all"))

	pool, err := pgxpool.New(r.ctx, r.srv.pg.URL("postgres", r.srv.pg.Password, "msgx"))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, err = stack.WaitDrained(r.ctx, pool, slices.Max(written.IDs), 200*time.Millisecond, 3*time.Second, 5*time.Minute)
	require.NoError(t, err, "the pipeline did not drain the day")
	extra, err := verify.Answers(r.ctx, r.srv.mailbox.SQL, written)
	require.NoError(t, err)
	rep, err := verify.Day(r.ctx, verify.Input{Pool: pool, Mailbox: r.srv.mailbox.SQL, Day: day, Written: written,
		Extra: extra, Records: consumer.Records, Wait: time.Minute})
	require.NoError(t, err)
	require.True(t, rep.OK(), "the demo's checks failed:\n%s", strings.Join(rep.Failed(3), "\n"))
	logAttempts(t, r.ctx, pool)
	r.flid = firstFLID(t, r.ctx, pool)
	r.operate()
	q := lat.Percentiles(0.5, 0.99, 1)
	committed, arrived := lat.Counts()
	t.Logf("upgrade %s → this tree → %s under traffic: %d messages, %d flights = model, %d lost, %d duplicate records; latency mailbox commit → Kafka over %d of %d messages: p50 %s, p99 %s, max %s",
		old.name, old.name, len(written.IDs), rep.Flights, rep.Lost, rep.Duplicates, arrived, committed,
		q[0].Round(time.Millisecond), q[1].Round(time.Millisecond), q[2].Round(time.Millisecond))
	for _, role := range []string{"ingest", "processor", "dispatcher", "jobs"} {
		g := gaps[role]
		t.Logf("role %s: %d leader changes, longest time without a ready leader %s (from %s, ended by %s), total %s, two leaders at once: %d polls",
			role, g.changes, g.longest.Round(time.Millisecond), g.longestAt.Format("15:04:05.000"), g.longestBy,
			g.total.Round(time.Millisecond), g.twoLeaders)
		require.Zero(t, g.twoLeaders, "role %s had two leaders", role)
	}
}

// changeCursorMigration is the migration a rollback past it undoes by hand (docs/deploy.md,
// "Roll back").
const changeCursorMigration = "20270113120000_change_cursor.sql"

// undoChangeCursor is docs/deploy.md's rollback past the change cursor's migration, when this
// tree has it and old does not: the dispatcher Deployment scaled to 0, then the migration's down
// part run as the owner (the migration Job's role) in one transaction, with its
// schema_migrations row. It returns how many dispatcher replicas it stopped.
func (r *rehearsal) undoChangeCursor(old *release) int {
	t := r.t
	if _, err := os.Stat(filepath.Join(filepath.Dir(old.binDir), "db", "migrations", changeCursorMigration)); err == nil {
		return 0
	}
	root, err := stack.Root()
	require.NoError(t, err)
	body, err := os.ReadFile(filepath.Join(root, "db", "migrations", changeCursorMigration))
	require.NoError(t, err)
	_, down, ok := strings.Cut(string(body), "-- migrate:down")
	require.True(t, ok, "%s has a down part", changeCursorMigration)

	stopped := 0
	for _, p := range r.running() {
		if workloadOf(p.name) == "msgx-dispatcher" {
			p.stop(40 * time.Second)
			r.dropProc(p)
			stopped++
		}
	}
	var url string
	for _, kv := range r.environ(r.container("msgx-migrate", "migrate"), nil) {
		if v, ok := strings.CutPrefix(kv, "MSGX_PG_URL="); ok {
			url = v
		}
	}
	require.NotEmpty(t, url, "the migration Job's MSGX_PG_URL")
	conn, err := pgx.Connect(r.ctx, url)
	require.NoError(t, err)
	defer conn.Close(r.ctx)
	version, _, _ := strings.Cut(changeCursorMigration, "_")
	require.NoError(t, pgx.BeginFunc(r.ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(r.ctx, down); err != nil {
			return err
		}
		_, err := tx.Exec(r.ctx, `DELETE FROM schema_migrations WHERE version = $1`, version)
		return err
	}), "the down part of %s", changeCursorMigration)
	t.Logf("rollback past %s: %d dispatcher replicas stopped, its down part run as the owner", changeCursorMigration, stopped)
	return stopped
}

// standInsForThisTreesReaders lets this tree's readers, which the checks below use (the backlog,
// the events' delivery), read FROM's schema after the change cursor's down part: a cursor at 0
// and a view of every event with its own status, as FROM reads them. FROM's binaries do not know
// these names.
func (r *rehearsal) standInsForThisTreesReaders() {
	conn, err := pgx.Connect(r.ctx, r.srv.pg.URL("postgres", r.srv.pg.Password, "msgx"))
	require.NoError(r.t, err)
	defer conn.Close(r.ctx)
	_, err = conn.Exec(r.ctx, `
CREATE FUNCTION msgx_change_cursor() RETURNS bigint LANGUAGE sql STABLE AS 'SELECT 0::bigint';
CREATE FUNCTION msgx_passed(id bigint, cursor bigint) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT false';
CREATE VIEW msg_event_delivery AS
SELECT event_id, target, partition_key, event_type, state_version, msg_id, payload, body, status, attempts,
       next_attempt_at, created_at, sent_at, last_error
  FROM msg_event;`)
	require.NoError(r.t, err, "the checks' stand-ins")
}

// scaleUp starts n replicas of workload from the release in use (a Deployment scaled back up).
func (r *rehearsal) scaleUp(workload string, n int) {
	c := r.container(workload, strings.TrimPrefix(workload, "msgx-"))
	for i := range n {
		p := start(r.t, r.scratch, fmt.Sprintf("%s-%d-scaled", workload, i), r.argv(c), r.environ(c, r.listen()))
		r.setProc(-1, p)
		waitReady(r.t, p, 2*time.Minute)
	}
}

// use makes rel the release whose manifests and binaries the next steps take.
func (r *rehearsal) use(rel *release) {
	r.rel, r.binDir = rel.rel, rel.binDir
	if r.mapping != nil {
		r.mapping["/usr/local/bin"] = rel.binDir
	}
}

// leaderGaps is what watchLeaders saw of one role.
type leaderGaps struct {
	changes    int           // times the ready leader changed process
	longest    time.Duration // longest time no process answered as the role's ready leader
	longestAt  time.Time     // when it began
	longestBy  string        // the process that answered as leader when it ended ("": none did)
	total      time.Duration
	twoLeaders int // polls at which two processes answered as ready leaders
}

// leaderWatch polls every process's /readyz.
type leaderWatch struct {
	stopped chan struct{}
	done    chan map[string]leaderGaps
}

// watchLeaders polls every running process's /readyz every 100 ms and times, per role, how long
// no process answered as its ready leader.
func watchLeaders(r *rehearsal) *leaderWatch {
	w := &leaderWatch{stopped: make(chan struct{}), done: make(chan map[string]leaderGaps, 1)}
	go func() {
		gaps := map[string]leaderGaps{}
		since := map[string]time.Time{} // start of the current time without a leader
		last := map[string]string{}     // the process that led last
		cl := &http.Client{Timeout: 500 * time.Millisecond}
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-w.stopped:
				for role, at := range since { // a time without a leader still open
					if !at.IsZero() {
						g := gaps[role]
						d := time.Since(at)
						g.total += d
						if d > g.longest {
							g.longest, g.longestAt, g.longestBy = d, at, ""
						}
						gaps[role] = g
					}
				}
				w.done <- gaps
				return
			case <-tick.C:
			}
			now, leaders := time.Now(), map[string][]string{}
			for _, p := range r.running() {
				role := readyLeaderRole(cl, p)
				if role != "" {
					leaders[role] = append(leaders[role], p.name)
				}
			}
			for _, role := range []string{"ingest", "processor", "dispatcher", "jobs"} {
				g := gaps[role]
				switch n := len(leaders[role]); {
				case n == 0 && since[role].IsZero():
					since[role] = now
				case n > 0 && !since[role].IsZero():
					d := now.Sub(since[role])
					g.total += d
					if d > g.longest {
						g.longest, g.longestAt, g.longestBy = d, since[role], leaders[role][0]
					}
					since[role] = time.Time{}
				}
				if len(leaders[role]) > 1 {
					g.twoLeaders++
				}
				if len(leaders[role]) == 1 && last[role] != leaders[role][0] {
					if last[role] != "" {
						g.changes++
					}
					last[role] = leaders[role][0]
				}
				gaps[role] = g
			}
		}
	}()
	return w
}

func (w *leaderWatch) stop() map[string]leaderGaps {
	close(w.stopped)
	return <-w.done
}

// readyLeaderRole is the role p answers /readyz 200 as leader of ("" otherwise).
func readyLeaderRole(cl *http.Client, p *proc) string {
	if p.exited() {
		return ""
	}
	resp, err := cl.Get("http://" + p.getenv("MSGX_HTTP_ADDR") + "/readyz")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"role":"leader"`) {
		return ""
	}
	for _, role := range []string{"ingest", "processor", "dispatcher", "jobs"} {
		if strings.HasPrefix(p.name, "msgx-"+role+"-") {
			return role
		}
	}
	return ""
}

// logAttempts logs the attempts of the day that ended without success, by outcome, class and
// reason: what the rolls cost the messages (a grant revoked under a running processor shows as
// INTERRUPTED, not charged; INV-23d).
func logAttempts(t *testing.T, ctx context.Context, pool *pgxpool.Pool) {
	t.Helper()
	rows, err := pool.Query(ctx, `SELECT outcome, coalesce(error_class, ''), left(coalesce(reason, ''), 200), count(*), count(DISTINCT msg_id)
		  FROM msg_attempt WHERE outcome NOT IN ('SUCCEEDED', 'SKIPPED')
		 GROUP BY 1, 2, 3 ORDER BY 4 DESC LIMIT 20`)
	require.NoError(t, err)
	var b strings.Builder
	var outcome, class, reason string
	var n, msgs int64
	_, err = pgx.ForEachRow(rows, []any{&outcome, &class, &reason, &n, &msgs}, func() error {
		fmt.Fprintf(&b, "\n  %d × %s %s (%d messages): %s", n, outcome, class, msgs, reason)
		return nil
	})
	require.NoError(t, err)
	if b.Len() == 0 {
		b.WriteString(" none")
	}
	t.Logf("attempts that did not succeed:%s", b.String())
}
