package simulate

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// State is a flight's life-cycle state in the expected model.
type State string

// Flight states (docs/spec.md §6).
const (
	StateActive  State = "ACTIVE"
	StateDeleted State = "DELETED"
)

// Conventions of the expected model:
//
//   - Times are wall-clock times in Config.Location with minute precision, exactly
//     what sis.Decode returns for the same text; the zero time means NULL/not set.
//   - An empty string or a zero number means NULL/not set: the simulator never sends
//     an empty value for a field that docs/sis.md §e.2 stores as an empty string (REMC,
//     RENO, STND...), so there is no "set to empty string" state to model.
//   - Collections are nil when empty and sorted by their sequence number (RTNO, PSNO,
//     GTNO...) or key (DELY CODE).
//
// Merge semantics assumed (docs/sis.md §e.2/§e.3 and docs/spec.md §6, written from the
// catalogue, not from any implementation):
//
//   - SCHD DNLD and SCHD ADFT: each FLTR creates the flight (FLID unseen before)
//     with exactly the fields the record carries. The simulator sends one FLTR per
//     FLID per day and never re-sends a schedule record for a flight that FLOPs
//     already changed, so the open question "does an SCHD update clear what it
//     does not carry?" (docs/sis.md §h.1 versus docs/spec.md INV-14) never arises.
//   - FLOP single-valued subtypes (ESTT ACTT CNCL BOTM LACL EOBT TOBT STND): the
//     value replaces the stored one; the empty element clears it (CNCL empty =
//     un-cancel). STND is never sent empty.
//   - FLOP FDIV: DDES+DDIR(+reason) replace the diversion; DDES="" clears it.
//     FLOP FRET: REID(+reason) replace the return; the bare element clears it.
//   - FLOP replace-by-sequence (PSDT GTDT CKDT CLDT CHDT CHOT ABTM): the message is
//     the complete current list; the stored list becomes exactly the message's
//     entries (entries with other numbers are removed). The simulator always sends
//     the complete list, so "replace" and "upsert by number" give the same result
//     except where an allocation is dropped (a stand change renumbers nothing, it
//     replaces the list).
//   - FLOP DELY merges by CODE: every coded entry replaces the stored entry with
//     that CODE (all of STRT, DURA, comment) or is added; other codes are kept. The
//     bare <DELY></DELY> removes all delays.
//   - FLOP ERUT merges by RTNO: every entry replaces the stored stop with that RTNO
//     (APCD, SCAT, SCDT as sent); other stops are kept.
//   - FLOP FDEL: state becomes DELETED; every other field keeps its last value
//     (docs/spec.md §6: details kept until purge). No message follows for a deleted FLID.
//   - Code-share children carry MAID/CSOP/CSFT from the schedule; no FLOP changes
//     them. The master's CodeShares is derived (docs/spec.md §6, INV-21): the ACTIVE
//     flights whose MAID is the master's FLID, as (FLID, FLNO) sorted by FLID.
//   - Turnaround fields (TAOP/TAFL/TAID) are stored as given on both legs.
//   - ROUT is recorded as sent; the peer ignores it (docs/sis.md §e.5), so a comparison
//     may skip it.

