package simulate

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/msgx/msgx/pkg/clock"
)

// The mailbox SQL of the simulator (docs/spec.md §3.1); bound parameters only.
const (
	insertPrefix = `INSERT INTO cminmsgs (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS,
  CMINMSGS_SUBSYSTEM_NAME, CMINMSGS_SUBSYSTEM_SEQUENCE, CMINMSGS_SUBSYSTEM_DATE_SENT,
  CMINMSGS_SUBSYSTEM_SUBTYPE, CMINMSGS_SUBSYSTEM_TYPE) VALUES `
	insertRow = `(?, ?, 'VALID', ?, ?, ?, ?, ?)`
)

// OpenMailbox opens the mailbox database of dsn (go-sql-driver/mysql DSN) for a Writer.
func OpenMailbox(dsn string) (*sql.DB, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse MySQL DSN: %w", err)
	}
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return nil, fmt.Errorf("open mailbox: %w", err)
	}
	return db, nil
}

// Pace is how fast the Writer sends.
type Pace string

// Pacing modes.
const (
	PaceFast     Pace = "fast"     // as fast as possible
	PaceSteady   Pace = "steady"   // WriterConfig.Rate messages per second
	PaceTimeline Pace = "timeline" // the day's own timeline divided by WriterConfig.Compress
)

// WriterConfig configures a Writer. Zero values select the defaults.
type WriterConfig struct {
	// Conns is the number of MySQL connections inserting concurrently (default 4).
	Conns int
	// Pace, Rate (msgs/s, PaceSteady) and Compress (factor, PaceTimeline).
	Pace     Pace
	Rate     float64
	Compress float64
	// Batch is the number of messages per INSERT statement (default 1). Rows of one
	// statement get consecutive ids (InnoDB auto-increment lock mode 0 or 1).
	Batch int
	// HoldShare is the share of transactions that stay open after their insert
	// until HoldFor later messages have committed (out-of-order commits).
	HoldShare float64
	// HoldFor is the largest number of later commits a held transaction waits for (default 5).
	HoldFor int
	// Late lists the indexes of messages whose transactions stay open for LateFor (wall clock)
	// after their insert (see Day.LateCandidates). With LateFor above ingest's
	// MSGX_MAX_COMMIT_DELAY their ids are skipped as gaps and the rows are found later by the
	// re-probe: late rows, processed after messages the AODB sent later (INV-24b).
	Late    []int
	LateFor time.Duration
	// RollbackShare is the share of inserts that are first attempted in a
	// transaction that rolls back (a permanent gap in CMINMSGS_ID) and then
	// inserted again: every message still lands exactly once.
	RollbackShare float64
	// Seed drives the writer's own choices (which transactions hold or roll back).
	Seed uint64
	// Progress, when set, is called after every commit with the number of
	// messages committed so far (from the writer's goroutines; keep it cheap).
	Progress func(committed int)
	// Committed, when set, is called after every commit with the mailbox ids it made visible
	// (firstID … firstID+n-1) and the time of the commit: the start of end-to-end latency.
	Committed func(firstID int64, n int, at time.Time)
	// ReconnectFor is how long the writer keeps trying to get a working connection back after
	// it lost one (a MariaDB restart, a killed session) before Write fails (default 2m;
	// negative: it fails at once).
	ReconnectFor time.Duration
}

