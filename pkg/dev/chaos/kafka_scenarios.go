package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/msgx/msgx/pkg/dev/apachekafka"
	"github.com/msgx/msgx/pkg/dev/broker"
	"github.com/msgx/msgx/pkg/dev/verify"
)

// Kafka is the suite on a real three-node Apache Kafka cluster (make chaos-kafka): broker
// crashes, an outage below min.insync.replicas, a rolling restart and a frozen broker. The
// scenarios share k's cluster, one after the other.
func Kafka(k *RealKafka) []Scenario {
	return []Scenario{
		kafkaKillLeader(k),
		kafkaKillCoordinator(k),
		kafkaTwoDown(k),
		kafkaRollingRestart(k),
		kafkaFreeze(k, 60*time.Second),
	}
}

// kafkaDid prefixes what a Kafka scenario does.
const kafkaDid = "three Apache Kafka nodes (RF 3, min.insync.replicas 2), the dispatcher given all three: "

// kafkaScenario completes a Kafka scenario: the shared cluster, the settings, what always holds.
func kafkaScenario(k *RealKafka, sc Scenario) Scenario {
	sc.Kafka, sc.Env = k, append(append([]string{}, scenarioKafkaEnv...), sc.Env...)
	sc.Did = kafkaDid + sc.Did
	sc.Expected += "; no binary exits; " + allHold
	return sc
}

// kafkaDown is how long a killed broker stays down before it is started again.
const kafkaDown = 20 * time.Second

func kafkaKillLeader(k *RealKafka) Scenario {
	return kafkaScenario(k, Scenario{
		Name:     "kafka-kill-leader",
		Did:      "SIGKILL of the leader of the busiest msgx.flight.changes partition a third into the day; started again 20 s later",
		Expected: "leadership moves to an in-sync replica; the dispatcher sends on with two replicas; nothing acknowledged is lost",
		Fault: func(ctx context.Context, r *Run) error {
			if err := Sleep(ctx, r.Feed/3); err != nil {
				return err
			}
			p, recs := r.busiestPartition()
			leader := func(ctx context.Context) (*apachekafka.Node, error) {
				return r.Kafka.Leader(ctx, verify.TopicChanges, p)
			}
			victim, err := leader(ctx)
			if err != nil {
				return err
			}
			pending, _ := pendingCount(ctx, r)
			at := time.Now()
			if err := victim.Kill(); err != nil {
				return err
			}
			moved, err := waitMoved(ctx, at, victim, leader)
			if err != nil {
				r.Problem("leadership of %s/%d: %v", verify.TopicChanges, p, err)
			}
			return r.bringBack(ctx, victim, at, fmt.Sprintf("node %d (leader of %s/%d, %d of its records read, %d events pending) killed; "+
				"leadership moved after %s", victim.ID, verify.TopicChanges, p, recs, pending, moved.Round(100*time.Millisecond)))
		},
	})
}

func kafkaKillCoordinator(k *RealKafka) Scenario {
	return kafkaScenario(k, Scenario{
		Name: "kafka-kill-coordinator",
		Did: "SIGKILL of the transaction coordinator of the dispatcher's msgx.flight.changes transactional id (" + changesTxnID +
			") a third into the day, while it sends; started again 20 s later",
		Expected: "the coordinator moves to another node; the open transaction is aborted or completed, never half-visible; the dispatcher sends on",
		Fault: func(ctx context.Context, r *Run) error {
			if err := Sleep(ctx, r.Feed/3); err != nil {
				return err
			}
			coord := func(ctx context.Context) (*apachekafka.Node, error) { return r.Kafka.TxnCoordinator(ctx, changesTxnID) }
			victim, err := coord(ctx)
			if err != nil {
				return err
			}
			leads := r.leads(ctx, victim)
			pending, _ := pendingCount(ctx, r)
			at := time.Now()
			if err := victim.Kill(); err != nil {
				return err
			}
			moved, err := waitMoved(ctx, at, victim, coord)
			if err != nil {
				r.Problem("coordinator of %s: %v", changesTxnID, err)
			}
			return r.bringBack(ctx, victim, at, fmt.Sprintf("node %d (coordinator of %s, leader of %d of the %d topic partitions, %d events pending) killed; "+
				"the coordinator moved after %s", victim.ID, changesTxnID, leads, 2*broker.Partitions, pending, moved.Round(100*time.Millisecond)))
		},
	})
}

