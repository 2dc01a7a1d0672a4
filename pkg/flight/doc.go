// Package flight is the pure domain core of flight state (docs/spec.md §6, docs/sis.md §b–§e): the full
// State of a flight (every scalar field of docs/sis.md §c.1, every collection with its source
// sequence numbers/keys in input order, the derived code-share MAFL) and Apply, which turns
// (current state, one decoded message for that flight) into (next state, changes). No database
// here: package flightstore loads and saves states and writes the events.
//
//	             FLOP <subtype>   ──► per-subtype Mode (SubtypeModes; docs/flight.md)
//	current ──►  SCHD FLTR record ──► schedule upsert (INV-14)            ──► next, Changes
//	 (or nil)    SCHD DEL / FDEL  ──► ACTIVE → DELETED
//
// Outcomes that are not changes: ErrNoFlight (SKIPPED no-match:FLID), ErrDeleted (SKIPPED
// no-match:deleted; the reasons are pkg/procstate's), *Violation (DEAD PROTOCOL). Apply is idempotent: applying the same input
// to its own result changes nothing (INV-20). An input stamped with its message (Input.At) keeps
// the provenance of every unit it writes and does not write what a later-created message set
// when it arrives out of mailbox order (INV-24b, prov.go; Changes.Stale, Batch: Skip.Stale).
//
// Values are comparable (Value, Row), so a State diff is plain ==; times are the local airport
// wall clock labelled UTC (Wall), the form the zone-less timestamp columns hold.
package flight