// Validate reports an unusable configuration.
func (c WriterConfig) Validate() error {
	var errs []error
	switch c.Pace {
	case "", PaceFast:
	case PaceSteady:
		if c.Rate <= 0 {
			errs = append(errs, errors.New("steady pace needs a positive rate"))
		}
	case PaceTimeline:
		if c.Compress <= 0 {
			errs = append(errs, errors.New("timeline pace needs a positive compression factor"))
		}
	default:
		errs = append(errs, fmt.Errorf("unknown pace %q (fast, steady, timeline)", c.Pace))
	}
	if c.Conns < 0 || c.Conns > 64 {
		errs = append(errs, fmt.Errorf("conns %d outside 1..64", c.Conns))
	}
	if c.Batch < 0 || c.Batch > 1000 {
		errs = append(errs, fmt.Errorf("batch %d outside 1..1000", c.Batch))
	}
	if c.HoldShare < 0 || c.HoldShare > 1 || c.RollbackShare < 0 || c.RollbackShare > 1 {
		errs = append(errs, errors.New("hold and rollback shares must be within 0..1"))
	}
	if len(c.Late) > 0 && c.LateFor <= 0 {
		errs = append(errs, errors.New("late transactions need a positive LateFor"))
	}
	return errors.Join(errs...)
}

// Written is the result of a Write.
type Written struct {
	// IDs holds the CMINMSGS_ID of every message, by message index.
	IDs []int64
	// Gaps holds the ids consumed by rolled-back inserts (never committed).
	Gaps []int64
	// OutOfOrder counts commits that happened while a lower id was still uncommitted.
	OutOfOrder int
	// Resent counts messages inserted again because the connection was lost before their
	// commit was known (the first insert was rolled back by the server): they have a later id.
	Resent int
	// Reconnects counts connections replaced after a connection loss.
	Reconnects int
	// Late holds the indexes of the messages committed LateFor after their insert
	// (WriterConfig.Late).
	Late []int
}

// Writer inserts simulated messages into cminmsgs.
//
// Ordering: the INSERT statements run one after the other (the next starts when
// the previous one has its id), so CMINMSGS_ID follows send order; only the
// commits overlap and reorder. A held transaction stays open until a number of
// later messages have committed, so readers see id gaps that fill later; a
// rolled-back attempt leaves a gap that never fills.
//
// Connection loss: when a connection drops (MariaDB restarted or killed, the session killed),
// the writer replaces it and resumes where it was, idempotently: an insert whose transaction
// was lost is sent again (the server rolled it back: its old id is a gap), and a commit whose
// answer was lost is looked up by its id and content before anything is sent again, so no
// message is lost or written twice. A message sent again gets a later id; with one connection
// and no held transactions there is at most one open transaction, so the ids still follow send
// order.
type Writer struct {
	db  *sql.DB
	cfg WriterConfig
}

// NewWriter returns a Writer on db (see OpenMailbox).
func NewWriter(db *sql.DB, cfg WriterConfig) (*Writer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Conns == 0 {
		cfg.Conns = 4
	}
	if cfg.Batch == 0 {
		cfg.Batch = 1
	}
	if cfg.HoldFor == 0 {
		cfg.HoldFor = 5
	}
	if cfg.Pace == "" {
		cfg.Pace = PaceFast
	}
	if cfg.ReconnectFor == 0 {
		cfg.ReconnectFor = 2 * time.Minute
	}
	return &Writer{db: db, cfg: cfg}, nil
}

type job struct {
	msgs     []Message
	first    int  // index of msgs[0] in the day
	rollback bool // insert then roll back
	held     bool
	late     bool // held for LateFor
	release  chan struct{}
	ids      chan insertResult
}

type insertResult struct {
	id  int64
	err error
}

type done struct {
	w    int
	job  *job
	last int // highest message index committed by this job
	err  error
}