// Flight is the expected state of one flight. Field comments name the SIS element.
type Flight struct {
	FLID  int64
	State State

	// Schedule (FLTR).
	Airline       string    // ALCD
	FlightNumber  string    // FLNO
	Movement      string    // MVIN A/D
	Scheduled     time.Time // SODT (STA for arrivals, STD for departures)
	FlightType    string    // FLTY
	Indicator     string    // FLIN D/I/M
	AircraftType  string    // ACFT
	Registration  string    // RENO
	Terminal      string    // TRML
	MaxPax        int       // MAXP
	LinkedAirline string    // TAOP
	LinkedFlight  string    // TAFL
	LinkedFLID    int64     // TAID
	MasterAirline string    // CSOP
	MasterFlight  string    // CSFT
	MasterFLID    int64     // MAID
	PaxHandler    int64     // PHAG
	FieldHandler  int64     // FHAG
	MaintHandler  int64     // MHAG
	ExtStatus     string    // EXSC
	ExtRemark     string    // EXSR
	Status        string    // FTSS

	// Operations.
	Stand          string     // STND (current stand)
	Estimated      time.Time  // ESTT (ETA/ETD at the home airport)
	Actual         time.Time  // ACTT (ATA/ATD)
	Cancelled      time.Time  // CNCL
	BoardingOpen   time.Time  // BOTM
	LastCall       time.Time  // LACL
	EstOffBlock    time.Time  // EOBT
	TargetOffBlock time.Time  // TOBT
	Diversion      *Diversion // FDIV (nil = none)
	Return         *Return    // FRET (nil = none)

	// Collections.
	Route      []RouteStop     // ROUT@RTNO (schedule only)
	FullRoute  []RouteStop     // ERUT@RTNO (merge by RTNO)
	Stands     []StandAlloc    // PSDT@PSNO (replace)
	Gates      []GateAlloc     // GTDT@GTNO (replace)
	Checkins   []CheckinAlloc  // CKDT@CKNO (replace)
	Carousels  []CarouselAlloc // CLDT@CLNO (replace)
	Chutes     []ChuteAlloc    // CHDT@CHNO (replace)
	Chocks     []Chock         // CHOT@CSNO (replace)
	Airbridges []AirbridgeOp   // ABTM@ASNO (replace)
	Delays     []Delay         // DELY@CODE (merge by CODE)

	// CodeShares is derived, not sent: the ACTIVE children whose MAID is this FLID.
	CodeShares []CodeShare `json:",omitempty"`
}

// Diversion is FDIV: airport DDES, direction DDIR (TO/FROM), reason text.
type Diversion struct {
	Airport   string
	Direction string
	Reason    string
}

// Return is FRET: type REID (A air / G ground) and reason text.
type Return struct {
	Type   string
	Reason string
}

// RouteStop is a ROUT or ERUT entry.
type RouteStop struct {
	Seq       int       // RTNO
	Airport   string    // APCD
	Arrival   time.Time // SCAT
	Departure time.Time // SCDT
}

// StandAlloc is a PSDT entry.
type StandAlloc struct {
	Seq   int       // PSNO
	Stand string    // PSST
	Start time.Time // STST
	End   time.Time // STET
}

// GateAlloc is a GTDT entry.
type GateAlloc struct {
	Seq          int       // GTNO
	Gate         string    // GATE
	PlannedOpen  time.Time // PGOT
	PlannedClose time.Time // PGCT
	Open         time.Time // GOTM
	Close        time.Time // GCTM
	Type         string    // GTYP D/I
}

// CheckinAlloc is a CKDT entry.
type CheckinAlloc struct {
	Seq          int       // CKNO
	Desk         string    // CHKC
	Class        string    // CCLS
	PlannedOpen  time.Time // PCOT
	PlannedClose time.Time // PCCT
	Open         time.Time // COTM
	Close        time.Time // CCTM
	Type         string    // CTYP
}

// CarouselAlloc is a CLDT entry.
type CarouselAlloc struct {
	Seq          int       // CLNO
	Belt         string    // BELT
	Class        string    // BCLS
	PlannedOpen  time.Time // PCOT
	PlannedClose time.Time // PCCT
	FirstBag     time.Time // FBAG
	LastBag      time.Time // LBAG
	Type         string    // BTYP
}

// ChuteAlloc is a CHDT entry.
type ChuteAlloc struct {
	Seq          int       // CHNO
	Chute        string    // CHUT
	Class        string    // CCLS
	PlannedBegin time.Time // PCBT
	PlannedEnd   time.Time // PCET
	Begin        time.Time // CBTM
	End          time.Time // CETM
	Type         string    // CTYP
}

// Chock is a CHOT entry.
type Chock struct {
	Seq       int       // CSNO
	Time      time.Time // CHTM
	Indicator string    // CHID ON/OFF
	Stand     string    // CHST
}

// AirbridgeOp is an ABTM entry.
type AirbridgeOp struct {
	Seq       int       // ASNO
	Airbridge string    // ABDG
	Op        string    // ABOP A attach / D detach
	Time      time.Time // AOTM
}

// Delay is a DELY entry.
type Delay struct {
	Code    string    // @CODE
	Start   time.Time // @STRT
	Minutes int       // @DURA (HHMM -> h*60+m)
	Comment string    // element text
}

// CodeShare is one child of a code-share master.
type CodeShare struct {
	FLID         int64
	FlightNumber string
}

