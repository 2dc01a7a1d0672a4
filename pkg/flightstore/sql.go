package flightstore

import (
	"fmt"
	"strings"

	"github.com/msgx/msgx/pkg/flight"
	"github.com/msgx/msgx/pkg/outbox"
)

// Every SQL statement of the flight store. The column lists come from the one description of
// the tables in package flight (flight.Fields, flight.Collections); every value is a bound
// parameter, time included.

// arrayType is the unnest array type that carries a column of kind k.
func arrayType(k flight.Kind) string {
	switch k {
	case flight.KindInt:
		return "bigint[]"
	case flight.KindTime:
		return "timestamp[]"
	}
	return "text[]"
}

// fromArray is the expression turning the unnest column u.x back into the column's type.
func fromArray(x string, k flight.Kind) string {
	switch k {
	case flight.KindDecimal:
		return x + "::numeric"
	case flight.KindJSON:
		return x + "::jsonb"
	}
	return x
}

// selectExpr reads a column in the form the loader scans.
func selectExpr(col string, k flight.Kind) string {
	if k == flight.KindDecimal || k == flight.KindJSON {
		return col + "::text"
	}
	return col
}

var (
	loadSQL         = buildLoadSQL()
	insertFlightSQL = buildInsertFlightSQL()
	deleteDetailSQL [flight.NumColls]string
	upsertDetailSQL [flight.NumColls]string
)

func init() {
	for c := range flight.NumColls {
		deleteDetailSQL[c], upsertDetailSQL[c] = buildDetailSQL(flight.Collections[c])
	}
}

// buildLoadSQL reads the full state of every requested FLID in one statement: the flight row,
// one subquery per detail table (its rows in input order as a JSON array of arrays) and the
// stored MAFL children, also for FLIDs not stored (a child may name a future master).
func buildLoadSQL() string {
	var sel []string
	for _, c := range flight.Fields {
		sel = append(sel, selectExpr("f."+c.Name, c.Kind))
	}
	sel = append(sel, "COALESCE(f.operation_day::text, '')", "COALESCE(f.state, '')", "COALESCE(f.state_version, 0)",
		"COALESCE(f.last_msg_id, 0)", "COALESCE(f.prov::text, '')")
	for c := range flight.NumColls {
		d := flight.Collections[c]
		var cols []string
		for _, col := range d.Cols {
			cols = append(cols, "d."+col.Name)
		}
		where := "d.flid = f.flid"
		if d.RouteKind != "" {
			where += " AND d.kind = '" + d.RouteKind + "'"
		}
		sel = append(sel, `(SELECT json_agg(json_build_array(`+strings.Join(cols, ", ")+`) ORDER BY d.ord) FROM `+d.Table+` d WHERE `+where+`)::text`)
	}
	sel = append(sel, childrenSQL)
	return `SELECT q.flid, f.flid IS NOT NULL, f.xmin::text, ` + strings.Join(sel, ",\n       ") + `
  FROM unnest($1::bigint[]) AS q(flid) LEFT JOIN flight f ON f.flid = q.flid`
}

// buildInsertFlightSQL inserts new flights: $1 flid[], $2..$N+1 the fields, then
// operation_day[], state[], version[], last_msg_id[], prov[], now.
func buildInsertFlightSQL() string {
	n := int(flight.NumFields)
	cols, args, vals := []string{"flid"}, []string{"$1::bigint[]"}, []string{"u.flid"}
	for i, c := range flight.Fields {
		cols = append(cols, c.Name)
		args = append(args, fmt.Sprintf("$%d::%s", i+2, arrayType(c.Kind)))
		vals = append(vals, fromArray(fmt.Sprintf("u.c%d", i), c.Kind))
	}
	aliases := []string{"flid"}
	for i := range n {
		aliases = append(aliases, fmt.Sprintf("c%d", i))
	}
	cols = append(cols, "operation_day", "state", "state_version", "last_msg_id", "prov", "created_at", "updated_at")
	args = append(args, fmt.Sprintf("$%d::text[]", n+2), fmt.Sprintf("$%d::text[]", n+3), fmt.Sprintf("$%d::bigint[]", n+4),
		fmt.Sprintf("$%d::bigint[]", n+5), fmt.Sprintf("$%d::text[]", n+6))
	aliases = append(aliases, "day", "state", "version", "msg", "prov")
	vals = append(vals, "NULLIF(u.day, '')::date", "u.state", "u.version", "u.msg", "u.prov", fmt.Sprintf("$%d", n+7), fmt.Sprintf("$%d", n+7))
	return `INSERT INTO flight (` + strings.Join(cols, ", ") + `)
SELECT ` + strings.Join(vals, ", ") + `
  FROM unnest(` + strings.Join(args, ", ") + `) AS u(` + strings.Join(aliases, ", ") + `)`
}

