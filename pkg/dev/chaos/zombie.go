package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/msgx/msgx/pkg/dev/stack"
	"github.com/msgx/msgx/pkg/dev/verify"
	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/outbox"
)

// ZombieConfig configures the real-process zombie test: a deposed dispatcher resumed after its successor took over.
type ZombieConfig struct {
	BinDir string
	LogDir string
	PGURL  string // a migrated database (or schema: search_path in the URL) both dispatchers use
	// DispatcherPGURL, when set, is the dispatchers' own login (their role's URL on PGURL's
	// database); PGURL is then the harness's alone.
	DispatcherPGURL string
	// BrokerAuth, when set, makes the development broker speak only TLS and require
	// SCRAM-SHA-512 (stack.Options.KafkaAuth); the dispatchers and the consumer use it.
	BrokerAuth *stack.KafkaAuth
	Rounds     int
	FLIDs      int // flights per round (default 5)
	Log        func(format string, args ...any)
	// Kafka, when set, is the cluster the dispatchers and the consumer use instead of the
	// stack's development broker (which then idles): its brokers, TLS and SASL. Both topics
	// must exist with their default names (verify.TopicChanges, verify.TopicState).
	Kafka *kafka.Config
}

// ZombieResult is what the rounds showed.
type ZombieResult struct {
	Rounds   int
	Fenced   int           // rounds in which the broker answered both of the deposed leader's sends "fenced"
	Takeover time.Duration // the slowest takeover after the SIGSTOP
	Records  int           // records read (read_committed) on both topics
	Problems []string
}

// zombieEnv are the dispatchers' settings: a 2 s lease, quick polls.
var zombieEnv = []string{
	"MSGX_LEADER_SESSION_TIMEOUT=2s",
	"MSGX_LEADER_RETRY=200ms",
	"MSGX_SCHD_FLUSH_PERIOD=200ms",
	"MSGX_LOG_LEVEL=info",
}

// zombieWait bounds every wait of a round.
const zombieWait = time.Minute

