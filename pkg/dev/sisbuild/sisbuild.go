// Package sisbuild writes small SIS XML messages for tests: the META header, FLOP and SCHD
// messages and schedule records, with the flight identifiers the tests share. It is the one place
// tests build messages by hand (the simulator, pkg/dev/simulate, writes whole airport days).
package sisbuild

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"
)

// DTTM is the default message time: 2026-12-02 08:00:00.
var DTTM = time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)

// The flight identifiers the builders use.
const (
	FFID      = "YG-YG9028-D-23JAN210535-D" // the FFID of FLOP and SCHD flights
	StandFFID = "CA-CA101-A-02DEC261345-D"  // the FFID of Stand's FLOP STND messages
)

// Seq hands out increasing SEQNs, so that every message a test builds has its own identity.
type Seq struct{ n atomic.Int64 }

// Next returns the next SEQN, from 1.
func (s *Seq) Next() int64 { return s.n.Add(1) }

// Header is the XML declaration, the MSG start tag and the META of a message from AODB.
func Header(seqn int64, dttm time.Time, typ, styp string) string {
	return fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<MSG><META><SNDR>AODB</SNDR><SEQN>%d</SEQN><DTTM>%s</DTTM><TYPE>%s</TYPE><STYP>%s</STYP></META>`,
		seqn, dttm.Format("20060102150405"), typ, styp)
}

// Stand is a FLOP STND message: flid (FFID StandFFID) moves to stand, at dttm.
func Stand(seqn int64, dttm time.Time, flid int64, stand string) string {
	return Header(seqn, dttm, "FLOP", "STND") +
		fmt.Sprintf("\n<FLOP><FLID>%d</FLID><FFID>%s</FFID><STND>%s</STND></FLOP></MSG>", flid, StandFFID, stand)
}

// FLOP is a FLOP message of subtype styp for flid (FFID FFID) whose payload is body.
func FLOP(seqn int64, styp string, flid int64, body string) string {
	return Header(seqn, DTTM, "FLOP", styp) +
		fmt.Sprintf(`<FLOP><FLID>%d</FLID><FFID>%s</FFID>%s</FLOP></MSG>`, flid, FFID, body)
}

// SCHD is a SCHD message of subtype styp with the records (FLTR bodies) and a matching RECS.
func SCHD(seqn int64, styp string, records ...string) string {
	var b strings.Builder
	b.WriteString(Header(seqn, DTTM, "SCHD", styp))
	fmt.Fprintf(&b, "<SCHD><RECS>%d</RECS>", len(records))
	for _, r := range records {
		b.WriteString("<FLTR>" + r + "</FLTR>")
	}
	b.WriteString("</SCHD></MSG>")
	return b.String()
}

// FLTR is a minimal valid schedule record of flid (flight number flno, its airline its first two
// letters, scheduled at sodt, e.g. 23JAN210535) followed by the extra elements.
func FLTR(flid int64, flno, sodt, extra string) string {
	return fmt.Sprintf(`<FLID>%d</FLID><ALCD>%s</ALCD><FLNO>%s</FLNO><MVIN>D</MVIN><SODT>%s</SODT><FLTY>W</FLTY><FLIN>D</FLIN><ACFT>733</ACFT>%s`,
		flid, flno[:2], flno, sodt, extra)
}
