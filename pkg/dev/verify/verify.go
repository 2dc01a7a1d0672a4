// Package verify compares what msgx made of a simulated day with the simulator's model: the
// end-to-end test (e2e) and the chaos suite (pkg/dev/chaos) use the same comparison. Every check
// returns its problems, one line each (none: the check passed), so a test fails with them and the
// chaos suite reports them.
//
// The checks: every written message got its intended outcome (one terminal proc_state row per
// mailbox row) and its processed marker (a row an AODB purged, Input.Purged, had it); every flight's stored state equals the model's, field
// by field; the last msgx.flight.state record per FLID is that state; msgx.flight.changes holds
// every version of every FLID once duplicates are dropped, in order; no topic shows a FLID's
// state_version going down; the records on Kafka are exactly the events marked SENT. A row
// committed late (found by ingest's re-probe) is still compared with the model: the state must
// not change (INV-24b), and its outcome is what simulate.Day.Overtaken says.
package verify

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/msgx/msgx/pkg/dev/simulate"
	"github.com/msgx/msgx/pkg/dev/stack"
	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/flight"
	"github.com/msgx/msgx/pkg/flightstore"
	"github.com/msgx/msgx/pkg/procstate"
)

// The topics.
const (
	TopicChanges = "msgx.flight.changes"
	TopicState   = "msgx.flight.state"
)

// Want is the intended outcome of a mailbox row: its proc_state status and error class, and (for
// a duplicate) its reason.
type Want struct {
	Status, Class, Reason string
}

// AnyClass as Want.Class accepts any error class; AnyStatus as Want.Status any terminal status.
const (
	AnyClass  = "*"
	AnyStatus = "*"
)

// Intended maps the simulator's intended outcome of message i onto its proc_state row: applied →
// SUCCEEDED, duplicate → SKIPPED duplicate-of:<original's id>, malformed → DEAD MALFORMED,
// protocol → DEAD PROTOCOL.
func Intended(day simulate.Day, wr simulate.Written, i int) Want {
	m := day.Messages[i]
	switch m.Outcome {
	case simulate.OutcomeDuplicate:
		return Want{Status: "SKIPPED", Reason: "duplicate-of:" + strconv.FormatInt(wr.IDs[m.DuplicateOf], 10)}
	case simulate.OutcomeMalformed:
		return Want{Status: "DEAD", Class: "MALFORMED"}
	case simulate.OutcomeProtocol:
		return Want{Status: "DEAD", Class: "PROTOCOL"}
	}
	return Want{Status: "SUCCEEDED"}
}

type procRow struct {
	status, class, reason string
	late                  bool // enqueued by ingest's re-probe
}