// Expected is what the simulator knows it sent: the final state of every flight
// and the keys of every reference list.
type Expected struct {
	// Flights holds every flight of the day (ACTIVE and DELETED), sorted by FLID.
	Flights []Flight
	// RefLists holds, per reference list TYPE, the record keys sent (sorted).
	RefLists map[string][]string
}

// Flight returns the expected flight with that FLID.
func (e Expected) Flight(flid int64) (Flight, bool) {
	i, ok := slices.BinarySearchFunc(e.Flights, flid, func(f Flight, id int64) int {
		switch {
		case f.FLID < id:
			return -1
		case f.FLID > id:
			return 1
		}
		return 0
	})
	if !ok {
		return Flight{}, false
	}
	return e.Flights[i], true
}

// Count returns how many flights are in state s.
func (e Expected) Count(s State) int {
	n := 0
	for _, f := range e.Flights {
		if f.State == s {
			n++
		}
	}
	return n
}

// clone returns a deep copy of f.
func (f Flight) clone() Flight {
	c := f
	if f.Diversion != nil {
		d := *f.Diversion
		c.Diversion = &d
	}
	if f.Return != nil {
		r := *f.Return
		c.Return = &r
	}
	c.Route = slices.Clone(f.Route)
	c.FullRoute = slices.Clone(f.FullRoute)
	c.Stands = slices.Clone(f.Stands)
	c.Gates = slices.Clone(f.Gates)
	c.Checkins = slices.Clone(f.Checkins)
	c.Carousels = slices.Clone(f.Carousels)
	c.Chutes = slices.Clone(f.Chutes)
	c.Chocks = slices.Clone(f.Chocks)
	c.Airbridges = slices.Clone(f.Airbridges)
	c.Delays = slices.Clone(f.Delays)
	c.CodeShares = slices.Clone(f.CodeShares)
	return c
}

// Change is what one good FLOP carries, in model terms: the subtype and a partial
// flight holding only the subtype's fields (a zero field = the empty element =
// clear), plus the bare-DELY flag.
type Change struct {
	Subtype     string
	Flight      Flight // FLID + the subtype's fields only
	ClearDelays bool   // DELY: the bare <DELY></DELY> form
}

// apply merges c into f following the semantics documented above.
func (f *Flight) apply(c Change) {
	p := c.Flight
	switch c.Subtype {
	case "ESTT":
		f.Estimated = p.Estimated
	case "ACTT":
		f.Actual = p.Actual
	case "CNCL":
		f.Cancelled = p.Cancelled
	case "BOTM":
		f.BoardingOpen = p.BoardingOpen
	case "LACL":
		f.LastCall = p.LastCall
	case "EOBT":
		f.EstOffBlock = p.EstOffBlock
	case "TOBT":
		f.TargetOffBlock = p.TargetOffBlock
	case "STND":
		f.Stand = p.Stand
	case "FDIV":
		f.Diversion = p.Diversion
	case "FRET":
		f.Return = p.Return
	case "PSDT":
		f.Stands = slices.Clone(p.Stands)
	case "GTDT":
		f.Gates = slices.Clone(p.Gates)
	case "CKDT":
		f.Checkins = slices.Clone(p.Checkins)
	case "CLDT":
		f.Carousels = slices.Clone(p.Carousels)
	case "CHDT":
		f.Chutes = slices.Clone(p.Chutes)
	case "CHOT":
		f.Chocks = slices.Clone(p.Chocks)
	case "ABTM":
		f.Airbridges = slices.Clone(p.Airbridges)
	case "DELY":
		if c.ClearDelays {
			f.Delays = nil
			return
		}
		for _, d := range p.Delays {
			i := slices.IndexFunc(f.Delays, func(x Delay) bool { return x.Code == d.Code })
			if i >= 0 {
				f.Delays[i] = d
			} else {
				f.Delays = append(f.Delays, d)
			}
		}
		slices.SortFunc(f.Delays, func(a, b Delay) int { return cmp.Compare(a.Code, b.Code) })
	case "ERUT":
		for _, s := range p.FullRoute {
			i := slices.IndexFunc(f.FullRoute, func(x RouteStop) bool { return x.Seq == s.Seq })
			if i >= 0 {
				f.FullRoute[i] = s
			} else {
				f.FullRoute = append(f.FullRoute, s)
			}
		}
		slices.SortFunc(f.FullRoute, func(a, b RouteStop) int { return a.Seq - b.Seq })
	case "FDEL":
		f.State = StateDeleted
	}
}

