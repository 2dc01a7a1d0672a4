// Package request is msgx's requests to the AODB (docs/spec.md §8, docs/requests.md): an RQFD
// asks for the schedule of a range of operation days, an RQRD for one reference list. The AODB
// reads them from the outbound mailbox table coutmsgs and answers, some time later, with a SCHD
// RESP or a list RESP in cminmsgs, which the processor applies only under a matching open request.
//
// Life cycle of a req_track row:
//
//	REGISTERED ──coutmsgs insert confirmed──▶ SENT ──COUTMSGS_DATE_SENT set──▶ WAITING
//	    │                                      │                                  │
//	    │                                      └──────response applied────────────┴──▶ DONE
//	    └──────────────── MSGX_REQUEST_TIMEOUT after registration, or a newer request
//	                       of the same kind and scope (superseded) ───────────────────▶ EXPIRED
//
// REGISTERED, SENT and WAITING are open; one open request per (kind, scope) at a time (a partial
// unique index). DONE and EXPIRED are final: a late response never changes them.
//
// Sending is at most once per request although the outbound insert (MySQL) and the local commit
// (PostgreSQL) are two transactions: the outbound message is built once at registration and
// stored with the request, its META (SNDR, SEQN, DTTM) being the request's token. A sender holds
// the request row locked, looks the exact text up in coutmsgs, inserts it only when absent, and
// commits SENT. A crash between the insert and the commit leaves the request REGISTERED; the next
// send finds the row and only records it.
//
// The pure decisions (Spec, NextSEQN, Match, Due) have no I/O; Store holds the SQL (sql.go),
// Sender the two-database send, Sweeper the periodic work of the jobs stage.
package request