// bringBack waits until kafkaDown has passed since at, restarts the killed node, waits until
// every replica is in sync again, marks the fault over and records what happened.
func (r *Run) bringBack(ctx context.Context, victim *apachekafka.Node, at time.Time, what string) error {
	if err := Sleep(ctx, time.Until(at.Add(kafkaDown))); err != nil {
		return err
	}
	back, insync, err := restartNode(ctx, r.Kafka, victim)
	if err != nil {
		return err
	}
	r.Recovered()
	pause, err := r.sendPause(ctx, at, time.Now())
	if err != nil {
		return err
	}
	r.Observe("%s; longest pause in sends %s; node %d started again after %s down, serving after %s, every replica in sync %s later",
		what, pause.Round(100*time.Millisecond), victim.ID, kafkaDown, back.Round(100*time.Millisecond), insync.Round(100*time.Millisecond))
	return nil
}

// restartNode starts a node again (stopping it gracefully first if it runs) and waits until the
// cluster serves with it and every replica is in sync; it returns how long each took.
func restartNode(ctx context.Context, c *apachekafka.Cluster, n *apachekafka.Node) (time.Duration, time.Duration, error) {
	back, err := startAgain(ctx, n)
	if err != nil {
		return 0, 0, err
	}
	synced := time.Now()
	if err := waitInSync(ctx, c, 2*time.Minute); err != nil {
		return back, 0, fmt.Errorf("after node %d's restart: %w", n.ID, err)
	}
	return back, time.Since(synced), nil
}

// startAgain restarts a node (Node.Restart) and returns how long it took until the cluster
// served with it.
func startAgain(ctx context.Context, n *apachekafka.Node) (time.Duration, error) {
	rctx, cancel := context.WithTimeout(ctx, apachekafka.StartTimeout)
	defer cancel()
	began := time.Now()
	if err := n.Restart(rctx); err != nil {
		return 0, fmt.Errorf("restart node %d: %w", n.ID, err)
	}
	return time.Since(began), nil
}

// waitMoved asks who (a partition's leader, a coordinator) until it names a node other than
// old, for a minute at most, and returns the time since at.
func waitMoved(ctx context.Context, at time.Time, old *apachekafka.Node, who func(context.Context) (*apachekafka.Node, error)) (time.Duration, error) {
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		n, err := who(wctx)
		if err == nil && n.ID != old.ID {
			return time.Since(at), nil
		}
		if wctx.Err() != nil {
			return time.Since(at), fmt.Errorf("not moved off node %d within 1m (last error: %v)", old.ID, err)
		}
		if err := Sleep(wctx, 200*time.Millisecond); err != nil && ctx.Err() != nil {
			return 0, ctx.Err()
		}
	}
}

// leads counts the partitions of both topics whose leader is n.
func (r *Run) leads(ctx context.Context, n *apachekafka.Node) int {
	count := 0
	for _, topic := range []string{verify.TopicChanges, verify.TopicState} {
		for p := range int32(broker.Partitions) {
			if l, err := r.Kafka.Leader(ctx, topic, p); err == nil && l.ID == n.ID {
				count++
			}
		}
	}
	return count
}

// pendingCount counts the events not yet sent.
func pendingCount(ctx context.Context, r *Run) (int64, error) {
	var n int64
	err := r.Pool.QueryRow(ctx, `SELECT count(*) FROM msg_event_delivery WHERE status = 'PENDING'`).Scan(&n)
	return n, err
}

