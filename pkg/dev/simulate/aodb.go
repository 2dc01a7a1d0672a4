package simulate

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/msgx/msgx/pkg/sis"
)

// The simulated AODB's mailbox SQL (docs/spec.md §3.1): it reads msgx's requests from coutmsgs,
// marks them sent as the AODB's transport does, and answers into cminmsgs.
const (
	aodbPendingSQL = `SELECT COUTMSGS_ID, COUTMSGS_CLOB_MSG FROM coutmsgs
 WHERE COUTMSGS_ID > ? AND COUTMSGS_DATE_SENT IS NULL ORDER BY COUTMSGS_ID LIMIT 100`
	aodbMarkSentSQL = `UPDATE coutmsgs SET COUTMSGS_DATE_SENT = ? WHERE COUTMSGS_ID = ? AND COUTMSGS_DATE_SENT IS NULL`
)

// Answer is how the simulated AODB answers requests.
type Answer string

// Answer modes.
const (
	AnswerOnTime Answer = "on-time" // at the next poll
	AnswerLate   Answer = "late"    // AODBConfig.Late after the request was picked up
	AnswerTwice  Answer = "twice"   // two answers (distinct SEQN) at the next poll
	AnswerNever  Answer = "never"   // picked up (DATE_SENT set) but never answered
)

// AODBModel is what the simulated AODB knows and answers from.
type AODBModel struct {
	// Schedule holds the flights (as schedule records) it answers an RQFD from, by operation day.
	Schedule []Flight
	// Lists holds, per reference list TYPE, the records (the XML after META) of its list RESP.
	Lists map[string][]byte
	// RefKeys holds, per reference list TYPE, the record keys of Lists (sorted).
	RefKeys map[string][]string
	// Location is the airport zone: operation days of SODT, DTTM.
	Location *time.Location
}

// AODBModel returns the AODB's knowledge after the day's schedule and reference lists: the
// records of every good SCHD DNLD/ADFT (the last record per FLID wins) and every reference list
// DNLD. Operations (FLOPs) are not in it: a schedule answer carries schedule records only.
func (d Day) AODBModel() AODBModel {
	m := AODBModel{Lists: map[string][]byte{}, RefKeys: map[string][]string{}, Location: d.Config.Location}
	byFLID := map[int64]Flight{}
	for _, msg := range d.Messages {
		if msg.Outcome != OutcomeApplied {
			continue
		}
		switch {
		case msg.Type == "SCHD" && (msg.Subtype == "DNLD" || msg.Subtype == "ADFT"):
			for _, f := range msg.Records {
				byFLID[f.FLID] = f.clone()
			}
		case msg.Subtype == "DNLD" && len(msg.RefKeys) > 0:
			m.Lists[msg.Type] = bodyAfterMeta(msg.Raw)
			m.RefKeys[msg.Type] = msg.RefKeys
		}
	}
	for _, f := range byFLID {
		f.State = StateActive
		m.Schedule = append(m.Schedule, f)
	}
	slices.SortFunc(m.Schedule, func(a, b Flight) int { return int(a.FLID - b.FLID) })
	return m
}

// OperationDay is f's operation day: the calendar date of SODT in loc, at UTC midnight.
func (f Flight) OperationDay(loc *time.Location) time.Time {
	l := f.Scheduled.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), 0, 0, 0, 0, time.UTC)
}

// Expected returns the flight states that answering every day of the model produces: each
// schedule flight ACTIVE with its derived code-share list.
func (m AODBModel) Expected(from, to time.Time) Expected {
	var fs []Flight
	for _, f := range m.Schedule {
		if d := f.OperationDay(m.Location); !d.Before(dayOf(from)) && !d.After(dayOf(to)) {
			fs = append(fs, f.clone())
		}
	}
	return Expected{Flights: withCodeShares(fs), RefLists: m.RefKeys}
}

