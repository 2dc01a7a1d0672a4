package flightstore

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/msgx/msgx/pkg/flight"
)

// Cache keeps the full states of the flights a processor read or wrote, so a batch loads from
// PostgreSQL only what changed since: the full load (a JSON subquery per detail table, decoded in
// Go) is the processor's most expensive read.
//
// It is a source for writes (INV-11b allows this one, checked row by row): a batch merges its
// messages onto the states Loader.Load hands out and Save writes the difference, so an entry is
// used only when it is the stored row in the batch's own transaction. Each state is kept with the
// xmin of the flight row it was read from, or the id of the transaction that wrote it, and Load
// uses it only when the flight row's xmin, read in that transaction, is that value. Every write of
// a flight (its row, or its detail rows: a changed detail always writes the row too, Save) gives
// the row a new xmin, whoever writes it — another leader, the jobs stage's purge, an operator —
// so an entry older than the row is reloaded, not used. An entry written by a transaction that
// rolled back names an xid no visible row carries. The check and the batch's write are one
// transaction under PIPELINE_LOCK, which every flight writer of msgx takes (INV-18), so none of
// them commits in between; a write from outside msgx could, as it could without the cache (a
// batch reads its flights without row locks). xmin is a 32-bit xid: a row rewritten by a
// transaction whose xid is the kept one's plus a multiple of 2^32 would pass the check; nothing
// guards against that. The stored MAFL children are read from the database on every load (they
// are other flights' rows).
//
// A Cache is not safe for concurrent use; the processor's engine runs one batch at a time.
type Cache struct {
	max     int
	entries map[int64]entry
}

type entry struct {
	xmin  string // the flight row's xmin (text form)
	state *flight.State
}

// NewCache returns a cache of at most n flights (at least 1).
func NewCache(n int) *Cache {
	return &Cache{max: max(n, 1), entries: map[int64]entry{}}
}

// Len is the number of flights kept.
func (c *Cache) Len() int { return len(c.entries) }

// put keeps s (not copied: states handed to the cache are never changed again; its MAFL, when
// ACTIVE, is only a guess checked against the stored children at each load) as of xmin,
// and drops entries beyond the bound (an arbitrary quarter: the working set reloads).
func (c *Cache) put(s *flight.State, xmin string) {
	if s.Status != flight.Active && s.MAFL != nil { // only an ACTIVE flight has one (Load)
		v := *s
		v.MAFL = nil
		s = &v
	}
	c.entries[s.FLID] = entry{xmin: xmin, state: s}
	if len(c.entries) <= c.max {
		return
	}
	drop := len(c.entries) - c.max*3/4
	for id := range c.entries {
		if drop == 0 {
			break
		}
		if id != s.FLID {
			delete(c.entries, id)
			drop--
		}
	}
}

// get is the entry of flid when it is as of xmin.
func (c *Cache) get(flid int64, xmin string) (*flight.State, bool) {
	e, ok := c.entries[flid]
	if !ok || e.xmin != xmin {
		return nil, false
	}
	return e.state, true
}

// loadCached is Load through c: one statement reads each flight row's xmin and the stored MAFL
// children; only the flights with no entry as of that xmin are loaded in full (and kept).
func loadCached(ctx context.Context, tx pgx.Tx, c *Cache, flids []int64) (flight.Stored, error) {
	out := flight.Stored{States: make(map[int64]*flight.State, len(flids)), Children: map[int64][]flight.Child{}}
	if len(flids) == 0 {
		return out, nil
	}
	rows, err := tx.Query(ctx, rowVersionsSQL, flids)
	if err != nil {
		return out, fmt.Errorf("read flight row versions: %w", err)
	}
	var misses []int64
	var flid int64
	// Scanned as values: a *string target takes a new pointer for every row besides its text.
	var xmin, children pgtype.Text
	if _, err := pgx.ForEachRow(rows, []any{&flid, &xmin, &children}, func() error {
		if children.Valid {
			if err := decodeChildren(flid, &children.String, out.Children); err != nil {
				return err
			}
		}
		if !xmin.Valid {
			return nil // not stored
		}
		s, ok := c.get(flid, xmin.String)
		if !ok {
			misses = append(misses, flid)
			return nil
		}
		if kids := out.Children[flid]; s.Status == flight.Active && !slices.Equal(s.MAFL, kids) {
			v := *s // the entry stays as it is; only MAFL differs (derived from the stored children)
			v.MAFL = slices.Clone(kids)
			s = &v
		}
		out.States[flid] = s
		return nil
	}); err != nil {
		return out, fmt.Errorf("read flight row versions: %w", err)
	}
	if len(misses) == 0 {
		return out, nil
	}
	loaded, err := load(ctx, tx, misses, c)
	if err != nil {
		return out, err
	}
	for id, s := range loaded.States {
		out.States[id] = s
	}
	return out, nil
}

// keep adds the states a transaction wrote, as of its id (txid).
func (c *Cache) keep(changes []flight.Transition, txid string) {
	for _, ch := range changes {
		c.put(ch.Next, txid)
	}
}

// Verify loads every flight kept as of its row's current xmin and reports those whose kept
// state differs from the stored one (field by field, provenance included): what the cache
// would hand a batch instead of the database. For tests and diagnosis.
func (c *Cache) Verify(ctx context.Context, tx pgx.Tx) error {
	flids := make([]int64, 0, len(c.entries))
	for id := range c.entries {
		flids = append(flids, id)
	}
	slices.Sort(flids)
	rows, err := tx.Query(ctx, rowVersionsSQL, flids)
	if err != nil {
		return fmt.Errorf("read flight row versions: %w", err)
	}
	var current []int64
	var flid int64
	var xmin, children *string
	if _, err := pgx.ForEachRow(rows, []any{&flid, &xmin, &children}, func() error {
		if xmin != nil && c.entries[flid].xmin == *xmin {
			current = append(current, flid)
		}
		return nil
	}); err != nil {
		return fmt.Errorf("read flight row versions: %w", err)
	}
	stored, err := Load(ctx, tx, current)
	if err != nil {
		return err
	}
	var bad []error
	for _, id := range current {
		kept, db := *c.entries[id].state, *stored.States[id]
		kept.MAFL, db.MAFL = nil, nil // derived again from the stored children on every load
		if d := diff(kept, db); d != "" {
			bad = append(bad, fmt.Errorf("flight %d: %s", id, d))
		}
	}
	return errors.Join(bad...)
}

// diff names the first part of two states that differs ("" when none).
func diff(kept, db flight.State) string {
	for i := range kept.F {
		if !reflect.DeepEqual(kept.F[i], db.F[i]) {
			return fmt.Sprintf("%s: kept %#v, stored %#v", flight.Fields[i].Name, kept.F[i], db.F[i])
		}
	}
	for c := range kept.C {
		if !reflect.DeepEqual(kept.C[c], db.C[c]) {
			return fmt.Sprintf("%s: kept %#v, stored %#v", flight.Collections[c].Table, kept.C[c], db.C[c])
		}
	}
	if !kept.P.Equal(&db.P) { // an empty entry map and none are the same
		return fmt.Sprintf("provenance: kept %#v, stored %#v", kept.P, db.P)
	}
	kept.P, db.P = flight.Prov{}, flight.Prov{}
	if !reflect.DeepEqual(kept, db) {
		return fmt.Sprintf("kept %#v, stored %#v", kept, db)
	}
	return ""
}