// Zombie is the deterministic zombie test with real processes: a broker (the development one,
// cmd/devbroker, or the cluster of ZombieConfig.Kafka) and two dispatcher binaries, each with
// its own send hold file (MSGX_DEV_HOLD_SEND). Each round the leader L gets its hold file, reads a batch of both
// targets (v1 of the round's flights) and is held before sending; it is SIGSTOPped, the standby
// takes over after the lease, sends the batch and newer versions (v2, v3); then L's hold file is
// removed and L is SIGCONTed: it tries to send its stale batch, and goes back to standby. The
// next round the roles are swapped. At the end one more version of every flight is sent, and a
// read_committed consumer of both topics (msgx.flight.changes and the compacted
// msgx.flight.state) must show, per flight: no record of L's epoch (it was held before sending
// anything of its round), epochs and versions that never decrease, and every version once on
// msgx.flight.changes.
func Zombie(ctx context.Context, cfg ZombieConfig) (ZombieResult, error) {
	res := ZombieResult{}
	if cfg.FLIDs == 0 {
		cfg.FLIDs = 5
	}
	if cfg.Log == nil {
		cfg.Log = func(string, ...any) {}
	}
	pool, err := pgxpool.New(ctx, cfg.PGURL)
	if err != nil {
		return res, err
	}
	defer pool.Close()
	opts := stack.Options{BinDir: cfg.BinDir, LogDir: cfg.LogDir, PGURL: cfg.PGURL,
		RandomPorts: true, Env: zombieEnv, Only: []string{}, KafkaAuth: cfg.BrokerAuth}
	if cfg.DispatcherPGURL != "" {
		opts.PGURL, opts.RoleEnv = "", map[string][]string{"dispatcher": {"MSGX_PG_URL=" + cfg.DispatcherPGURL}}
	}
	s, err := stack.Start(ctx, opts)
	if err != nil {
		return res, fmt.Errorf("start the broker: %w", err)
	}
	defer func() { _ = s.Close() }()
	kcfg, kenv := s.Kafka, []string(nil)
	if cfg.Kafka != nil {
		kcfg, kenv = *cfg.Kafka, kafkaEnv(*cfg.Kafka)
	}
	consumer, err := stack.ConsumeWith(kcfg, []string{verify.TopicChanges, verify.TopicState}, nil)
	if err != nil {
		return res, err
	}
	defer func() { _ = consumer.Close() }()

	type instance struct {
		key, hold string
		proc      *stack.Proc
	}
	var inst []*instance
	for n := 1; n <= 2; n++ {
		in := &instance{key: stack.InstanceKey("dispatcher", n), hold: filepath.Join(cfg.LogDir, fmt.Sprintf("hold-%d", n))}
		if in.proc, err = s.StartInstanceWith(ctx, "dispatcher", n, append([]string{"MSGX_DEV_HOLD_SEND=" + in.hold}, kenv...)); err != nil {
			return res, err
		}
		inst = append(inst, in)
	}
	logOf := func(in *instance) string { return filepath.Join(cfg.LogDir, in.key+".log") }
	leader := func() (*instance, int64, error) {
		var holder string
		var epoch int64
		if err := pool.QueryRow(ctx, `SELECT holder, epoch FROM leader_lease WHERE role = 'dispatcher'`).Scan(&holder, &epoch); err != nil {
			return nil, 0, err
		}
		pid, _ := strconv.Atoi(holder[strings.LastIndexByte(holder, ':')+1:])
		for _, in := range inst {
			if in.proc.Pid() == pid {
				return in, epoch, nil
			}
		}
		return nil, 0, fmt.Errorf("leader %s is neither dispatcher", holder)
	}
	// The first leader serves once its producer is up ("loops start").
	if err := until(ctx, "a dispatcher leads", func() (bool, error) {
		for _, in := range inst {
			if n, err := countLines(logOf(in), "dispatcher: loops start"); err != nil || n > 0 {
				return n > 0, err
			}
		}
		return false, nil
	}); err != nil {
		return res, err
	}

	var all []string
	deposed := map[string]int64{} // FLID → the epoch of its round's held leader
	for round := 0; round < cfg.Rounds; round++ {
		start := time.Now()
		l, epochL, err := leader()
		if err != nil {
			return res, err
		}
		var flids []string
		for f := 0; f < cfg.FLIDs; f++ {
			flid := strconv.Itoa(200000 + 100*round + f)
			flids = append(flids, flid)
			deposed[flid] = epochL
		}
		all = append(all, flids...)
		held0, _ := countLines(logOf(l), "dev hold: send held")
		camp0, _ := countLines(logOf(l), "standby: campaigning")
		answered0, _ := countLines(logOf(l), "dev hold: the held send was answered")
		fenced0, _ := countLines(logOf(l), "dev hold: the held send was answered", "producer fenced")
		if err := os.WriteFile(l.hold, nil, 0o644); err != nil {
			return res, err
		}
		if err := enqueueVersion(ctx, pool, flids, 1); err != nil {
			return res, err
		}
		// L read its batch of each target and holds it.
		if err := until(ctx, "the leader holds both batches", func() (bool, error) {
			n, err := countLines(logOf(l), "dev hold: send held")
			return n >= held0+2, err
		}); err != nil {
			return res, err
		}
		if err := l.proc.Signal(syscall.SIGSTOP); err != nil {
			return res, err
		}
		stopped := time.Now()
		var b *instance
		err = until(ctx, "the standby takes over", func() (bool, error) {
			in, epoch, err := leader()
			if err == nil && in != l && epoch > epochL {
				b = in
				return true, nil
			}
			return false, nil
		})
		if err != nil {
			_ = l.proc.Signal(syscall.SIGCONT)
			return res, err
		}
		res.Takeover = max(res.Takeover, time.Since(stopped))
		// B sends L's batch, then newer versions.
		for v := int64(1); v <= 3 && err == nil; v++ {
			if v > 1 {
				if err = enqueueVersion(ctx, pool, flids, v); err != nil {
					break
				}
			}
			err = waitSent(ctx, pool, flids)
		}
		if err != nil {
			_ = l.proc.Signal(syscall.SIGCONT)
			return res, err
		}
		// L resumes and tries to send its stale batch, then goes back to standby.
		if err := os.Remove(l.hold); err != nil {
			return res, err
		}
		if err := l.proc.Signal(syscall.SIGCONT); err != nil {
			return res, err
		}
		if err := until(ctx, "the deposed leader resumes, sends and steps down", func() (bool, error) {
			ans, err := countLines(logOf(l), "dev hold: the held send was answered")
			if err != nil {
				return false, err
			}
			camp, err := countLines(logOf(l), "standby: campaigning")
			return ans >= answered0+2 && camp > camp0, err
		}); err != nil {
			return res, err
		}
		if n, _ := countLines(logOf(l), "dev hold: the held send was answered", "producer fenced"); n >= fenced0+2 {
			res.Fenced++
		}
		res.Rounds++
		cfg.Log("zombie round %d: %s (epoch %d) held and SIGSTOPped, %s took over, %s resumed: %s", round+1, l.key, epochL, b.key, l.key, time.Since(start).Round(100*time.Millisecond))
	}

	// One more version of every flight, and everything read back up to it.
	if err := enqueueVersion(ctx, pool, all, 4); err != nil {
		return res, err
	}
	if err := waitSent(ctx, pool, all); err != nil {
		return res, err
	}
	if err := until(ctx, "the consumer reads the last versions", func() (bool, error) {
		last := map[string]int64{}
		for _, r := range consumer.Records() {
			last[r.Topic+"/"+r.FLID] = max(last[r.Topic+"/"+r.FLID], r.StateVersion)
		}
		for _, f := range all {
			if last[verify.TopicChanges+"/"+f] < 4 || last[verify.TopicState+"/"+f] < 4 {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		return res, err
	}
	recs := consumer.Records()
	res.Records = len(recs)
	res.Problems = zombieProblems(recs, deposed)
	return res, nil
}

// kafkaEnv are the dispatcher settings that reach cluster k (after the stack's: they win).
func kafkaEnv(k kafka.Config) []string {
	env := []string{"MSGX_KAFKA_BROKERS=" + strings.Join(k.Brokers, ",")}
	if k.TLS {
		env = append(env, "MSGX_KAFKA_TLS=true", "MSGX_KAFKA_TLS_CA_FILE="+k.TLSCAFile)
	}
	if k.SASLMechanism != "" {
		env = append(env, "MSGX_KAFKA_SASL_MECHANISM="+k.SASLMechanism, "MSGX_KAFKA_SASL_USER="+k.SASLUser, "MSGX_KAFKA_SASL_PASSWORD="+k.SASLPassword)
	}
	return env
}

// zombieProblems checks the records of the rounds' flights: none of the held leader's epoch,
// epochs and versions never decreasing per flight and topic, versions 1–4 once each on the
// changes topic and the state topic ending at 4.
func zombieProblems(recs []stack.Record, deposed map[string]int64) []string {
	var problems []string
	type last struct{ version, epoch int64 }
	seen := map[string]last{}
	changes := map[string][]int64{}
	for _, r := range recs {
		epochL, ok := deposed[r.FLID]
		if !ok {
			continue
		}
		key := r.Topic + " FLID " + r.FLID
		if r.Epoch == epochL {
			problems = append(problems, fmt.Sprintf("%s: v%d of the deposed leader's epoch %d (offset %d)", key, r.StateVersion, r.Epoch, r.Offset))
		}
		if p, ok := seen[key]; ok {
			if r.StateVersion < p.version {
				problems = append(problems, fmt.Sprintf("%s: v%d (epoch %d) after v%d (epoch %d)", key, r.StateVersion, r.Epoch, p.version, p.epoch))
			}
			if r.Epoch < p.epoch {
				problems = append(problems, fmt.Sprintf("%s: epoch %d after epoch %d", key, r.Epoch, p.epoch))
			}
		}
		seen[key] = last{r.StateVersion, r.Epoch}
		if r.Topic == verify.TopicChanges {
			changes[r.FLID] = append(changes[r.FLID], r.StateVersion)
		}
	}
	for f := range deposed {
		if got := fmt.Sprint(changes[f]); got != "[1 2 3 4]" {
			problems = append(problems, fmt.Sprintf("%s FLID %s: versions %s, want [1 2 3 4]", verify.TopicChanges, f, got))
		}
		if l := seen[verify.TopicState+" FLID "+f]; l.version != 4 {
			problems = append(problems, fmt.Sprintf("%s FLID %s: last version %d, want 4", verify.TopicState, f, l.version))
		}
	}
	return problems
}

// enqueueVersion adds version v of each flight on both targets.
func enqueueVersion(ctx context.Context, pool *pgxpool.Pool, flids []string, v int64) error {
	var evs []event.Event
	for _, f := range flids {
		id, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return err
		}
		payload := json.RawMessage(fmt.Sprintf(`{"flid":%d,"state_version":%d}`, id, v))
		evs = append(evs,
			event.Event{Target: event.TargetMsg, FLID: id, Type: event.Upsert, StateVersion: v, Payload: payload},
			event.Event{Target: event.TargetSchd, FLID: id, Type: event.Upsert, StateVersion: v, Payload: payload})
	}
	return outbox.Enqueue(ctx, pool, time.Now(), evs...)
}

// waitSent waits until every event of flids is SENT, its states included.
func waitSent(ctx context.Context, pool *pgxpool.Pool, flids []string) error {
	return until(ctx, "the events are sent", func() (bool, error) {
		var n int
		err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM msg_event_delivery WHERE partition_key = ANY($1) AND status <> $2)
		     + (SELECT count(*) FROM msg_state_log WHERE partition_key = ANY($1))
		     + (SELECT count(*) FROM msg_state_out WHERE partition_key = ANY($1) AND status <> $2)`, flids, outbox.StatusSent).Scan(&n)
		return n == 0, err
	})
}

// until polls cond every 50 ms until it holds, fails, or zombieWait passes.
func until(ctx context.Context, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(zombieWait)
	for {
		ok, err := cond()
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %s", what, zombieWait)
		}
		if err := Sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

// countLines counts the lines of file that contain every one of subs (a missing file has none).
func countLines(file string, subs ...string) (int, error) {
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n := 0
	for line := range bytes.Lines(b) {
		all := true
		for _, s := range subs {
			all = all && bytes.Contains(line, []byte(s))
		}
		if all {
			n++
		}
	}
	return n, nil
}