func dayOf(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// bodyAfterMeta returns the part of a rendered message between </META> and </MSG>.
func bodyAfterMeta(raw []byte) []byte {
	i := bytes.Index(raw, []byte("</META>\n"))
	j := bytes.LastIndex(raw, []byte("</MSG>"))
	if i < 0 || j < i {
		return nil
	}
	return slices.Clone(raw[i+len("</META>\n") : j])
}

// AODBConfig configures the simulated AODB.
type AODBConfig struct {
	Answer Answer
	// Late is how long after picking a request up an AnswerLate answer is written (default 1h).
	Late time.Duration
	// Now is the time source of DTTM, DATE_SENT and Late (default time.Now).
	Now func() time.Time
	// SNDR and FirstSEQN of the answers (defaults AODB, 900000).
	SNDR      string
	FirstSEQN int64
}

// AODB is the simulated AODB: each Poll picks up msgx's new requests from coutmsgs (setting
// COUTMSGS_DATE_SENT) and writes the answers that are due into cminmsgs.
type AODB struct {
	db    *sql.DB
	model AODBModel
	cfg   AODBConfig

	mu       sync.Mutex
	seqn     int64
	lastSeen int64
	held     []heldAnswer
	stats    AODBStats
}

// AODBStats counts what the simulated AODB did.
type AODBStats struct {
	Requests int // requests picked up
	Answers  int // answers written
	Held     int // answers waiting (late)
	Ignored  int // requests not understood
}

type heldAnswer struct {
	due time.Time
	msg Message
}

// NewAODB returns a simulated AODB over the mailbox db (OpenMailbox).
func NewAODB(db *sql.DB, model AODBModel, cfg AODBConfig) *AODB {
	if cfg.Answer == "" {
		cfg.Answer = AnswerOnTime
	}
	if cfg.Late == 0 {
		cfg.Late = time.Hour
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.SNDR == "" {
		cfg.SNDR = "AODB"
	}
	if cfg.FirstSEQN == 0 {
		cfg.FirstSEQN = 900000
	}
	if model.Location == nil {
		model.Location = time.UTC
	}
	return &AODB{db: db, model: model, cfg: cfg, seqn: cfg.FirstSEQN}
}

// SetAnswer changes how later requests are answered.
func (a *AODB) SetAnswer(mode Answer) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cfg.Answer = mode
}

// Stats returns the counters.
func (a *AODB) Stats() AODBStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.stats
	s.Held = len(a.held)
	return s
}