// buildDetailSQL returns the statements that delete a detail table's rows by key ($1 flid[],
// $2 key[]) and upsert its rows ($1 flid[], $2 ord[], then one array per column).
func buildDetailSQL(d flight.Collection) (del, upsert string) {
	key := d.Cols[0]
	kindCond := ""
	if d.RouteKind != "" {
		kindCond = " AND t.kind = '" + d.RouteKind + "'"
	}
	del = `DELETE FROM ` + d.Table + ` t USING unnest($1::bigint[], $2::` + arrayType(key.Kind) + `) AS u(flid, k)
 WHERE t.flid = u.flid AND t.` + key.Name + ` = u.k` + kindCond

	cols := []string{"flid", "ord"}
	args := []string{"$1::bigint[]", "$2::bigint[]"}
	aliases := []string{"flid", "ord"}
	vals := []string{"u.flid", "u.ord"}
	if d.RouteKind != "" {
		cols = append(cols, "kind")
		vals = append(vals, "'"+d.RouteKind+"'")
	}
	set := []string{"ord = EXCLUDED.ord"}
	for i, col := range d.Cols {
		cols = append(cols, col.Name)
		args = append(args, fmt.Sprintf("$%d::%s", i+3, arrayType(col.Kind)))
		aliases = append(aliases, fmt.Sprintf("c%d", i))
		vals = append(vals, fromArray(fmt.Sprintf("u.c%d", i), col.Kind))
		if i > 0 {
			set = append(set, col.Name+" = EXCLUDED."+col.Name)
		}
	}
	conflict := "flid, " + key.Name
	if d.RouteKind != "" {
		conflict = "flid, kind, " + key.Name
	}
	upsert = `INSERT INTO ` + d.Table + ` (` + strings.Join(cols, ", ") + `)
SELECT ` + strings.Join(vals, ", ") + `
  FROM unnest(` + strings.Join(args, ", ") + `) AS u(` + strings.Join(aliases, ", ") + `)
ON CONFLICT (` + conflict + `) DO UPDATE SET ` + strings.Join(set, ", ")
	return del, upsert
}

// updateFlightSQL returns the UPDATE for a set of changed scalar fields: $1 flid[], one array
// per field, then operation_day[], state[], version[], last_msg_id[], prov[], now. Only the listed
// columns are written.
func updateFlightSQL(fields []flight.F) string {
	var set, args, aliases []string
	args = append(args, "$1::bigint[]")
	aliases = append(aliases, "flid")
	for i, f := range fields {
		c := flight.Fields[f]
		args = append(args, fmt.Sprintf("$%d::%s", i+2, arrayType(c.Kind)))
		aliases = append(aliases, fmt.Sprintf("c%d", i))
		set = append(set, c.Name+" = "+fromArray(fmt.Sprintf("u.c%d", i), c.Kind))
	}
	n := len(fields)
	args = append(args, fmt.Sprintf("$%d::text[]", n+2), fmt.Sprintf("$%d::text[]", n+3), fmt.Sprintf("$%d::bigint[]", n+4),
		fmt.Sprintf("$%d::bigint[]", n+5), fmt.Sprintf("$%d::text[]", n+6))
	aliases = append(aliases, "day", "state", "version", "msg", "prov")
	set = append(set, "operation_day = COALESCE(NULLIF(u.day, '')::date, f.operation_day)", "state = u.state",
		"state_version = u.version", "last_msg_id = u.msg", "prov = u.prov", fmt.Sprintf("updated_at = $%d", n+7))
	return `UPDATE flight f SET ` + strings.Join(set, ", ") + `
  FROM unnest(` + strings.Join(args, ", ") + `) AS u(` + strings.Join(aliases, ", ") + `)
 WHERE f.flid = u.flid`
}

