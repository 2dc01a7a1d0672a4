// Package sis is the codec for Unisys AODB SIS XML messages (catalogue:
// docs/sis.md; error classes: docs/spec.md §5; limits: docs/spec.md §14).
//
// # Decoding
//
// Decode turns the raw mailbox text of one message into a *Message:
//
//	raw ──► limits (MaxBytes) ──► text (declared encoding, charset.go)
//	    ──► scanner (UTF-8, no DTD, depth, trailing content)
//	    ──► element tree ──► META (SNDR SEQN DTTM TYPE STYP, trimmed)
//	    ──► Kind by TYPE/STYP ──► typed body ──► contract checks ──► *Message
//
// Kinds: SCHD DNLD/RESP → KindScheduleSnapshot, SCHD DEL → KindScheduleDelete,
// any other SCHD STYP (ADFT…) → KindScheduleAdd, SCHS → KindSeason, FLOP FDEL →
// KindFlightDelete, other supported FLOP subtypes → KindFlightUpdate, the 23
// reference lists → KindRefList, anything else (unknown TYPE, unknown FLOP
// subtype) → KindUnsupported, which is not an error: the pipeline decides.
//
// # Absent, empty, value
//
// Every single value is a Field[T] (absent / present-but-empty / value) and
// every collection a List[T] (absent / carried, with its entries in input
// order and the ClearAll flag for the bare "remove all" form of DELY, ERUT and
// SRVT). Empty attributes (DDES="") count as not given. A FLOP's payload is a
// FlightRecord holding only the subtype's elements (SubtypeElements), so the
// flight processor can apply FLOP and SCHD with the same field types.
//
// Times are wall-clock times in Options.Location (default Asia/Shanghai):
// DDMONYYHHMM (month case-insensitive, year 2000+YY), DDMONYY, HHMM (00-23,
// 00-59), META DTTM yyyyMMddHHmmss; DELY@DURA HHMM becomes minutes (h*60+m).
//
// # What the codec rejects
//
// Exactly one *Error per failure, with the element path (MSG/FLOP/FDIV@DDIR,
// MSG/SCHD/FLTR[2]/SODT; entries 1-based) and the offending value:
//
//   - MALFORMED: not well-formed, DOCTYPE or undefined entity, invalid UTF-8
//     under a UTF-8 declaration (or none), control characters, a non-ASCII XML
//     declaration, nesting deeper than MaxDepth, anything but blanks,
//     comments or PIs after the root (ABNR/03_ADD), root not MSG, META, TYPE or
//     STYP missing, body missing for a kind that needs one.
//   - PROTOCOL: required field missing (FLID; FLTR ALCD FLNO MVIN SODT FLTY
//     FLIN ACFT except in SCHD DEL; SCHS SDAT EDAT and pattern fields), bad
//     enum (MVIN A/D, FLIN D/I/M, DDIR TO/FROM, ARES O/G, REID A/G, POID O/C,
//     CHID ON/OFF, ABOP A/D; exact case), bad date/time/integer, column length
//     (the columnLimits table, counted in characters), SCHD/SCHS RECS ≠
//     records, SCHS season start after end, validity start after end or
//     outside the season, duplicate single-valued elements, text inside
//     containers, and the FLOP forms docs/sis.md §e.2 says cannot clear a value:
//     ACFT/FLIN/FLTY/MAXP absent or empty; REMC/RENO/RUNW/STND/TRML/FTSS and
//     EXSS's EXSC absent; ABTM/CHDT/CHOT/CKDT/CLDT/GTDT/PSDT without entries;
//     PORT without POID; FDEL absent or not empty; FDIV with DDES but no valid
//     DDIR; FLAB/FRET with a reason but no valid indicator.
//   - CODEC_ERROR: unknown elements in typed bodies, several FLOP/SCHD/SCHS
//     blocks, an encoding declaration other than UTF-8, GB2312, GBK or GB18030,
//     bytes neither UTF-8 nor the declared GB charset, a message above MaxBytes or
//     with more than a million elements (replayable once supported).
//
// Reference-list RECS mismatches, VIPF entries without VPCD, META extras and a
// known element that does not belong to the FLOP subtype are Warnings.
//
// # Scanner
//
// The XML scanner (scan.go) is hand-written: encoding/xml's tokenizer alone is
// slower than the decoder's throughput target for schedules before any typed
// decoding, and it stops silently at the root end tag. The scanner
// builds a flat, pooled node arena whose strings are substrings of one copy of
// the input; allocation is proportional to the input and bounded by MaxBytes.
//
// # Requests
//
// EncodeRQRD and EncodeRQFD write the two outbound requests of docs/sis.md §f.4, with the
// ROUTINGID the caller configured (MSGX_REQUEST_ROUTINGID); pkg/request sends them.
package sis