// Run polls every interval until ctx ends.
func (a *AODB) Run(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := a.Poll(ctx); err != nil && ctx.Err() == nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Poll picks up new requests and writes the answers due now; it returns the answers written.
func (a *AODB) Poll(ctx context.Context) ([]Message, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	rows, err := a.db.QueryContext(ctx, aodbPendingSQL, a.lastSeen)
	if err != nil {
		return nil, fmt.Errorf("aodb: read coutmsgs: %w", err)
	}
	type req struct {
		id   int64
		text string
	}
	var reqs []req
	for rows.Next() {
		var r req
		if err := rows.Scan(&r.id, &r.text); err != nil {
			rows.Close()
			return nil, fmt.Errorf("aodb: scan coutmsgs: %w", err)
		}
		reqs = append(reqs, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("aodb: read coutmsgs: %w", err)
	}
	now := a.cfg.Now().In(a.model.Location)
	for _, r := range reqs {
		if _, err := a.db.ExecContext(ctx, aodbMarkSentSQL, now.Format(wallLayout), r.id); err != nil {
			return nil, fmt.Errorf("aodb: mark coutmsgs %d sent: %w", r.id, err)
		}
		a.lastSeen = r.id
		a.stats.Requests++
		n := 1
		switch a.cfg.Answer {
		case AnswerNever:
			continue
		case AnswerTwice:
			n = 2
		}
		for range n {
			msg, err := a.answer([]byte(r.text), now)
			if err != nil {
				a.stats.Ignored++
				break
			}
			due := now
			if a.cfg.Answer == AnswerLate {
				due = now.Add(a.cfg.Late)
			}
			a.held = append(a.held, heldAnswer{due: due, msg: msg})
		}
	}
	var out []Message
	keep := a.held[:0]
	for _, h := range a.held {
		if h.due.After(now) {
			keep = append(keep, h)
			continue
		}
		h.msg.At = now
		out = append(out, h.msg)
	}
	a.held = keep
	for _, m := range out {
		// The answer's DTTM is when it is written.
		m.Raw = restamp(m.Raw, now)
		q, args := insertSQL([]Message{m})
		if _, err := a.db.ExecContext(ctx, q, args...); err != nil {
			return nil, fmt.Errorf("aodb: write answer: %w", err)
		}
		a.stats.Answers++
	}
	return out, nil
}

// answer builds the answer to one request.
func (a *AODB) answer(raw []byte, now time.Time) (Message, error) {
	m, err := sis.Decode(raw, sis.Options{Location: a.model.Location})
	if err != nil {
		return Message{}, fmt.Errorf("aodb: decode request: %w", err)
	}
	var w xw
	msg := Message{At: now, SNDR: a.cfg.SNDR, SEQN: a.seqn, Subtype: "RESP", Outcome: OutcomeApplied, DuplicateOf: -1}
	switch m.Meta.TYPE {
	case "RQFD":
		from, ok1 := sis.ParseDateTime(between(raw, "<STDB>", "</STDB>"), a.model.Location)
		to, ok2 := sis.ParseDateTime(between(raw, "<STDE>", "</STDE>"), a.model.Location)
		if !ok1 || !ok2 {
			return Message{}, errors.New("aodb: RQFD without a readable STDB/STDE")
		}
		var fs []Flight
		for _, f := range a.model.Schedule {
			if s := f.Scheduled; !s.Before(from) && !s.After(to.Add(time.Minute-time.Nanosecond)) {
				fs = append(fs, f)
			}
		}
		msg.Type = "SCHD"
		w.start(meta{sndr: msg.SNDR, seqn: msg.SEQN, at: now, typ: "SCHD", styp: "RESP"}, true)
		w.open("SCHD")
		w.leaf("RECS", strconv.Itoa(len(fs)))
		for i := range fs {
			w.fltr(&fs[i])
		}
		w.close("SCHD")
		msg.Records = fs
	case "RQRD":
		code := m.Meta.STYP
		body, ok := a.model.Lists[code]
		if !ok {
			body = []byte("\t<RECS>0</RECS>\n")
		}
		msg.Type = code
		w.start(meta{sndr: msg.SNDR, seqn: msg.SEQN, at: now, typ: code, styp: "RESP"}, false)
		w.b.Write(body)
		msg.RefKeys = a.model.RefKeys[code]
	default:
		return Message{}, fmt.Errorf("aodb: not a request: %s", m.Meta.TYPE)
	}
	msg.Raw = w.end()
	a.seqn++
	return msg, nil
}

func between(raw []byte, open, close string) string {
	i := bytes.Index(raw, []byte(open))
	if i < 0 {
		return ""
	}
	rest := raw[i+len(open):]
	j := bytes.Index(rest, []byte(close))
	if j < 0 {
		return ""
	}
	return string(rest[:j])
}

// restamp rewrites the META DTTM of a rendered message.
func restamp(raw []byte, at time.Time) []byte {
	i := bytes.Index(raw, []byte("<DTTM>"))
	if i < 0 {
		return raw
	}
	out := slices.Clone(raw)
	copy(out[i+len("<DTTM>"):], stamp(at))
	return out
}

// RunningAODB is a simulated AODB polling in the background (StartAODB).
type RunningAODB struct {
	*AODB
	db     *sql.DB
	cancel context.CancelFunc
	done   chan error
}

// StartAODB opens the mailbox at dsn and runs a simulated AODB answering from model, polling
// every interval, until Stop (the dev stack, make demo).
func StartAODB(dsn string, model AODBModel, cfg AODBConfig, interval time.Duration) (*RunningAODB, error) {
	db, err := OpenMailbox(dsn)
	if err != nil {
		return nil, fmt.Errorf("aodb: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &RunningAODB{AODB: NewAODB(db, model, cfg), db: db, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- r.Run(ctx, interval) }()
	return r, nil
}

// Stop ends the polling and closes the mailbox connection; it returns the error that stopped
// the polling early, if any.
func (r *RunningAODB) Stop() error {
	r.cancel()
	err := <-r.done
	return errors.Join(err, r.db.Close())
}
