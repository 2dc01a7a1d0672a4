package simulate

import (
	"strconv"
	"strings"
	"time"

	"github.com/msgx/msgx/pkg/sis"
)

// xw renders SIS XML the way the samples look: UTF-8 declaration, MSG with the
// xsi attributes, tab indentation, one element per line.
type xw struct {
	b     strings.Builder
	depth int
}

const (
	xsiSpaced  = `<MSG xmlns:xsi = "http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation = "unisysaodbsis.xsd">`
	xsiCompact = `<MSG xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="unisysaodbsis.xsd">`
)

type meta struct {
	sndr string
	seqn int64
	at   time.Time
	typ  string
	styp string
}

func stamp(t time.Time) string { return t.Format("20060102150405") }

func (w *xw) start(m meta, compact bool) {
	w.b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	if compact {
		w.b.WriteString(xsiCompact)
	} else {
		w.b.WriteString(xsiSpaced)
	}
	w.b.WriteByte('\n')
	w.depth = 1
	w.open("META")
	w.leaf("SNDR", m.sndr)
	w.leaf("SEQN", strconv.FormatInt(m.seqn, 10))
	w.leaf("DTTM", stamp(m.at))
	w.leaf("TYPE", m.typ)
	w.leaf("STYP", m.styp)
	w.close("META")
}

func (w *xw) end() []byte {
	w.b.WriteString("</MSG>\n")
	return []byte(w.b.String())
}

func (w *xw) indent() {
	for range w.depth {
		w.b.WriteByte('\t')
	}
}

// open writes <name a="v"...>; attrs are name/value pairs.
func (w *xw) open(name string, attrs ...string) {
	w.indent()
	w.tag(name, attrs)
	w.b.WriteByte('\n')
	w.depth++
}

func (w *xw) tag(name string, attrs []string) {
	w.b.WriteByte('<')
	w.b.WriteString(name)
	for i := 0; i+1 < len(attrs); i += 2 {
		w.b.WriteByte(' ')
		w.b.WriteString(attrs[i])
		w.b.WriteString(`="`)
		escape(&w.b, attrs[i+1])
		w.b.WriteByte('"')
	}
	w.b.WriteByte('>')
}

func (w *xw) close(name string) {
	w.depth--
	w.indent()
	w.b.WriteString("</" + name + ">\n")
}

// leaf writes <name attrs>text</name> (empty text gives <name></name>).
func (w *xw) leaf(name, text string, attrs ...string) {
	w.indent()
	w.tag(name, attrs)
	escape(&w.b, text)
	w.b.WriteString("</" + name + ">\n")
}

// opt writes the leaf only when text is not empty.
func (w *xw) opt(name, text string) {
	if text != "" {
		w.leaf(name, text)
	}
}

// optTime writes the leaf only when t is set.
func (w *xw) optTime(name string, t time.Time) {
	if !t.IsZero() {
		w.leaf(name, sis.FormatDateTime(t))
	}
}

func (w *xw) optInt(name string, v int64) {
	if v != 0 {
		w.leaf(name, strconv.FormatInt(v, 10))
	}
}

// timeText is the DDMONYYHHMM text of t, or "" for the zero time.
func timeText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return sis.FormatDateTime(t)
}

func escape(b *strings.Builder, s string) {
	for _, r := range s {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '"':
			b.WriteString("&quot;")
		default:
			b.WriteRune(r)
		}
	}
}

func seqText(n int) string { return strconv.Itoa(n) }

func durText(min int) string {
	h, m := min/60, min%60
	return string([]byte{byte('0' + h/10), byte('0' + h%10), byte('0' + m/10), byte('0' + m%10)})
}

// Collection entries, shared by FLTR and FLOP bodies.

func (w *xw) route(name string, s RouteStop) {
	w.open(name, "RTNO", seqText(s.Seq))
	w.leaf("APCD", s.Airport)
	w.optTime("SCAT", s.Arrival)
	w.optTime("SCDT", s.Departure)
	w.close(name)
}