// Outcomes checks that every message of the day (by its mailbox id in wr) and every extra row
// (hostile rows a scenario added, by id) has exactly its intended proc_state row, and that
// proc_state holds no other row. The reason is compared for duplicates only: it is free text for
// the other outcomes. A good message committed late (wr.Late, or found by the re-probe) may end
// stale as the model says (INV-24b, lateProblem).
func Outcomes(ctx context.Context, pool *pgxpool.Pool, day simulate.Day, wr simulate.Written, extra map[int64]Want) ([]string, error) {
	rows, err := pool.Query(ctx, `SELECT msg_id, status, COALESCE(error_class, ''), COALESCE(reason, ''), late FROM proc_state`)
	if err != nil {
		return nil, fmt.Errorf("read proc_state: %w", err)
	}
	got := map[int64]procRow{}
	var id int64
	var r procRow
	if _, err := pgx.ForEachRow(rows, []any{&id, &r.status, &r.class, &r.reason, &r.late}, func() error {
		got[id] = r
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read proc_state: %w", err)
	}
	var bad []string
	check := func(id int64, what string, want Want) {
		r, ok := got[id]
		delete(got, id)
		if !ok {
			bad = append(bad, fmt.Sprintf("%s (mailbox id %d): no proc_state row", what, id))
			return
		}
		if want.Status == AnyStatus {
			if r.status == "PENDING" || r.status == "FAILED" {
				bad = append(bad, fmt.Sprintf("%s (mailbox id %d): not terminal: %s", what, id, r.status))
			}
			return
		}
		if r.status != want.Status || (want.Class != AnyClass && r.class != want.Class) || (want.Reason != "" && r.reason != want.Reason) {
			bad = append(bad, fmt.Sprintf("%s (mailbox id %d): want %s %s %s, got %s %s %q", what, id, want.Status, want.Class, want.Reason, r.status, r.class, r.reason))
		}
	}
	late := map[int]bool{}
	for _, i := range wr.Late {
		late[i] = true
	}
	for i, m := range day.Messages {
		what := fmt.Sprintf("message %d (%s/%s FLID %d, intended %s %s)", i, m.Type, m.Subtype, m.FLID, m.Outcome, m.Bad)
		if r, ok := got[wr.IDs[i]]; (late[i] || r.late) && m.Outcome == simulate.OutcomeApplied {
			delete(got, wr.IDs[i])
			if p := lateProblem(day, i, r, ok); p != "" {
				bad = append(bad, fmt.Sprintf("late %s (mailbox id %d): %s", what, wr.IDs[i], p))
			}
			continue
		}
		check(wr.IDs[i], what, Intended(day, wr, i))
	}
	for id, want := range extra {
		check(id, "extra row", want)
	}
	for id, r := range got {
		bad = append(bad, fmt.Sprintf("mailbox id %d: proc_state row %s %s for a row nobody wrote", id, r.status, r.class))
	}
	sort.Strings(bad)
	return bad, nil
}

// lateProblem checks the row of good message i committed late (INV-24b): processed before the
// later messages of its flight it is SUCCEEDED; after them, the units they set again
// (Day.Overtaken) are stale: SKIPPED "stale:late: <units>" when that is all of it, else
// SUCCEEDED naming no other unit as stale. It returns what is wrong ("" when nothing).
func lateProblem(day simulate.Day, i int, r procRow, ok bool) string {
	if !ok {
		return "no proc_state row"
	}
	names, all := day.Overtaken(i)
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	subset := func(list []string) bool {
		for _, n := range list {
			if !want[n] {
				return false
			}
		}
		return true
	}
	part, partOK := procstate.ParseStaleNote(r.reason)
	skip, err := procstate.ParseSkip(r.reason)
	switch {
	case r.status == "SUCCEEDED" && r.reason == "":
		return ""
	case r.status == "SUCCEEDED" && partOK && subset(part):
		return ""
	case r.status == "SKIPPED" && all && err == nil && skip.Kind == procstate.SkipStaleLate && subset(skip.Units) &&
		len(skip.Units) == len(names):
		return ""
	}
	return fmt.Sprintf("got %s %s %q; the model's overtaken units: %v (all: %v)", r.status, r.class, r.reason, names, all)
}

// Markers checks that every mailbox row of ids carries its processed marker
// (CMINMSGS_DATE_PROCESSED set).
func Markers(ctx context.Context, mailbox *sql.DB, ids []int64) ([]string, error) {
	rows, err := mailbox.QueryContext(ctx, `SELECT CMINMSGS_ID FROM cminmsgs WHERE CMINMSGS_DATE_PROCESSED IS NOT NULL`)
	if err != nil {
		return nil, fmt.Errorf("read markers: %w", err)
	}
	defer rows.Close()
	marked := map[int64]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		marked[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var bad []string
	for _, id := range ids {
		if !marked[id] {
			bad = append(bad, fmt.Sprintf("mailbox id %d: no processed marker", id))
		}
	}
	sort.Strings(bad)
	return bad, nil
}

// LoadStates loads every stored flight with flightstore.Load.
func LoadStates(ctx context.Context, pool *pgxpool.Pool) (map[int64]*flight.State, error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	rows, err := tx.Query(ctx, `SELECT flid FROM flight ORDER BY flid`)
	if err != nil {
		return nil, err
	}
	flids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, err
	}
	loaded, err := flightstore.Load(ctx, tx, flids)
	if err != nil {
		return nil, err
	}
	if len(loaded.States) != len(flids) {
		return nil, fmt.Errorf("loaded %d of %d flights", len(loaded.States), len(flids))
	}
	return loaded.States, nil
}

// Flights compares every expected flight with its stored state, field by field, and reports any
// stored flight the simulator does not know.
func Flights(exp simulate.Expected, states map[int64]*flight.State) []string {
	var bad []string
	for _, f := range exp.Flights {
		got, ok := states[f.FLID]
		if !ok {
			bad = append(bad, fmt.Sprintf("FLID %d: not stored (want %s)", f.FLID, f.State))
			continue
		}
		want := ExpectedState(f)
		for _, m := range DiffState(&want, got) {
			bad = append(bad, m.String())
		}
	}
	for flid := range states {
		if _, ok := exp.Flight(flid); !ok {
			bad = append(bad, fmt.Sprintf("FLID %d: stored, but the simulator never created it", flid))
		}
	}
	sort.Strings(bad)
	return bad
}

// LastPerFLID returns the last record of topic per FLID, in consumption (partition) order.
func LastPerFLID(recs []stack.Record, topic string) map[int64]stack.Record {
	out := map[int64]stack.Record{}
	for _, r := range recs {
		if r.Topic != topic {
			continue
		}
		flid, err := strconv.ParseInt(r.FLID, 10, 64)
		if err != nil {
			continue
		}
		out[flid] = r
	}
	return out
}

// Consumed lists the stored flights whose last msgx.flight.state record read so far does not
// carry the stored state_version yet (the consumer may still be fetching).
func Consumed(recs []stack.Record, states map[int64]*flight.State) []string {
	last := LastPerFLID(recs, TopicState)
	var behind []string
	for flid, s := range states {
		if r, ok := last[flid]; !ok || r.StateVersion < s.Version {
			behind = append(behind, fmt.Sprintf("%d (v%d, last read v%d)", flid, s.Version, r.StateVersion))
		}
	}
	sort.Strings(behind)
	return behind
}

// StateTopic checks that the last msgx.flight.state record per FLID is the flight's stored
// state, as flight.State.AppendJSONIn writes it in loc (the airport's zone), or a tombstone (nil
// value) for a deleted flight.
// The outbox payload is jsonb, so the record's JSON is compared as JSON (key order and spacing
// differ). Wait for Consumed to be empty first.
func StateTopic(recs []stack.Record, states map[int64]*flight.State, loc *time.Location) []string {
	last := LastPerFLID(recs, TopicState)
	var bad []string
	for flid, s := range states {
		r := last[flid]
		if r.StateVersion != s.Version {
			bad = append(bad, fmt.Sprintf("FLID %d: last record state_version %d, stored %d", flid, r.StateVersion, s.Version))
			continue
		}
		if s.Status == flight.Deleted {
			if r.Value != nil || r.EventType != event.Tombstone {
				bad = append(bad, fmt.Sprintf("FLID %d: deleted, but the last record is %s with value %s", flid, r.EventType, r.Value))
			}
			continue
		}
		if r.EventType != event.Upsert {
			bad = append(bad, fmt.Sprintf("FLID %d: ACTIVE, but the last record is a %s", flid, r.EventType))
			continue
		}
		for _, d := range jsonDiff(s.AppendJSONIn(nil, loc), r.Value) {
			bad = append(bad, fmt.Sprintf("FLID %d: %s", flid, d))
		}
	}
	for flid := range last {
		if _, ok := states[flid]; !ok {
			bad = append(bad, fmt.Sprintf("FLID %d: on msgx.flight.state but not stored", flid))
		}
	}
	sort.Strings(bad)
	return bad
}

// Malformed lists the records whose headers do not follow docs/events.md (event.Parse).
func Malformed(recs []stack.Record) []string {
	var bad []string
	for _, r := range recs {
		if r.Malformed != "" {
			bad = append(bad, fmt.Sprintf("%s/%d@%d: %s", r.Topic, r.Partition, r.Offset, r.Malformed))
		}
	}
	return bad
}

// VersionsNeverDecrease checks, per topic and FLID in consumption (partition) order, that no
// record carries a lower state_version than one before it (a repeated version is a duplicate,
// counted by SentEvents).
func VersionsNeverDecrease(recs []stack.Record) []string {
	type key struct {
		topic, flid string
	}
	last := map[key]int64{}
	var bad []string
	for _, r := range recs {
		k := key{r.Topic, r.FLID}
		if prev, ok := last[k]; ok && r.StateVersion < prev {
			bad = append(bad, fmt.Sprintf("%s FLID %s: state_version %d after %d (event %d)", r.Topic, r.FLID, r.StateVersion, prev, r.EventID))
		}
		last[k] = max(last[k], r.StateVersion)
	}
	return bad
}

// EventIDsUnique checks, per topic, that no event_id names two different (FLID, version)s.
func EventIDsUnique(recs []stack.Record) []string {
	type rec struct {
		flid    string
		version int64
	}
	named := map[string]map[int64]rec{}
	var bad []string
	for _, r := range recs {
		if named[r.Topic] == nil {
			named[r.Topic] = map[int64]rec{}
		}
		got := rec{r.FLID, r.StateVersion}
		if first, ok := named[r.Topic][r.EventID]; ok && first != got {
			bad = append(bad, fmt.Sprintf("%s: event_id %d names FLID %s v%d and FLID %s v%d", r.Topic, r.EventID, first.flid, first.version, r.FLID, r.StateVersion))
			continue
		}
		named[r.Topic][r.EventID] = got
	}
	return bad
}

// sentSets are the SENT events by topic and id, and the change records the dispatcher found on
// the topic beyond what the database knew (msg_kafka_held: a failover's lost tail), by id and by
// (FLID, version).
type sentSets struct {
	sent      map[string]map[int64]bool
	held      map[int64]bool
	heldByKey map[string]int64 // "flid/version" -> the held record's event_id
	keyOf     map[int64]string // SENT KAFKA:msg event -> "flid/version"
	stateSent map[string]int64 // FLID -> the highest version the state topic holds (msg_state_sent)
	timeline  int64            // the newest id generation (timeline + restore epoch: ids >> 40) among the SENT events
}

func readSent(ctx context.Context, pool *pgxpool.Pool) (sentSets, error) {
	s := sentSets{sent: map[string]map[int64]bool{TopicChanges: {}}, held: map[int64]bool{},
		heldByKey: map[string]int64{}, keyOf: map[int64]string{}, stateSent: map[string]int64{}}
	rows, err := pool.Query(ctx, `SELECT event_id, target, partition_key || '/' || state_version FROM msg_event_delivery WHERE status = 'SENT'`)
	if err != nil {
		return s, fmt.Errorf("read sent events: %w", err)
	}
	var id int64
	var target, key string
	if _, err := pgx.ForEachRow(rows, []any{&id, &target, &key}, func() error {
		s.timeline = max(s.timeline, id>>40)
		if target == "KAFKA:msg" {
			s.sent[TopicChanges][id] = true
			s.keyOf[id] = key
		}
		return nil
	}); err != nil {
		return s, fmt.Errorf("read sent events: %w", err)
	}
	rows, err = pool.Query(ctx, `SELECT partition_key, state_version FROM msg_state_sent`)
	if err != nil {
		return s, fmt.Errorf("read state topic versions: %w", err)
	}
	var v int64
	if _, err := pgx.ForEachRow(rows, []any{&key, &v}, func() error { s.stateSent[key] = v; return nil }); err != nil {
		return s, fmt.Errorf("read state topic versions: %w", err)
	}
	rows, err = pool.Query(ctx, `SELECT event_id, partition_key || '/' || state_version FROM msg_kafka_held`)
	if err != nil {
		return s, fmt.Errorf("read held records: %w", err)
	}
	if _, err := pgx.ForEachRow(rows, []any{&id, &key}, func() error {
		s.held[id], s.heldByKey[key] = true, id
		return nil
	}); err != nil {
		return s, fmt.Errorf("read held records: %w", err)
	}
	return s, nil
}

// SentEvents compares msgx.flight.changes with the KAFKA:msg events: every SENT event is on the
// topic, and every record is a SENT event; every msgx.flight.state record is of a version at or
// below the one msg_state_sent records for its FLID (the flush records each version it sent; a
// state's event id names it only until a newer state of the FLID replaces it). duplicates
// counts the records beyond the first of their event (the idempotent producer's allowance after
// a retry or a takeover). After a failover or a restore that lost the database's last transactions, a
// change record the dispatcher recorded as held stands for the SENT event of its version, and a
// state record of an older id generation than the database's may name an event the database
// lost (or renumbered); lostTail counts them.
func SentEvents(ctx context.Context, pool *pgxpool.Pool, recs []stack.Record) (bad []string, duplicates, lostTail int, err error) {
	s, err := readSent(ctx, pool)
	if err != nil {
		return nil, 0, 0, err
	}
	seen := map[string]map[int64]bool{TopicChanges: {}, TopicState: {}}
	for _, r := range recs {
		if seen[r.Topic] == nil {
			bad = append(bad, fmt.Sprintf("record on unexpected topic %s", r.Topic))
			continue
		}
		if seen[r.Topic][r.EventID] {
			duplicates++
			continue
		}
		seen[r.Topic][r.EventID] = true
		switch {
		case r.Topic == TopicChanges && s.sent[r.Topic][r.EventID]:
		case r.Topic == TopicState && r.StateVersion <= s.stateSent[r.FLID]:
		case r.Topic == TopicChanges && s.held[r.EventID], r.Topic == TopicState && r.EventID>>40 < s.timeline:
			lostTail++
		case r.Topic == TopicState:
			bad = append(bad, fmt.Sprintf("%s: record of event %d (FLID %s v%d), above the version recorded as sent (%d)", r.Topic, r.EventID, r.FLID, r.StateVersion, s.stateSent[r.FLID]))
		default:
			bad = append(bad, fmt.Sprintf("%s: record of event %d (FLID %s v%d), which is not a SENT event", r.Topic, r.EventID, r.FLID, r.StateVersion))
		}
	}
	for id := range s.sent[TopicChanges] {
		if !seen[TopicChanges][id] && !seen[TopicChanges][s.heldByKey[s.keyOf[id]]] {
			bad = append(bad, fmt.Sprintf("%s: SENT event %d is not on the topic", TopicChanges, id))
		}
	}
	sort.Strings(bad)
	return bad, duplicates, lostTail, nil
}

// Poll calls check every poll until it reports nothing or timeout passes (or ctx ends), and
// returns its last problems.
func Poll(ctx context.Context, poll, timeout time.Duration, check func() []string) []string {
	deadline := time.Now().Add(timeout)
	for {
		bad := check()
		if len(bad) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return bad
		}
		t := time.NewTimer(poll)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
}

// Check is one named check's problems.
type Check struct {
	Name     string
	Problems []string
}

// Report is the outcome of Day.
type Report struct {
	Checks     []Check
	Flights    int   // stored flights compared
	Versions   int64 // Σ state_version of the stored flights: the msgx.flight.changes events owed
	Duplicates int   // Kafka records beyond the first of their event
	// LostTailRecords are records of events a failover's promoted database lost (SentEvents).
	LostTailRecords int
	Lost            int // messages without their intended outcome or marker, SENT events missing from Kafka
}

// Failed lists the checks with problems, each as "name: first problems".
func (r Report) Failed(limit int) []string {
	var out []string
	for _, c := range r.Checks {
		if len(c.Problems) == 0 {
			continue
		}
		shown := c.Problems[:min(len(c.Problems), limit)]
		more := ""
		if len(c.Problems) > limit {
			more = fmt.Sprintf(" … and %d more", len(c.Problems)-limit)
		}
		out = append(out, fmt.Sprintf("%s (%d): %s%s", c.Name, len(c.Problems), strings.Join(shown, "; "), more))
	}
	return out
}

// OK is true when no check found a problem.
func (r Report) OK() bool { return len(r.Failed(1)) == 0 }

// Input is what Day compares.
type Input struct {
	Pool    *pgxpool.Pool
	Mailbox *sql.DB
	Day     simulate.Day
	Written simulate.Written
	// Extra are rows written besides the day (hostile rows) with their intended outcome.
	Extra map[int64]Want
	// Records returns every record the consumer has read so far.
	Records func() []stack.Record
	// Wait bounds the wait for the consumer to catch up (default 30s).
	Wait time.Duration
	// Purged are the mailbox rows an AODB deleted because they were marked: each counts as
	// marked, and its outcome is judged like every row's, against what the simulator wrote.
	Purged map[int64]bool
}

// Day runs every check on a drained pipeline (stack.WaitDrained first).
func Day(ctx context.Context, in Input) (Report, error) {
	if in.Wait == 0 {
		in.Wait = 30 * time.Second
	}
	var rep Report
	add := func(name string, problems []string) { rep.Checks = append(rep.Checks, Check{name, problems}) }
	outcomes, err := Outcomes(ctx, in.Pool, in.Day, in.Written, in.Extra)
	if err != nil {
		return rep, err
	}
	add("outcomes", outcomes)
	var ids []int64 // the rows that must carry their marker; a purged row carried it when purged
	for _, id := range in.Written.IDs {
		if !in.Purged[id] {
			ids = append(ids, id)
		}
	}
	for id := range in.Extra {
		if !in.Purged[id] {
			ids = append(ids, id)
		}
	}
	markers, err := Markers(ctx, in.Mailbox, ids)
	if err != nil {
		return rep, err
	}
	add("markers", markers)
	rep.Lost = len(outcomes) + len(markers)
	states, err := LoadStates(ctx, in.Pool)
	if err != nil {
		return rep, fmt.Errorf("load flights: %w", err)
	}
	rep.Flights = len(states)
	for _, st := range states {
		rep.Versions += st.Version
	}
	add("flights = model", Flights(in.Day.Expected, states))
	add("state topic caught up", Poll(ctx, 100*time.Millisecond, in.Wait, func() []string { return Consumed(in.Records(), states) }))
	add("state topic = flights", StateTopic(in.Records(), states, in.Day.Config.Location))
	instants, _ := Instants(in.Records(), in.Day.Config.Location)
	add("instants name the wall-clock times", instants)
	schemaBad, _ := Contract(in.Records())
	add("records validate against the JSON Schemas", schemaBad)
	add("changes complete", Poll(ctx, 200*time.Millisecond, in.Wait, func() []string { return ChangesProblems(in.Records(), states) }))
	add("records follow the contract", Malformed(in.Records()))
	add("versions never decrease", VersionsNeverDecrease(in.Records()))
	add("event ids name one record", EventIDsUnique(in.Records()))
	sentBad, dups, lostTail, err := SentEvents(ctx, in.Pool, in.Records())
	if err != nil {
		return rep, err
	}
	rep.Duplicates, rep.LostTailRecords = dups, lostTail
	add("records = sent events", sentBad)
	for _, p := range sentBad {
		if strings.Contains(p, "is not on the topic") {
			rep.Lost++
		}
	}
	return rep, nil
}

// Answers are the mailbox rows besides the day's messages (the simulated AODB's answers to
// msgx's requests), each intended SUCCEEDED: Input.Extra for a day with the AODB running.
func Answers(ctx context.Context, mailbox *sql.DB, wr simulate.Written) (map[int64]Want, error) {
	day := make(map[int64]bool, len(wr.IDs))
	for _, id := range wr.IDs {
		day[id] = true
	}
	rows, err := mailbox.QueryContext(ctx, `SELECT CMINMSGS_ID FROM cminmsgs`)
	if err != nil {
		return nil, fmt.Errorf("read the mailbox: %w", err)
	}
	defer rows.Close()
	out := map[int64]Want{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		if !day[id] {
			out[id] = Want{Status: "SUCCEEDED"}
		}
	}
	return out, rows.Err()
}
