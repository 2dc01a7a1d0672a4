// Package flightstore keeps flight state in PostgreSQL: it loads the full states of a set of
// flights (one statement for the whole set, with one subquery per detail table; Load, Loader
// for package flight's batch rules, and Read, one flight's current state for the read API and
// the console) and saves what changed (only changed rows and columns, one round trip; Save),
// with the schedule snapshot log. Load and save only: the merge and batch rules (version bump,
// purge floor, which MAFLs to derive) are package flight's, the events package event's and
// outbox's, the flight plug-in of the processor package processor/flights.
package flightstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/msgx/msgx/pkg/flight"
)

// Loader is package flight's Loader over a transaction: Load, plus the purged history's last
// version of every FLID not stored. With a Cache, it loads in full only the flights whose row
// changed since the cache saw it, and its Save keeps what it wrote in the cache.
type Loader struct {
	Tx    pgx.Tx
	Cache *Cache // nil: none
}

var _ flight.Loader = Loader{}

// Load reads the stored states of flids and, for those not stored, their purged versions.
func (l Loader) Load(ctx context.Context, flids []int64) (flight.Stored, error) {
	var out flight.Stored
	var err error
	if l.Cache != nil {
		out, err = loadCached(ctx, l.Tx, l.Cache, flids)
	} else {
		out, err = Load(ctx, l.Tx, flids)
	}
	if err != nil {
		return out, err
	}
	var absent []int64
	for _, id := range flids {
		if out.States[id] == nil {
			absent = append(absent, id)
		}
	}
	if len(absent) == 0 {
		return out, nil
	}
	rows, err := l.Tx.Query(ctx, historyVersionSQL, absent)
	if err != nil {
		return out, fmt.Errorf("read purged versions: %w", err)
	}
	out.Purged = map[int64]int64{}
	var id, v int64
	if _, err := pgx.ForEachRow(rows, []any{&id, &v}, func() error { out.Purged[id] = v; return nil }); err != nil {
		return out, fmt.Errorf("read purged versions: %w", err)
	}
	return out, nil
}

// Load reads the full states of flids in one statement: the flight rows, one subquery per
// detail table and the stored MAFL children, for the whole set at once (Purged is not read).
func Load(ctx context.Context, tx pgx.Tx, flids []int64) (flight.Stored, error) {
	return load(ctx, tx, flids, nil)
}

// load is Load, keeping every state read in c (when not nil) as of its row's xmin.
func load(ctx context.Context, tx pgx.Tx, flids []int64, c *Cache) (flight.Stored, error) {
	out := flight.Stored{States: make(map[int64]*flight.State, len(flids)), Children: map[int64][]flight.Child{}}
	if len(flids) == 0 {
		return out, nil
	}
	rows, err := tx.Query(ctx, loadSQL, flids)
	if err != nil {
		return out, fmt.Errorf("load flights: %w", err)
	}
	defer rows.Close()
	cells := make([]cell, flight.NumFields)
	var flid, version, lastMsg int64
	var exists bool
	var day, state, prov string
	var details [flight.NumColls]pgtype.Text
	var children, xmin *string
	targets := []any{&flid, &exists, &xmin}
	for i := range cells {
		cells[i].k = flight.Fields[i].Kind
		targets = append(targets, cells[i].target())
	}
	targets = append(targets, &day, &state, &version, &lastMsg, &prov)
	for i := range details {
		targets = append(targets, &details[i])
	}
	targets = append(targets, &children)
	for rows.Next() {
		if err := rows.Scan(targets...); err != nil {
			return out, fmt.Errorf("load flights: %w", err)
		}
		if err := decodeChildren(flid, children, out.Children); err != nil {
			return out, err
		}
		if !exists {
			continue
		}
		s := &flight.State{FLID: flid, Status: state, Version: version, OperationDay: day, LastMsgID: lastMsg}
		if s.P, err = flight.UnmarshalProv(prov); err != nil {
			return out, fmt.Errorf("load flight %d: %w", flid, err)
		}
		for i := range cells {
			v, err := cells[i].value()
			if err != nil {
				return out, fmt.Errorf("load flight %d: %w", flid, err)
			}
			s.F[i] = v
		}
		for c := range flight.NumColls {
			if !details[c].Valid {
				continue
			}
			if s.C[c], err = decodeRows(c, details[c].String); err != nil {
				return out, fmt.Errorf("load %s of %d: %w", flight.Collections[c].Table, flid, err)
			}
		}
		if s.Status == flight.Active {
			s.MAFL = slices.Clone(out.Children[flid])
		}
		if c != nil {
			c.put(s, *xmin)
		}
		out.States[flid] = s
	}
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("load flights: %w", err)
	}
	return out, nil
}