func (w *xw) stand(s StandAlloc) {
	w.open("PSDT", "PSNO", seqText(s.Seq))
	w.leaf("PSST", s.Stand)
	w.optTime("STST", s.Start)
	w.optTime("STET", s.End)
	w.close("PSDT")
}

func (w *xw) gate(g GateAlloc) {
	w.open("GTDT", "GTNO", seqText(g.Seq))
	w.leaf("GATE", g.Gate)
	w.optTime("PGOT", g.PlannedOpen)
	w.optTime("PGCT", g.PlannedClose)
	w.optTime("GOTM", g.Open)
	w.optTime("GCTM", g.Close)
	w.opt("GTYP", g.Type)
	w.close("GTDT")
}

func (w *xw) checkin(c CheckinAlloc) {
	w.open("CKDT", "CKNO", seqText(c.Seq))
	w.leaf("CHKC", c.Desk)
	w.opt("CCLS", c.Class)
	w.optTime("PCOT", c.PlannedOpen)
	w.optTime("PCCT", c.PlannedClose)
	w.optTime("COTM", c.Open)
	w.optTime("CCTM", c.Close)
	w.opt("CTYP", c.Type)
	w.close("CKDT")
}

func (w *xw) carousel(c CarouselAlloc) {
	w.open("CLDT", "CLNO", seqText(c.Seq))
	w.leaf("BELT", c.Belt)
	w.opt("BCLS", c.Class)
	w.optTime("PCOT", c.PlannedOpen)
	w.optTime("PCCT", c.PlannedClose)
	w.optTime("FBAG", c.FirstBag)
	w.optTime("LBAG", c.LastBag)
	w.opt("BTYP", c.Type)
	w.close("CLDT")
}

func (w *xw) chute(c ChuteAlloc) {
	w.open("CHDT", "CHNO", seqText(c.Seq))
	w.leaf("CHUT", c.Chute)
	w.opt("CCLS", c.Class)
	w.optTime("PCBT", c.PlannedBegin)
	w.optTime("PCET", c.PlannedEnd)
	w.optTime("CBTM", c.Begin)
	w.optTime("CETM", c.End)
	w.opt("CTYP", c.Type)
	w.close("CHDT")
}

func (w *xw) chock(c Chock) {
	w.open("CHOT", "CSNO", seqText(c.Seq))
	w.optTime("CHTM", c.Time)
	w.leaf("CHID", c.Indicator)
	w.opt("CHST", c.Stand)
	w.close("CHOT")
}

func (w *xw) airbridge(a AirbridgeOp) {
	w.open("ABTM", "ASNO", seqText(a.Seq))
	w.leaf("ABDG", a.Airbridge)
	w.leaf("ABOP", a.Op)
	w.optTime("AOTM", a.Time)
	w.close("ABTM")
}

func (w *xw) delay(d Delay) {
	w.leaf("DELY", d.Comment, "CODE", d.Code, "STRT", timeText(d.Start), "DURA", durText(d.Minutes))
}

// ffid builds the readable flight key of docs/sis.md §d.
func ffid(f *Flight) string {
	return f.Airline + "-" + f.FlightNumber + "-" + f.Movement + "-" + sis.FormatDateTime(f.Scheduled) + "-" + f.Indicator
}