func kafkaTwoDown(k *RealKafka) Scenario {
	const down = 40 * time.Second // past the dispatcher's send timeout (MSGX_KAFKA_SEND_TIMEOUT)
	return kafkaScenario(k, Scenario{
		Name: "kafka-two-down",
		Did: fmt.Sprintf("two of the three nodes SIGKILLed a quarter into the day (below min.insync.replicas, and the controller quorum lost) for %s; "+
			"the dispatcher's /readyz polled; one node started again, then the other once the dispatcher sent again", down),
		Expected: "nothing acknowledged is lost; /readyz answers 503 (kafka check failing) within 15 s of the kill and until a node returns; " +
			"the dispatcher resumes on its own when one node returns",
		Feed: 90 * time.Second,
		Fault: func(ctx context.Context, r *Run) error {
			if err := Sleep(ctx, r.Feed/4); err != nil {
				return err
			}
			disp := r.Stack.Proc("dispatcher")
			if disp == nil {
				return fmt.Errorf("the dispatcher is not running")
			}
			if code, _, _, err := askReadyz(ctx, disp.Addr); err != nil || code != http.StatusOK {
				r.Problem("the dispatcher was not ready before the outage: %d (%v)", code, err)
			}
			nodes := r.Kafka.Nodes()
			survivor := nodes[r.Rand.IntN(len(nodes))]
			var victims []*apachekafka.Node
			for _, n := range nodes {
				if n != survivor {
					victims = append(victims, n)
				}
			}
			at := time.Now()
			for _, n := range victims {
				if err := n.Kill(); err != nil {
					return err
				}
			}
			rd, err := watchReadiness(ctx, disp.Addr, at.Add(down))
			if err != nil {
				return err
			}
			acked, err := sentBetween(ctx, r, at.Add(10*time.Second), at.Add(down))
			if err != nil {
				return err
			}
			sent0, err := sentCount(ctx, r)
			if err != nil {
				return err
			}
			back, err := startAgain(ctx, victims[0]) // the other is still down: no full in-sync set yet
			if err != nil {
				return err
			}
			returned := time.Now()
			resumed, rerr := waitSending(ctx, r, sent0, returned, 3*time.Minute)
			ready := waitReady(ctx, disp.Addr, returned, time.Minute)
			if _, _, err := restartNode(ctx, r.Kafka, victims[1]); err != nil {
				return err
			}
			r.Recovered()
			r.Observe("nodes %d and %d killed, node %d left; /readyz while down: %s; events marked SENT from 10 s after the kill until a node returned: %d; "+
				"node %d serving again after %s; the dispatcher sent again %s after that and was ready %s after it",
				victims[0].ID, victims[1].ID, survivor.ID, rd, acked, victims[0].ID, back.Round(100*time.Millisecond),
				resumed.Round(100*time.Millisecond), ready.Round(100*time.Millisecond))
			if rerr != nil {
				r.Problem("the dispatcher did not resume on its own after node %d returned: %v", victims[0].ID, rerr)
			}
			rd.check(r, 15*time.Second)
			return nil
		},
	})
}

// readinessWatch is what /readyz answered while the cluster was broken.
type readinessWatch struct {
	polls, unready int
	first          time.Duration // the first 503 after the fault began (-1: none)
	readyAfter     int           // 200s after the first 503
	kafka          string        // the kafka check's last answer
}

func (w readinessWatch) String() string {
	first := "never"
	if w.first >= 0 {
		first = "after " + w.first.Round(100*time.Millisecond).String()
	}
	return fmt.Sprintf("%d of %d polls 503, the first %s, %d polls 200 after it, kafka check %q", w.unready, w.polls, first, w.readyAfter, short(w.kafka, 160))
}

// check records the expectation that /readyz answered 503 within within of the fault and from
// then on until the fault ended.
func (w readinessWatch) check(r *Run, within time.Duration) {
	switch {
	case w.first < 0:
		r.Problem("/readyz never answered 503 in %d polls while the brokers were down (kafka check %q)", w.polls, w.kafka)
	case w.first > within:
		r.Problem("/readyz first answered 503 %s after the fault, later than %s", w.first.Round(100*time.Millisecond), within)
	case w.readyAfter > 0:
		r.Problem("/readyz answered 200 in %d polls after its first 503, while the brokers were still down", w.readyAfter)
	}
}

// watchReadiness polls /readyz every half second until until.
func watchReadiness(ctx context.Context, addr string, until time.Time) (readinessWatch, error) {
	w := readinessWatch{first: -1}
	began := time.Now()
	for time.Until(until) > 0 {
		code, body, _, err := askReadyz(ctx, addr)
		w.polls++
		switch {
		case err == nil && code == http.StatusServiceUnavailable:
			w.unready++
			if w.first < 0 {
				w.first = time.Since(began)
			}
		case err == nil && code == http.StatusOK && w.first >= 0:
			w.readyAfter++
		}
		var rd struct {
			Checks map[string]string `json:"checks"`
		}
		if err == nil && json.Unmarshal(body, &rd) == nil {
			w.kafka = rd.Checks["kafka"]
		}
		if err := Sleep(ctx, min(500*time.Millisecond, time.Until(until))); err != nil {
			return w, err
		}
	}
	return w, nil
}

// waitReady polls /readyz until it answers 200, for d at most, and returns the time since
// since (-1 when it never did).
func waitReady(ctx context.Context, addr string, since time.Time, d time.Duration) time.Duration {
	for began := time.Now(); time.Since(began) < d; {
		if code, _, _, err := askReadyz(ctx, addr); err == nil && code == http.StatusOK {
			return time.Since(since)
		}
		if Sleep(ctx, 200*time.Millisecond) != nil {
			break
		}
	}
	return -1
}

// sentBetween counts the events marked SENT between from and to.
func sentBetween(ctx context.Context, r *Run, from, to time.Time) (int64, error) {
	var n int64
	err := r.Pool.QueryRow(ctx, `SELECT count(*) FROM msg_event_delivery WHERE sent_at >= $1 AND sent_at < $2`, from, to).Scan(&n)
	return n, err
}