// decodeChildren adds the stored MAFL children of flid, a JSON array of [flid, flno] (nil:
// none), to into.
func decodeChildren(flid int64, children *string, into map[int64][]flight.Child) error {
	if children == nil {
		return nil
	}
	var kids [][2]json.RawMessage
	if err := json.Unmarshal([]byte(*children), &kids); err != nil {
		return fmt.Errorf("load children of %d: %w", flid, err)
	}
	for _, k := range kids {
		var c flight.Child
		if err := errors.Join(json.Unmarshal(k[0], &c.FLID), json.Unmarshal(k[1], &c.FLNO)); err != nil {
			return fmt.Errorf("load children of %d: %w", flid, err)
		}
		into[flid] = append(into[flid], c)
	}
	return nil
}

// pgTime is how PostgreSQL's JSON writes a timestamp.
const pgTime = "2006-01-02T15:04:05.999999999"

// decodeRows decodes a detail subquery's JSON array of row arrays.
func decodeRows(c flight.C, text string) ([]flight.Row, error) {
	cols := flight.Collections[c].Cols
	var raw [][]json.RawMessage
	if err := json.Unmarshal([]byte(text), &raw); err != nil {
		return nil, err
	}
	out := make([]flight.Row, len(raw))
	for i, r := range raw {
		if len(r) != len(cols) {
			return nil, fmt.Errorf("row has %d columns, want %d", len(r), len(cols))
		}
		for j, col := range cols {
			v := r[j]
			if string(v) == "null" {
				continue
			}
			switch col.Kind {
			case flight.KindInt:
				n, err := strconv.ParseInt(string(v), 10, 64)
				if err != nil {
					return nil, err
				}
				out[i][j] = flight.Int(n)
			case flight.KindJSON:
				s, err := flight.CanonicalVIPT(v)
				if err != nil {
					return nil, err
				}
				out[i][j] = flight.JSON(s)
			default:
				var s string
				if err := json.Unmarshal(v, &s); err != nil {
					return nil, err
				}
				if col.Kind == flight.KindTime {
					t, err := time.Parse(pgTime, s)
					if err != nil {
						return nil, err
					}
					out[i][j] = flight.Time(t)
					continue
				}
				out[i][j] = flight.Text(s)
			}
		}
	}
	return out, nil
}

// cell is a scan target for one column of kind k.
type cell struct {
	k  flight.Kind
	t  pgtype.Text
	i  pgtype.Int8
	ts pgtype.Timestamp
}

func (c *cell) target() any {
	switch c.k {
	case flight.KindInt:
		return &c.i
	case flight.KindTime:
		return &c.ts
	}
	return &c.t
}

func (c *cell) value() (flight.Value, error) {
	switch c.k {
	case flight.KindInt:
		if !c.i.Valid {
			return flight.Null, nil
		}
		return flight.Int(c.i.Int64), nil
	case flight.KindTime:
		if !c.ts.Valid {
			return flight.Null, nil
		}
		return flight.Time(c.ts.Time), nil
	case flight.KindJSON:
		if !c.t.Valid {
			return flight.Null, nil
		}
		s, err := flight.CanonicalVIPT([]byte(c.t.String))
		return flight.JSON(s), err
	}
	if !c.t.Valid {
		return flight.Null, nil
	}
	return flight.Text(c.t.String), nil
}

// columns collects one unnest array per column. Its text and integer elements point into the
// states being saved, which no one changes (a batch's states are never changed in place); its
// times are converted into chunks of its own (tbuf), never grown, so no element moves.
type columns struct {
	kinds []flight.Kind
	text  [][]*string
	ints  [][]*int64
	times [][]*time.Time
	tbuf  []time.Time
}

func newColumns(kinds []flight.Kind, n int) *columns {
	c := &columns{kinds: kinds, text: make([][]*string, len(kinds)), ints: make([][]*int64, len(kinds)), times: make([][]*time.Time, len(kinds))}
	for i, k := range kinds {
		switch k {
		case flight.KindInt:
			c.ints[i] = make([]*int64, 0, n)
		case flight.KindTime:
			c.times[i] = make([]*time.Time, 0, n)
		default:
			c.text[i] = make([]*string, 0, n)
		}
	}
	return c
}

