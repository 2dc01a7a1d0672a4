package sis

import (
	"fmt"
	"strconv"
	"time"
)

// RequestHeader is the META of an outbound request (docs/sis.md §f.4).
type RequestHeader struct {
	// SNDR is the requesting system, 1-4 upper-case letters or digits (the peer
	// wrote VIEW; the mailbox column is varchar(4)).
	SNDR string
	// SEQN is the sender counter, 0..999999, written zero-padded to 6 digits
	// (the caller wraps it after 999999).
	SEQN int
	// DTTM is the creation time, written as yyyyMMddHHmmss in its own location
	// (pass the airport-local time).
	DTTM time.Time
	// RoutingID is the coutmsgs ROUTINGID the request is written with, 1-23 characters
	// (MSGX_REQUEST_ROUTINGID; the peer used VIEWRQRD / VIEWRQFD). It is not part of the XML.
	RoutingID string
}

// Outbound is an encoded request: the coutmsgs row's message and ROUTINGID.
type Outbound struct {
	RoutingID string
	Text      []byte
}

func (h RequestHeader) validate() error {
	if len(h.SNDR) < 1 || len(h.SNDR) > 4 {
		return protocol("MSG/META/SNDR", h.SNDR, "SNDR must be 1-4 characters")
	}
	for i := 0; i < len(h.SNDR); i++ {
		c := h.SNDR[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return protocol("MSG/META/SNDR", h.SNDR, "SNDR must be upper-case letters or digits")
		}
	}
	if h.SEQN < 0 || h.SEQN > 999999 {
		return protocol("MSG/META/SEQN", strconv.Itoa(h.SEQN), "SEQN must be 0..999999")
	}
	if h.DTTM.IsZero() {
		return protocol("MSG/META/DTTM", "", "DTTM required")
	}
	if len(h.RoutingID) < 1 || len(h.RoutingID) > 23 {
		return protocol("ROUTINGID", h.RoutingID, "ROUTINGID must be 1-23 characters (coutmsgs.ROUTINGID)")
	}
	return nil
}

// envelope writes a request. A request is ASCII only (validate admits nothing else in SNDR, and
// the rest is list codes and digits) and declares UTF-8: the same bytes in UTF-8, GBK, GB18030
// or Latin-1, so the AODB reads what msgx meant whatever the coutmsgs column's charset
// (docs/sis.md §f.4).
func envelope(h RequestHeader, typ, styp, body string) []byte {
	return fmt.Appendf(nil, `<?xml version="1.0" encoding="UTF-8"?>
<MSG xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="unisysaodbsis.xsd">
	<META>
		<SNDR>%s</SNDR>
		<SEQN>%06d</SEQN>
		<DTTM>%s</DTTM>
		<TYPE>%s</TYPE>
		<STYP>%s</STYP>
	</META>
%s</MSG>
`, h.SNDR, h.SEQN, h.DTTM.Format("20060102150405"), typ, styp, body)
}

// EncodeRQRD builds a reference-data request for one of the 23 list codes:
// META TYPE RQRD, STYP = list code, body <RQRD><RTYP>list code</RTYP></RQRD>.
// The answer arrives as that list TYPE with STYP RESP.
func EncodeRQRD(h RequestHeader, listCode string) (Outbound, error) {
	if err := h.validate(); err != nil {
		return Outbound{}, err
	}
	if !IsRefList(listCode) {
		return Outbound{}, protocol("MSG/RQRD/RTYP", listCode, "not one of the 23 reference list codes")
	}
	return Outbound{RoutingID: h.RoutingID,
		Text: envelope(h, "RQRD", listCode, "\t<RQRD>\n\t\t<RTYP>"+listCode+"</RTYP>\n\t</RQRD>\n")}, nil
}

// IsRefList reports whether code is one of the 23 reference list codes (docs/sis.md §f.4).
func IsRefList(code string) bool {
	_, ok := refListKeys[code]
	return ok
}

// EncodeRQFD builds a daily-schedule request for the window [from, to]:
// META TYPE RQFD, STYP NONE, body <RQFD><STDB>from</STDB><STDE>to</STDE></RQFD>
// with DDMONYYHHMM times written in the times' own location (pass airport
// local times). The answer is expected as SCHD with STYP RESP.
func EncodeRQFD(h RequestHeader, from, to time.Time) (Outbound, error) {
	if err := h.validate(); err != nil {
		return Outbound{}, err
	}
	if from.IsZero() || to.IsZero() {
		return Outbound{}, protocol("MSG/RQFD/STDB", "", "window start and end required")
	}
	if to.Before(from) {
		return Outbound{}, protocol("MSG/RQFD/STDE", FormatDateTime(to), "window end before start "+FormatDateTime(from))
	}
	if from.Year() < 2000 || to.Year() > 2099 {
		return Outbound{}, protocol("MSG/RQFD/STDB", FormatDateTime(from), "years must be 2000-2099 (two-digit SIS years)")
	}
	body := "\t<RQFD>\n\t\t<STDB>" + FormatDateTime(from) + "</STDB>\n\t\t<STDE>" + FormatDateTime(to) + "</STDE>\n\t</RQFD>\n"
	return Outbound{RoutingID: h.RoutingID, Text: envelope(h, "RQFD", "NONE", body)}, nil
}