func kafkaRollingRestart(k *RealKafka) Scenario {
	return kafkaScenario(k, Scenario{
		Name: "kafka-rolling-restart",
		Did: "rolling restart while the day is written: each node in turn stopped gracefully (SIGTERM, controlled shutdown) and started again; " +
			"the next only once every replica is in sync and the dispatcher's /readyz answers 200",
		Expected: "the dispatcher follows the leaders from node to node; its /readyz answers 200 again after each step",
		Feed:     120 * time.Second,
		Fault: func(ctx context.Context, r *Run) error {
			if err := Sleep(ctx, r.Feed/8); err != nil {
				return err
			}
			disp := r.Stack.Proc("dispatcher")
			if disp == nil {
				return fmt.Errorf("the dispatcher is not running")
			}
			at := time.Now()
			var steps []string
			for _, n := range r.Kafka.Nodes() {
				began := time.Now()
				back, insync, err := restartNode(ctx, r.Kafka, n)
				if err != nil {
					return err
				}
				ready := waitReady(ctx, disp.Addr, began, time.Minute)
				if ready < 0 {
					r.Problem("/readyz not 200 within 1m of node %d's restart", n.ID)
				}
				steps = append(steps, fmt.Sprintf("node %d serving after %s, in sync %s later, dispatcher ready %s after the stop",
					n.ID, back.Round(100*time.Millisecond), insync.Round(100*time.Millisecond), ready.Round(100*time.Millisecond)))
			}
			r.Recovered()
			pause, err := r.sendPause(ctx, at, time.Now())
			if err != nil {
				return err
			}
			r.Observe("%s; the roll took %s; longest pause in sends %s", strings.Join(steps, "; "),
				time.Since(at).Round(time.Second), pause.Round(100*time.Millisecond))
			return nil
		},
	})
}

func kafkaFreeze(k *RealKafka, d time.Duration) Scenario {
	return kafkaScenario(k, Scenario{
		Name: fmt.Sprintf("kafka-freeze-%ds", int(d.Seconds())),
		Did: fmt.Sprintf("the node coordinating the dispatcher's msgx.flight.changes transactions frozen (SIGSTOP) for %s while the day is written, "+
			"then thawed (SIGCONT); the dispatcher's /readyz polled", d),
		Expected: "the controller fences the frozen node and moves its partitions and the coordinator; the dispatcher sends on; " +
			"the thawed node rejoins and catches up",
		Feed: 90 * time.Second,
		Fault: func(ctx context.Context, r *Run) error {
			if err := Sleep(ctx, r.Feed/6); err != nil {
				return err
			}
			disp := r.Stack.Proc("dispatcher")
			if disp == nil {
				return fmt.Errorf("the dispatcher is not running")
			}
			victim, err := r.Kafka.TxnCoordinator(ctx, changesTxnID)
			if err != nil {
				return err
			}
			leads := r.leads(ctx, victim)
			at := time.Now()
			if err := victim.Freeze(); err != nil {
				return err
			}
			// The live nodes' answers: a question the cluster's client sent to the frozen node
			// would wait out its timeout and time the move late.
			moved, merr := waitMoved(ctx, at, victim, func(ctx context.Context) (*apachekafka.Node, error) {
				return r.Kafka.TxnCoordinatorLive(ctx, changesTxnID)
			})
			rd, err := watchReadiness(ctx, disp.Addr, at.Add(d))
			if terr := victim.Thaw(); terr != nil {
				return terr
			}
			if err != nil {
				return err
			}
			thawed := time.Now()
			if err := waitInSync(ctx, r.Kafka, 2*time.Minute); err != nil {
				return fmt.Errorf("after the thaw: %w", err)
			}
			insync := time.Since(thawed)
			r.Recovered()
			pause, err := r.sendPause(ctx, at, time.Now())
			if err != nil {
				return err
			}
			r.Observe("node %d (coordinator, leader of %d of the %d topic partitions, broker %d of %d in the dispatcher's MSGX_KAFKA_BROKERS) frozen; "+
				"the coordinator moved after %s; longest pause in sends %s; "+
				"/readyz while frozen (not a criterion: it also follows the leader's sends): %s; every replica in sync %s after the thaw",
				victim.ID, leads, 2*broker.Partitions, slices.Index(r.Stack.Brokers, victim.Addr())+1, len(r.Stack.Brokers),
				moved.Round(100*time.Millisecond), pause.Round(100*time.Millisecond), rd, insync.Round(100*time.Millisecond))
			if merr != nil {
				r.Problem("coordinator of %s: %v", changesTxnID, merr)
			}
			return nil
		},
	})
}