// childrenSQL is the stored MAFL children of q.flid: a JSON array of [flid, flno], or NULL.
const childrenSQL = `(SELECT json_agg(json_build_array(c.flid, COALESCE(c.flno, '')) ORDER BY c.flid) FROM flight c
        WHERE c.maid = q.flid AND c.state = 'ACTIVE' AND c.flid <> c.maid)::text`

const (
	// rowVersionsSQL is, for each requested FLID, its flight row's xmin (NULL: not stored) and
	// its stored MAFL children (Cache).
	rowVersionsSQL = `SELECT q.flid, f.xmin::text, ` + childrenSQL + `
  FROM unnest($1::bigint[]) AS q(flid) LEFT JOIN flight f ON f.flid = q.flid`

	// txidSQL is the writing transaction's id, as the xmin of the rows it wrote reads (Cache).
	txidSQL = `SELECT pg_current_xact_id()::xid::text`

	// historyVersionSQL is the last version of each FLID purged into the history store.
	historyVersionSQL = `SELECT flid, max(state_version) FROM flight_history WHERE flid = ANY($1::bigint[]) GROUP BY flid`

	// provOnlySQL saves the provenance of flights whose values did not change (INV-24b): no
	// version, no updated_at.
	provOnlySQL = `UPDATE flight f SET prov = u.prov FROM unnest($1::bigint[], $2::text[]) AS u(flid, prov) WHERE f.flid = u.flid`

	snapAppliedSQL = `SELECT EXISTS (SELECT 1 FROM schd_snap_log WHERE msg_id = $1)`

	snapLogSQL = `INSERT INTO schd_snap_log (msg_id, scope_start, scope_end, recv_at, inserted, updated, unchanged, applied_at)
SELECT $1, $2::date, $3::date, (SELECT received_at FROM proc_state WHERE msg_id = $1), $4, $5, $6, $7`
)

const (
	// flightVersionsSQL is a flight's version history as the outbox recorded it (key = FLID),
	// newest first, each event with the message behind it, live or archived (ReadHistory); of
	// the state topic, the newest state and those not folded into it yet.
	flightVersionsSQL = `
SELECT e.state_version, e.target, e.event_id, e.event_type, e.status, e.created_at, e.sent_at, e.msg_id,
       COALESCE(p.msg_type, h.msg_type, ''), COALESCE(p.msg_styp, h.msg_styp, '')
  FROM (SELECT * FROM ` + outbox.Events + `) e
  LEFT JOIN proc_state p ON p.msg_id = e.msg_id
  LEFT JOIN proc_state_hst h ON h.msg_id = e.msg_id
 WHERE e.partition_key = $1
 ORDER BY e.state_version DESC, e.target LIMIT $2`

	// flightPurgesSQL is what the history sweep kept of a flight each time it purged it, newest
	// first (ReadHistory).
	flightPurgesSQL = `
SELECT state_version, COALESCE(operation_day::text, ''), purge_reason, purged_at, final_state
  FROM flight_history WHERE flid = $1 ORDER BY state_version DESC`

	// flightsOfDaySQL is one line of each stored flight of an operation day (Day).
	flightsOfDaySQL = `
SELECT flid, COALESCE(alcd, ''), COALESCE(flno, ''), COALESCE(mvin, ''), state, state_version, sodt, maid
  FROM flight WHERE operation_day = $1::date ORDER BY flid`
)

// allFlightsSQL lists every stored flight (ReadAll).
const allFlightsSQL = `SELECT flid FROM flight ORDER BY flid`
