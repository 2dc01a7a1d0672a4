package chaos

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/msgx/msgx/pkg/dev/simulate"
	"github.com/msgx/msgx/pkg/dev/stack"
	"github.com/msgx/msgx/pkg/dev/verify"
	"github.com/msgx/msgx/pkg/ingest"
	"github.com/msgx/msgx/pkg/roles"
)

// Short is the short form (make test): one SIGKILL of each binary, one PostgreSQL restart, one
// broker freeze of 20 s.
func Short() []Scenario {
	return []Scenario{killEach(), pgRestart("fast"), brokerFreeze(20 * time.Second)}
}

// Full is the whole suite (make chaos).
func Full() []Scenario {
	var out []Scenario
	for _, b := range stack.Binaries {
		out = append(out, kills(b, 10))
	}
	return append(out,
		standbySIGSTOP(),
		zombieDispatcher(20),
		pgRestart("fast"),
		pgRestart("immediate"),
		pgFailover(true),
		pgFailover(false),
		pgStray(),
		pgFailoverPurge(),
		pgRestorePhysical(), // before pg-restore-pitr, which leaves WAL archiving on
		pgRestorePITR(),
		pgRestoreLogical(),
		pgRestoreConfirmed(),
		mariaDBRestart(),
		brokerFreeze(60*time.Second),
		brokerRestart(),
		rowLock(60*time.Second),
		pgOutagePastHeadDeadline(),
		hostileRows(),
		lateRow(),
	)
}

const allHold = "final state = model, every row terminal once with its marker, Kafka = SENT events, versions never decrease"

func kills(bin string, n int) Scenario {
	return Scenario{
		Name:     fmt.Sprintf("kill-%s", bin),
		Did:      fmt.Sprintf("SIGKILL %s %d× at random moments while the day is written; the supervisor restarts it", bin, n),
		Expected: allHold,
		Fault: func(ctx context.Context, r *Run) error {
			var slowest time.Duration
			for range n {
				if err := r.randomMoment(ctx, r.Feed/time.Duration(n)); err != nil {
					return err
				}
				d, err := r.Kill(ctx, bin)
				if err != nil {
					return err
				}
				slowest = max(slowest, d)
			}
			r.Recovered()
			r.Observe("%d kills; serving again within %s of a kill at most (restart backoff included)", n, slowest.Round(100*time.Millisecond))
			return nil
		},
	}
}

func killEach() Scenario {
	return Scenario{
		Name:     "kill-each-once",
		Did:      "SIGKILL ingest, processor, dispatcher and jobs once each, at random moments while the day is written",
		Expected: allHold,
		Fault: func(ctx context.Context, r *Run) error {
			var took []string
			for _, b := range stack.Binaries {
				if err := r.randomMoment(ctx, r.Feed/5); err != nil {
					return err
				}
				d, err := r.Kill(ctx, b)
				if err != nil {
					return err
				}
				took = append(took, fmt.Sprintf("%s %s", b, d.Round(100*time.Millisecond)))
			}
			r.Recovered()
			r.Observe("serving again after: %s", strings.Join(took, ", "))
			return nil
		},
	}
}

func standbySIGSTOP() Scenario {
	const pause = 9 * time.Second // past the 5 s lease (MSGX_LEADER_SESSION_TIMEOUT)
	return Scenario{
		Name:     "standby-sigstop",
		Did:      "two instances of each binary; each role's leader SIGSTOPped for 9 s (lease 5 s) in turn, then SIGCONT",
		Expected: "the standby takes over; the paused leader, fenced, writes and publishes nothing; " + allHold,
		Standbys: true,
		Fault: func(ctx context.Context, r *Run) error {
			var took []string
			for _, role := range stack.Binaries {
				if err := Sleep(ctx, 2*time.Second); err != nil {
					return err
				}
				key, p, err := r.Leader(ctx, role)
				if err != nil {
					return err
				}
				at := time.Now()
				if err := p.Signal(syscall.SIGSTOP); err != nil {
					return err
				}
				d, terr := r.waitLeaderOtherThan(ctx, role, p.Pid(), at)
				_ = Sleep(ctx, time.Until(at.Add(pause)))
				if err := p.Signal(syscall.SIGCONT); err != nil {
					return err
				}
				if terr != nil {
					r.Problem("%s: %v", role, terr)
					continue
				}
				took = append(took, fmt.Sprintf("%s (%s) %s", role, key, d.Round(100*time.Millisecond)))
			}
			r.Recovered()
			r.Observe("takeover after: %s", strings.Join(took, ", "))
			return nil
		},
	}
}