func (c *columns) add(i int, v *flight.Value) {
	switch c.kinds[i] {
	case flight.KindInt:
		var p *int64
		if v.Valid {
			p = &v.I
		}
		c.ints[i] = append(c.ints[i], p)
	case flight.KindTime:
		var p *time.Time
		if v.Valid {
			if len(c.tbuf) == cap(c.tbuf) {
				c.tbuf = make([]time.Time, 0, 64)
			}
			c.tbuf = append(c.tbuf, v.T())
			p = &c.tbuf[len(c.tbuf)-1]
		}
		c.times[i] = append(c.times[i], p)
	default:
		var p *string
		if v.Valid {
			p = &v.S
		}
		c.text[i] = append(c.text[i], p)
	}
}

func (c *columns) args() []any {
	out := make([]any, len(c.kinds))
	for i, k := range c.kinds {
		switch k {
		case flight.KindInt:
			out[i] = c.ints[i]
		case flight.KindTime:
			out[i] = c.times[i]
		default:
			out[i] = c.text[i]
		}
	}
	return out
}

// lifecycle collects the flight-row bookkeeping arrays.
type lifecycle struct {
	flids, versions, msgs []int64
	days, states, provs   []string
	buf                   []byte // each provenance is written here, then copied into provs
}

func (l *lifecycle) add(s *flight.State) {
	l.flids = append(l.flids, s.FLID)
	l.versions = append(l.versions, s.Version)
	l.msgs = append(l.msgs, s.LastMsgID)
	l.days = append(l.days, s.OperationDay)
	l.states = append(l.states, s.Status)
	l.buf = flight.AppendProv(l.buf[:0], &s.P)
	l.provs = append(l.provs, string(l.buf))
}

var fieldKinds = func() []flight.Kind {
	out := make([]flight.Kind, flight.NumFields)
	for i, c := range flight.Fields {
		out[i] = c.Kind
	}
	return out
}()

// SnapshotLog is one schd_snap_log row: what a schedule snapshot (SCHD DNLD/RESP) did.
type SnapshotLog struct {
	MsgID                        int64
	ScopeStart, ScopeEnd         *string // the package's operation-day range; nil for a replay
	Inserted, Updated, Unchanged int
	At                           time.Time
}

// SnapshotApplied reports whether the snapshot msgID was applied before (a replay).
func SnapshotApplied(ctx context.Context, tx pgx.Tx, msgID int64) (bool, error) {
	var done bool
	if err := tx.QueryRow(ctx, snapAppliedSQL, msgID).Scan(&done); err != nil {
		return false, fmt.Errorf("check snapshot log: %w", err)
	}
	return done, nil
}

// Save writes changes (each flight from its stored state, Old, nil when new, to Next, Version
// and LastMsgID set) and the snapshot logs: new flights in one INSERT, changed flight rows in one
// UPDATE per set of changed columns, changed detail rows per table (one DELETE and one upsert),
// the log rows, all queued into one round trip.
func Save(ctx context.Context, tx pgx.Tx, changes []flight.Transition, logs []SnapshotLog, now time.Time) error {
	return Loader{Tx: tx}.Save(ctx, changes, logs, now)
}

// Save is Save in l's transaction; with a Cache it keeps the states written, as of the
// transaction's id (they count once it committed: Cache).
func (l Loader) Save(ctx context.Context, changes []flight.Transition, logs []SnapshotLog, now time.Time) error {
	b := &pgx.Batch{}
	queueFlights(b, changes, now)
	for c := range flight.NumColls {
		queueDetail(b, c, changes)
	}
	for _, l := range logs {
		b.Queue(snapLogSQL, l.MsgID, l.ScopeStart, l.ScopeEnd, l.Inserted, l.Updated, l.Unchanged, l.At)
	}
	if b.Len() == 0 {
		return nil
	}
	keep := l.Cache != nil && len(changes) > 0
	if keep {
		b.Queue(txidSQL)
	}
	n := b.Len()
	res := l.Tx.SendBatch(ctx, b)
	var txid string
	var err error
	for i := 0; i < n && err == nil; i++ {
		if keep && i == n-1 {
			err = res.QueryRow().Scan(&txid)
		} else {
			_, err = res.Exec()
		}
	}
	if err = errors.Join(err, res.Close()); err != nil {
		return fmt.Errorf("save flights: %w", err)
	}
	if keep {
		l.Cache.keep(changes, txid)
	}
	return nil
}

