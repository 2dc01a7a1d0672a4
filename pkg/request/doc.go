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
//	    └──────────────── MSGX_REQUEST_TIMEOUT after registration, or a newer request of
//	                       its days or its list registered (superseded) ─────────────────▶ EXPIRED
//
// REGISTERED, SENT and WAITING are open. One open request per (kind, operation day, sender)
// (INV-25): an open RQFD holds every day of its range (req_open_day), and
// registering an RQFD first expires the open ones holding any of its days (superseded) and asks
// for every day they asked for too, so no day is left unasked. One open RQRD per (list, sender)
// (a partial unique index); a new one expires the open one first. DONE and EXPIRED are final: an
// answer changes state only under a SENT or WAITING request within its timeout, sent no later
// than the answer's DTTM (to the second).
//
// Sending is at most once per request although the outbound insert (MySQL) and the local commit
// (PostgreSQL) are two transactions: the outbound message is built once at registration and
// stored with the request, its META (SNDR, SEQN, DTTM) being the request's token. A sender holds
// the request row locked, looks the exact text up in coutmsgs, inserts it only when absent, and
// commits SENT. A crash between the insert and the commit leaves the request REGISTERED; the next
// send finds the row and records it with the row's insert time as the sent time. An answer that
// only that REGISTERED request would match waits (ErrAwaitingSend: the processor retries it).
//
// The pure decisions (Spec, NextSEQN, Gaps, Match, Due) have no I/O; Store holds the SQL (sql.go),
// Sender the two-database send, Sweeper the periodic work of the jobs stage.
package request