func zombieDispatcher(rounds int) Scenario {
	return Scenario{
		Name: "zombie-dispatcher",
		Did: fmt.Sprintf("two dispatcher binaries; %d rounds: the leader reads a batch of both targets and is held before sending "+
			"(MSGX_DEV_HOLD_SEND), SIGSTOPped past its 2 s lease; the standby takes over and sends the batch and two newer versions; "+
			"the held leader is SIGCONTed and sends its stale batch", rounds),
		Expected: "the broker fences every send of the deposed leader; a read_committed consumer sees no record of its epoch, " +
			"per FLID epochs and versions never decrease on msgx.flight.changes and msgx.flight.state, every version once on changes",
		Alone: func(ctx context.Context, r *Run, binDir, logDir, pgURL string) error {
			// The send hold is the dispatcher's test hook, which production refuses
			// (MSGX_DEV_HOLD_SEND): the dispatchers run in development, otherwise as production
			// does, on the suite's Apache Kafka when there is one (the hold needs no broker hook).
			zc := ZombieConfig{BinDir: binDir, LogDir: logDir, PGURL: pgURL, Rounds: rounds, Log: r.Logf,
				DispatcherPGURL: r.Access.PG[roles.Dispatcher], BrokerAuth: r.Servers.shape.kafkaAuth()}
			on := onDevBroker
			if r.Kafka != nil {
				kc := r.Servers.shape.kafkaConfig(r.Kafka.Addrs())
				zc.Kafka, on = &kc, fmt.Sprintf("%d-node Apache Kafka", len(r.Kafka.Nodes()))
			}
			r.Configuration = "dispatcher role + TLS (PG verify-full) + Kafka TLS/SCRAM-SHA-512 on " + on +
				", MSGX_ENV=development (MSGX_DEV_HOLD_SEND, the send hold, is a test hook production refuses)"
			res, err := Zombie(ctx, zc)
			if err != nil {
				return err
			}
			r.Recovery = res.Takeover
			r.Observe("%d rounds; the broker answered the deposed leader's sends \"producer fenced\" in %d; slowest takeover %s; %d records read",
				res.Rounds, res.Fenced, res.Takeover.Round(100*time.Millisecond), res.Records)
			if res.Fenced != rounds {
				r.Problem("the deposed leader's sends were fenced by the broker in %d of %d rounds", res.Fenced, rounds)
			}
			for _, p := range res.Problems {
				r.Problem("%s", p)
			}
			return nil
		},
	}
}

func pgRestart(mode string) Scenario {
	name, did := "pg-restart", "PostgreSQL restarted (fast shutdown, start) while the day is written"
	if mode == "immediate" {
		name, did = "pg-immediate", "PostgreSQL stopped immediately (like a crash) and started at once while the day is written"
	}
	return Scenario{
		Name: name, Did: did, Expected: "no binary exits; " + allHold,
		Fault: func(ctx context.Context, r *Run) error {
			if err := Sleep(ctx, r.Feed/3); err != nil {
				return err
			}
			at := time.Now()
			if err := r.Servers.PG.Stop(mode); err != nil {
				return err
			}
			if err := r.Servers.PG.Start(); err != nil {
				return err
			}
			r.Recovered()
			r.Observe("PostgreSQL down for %s", time.Since(at).Round(100*time.Millisecond))
			return nil
		},
	}
}

func mariaDBRestart() Scenario {
	return Scenario{
		Name:     "mariadb-restart",
		Did:      "MariaDB restarted while the day is written (the writer reconnects and resumes)",
		Expected: "no binary exits; no intended row lost or written twice; " + allHold,
		Writer: func(c *simulate.WriterConfig) {
			c.Conns, c.HoldShare = 1, 0 // one open transaction at most: a resent row keeps its place
		},
		Fault: func(ctx context.Context, r *Run) error {
			if err := Sleep(ctx, r.Feed/3); err != nil {
				return err
			}
			at := time.Now()
			if err := r.Servers.MySQL.Restart(); err != nil {
				return err
			}
			r.Recovered()
			r.Observe("MariaDB down for %s", time.Since(at).Round(100*time.Millisecond))
			return nil
		},
	}
}

