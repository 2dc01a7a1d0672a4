package simulate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
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
}

// Writer inserts simulated messages into cminmsgs.
//
// Ordering: the INSERT statements run one after the other (the next starts when
// the previous one has its id), so CMINMSGS_ID follows send order; only the
// commits overlap and reorder. A held transaction stays open until a number of
// later messages have committed, so readers see id gaps that fill later; a
// rolled-back attempt leaves a gap that never fills.
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
	return &Writer{db: db, cfg: cfg}, nil
}

type job struct {
	msgs     []Message
	first    int  // index of msgs[0] in the day
	rollback bool // insert then roll back
	held     bool
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
			defer c.Close()
			for j := range jobs[i] {
				err := w.run(ctx, c, j, func() {
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
	busy := 0
	var firstErr error
	handle := func(d done) {
		busy--
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
			if busy == len(held) && len(held) > 0 { // every connection is held: release the oldest
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
		for k := range j.msgs {
			res.IDs[j.first+k] = r.id + int64(k)
		}
		if j.held {
			held = append(held, hold{j: j, release: j.first + len(j.msgs) - 1 + 1 + rng.IntN(w.cfg.HoldFor)})
		} else {
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
		err = send(&job{msgs: batch, first: i, held: rng.Float64() < w.cfg.HoldShare})
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
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run executes one job on c: insert, report the id, wait for the release, then
// commit (or roll back).
func (w *Writer) run(ctx context.Context, c *sql.Conn, j *job, onCommit func()) error {
	tx, err := c.BeginTx(ctx, nil)
	if err != nil {
		j.ids <- insertResult{err: fmt.Errorf("begin: %w", err)}
		return err
	}
	q, args := insertSQL(j.msgs)
	r, err := tx.ExecContext(ctx, q, args...)
	var id int64
	if err == nil {
		id, err = r.LastInsertId()
	}
	if err != nil {
		_ = tx.Rollback()
		err = fmt.Errorf("insert message %d: %w", j.first, err)
		j.ids <- insertResult{err: err}
		return err
	}
	j.ids <- insertResult{id: id}
	if j.rollback {
		if err := tx.Rollback(); err != nil {
			return fmt.Errorf("roll back message %d: %w", j.first, err)
		}
		return nil
	}
	select {
	case <-j.release:
	case <-ctx.Done():
		_ = tx.Rollback()
		return ctx.Err()
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit message %d: %w", j.first, err)
	}
	if w.cfg.Committed != nil {
		w.cfg.Committed(id, len(j.msgs), time.Now())
	}
	onCommit()
	return nil
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