// --- late rows (INV-24b) -------------------------------------------------------

// The model is the day's messages applied in send (DTTM) order. msgx reaches the same state when
// a row commits late (after its id was skipped as a gap) and is processed after messages sent
// later: a unit (field, collection, collection entry) a later message sets again is not written
// by the late row (docs/spec.md INV-24b), every other unit it writes is written with the value
// the model has for it anyway. So Expected does not change; what a late row ends as does:
// Overtaken names the units that make it stale.

// units names what a good FLOP sets, as msgx names it (docs/flight.md, provenance): a field,
// "state", a collection written as a whole (a complete list, a clear-all) or "collection/key".
func (c Change) units() []string {
	switch c.Subtype {
	case "FDIV":
		return []string{"fdiv_ddes", "fdiv_ddir", "fdiv_reason"}
	case "FRET":
		return []string{"fret_reid", "fret_reason"}
	case "FDEL":
		return []string{"state"}
	case "DELY":
		if c.ClearDelays {
			return []string{"dely"}
		}
		var out []string
		for _, d := range c.Flight.Delays {
			out = append(out, "dely/"+d.Code)
		}
		return out
	case "ERUT":
		var out []string
		for _, s := range c.Flight.FullRoute {
			out = append(out, "erut/"+strconv.Itoa(s.Seq))
		}
		return out
	}
	return []string{strings.ToLower(c.Subtype)}
}

// Overtaken returns the units of good FLOP i that later good FLOPs of its flight set again, in
// the names msgx's stale:late reason uses, and whether that is every unit of i (a late row of
// i processed after them ends SKIPPED stale:late). A whole collection is overtaken by a later
// whole write; an entry by a later write of the entry or of the whole collection; a whole
// write by later entry writes in part (those entries).
func (d Day) Overtaken(i int) (names []string, all bool) {
	m := d.Messages[i]
	if m.Change == nil {
		return nil, false
	}
	later := map[string]bool{}
	for _, o := range d.Messages[i+1:] {
		if o.FLID == m.FLID && o.Outcome == OutcomeApplied && o.Change != nil {
			for _, u := range o.Change.units() {
				later[u] = true
			}
		}
	}
	own := m.Change.units()
	fresh := 0
	for _, u := range own {
		coll, _, entry := strings.Cut(u, "/")
		switch {
		case later[u] || (entry && later[coll]):
			names = append(names, u)
		case !entry && isCollection(u):
			// a whole write keeps the entries set later (and still writes the rest)
			fresh++
			prefix := u + "/"
			var kept []string
			for l := range later {
				if strings.HasPrefix(l, prefix) {
					kept = append(kept, l)
				}
			}
			slices.Sort(kept)
			names = append(names, kept...)
		default:
			fresh++
		}
	}
	return names, len(names) > 0 && fresh == 0
}

func isCollection(u string) bool {
	switch u {
	case "psdt", "gtdt", "ckdt", "cldt", "chdt", "chot", "abtm", "dely", "erut":
		return true
	}
	return false
}

// LateCandidates returns up to n good FLOPs, spread over the day, that a test may commit late
// (WriterConfig.Late): their flight is never deleted afterwards (a late FLOP after the delete
// ends SKIPPED no-match:deleted and the deleted flight keeps the older values), and a later
// message of the flight sets one of their units again (the late row meets INV-24b).
func (d Day) LateCandidates(n int) []int {
	deletedAfter := func(i int) bool {
		for _, o := range d.Messages[i+1:] {
			if o.FLID == d.Messages[i].FLID && o.Subtype == "FDEL" && o.Outcome == OutcomeApplied {
				return true
			}
		}
		return false
	}
	var all []int
	for i, m := range d.Messages {
		if m.Outcome != OutcomeApplied || m.Change == nil || m.Subtype == "FDEL" || deletedAfter(i) {
			continue
		}
		if names, _ := d.Overtaken(i); len(names) > 0 {
			all = append(all, i)
		}
	}
	if len(all) <= n {
		return all
	}
	out := make([]int, 0, n)
	for k := range n {
		out = append(out, all[k*len(all)/n])
	}
	return out
}