// Write inserts msgs in order and returns their ids. It stops at the first
// database error or when ctx ends; held transactions are then rolled back.
func (w *Writer) Write(ctx context.Context, msgs []Message) (Written, error) {
	res := Written{IDs: make([]int64, len(msgs))}
	if len(msgs) == 0 {
		return res, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rng := rand.New(rand.NewPCG(w.cfg.Seed, w.cfg.Seed^0x5bd1e995))

	conns := make([]*sql.Conn, w.cfg.Conns)
	for i := range conns {
		c, err := w.db.Conn(ctx)
		if err != nil {
			for _, c := range conns[:i] {
				_ = c.Close()
			}
			return res, fmt.Errorf("open mailbox connection: %w", err)
		}
		conns[i] = c
	}
	jobs := make([]chan *job, len(conns))
	doneCh := make(chan done, len(conns))
	var wg sync.WaitGroup
	var mu sync.Mutex
	committed := 0
	uncommitted := map[int]bool{} // message index of open (inserted, uncommitted) jobs
	for i, c := range conns {
		jobs[i] = make(chan *job)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { _ = c.Close() }() // the connection in use at the end (run replaces a lost one)
			for j := range jobs[i] {
				err := w.run(ctx, &c, j, func(id int64, reconnects int) {
					mu.Lock()
					res.Reconnects += reconnects
					if id != 0 && !j.rollback {
						res.Resent += len(j.msgs)
						for k := range j.msgs {
							res.IDs[j.first+k] = id + int64(k)
						}
					}
					mu.Unlock()
				}, func() {
					mu.Lock()
					for k := range uncommitted {
						if k < j.first {
							res.OutOfOrder++
							break
						}
					}
					delete(uncommitted, j.first)
					committed += len(j.msgs)
					n := committed
					mu.Unlock()
					if w.cfg.Progress != nil {
						w.cfg.Progress(n)
					}
				})
				doneCh <- done{w: i, job: j, last: j.first + len(j.msgs) - 1, err: err}
			}
		}()
	}

	idle := make([]int, 0, len(conns))
	for i := range conns {
		idle = append(idle, i)
	}
	type hold struct {
		j       *job
		release int // release once a message with a higher index than this has committed
	}
	var held []hold
	busy, lateOpen := 0, 0 // lateOpen: late jobs (held for LateFor) still running
	var firstErr error
	handle := func(d done) {
		busy--
		if d.job.late {
			lateOpen--
		}
		idle = append(idle, d.w)
		if d.err != nil && firstErr == nil {
			firstErr = d.err
		}
		keep := held[:0]
		for _, h := range held {
			if d.last >= h.release {
				close(h.j.release)
			} else {
				keep = append(keep, h)
			}
		}
		held = keep
	}
	acquire := func() (int, error) {
		for len(idle) == 0 {
			if busy == len(held)+lateOpen && len(held) > 0 { // every connection is held: release the oldest
				close(held[0].j.release)
				held = held[1:]
			}
			select {
			case d := <-doneCh:
				handle(d)
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}
		c := idle[len(idle)-1]
		idle = idle[:len(idle)-1]
		busy++
		return c, nil
	}
	send := func(j *job) error {
		c, err := acquire()
		if err != nil {
			return err
		}
		j.ids = make(chan insertResult, 1)
		j.release = make(chan struct{})
		if !j.rollback {
			mu.Lock()
			uncommitted[j.first] = true
			mu.Unlock()
		}
		jobs[c] <- j
		r := <-j.ids // the next INSERT waits for this id: ids follow send order
		if r.err != nil {
			return r.err
		}
		if j.rollback {
			res.Gaps = append(res.Gaps, r.id)
			return nil
		}
		mu.Lock()
		for k := range j.msgs {
			res.IDs[j.first+k] = r.id + int64(k)
		}
		mu.Unlock()
		switch {
		case j.late:
			lateOpen++
			for k := range j.msgs {
				res.Late = append(res.Late, j.first+k)
			}
			go func() {
				t := time.NewTimer(w.cfg.LateFor)
				defer t.Stop()
				select {
				case <-t.C:
				case <-ctx.Done():
				}
				close(j.release)
			}()
		case j.held:
			held = append(held, hold{j: j, release: j.first + len(j.msgs) - 1 + 1 + rng.IntN(w.cfg.HoldFor)})
		default:
			close(j.release)
		}
		return nil
	}

	start := time.Now()
	var err error
	for i := 0; i < len(msgs) && err == nil && firstErr == nil; i += w.cfg.Batch {
		batch := msgs[i:min(i+w.cfg.Batch, len(msgs))]
		if err = w.pace(ctx, start, msgs[0].At, i, batch[0].At); err != nil {
			break
		}
		if rng.Float64() < w.cfg.RollbackShare {
			if err = send(&job{msgs: batch[:1], first: i, rollback: true}); err != nil {
				break
			}
		}
		j := &job{msgs: batch, first: i, held: rng.Float64() < w.cfg.HoldShare}
		for k := range batch {
			if slices.Contains(w.cfg.Late, i+k) {
				j.late, j.held = true, false
			}
		}
		err = send(j)
		// collect finished jobs without blocking
		for drained := false; !drained; {
			select {
			case d := <-doneCh:
				handle(d)
			default:
				drained = true
			}
		}
	}
	for _, h := range held {
		close(h.j.release)
	}
	held = nil
	for busy > 0 {
		handle(<-doneCh)
	}
	for _, ch := range jobs {
		close(ch)
	}
	wg.Wait()
	if err == nil {
		err = firstErr
	}
	if err != nil {
		return res, fmt.Errorf("write mailbox: %w", err)
	}
	return res, nil
}

// pace waits until message i (sent at simulated time at) is due.
func (w *Writer) pace(ctx context.Context, start, first time.Time, i int, at time.Time) error {
	var due time.Duration
	switch w.cfg.Pace {
	case PaceSteady:
		due = time.Duration(float64(i) / w.cfg.Rate * float64(time.Second))
	case PaceTimeline:
		due = time.Duration(float64(at.Sub(first)) / w.cfg.Compress)
	default:
		return nil
	}
	d := time.Until(start.Add(due))
	if d <= 0 || clock.WallSleep(ctx, d) {
		return nil
	}
	return ctx.Err()
}

// run executes one job on *c: insert, report the id, wait for the release, then commit (or roll
// back). When the connection is lost it replaces *c and carries on (see Writer): resent is told
// the new id of a message inserted again and the number of connections replaced.
func (w *Writer) run(ctx context.Context, c **sql.Conn, j *job, resent func(id int64, reconnects int), onCommit func()) error {
	reported := false // the id went to the sender
	var unknown int64 // the id of an insert whose commit's outcome is unknown
	var lostSince time.Time
	for {
		var err error
		if unknown != 0 {
			found, lerr := w.landed(ctx, *c, unknown, j.msgs[0])
			switch {
			case lerr == nil && found:
				w.committed(unknown, j, onCommit)
				return nil
			case lerr == nil:
				unknown = 0 // rolled back by the server: insert it again
			case !connectionLost(lerr):
				return fmt.Errorf("look up message %d after a lost commit: %w", j.first, lerr)
			default:
				err = lerr // lost again: reconnect and look again
			}
		}
		if err == nil {
			var id int64
			var committing bool
			id, committing, err = w.attempt(ctx, *c, j, &reported, resent)
			if err == nil {
				if !j.rollback {
					w.committed(id, j, onCommit)
				}
				return nil
			}
			if !connectionLost(err) {
				if !reported {
					j.ids <- insertResult{err: err}
				}
				return err
			}
			if committing {
				unknown = id
			}
		}
		if lostSince.IsZero() {
			lostSince = time.Now()
		}
		nc, n, rerr := w.reconnect(ctx, *c, lostSince)
		resent(0, n)
		if rerr != nil {
			err = fmt.Errorf("%w (connection lost: %v)", rerr, err)
			if !reported {
				j.ids <- insertResult{err: err}
			}
			return err
		}
		*c = nc
		if j.rollback && reported {
			return nil // rolled back anyway: its id is a gap
		}
	}
}

// attempt runs the job once on c. committing is true when the connection was lost during the
// commit (its outcome is unknown); id is the id of the insert.
func (w *Writer) attempt(ctx context.Context, c *sql.Conn, j *job, reported *bool, resent func(int64, int)) (id int64, committing bool, err error) {
	tx, err := c.BeginTx(ctx, nil)
	if err != nil {
		return 0, false, fmt.Errorf("begin: %w", err)
	}
	q, args := insertSQL(j.msgs)
	r, err := tx.ExecContext(ctx, q, args...)
	if err == nil {
		id, err = r.LastInsertId()
	}
	if err != nil {
		_ = tx.Rollback()
		return 0, false, fmt.Errorf("insert message %d: %w", j.first, err)
	}
	if !*reported {
		*reported = true
		j.ids <- insertResult{id: id}
	} else if !j.rollback {
		resent(id, 0)
	}
	if j.rollback {
		if err := tx.Rollback(); err != nil {
			return id, false, fmt.Errorf("roll back message %d: %w", j.first, err)
		}
		return id, false, nil
	}
	select {
	case <-j.release:
	case <-ctx.Done():
		_ = tx.Rollback()
		return id, false, ctx.Err()
	}
	if err := tx.Commit(); err != nil {
		return id, true, fmt.Errorf("commit message %d: %w", j.first, err)
	}
	return id, false, nil
}

func (w *Writer) committed(id int64, j *job, onCommit func()) {
	if w.cfg.Committed != nil {
		w.cfg.Committed(id, len(j.msgs), time.Now())
	}
	onCommit()
}

// reconnect closes the lost connection and opens another one, retrying (with backoff) until it
// answers, ctx ends or ReconnectFor has passed since the loss; n counts the new connections.
func (w *Writer) reconnect(ctx context.Context, old *sql.Conn, since time.Time) (*sql.Conn, int, error) {
	_ = old.Close()
	wait := 50 * time.Millisecond
	for {
		c, err := w.db.Conn(ctx)
		if err == nil {
			if err = c.PingContext(ctx); err == nil {
				return c, 1, nil
			}
			_ = c.Close()
		}
		if ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		if w.cfg.ReconnectFor < 0 || time.Since(since) > w.cfg.ReconnectFor {
			return nil, 0, fmt.Errorf("reconnect to the mailbox within %s: %w", max(w.cfg.ReconnectFor, 0), err)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, 0, ctx.Err()
		}
		wait = min(2*wait, time.Second)
	}
}

// landedSQL finds a committed message by its id and content: after a restart the server may give
// a lost id to another insert.
const landedSQL = `SELECT count(*) FROM cminmsgs WHERE CMINMSGS_ID = ? AND CMINMSGS_SUBSYSTEM_NAME = ?
  AND CMINMSGS_SUBSYSTEM_SEQUENCE = ? AND CMINMSGS_CLOB_MSG = ?`

// landed reports whether the insert of m with id committed.
func (w *Writer) landed(ctx context.Context, c *sql.Conn, id int64, m Message) (bool, error) {
	var n int
	err := c.QueryRowContext(ctx, landedSQL, id, m.SNDR, strconv.FormatInt(m.SEQN, 10), string(m.Raw)).Scan(&n)
	return n > 0, err
}

// connectionLost reports whether err means the connection (or the server) went away, so that
// the transaction's work is rolled back by the server, or its commit's outcome unknown.
func connectionLost(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1053, // server shutdown in progress
			1927, // connection was killed
			2006, // server has gone away
			2013: // lost connection during query
			return true
		}
		return false
	}
	var ne net.Error
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) ||
		errors.Is(err, sql.ErrConnDone) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.As(err, &ne)
}

// wallLayout formats DATETIME values as the airport's wall clock, whatever the
// driver's time zone setting.
const wallLayout = "2006-01-02 15:04:05"

func insertSQL(msgs []Message) (string, []any) {
	var b strings.Builder
	b.WriteString(insertPrefix)
	args := make([]any, 0, 7*len(msgs))
	for i, m := range msgs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(insertRow)
		args = append(args, string(m.Raw), m.At.Format(wallLayout), m.SNDR, strconv.FormatInt(m.SEQN, 10),
			m.At.Format(wallLayout), m.Subtype, m.Type)
	}
	return b.String(), args
}