func queueFlights(b *pgx.Batch, changes []flight.Transition, now time.Time) {
	var ins lifecycle
	insCols := newColumns(fieldKinds, 0)
	type group struct {
		fields []flight.F
		life   lifecycle
		cols   *columns
	}
	groups := map[string]*group{}
	var order []string
	var provOnly lifecycle
	var changed [flight.NumFields]flight.F // a flight's changed fields; a new group copies them
	for _, ch := range changes {
		s := ch.Next
		if ch.Old.Exists() && ch.Old.Version == s.Version { // provenance only (INV-24b)
			provOnly.add(s)
			continue
		}
		if !ch.Old.Exists() {
			ins.add(s)
			for f := range flight.NumFields {
				insCols.add(int(f), &s.F[f])
			}
			continue
		}
		fields := changed[:0]
		key := make([]byte, 0, 16)
		for f := range flight.NumFields {
			if ch.Old.F[f] != s.F[f] {
				fields = append(fields, f)
				key = strconv.AppendInt(key, int64(f), 36)
				key = append(key, ',')
			}
		}
		g := groups[string(key)]
		if g == nil {
			kinds := make([]flight.Kind, len(fields))
			for i, f := range fields {
				kinds[i] = flight.Fields[f].Kind
			}
			g = &group{fields: slices.Clone(fields), cols: newColumns(kinds, 0)}
			groups[string(key)] = g
			order = append(order, string(key))
		}
		g.life.add(s)
		for i, f := range fields {
			g.cols.add(i, &s.F[f])
		}
	}
	if len(ins.flids) > 0 {
		args := append([]any{ins.flids}, insCols.args()...)
		args = append(args, ins.days, ins.states, ins.versions, ins.msgs, ins.provs, now)
		b.Queue(insertFlightSQL, args...)
	}
	if len(provOnly.flids) > 0 {
		b.Queue(provOnlySQL, provOnly.flids, provOnly.provs)
	}
	for _, k := range order {
		g := groups[k]
		args := append([]any{g.life.flids}, g.cols.args()...)
		args = append(args, g.life.days, g.life.states, g.life.versions, g.life.msgs, g.life.provs, now)
		b.Queue(updateFlightSQL(g.fields), args...)
	}
}

func queueDetail(b *pgx.Batch, c flight.C, changes []flight.Transition) {
	d := flight.Collections[c]
	kinds := make([]flight.Kind, len(d.Cols))
	for i, col := range d.Cols {
		kinds[i] = col.Kind
	}
	var delFlids []int64
	delKeys := newColumns(kinds[:1], 0)
	var upFlids, upOrds []int64
	up := newColumns(kinds, 0)
	for _, ch := range changes {
		var old []flight.Row
		if ch.Old.Exists() {
			old = ch.Old.C[c]
		}
		next := ch.Next.C[c]
		if flight.RowsEqual(old, next) {
			continue
		}
		for i := range old {
			if !hasKey(next, old[i][0]) {
				delFlids = append(delFlids, ch.Next.FLID)
				delKeys.add(0, &old[i][0])
			}
		}
		for i := range next {
			r := &next[i]
			j := indexOfKey(old, r[0])
			if j == i && old[j] == *r {
				continue // same row at the same position
			}
			upFlids, upOrds = append(upFlids, ch.Next.FLID), append(upOrds, int64(i))
			for k := range d.Cols {
				up.add(k, &r[k])
			}
		}
	}
	if len(delFlids) > 0 {
		b.Queue(deleteDetailSQL[c], append([]any{delFlids}, delKeys.args()...)...)
	}
	if len(upFlids) > 0 {
		b.Queue(upsertDetailSQL[c], append([]any{upFlids, upOrds}, up.args()...)...)
	}
}

func hasKey(rows []flight.Row, k flight.Value) bool { return indexOfKey(rows, k) >= 0 }

func indexOfKey(rows []flight.Row, k flight.Value) int {
	for i, r := range rows {
		if r[0] == k {
			return i
		}
	}
	return -1
}