// checkTimeout is the dispatcher's Kafka readiness check timeout (MSGX_KAFKA_CHECK_TIMEOUT's
// default); readySlack is what a /readyz request may take beyond it on a loaded machine.
const (
	checkTimeout = time.Second
	readySlack   = time.Second
)

func brokerFreeze(d time.Duration) Scenario {
	return Scenario{
		Name:      fmt.Sprintf("broker-freeze-%ds", int(d.Seconds())),
		DevBroker: "its process is frozen with SIGSTOP, then thawed",
		Did:       fmt.Sprintf("Kafka broker frozen (SIGSTOP) for %s while the day is written, then SIGCONT; the dispatcher's /readyz polled throughout", d),
		Expected: fmt.Sprintf("the dispatcher's /readyz answers 503 within the check timeout (%s, +%s slack) while frozen and 200 again afterwards; "+
			"it logs \"kafka send blocked\"; ingest and the processor go on; the dispatcher catches up; every event once by (flid, version); ", checkTimeout, readySlack) + allHold,
		ExactlyOnce: true,
		Fault: func(ctx context.Context, r *Run) error {
			if err := Sleep(ctx, r.Feed/4); err != nil {
				return err
			}
			disp := r.Stack.Proc("dispatcher")
			if disp == nil {
				return fmt.Errorf("the dispatcher is not running")
			}
			dlog := filepath.Join(r.LogDir, "dispatcher.log")
			warned0, err := countLines(dlog, "kafka send blocked")
			if err != nil {
				return err
			}
			if code, took, err := readyz(ctx, disp.Addr); err != nil || code != http.StatusOK {
				r.Problem("the dispatcher was not ready before the freeze: %d after %s (%v)", code, took, err)
			}
			p := r.Stack.BrokerProc()
			if err := p.Signal(syscall.SIGSTOP); err != nil {
				return err
			}
			at := time.Now()
			before, _ := processed(ctx, r)
			// /readyz while frozen: the first request must answer 503 within the check timeout,
			// and every later one too.
			first, firstTook, ferr := readyz(ctx, disp.Addr)
			polls, ready := 1, 0
			for err == nil && time.Until(at.Add(d)) > 0 {
				err = Sleep(ctx, min(500*time.Millisecond, time.Until(at.Add(d))))
				if time.Until(at.Add(d)) > 500*time.Millisecond {
					if code, _, rerr := readyz(ctx, disp.Addr); rerr == nil && code == http.StatusOK {
						ready++
					}
					polls++
				}
			}
			during, _ := processed(ctx, r)
			if cerr := p.Signal(syscall.SIGCONT); cerr != nil {
				return cerr
			}
			if err != nil {
				return err
			}
			resumed := time.Now()
			back := time.Duration(-1)
			for time.Since(resumed) < time.Minute {
				if code, _, rerr := readyz(ctx, disp.Addr); rerr == nil && code == http.StatusOK {
					back = time.Since(resumed)
					break
				}
				if err := Sleep(ctx, 100*time.Millisecond); err != nil {
					return err
				}
			}
			r.Recovered()
			warned, err := countLines(dlog, "kafka send blocked")
			if err != nil {
				return err
			}
			r.Observe("messages processed while the broker was frozen: %d; first /readyz after the SIGSTOP: %d in %s; %d of %d polls while frozen answered 200; "+
				"ready again %s after the SIGCONT; \"kafka send blocked\" logged %d×", during-before, first, firstTook.Round(10*time.Millisecond), ready, polls,
				back.Round(10*time.Millisecond), warned-warned0)
			switch {
			case ferr != nil:
				r.Problem("/readyz during the freeze: %v", ferr)
			case first != http.StatusServiceUnavailable:
				r.Problem("/readyz answered %d during the freeze, want 503", first)
			case firstTook > checkTimeout+readySlack:
				r.Problem("/readyz took %s to answer 503, more than the check timeout %s + %s", firstTook, checkTimeout, readySlack)
			}
			if ready > 0 {
				r.Problem("/readyz answered 200 in %d of %d polls while the broker was frozen", ready, polls)
			}
			if back < 0 {
				r.Problem("/readyz not 200 again within 1m of the SIGCONT")
			}
			if warned <= warned0 {
				r.Problem("no \"kafka send blocked\" warning while the broker was frozen")
			}
			if during <= before {
				r.Problem("the processor did not go on while the broker was frozen")
			}
			return nil
		},
	}
}