// fltr writes a full schedule record (SCHD DNLD / ADFT) in the sample's order.
func (w *xw) fltr(f *Flight) {
	w.open("FLTR")
	w.leaf("FLID", strconv.FormatInt(f.FLID, 10))
	w.leaf("ALCD", f.Airline)
	w.leaf("FLNO", f.FlightNumber)
	w.leaf("MVIN", f.Movement)
	w.leaf("SODT", sis.FormatDateTime(f.Scheduled))
	w.leaf("FLTY", f.FlightType)
	w.leaf("FLIN", f.Indicator)
	for _, s := range f.Route {
		w.route("ROUT", s)
	}
	w.leaf("ACFT", f.AircraftType)
	w.opt("RENO", f.Registration)
	w.opt("TAOP", f.LinkedAirline)
	w.opt("TAFL", f.LinkedFlight)
	w.optInt("TAID", f.LinkedFLID)
	w.opt("TRML", f.Terminal)
	w.optInt("MAXP", int64(f.MaxPax))
	w.opt("STND", f.Stand)
	for _, s := range f.Stands {
		w.stand(s)
	}
	w.optInt("PHAG", f.PaxHandler)
	w.optInt("FHAG", f.FieldHandler)
	w.optInt("MHAG", f.MaintHandler)
	for _, s := range f.FullRoute {
		w.route("ERUT", s)
	}
	w.opt("EXSC", f.ExtStatus)
	w.opt("EXSR", f.ExtRemark)
	w.opt("FTSS", f.Status)
	w.opt("CSOP", f.MasterAirline)
	w.opt("CSFT", f.MasterFlight)
	w.optInt("MAID", f.MasterFLID)
	for _, g := range f.Gates {
		w.gate(g)
	}
	for _, c := range f.Checkins {
		w.checkin(c)
	}
	for _, c := range f.Carousels {
		w.carousel(c)
	}
	for _, c := range f.Chutes {
		w.chute(c)
	}
	w.close("FLTR")
}

// flop writes the FLOP block of a change for flight f.
func (w *xw) flop(f *Flight, c Change) {
	p := &c.Flight
	w.open("FLOP")
	w.leaf("FLID", strconv.FormatInt(f.FLID, 10))
	w.leaf("FFID", ffid(f))
	switch c.Subtype {
	case "ESTT":
		w.leaf("ESTT", timeText(p.Estimated))
	case "ACTT":
		w.leaf("ACTT", timeText(p.Actual))
	case "CNCL":
		w.leaf("CNCL", timeText(p.Cancelled))
	case "BOTM":
		w.leaf("BOTM", timeText(p.BoardingOpen))
	case "LACL":
		w.leaf("LACL", timeText(p.LastCall))
	case "EOBT":
		w.leaf("EOBT", timeText(p.EstOffBlock))
	case "TOBT":
		w.leaf("TOBT", timeText(p.TargetOffBlock))
	case "STND":
		w.leaf("STND", p.Stand)
	case "FDIV":
		if d := p.Diversion; d != nil {
			w.leaf("FDIV", d.Reason, "DDES", d.Airport, "DDIR", d.Direction)
		} else {
			w.leaf("FDIV", "", "DDES", "")
		}
	case "FRET":
		if r := p.Return; r != nil {
			w.leaf("FRET", r.Reason, "REID", r.Type)
		} else {
			w.leaf("FRET", "")
		}
	case "PSDT":
		for _, s := range p.Stands {
			w.stand(s)
		}
	case "GTDT":
		for _, g := range p.Gates {
			w.gate(g)
		}
	case "CKDT":
		for _, x := range p.Checkins {
			w.checkin(x)
		}
	case "CLDT":
		for _, x := range p.Carousels {
			w.carousel(x)
		}
	case "CHDT":
		for _, x := range p.Chutes {
			w.chute(x)
		}
	case "CHOT":
		for _, x := range p.Chocks {
			w.chock(x)
		}
	case "ABTM":
		for _, x := range p.Airbridges {
			w.airbridge(x)
		}
	case "DELY":
		if c.ClearDelays {
			w.leaf("DELY", "")
		}
		for _, d := range p.Delays {
			w.delay(d)
		}
	case "ERUT":
		for _, s := range p.FullRoute {
			w.route("ERUT", s)
		}
	case "FDEL":
		w.leaf("FDEL", "")
	}
	w.close("FLOP")
}