// readyz asks a binary's /readyz; it returns the status code and how long the answer took.
func readyz(ctx context.Context, addr string) (int, time.Duration, error) {
	code, _, took, err := askReadyz(ctx, addr)
	return code, took, err
}

// askReadyz asks a binary's /readyz; it returns the status code, the body and how long the
// answer took.
func askReadyz(ctx context.Context, addr string) (int, []byte, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", nil)
	if err != nil {
		return 0, nil, 0, err
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, time.Since(start), err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, body, time.Since(start), err
}

func brokerRestart() Scenario {
	return Scenario{
		Name:      "broker-restart",
		DevBroker: "its process is stopped and started again on its data directory",
		Did:       "Kafka broker (data in a directory) stopped and started again while the day is written",
		Expected:  "no binary exits; the dispatcher reconnects; " + allHold,
		Fault: func(ctx context.Context, r *Run) error {
			if err := Sleep(ctx, r.Feed/3); err != nil {
				return err
			}
			at := time.Now()
			_ = r.Stack.StopBroker()
			if err := r.Stack.StartBroker(ctx); err != nil {
				return err
			}
			r.Recovered()
			r.Observe("broker down for %s", time.Since(at).Round(100*time.Millisecond))
			return nil
		},
	}
}

func rowLock(d time.Duration) Scenario {
	return Scenario{
		Name:     fmt.Sprintf("row-lock-%ds", int(d.Seconds())),
		Did:      fmt.Sprintf("one processed mailbox row locked (SELECT … FOR UPDATE) for %s while the day is written", d),
		Expected: "the other rows' markers keep coming; the locked row's marker follows the release; " + allHold,
		Fault: func(ctx context.Context, r *Run) error {
			if err := Sleep(ctx, r.Feed/4); err != nil {
				return err
			}
			id := r.maxCommitted.Load()
			tx, err := r.Mailbox.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer func() { _ = tx.Rollback() }()
			if _, err := tx.ExecContext(ctx, `SELECT CMINMSGS_ID FROM cminmsgs WHERE CMINMSGS_ID = ? FOR UPDATE`, id); err != nil {
				return fmt.Errorf("lock row %d: %w", id, err)
			}
			if err := Sleep(ctx, 5*time.Second); err != nil {
				return err
			}
			before, err := marked(ctx, r)
			if err != nil {
				return err
			}
			if err := Sleep(ctx, d-5*time.Second); err != nil {
				return err
			}
			during, err := marked(ctx, r)
			if err != nil {
				return err
			}
			committed := r.maxCommitted.Load()
			if err := tx.Rollback(); err != nil {
				return err
			}
			r.Recovered()
			r.Observe("row %d locked; markers written meanwhile: %d", id, during-before)
			if during <= before && committed > id {
				r.Problem("no marker written in %s while row %d was locked (rows up to %d committed meanwhile)", d-5*time.Second, id, committed)
			}
			return nil
		},
	}
}

func pgOutagePastHeadDeadline() Scenario {
	const outage = 25 * time.Second
	return Scenario{
		Name:     "pg-outage-past-head-deadline",
		Did:      "PostgreSQL stopped for 25 s, longer than the head deadline (MSGX_HEAD_DEADLINE=10s), while the day is written",
		Expected: "an outage is not the message's fault: no message ends DEAD EXHAUSTED; " + allHold,
		Env:      []string{"MSGX_HEAD_DEADLINE=10s"},
		Fault: func(ctx context.Context, r *Run) error {
			if err := Sleep(ctx, r.Feed/3); err != nil {
				return err
			}
			if err := r.Servers.PG.Stop("fast"); err != nil {
				return err
			}
			err := Sleep(ctx, outage)
			if serr := r.Servers.PG.Start(); serr != nil {
				return serr
			}
			if err != nil {
				return err
			}
			r.Recovered()
			r.Observe("PostgreSQL down for %s", outage)
			return nil
		},
	}
}

// hostile are mailbox rows no AODB should send: each must end DEAD, nothing may crash, and no
// file's contents may come back.
var hostile = []struct{ name, typ, raw string }{
	{"non-XML", "FLOP", "this is not XML at all"},
	{"5 MB", "FLOP", "<MSG><META><TYPE>FLOP</TYPE></META>" + strings.Repeat("<X>abcdefghij</X>", 5<<20/17) + "</MSG>"},
	{"NUL bytes", "FLOP", "<MSG>\x00\x00<META>\x00</META></MSG>"},
	{"billion laughs", "FLOP", `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;"><!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;"><!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">]><MSG>&lol4;</MSG>`},
	{"external entity", "FLOP", `<?xml version="1.0"?><!DOCTYPE m [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><MSG><META><TYPE>FLOP</TYPE></META><DATA>&xxe;</DATA></MSG>`},
	{"unknown TYPE", "ZZZZ", `<MSG><META><SNDR>AODB</SNDR><SEQN>1</SEQN><TYPE>ZZZZ</TYPE><STYP>UPD</STYP></META></MSG>`},
}

func hostileRows() Scenario {
	return Scenario{
		Name:     "hostile-rows",
		Did:      "6 hostile mailbox rows among the day's (non-XML, 5 MB, NUL bytes, billion laughs, external entity, unknown TYPE)",
		Expected: "each ends DEAD; no binary exits; no file contents leak; " + allHold,
		Fault: func(ctx context.Context, r *Run) error {
			if err := Sleep(ctx, r.Feed/3); err != nil {
				return err
			}
			for i, h := range hostile {
				res, err := r.Mailbox.ExecContext(ctx, `INSERT INTO cminmsgs (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS,
  CMINMSGS_SUBSYSTEM_NAME, CMINMSGS_SUBSYSTEM_SEQUENCE, CMINMSGS_SUBSYSTEM_DATE_SENT, CMINMSGS_SUBSYSTEM_SUBTYPE, CMINMSGS_SUBSYSTEM_TYPE)
  VALUES (?, NOW(), 'VALID', 'HSTL', ?, NOW(), 'UPD', ?)`, h.raw, strconv.Itoa(900000+i), h.typ)
				if err != nil {
					return fmt.Errorf("insert the %s row: %w", h.name, err)
				}
				id, err := res.LastInsertId()
				if err != nil {
					return err
				}
				r.Expect(id, verify.Want{Status: "DEAD", Class: verify.AnyClass})
			}
			r.Recovered()
			r.Observe("%d hostile rows written", len(hostile))
			return nil
		},
		Check: func(ctx context.Context, r *Run) {
			var leaked int
			if err := r.Pool.QueryRow(ctx, `SELECT count(*) FROM proc_state WHERE reason LIKE '%root:x:0%' OR raw LIKE '%root:x:0%'`).Scan(&leaked); err != nil {
				r.Problem("check for leaked file contents: %v", err)
			} else if leaked > 0 {
				r.Problem("%d proc_state rows carry /etc/passwd contents", leaked)
			}
		},
	}
}

var seqnRE = regexp.MustCompile(`<SEQN>\d+</SEQN>`)

// lateRowHold is how long the late row's transaction stays open: past MSGX_MAX_COMMIT_DELAY
// (production's 30 s), so ingest skips its id as a gap first, and 10 s more, so the rows behind
// the gap (the later update among them) are processed before it commits.
const lateRowHold = ingest.MinMaxCommitDelay + 10*time.Second

func lateRow() Scenario {
	const hold = lateRowHold
	var lateID int64
	return Scenario{
		Name:     "late-row",
		Did:      fmt.Sprintf("a stale copy of an applied update inserted in a transaction committed %d s later (after ingest skipped its id as a gap at MSGX_MAX_COMMIT_DELAY %d s; a later update of the same field of the flight committed meanwhile)", int(hold.Seconds()), int(ingest.MinMaxCommitDelay.Seconds())),
		Expected: "the late row ends terminal (SKIPPED stale:late when the later update was processed first) and does not regress the flight (INV-24b): " + allHold,
		Fault: func(ctx context.Context, r *Run) error {
			pick, later := lateRowPick(r.Day)
			if pick < 0 {
				return fmt.Errorf("no suitable message for the late row")
			}
			m := r.Day.Messages[pick]
			// 3 % of the feed after the original is written (the writer paces the day evenly).
			if err := Sleep(ctx, time.Duration(float64(r.Feed)*(float64(pick)/float64(len(r.Day.Messages))+0.03))); err != nil {
				return err
			}
			raw := seqnRE.ReplaceAllString(string(m.Raw), fmt.Sprintf("<SEQN>%d</SEQN>", m.SEQN+500000))
			tx, err := r.Mailbox.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer func() { _ = tx.Rollback() }()
			res, err := tx.ExecContext(ctx, `INSERT INTO cminmsgs (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS,
  CMINMSGS_SUBSYSTEM_NAME, CMINMSGS_SUBSYSTEM_SEQUENCE, CMINMSGS_SUBSYSTEM_DATE_SENT, CMINMSGS_SUBSYSTEM_SUBTYPE, CMINMSGS_SUBSYSTEM_TYPE)
  VALUES (?, ?, 'VALID', ?, ?, ?, ?, ?)`, raw, m.At.Format("2006-01-02 15:04:05"), m.SNDR, strconv.FormatInt(m.SEQN+500000, 10),
				m.At.Format("2006-01-02 15:04:05"), m.Subtype, m.Type)
			if err != nil {
				return err
			}
			id, err := res.LastInsertId()
			if err != nil {
				return err
			}
			if err := Sleep(ctx, hold); err != nil {
				return err
			}
			if err := tx.Commit(); err != nil {
				return err
			}
			r.Expect(id, verify.Want{Status: verify.AnyStatus})
			lateID = id
			r.Recovered()
			r.Observe("late row %d (copy of message %d, %s FLID %d; message %d sets the same field later) committed after %s",
				id, pick, m.Subtype, m.FLID, later, hold)
			return nil
		},
		Check: func(ctx context.Context, r *Run) { checkLate(ctx, r, lateID) },
	}
}

// checkLate reports how the late row ended, and that ingest found it late (after skipping its
// id as a gap): otherwise the scenario did not test a late row at all.
func checkLate(ctx context.Context, r *Run, id int64) {
	var status, reason string
	var late bool
	if err := r.Pool.QueryRow(ctx, `SELECT status, coalesce(reason, ''), late FROM proc_state WHERE msg_id = $1`, id).Scan(&status, &reason, &late); err != nil {
		r.Problem("read the late row %d: %v", id, err)
		return
	}
	r.Observe("it ended %s %s; found late: %t", status, reason, late)
	if !late {
		r.Problem("row %d was not found late: ingest did not skip its id as a gap before it committed", id)
	}
}

// lateRowPick chooses the message the late row copies: an applied single-unit FLOP (in 10–50 %
// of the day) whose unit the next applied FLOP of the flight with the same subtype sets again
// 8–30 % of the day later. The late row is inserted 3 % of the feed after the original (so
// nothing in mailbox order between the original and the late row's id sets the unit) and held
// lateRowHold (longer than the default feed), so the later message commits and is processed
// first: without INV-24b the copy would bring the older value back. It returns both indexes, or -1.
func lateRowPick(day simulate.Day) (int, int) {
	n := len(day.Messages)
	single := map[string]bool{"ESTT": true, "ACTT": true, "CNCL": true, "BOTM": true, "LACL": true, "EOBT": true,
		"TOBT": true, "STND": true, "PSDT": true, "GTDT": true, "CKDT": true, "CLDT": true, "CHDT": true, "CHOT": true, "ABTM": true}
	good := func(m simulate.Message) bool {
		return m.Outcome == simulate.OutcomeApplied && m.FLID != 0 && m.Change != nil && single[m.Subtype]
	}
	for i := n / 10; i < n/2; i++ {
		m := day.Messages[i]
		if !good(m) {
			continue
		}
		for j := i + 1; j < n; j++ {
			o := day.Messages[j]
			if o.FLID != m.FLID || o.Subtype != m.Subtype {
				continue
			}
			if good(o) && j-i >= n*8/100 && j-i <= n*30/100 {
				return i, j
			}
			break
		}
	}
	return -1, -1
}

// processed counts terminal proc_state rows.
func processed(ctx context.Context, r *Run) (int64, error) {
	var n int64
	err := r.Pool.QueryRow(ctx, `SELECT count(*) FROM proc_state WHERE status IN ('SUCCEEDED', 'SKIPPED', 'DEAD')`).Scan(&n)
	return n, err
}

// marked counts mailbox rows with their processed marker.
func marked(ctx context.Context, r *Run) (int64, error) {
	var n int64
	err := r.Mailbox.QueryRowContext(ctx, `SELECT count(*) FROM cminmsgs WHERE CMINMSGS_DATE_PROCESSED IS NOT NULL`).Scan(&n)
	return n, err
}
