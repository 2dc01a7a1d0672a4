package simulate

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Outcome is what the pipeline is meant to do with a message.
type Outcome string

// Intended outcomes.
const (
	OutcomeApplied   Outcome = "applied"   // good message, changes state (or reference data)
	OutcomeDuplicate Outcome = "duplicate" // same SNDR|TYPE|STYP|SEQN as an earlier message: SKIPPED
	OutcomeMalformed Outcome = "malformed" // not well-formed / META broken: DEAD MALFORMED
	OutcomeProtocol  Outcome = "protocol"  // well-formed but breaks the SIS contract: DEAD PROTOCOL
)

// Outcomes lists every outcome in a stable order.
var Outcomes = []Outcome{OutcomeApplied, OutcomeDuplicate, OutcomeMalformed, OutcomeProtocol}

// Message is one simulated mailbox message in send order.
type Message struct {
	Index   int       // position in send order
	At      time.Time // simulated send time (META DTTM and DATE_RECEIVED)
	SNDR    string
	SEQN    int64
	Type    string
	Subtype string
	FLID    int64 // FLOP target (0 otherwise)
	Raw     []byte
	Outcome Outcome
	// Bad says what is wrong with a malformed or protocol message.
	Bad string `json:",omitempty"`
	// DuplicateOf is the index of the original of a duplicate (-1 otherwise).
	DuplicateOf int
	// Change is what a good FLOP carries (nil otherwise).
	Change *Change `json:",omitempty"`
	// Records are the FLTR records of a good SCHD message, as sent.
	Records []Flight `json:",omitempty"`
	// RefKeys are the record keys of a good reference list message.
	RefKeys []string `json:",omitempty"`
}

// Day is a generated airport day.
type Day struct {
	Config   Config
	Messages []Message
	Expected Expected
}

// Counts returns the number of messages per intended outcome.
func (d Day) Counts() map[Outcome]int {
	out := make(map[Outcome]int, len(Outcomes))
	for _, m := range d.Messages {
		out[m.Outcome]++
	}
	return out
}

// Summary is a one-line description of the day's messages by intended outcome.
func (d Day) Summary() string {
	c := d.Counts()
	parts := []string{fmt.Sprintf("messages=%d", len(d.Messages))}
	for _, o := range Outcomes {
		parts = append(parts, fmt.Sprintf("%s=%d", o, c[o]))
	}
	parts = append(parts, fmt.Sprintf("flights=%d active=%d deleted=%d",
		len(d.Expected.Flights), d.Expected.Count(StateActive), d.Expected.Count(StateDeleted)))
	return strings.Join(parts, " ")
}

// Generate builds the day described by cfg. It panics when cfg.Validate fails.
func Generate(cfg Config) Day {
	if err := cfg.Validate(); err != nil {
		panic("simulate: " + err.Error())
	}
	cfg = cfg.withDefaults()
	g := &gen{
		cfg:      cfg,
		rng:      rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		loc:      cfg.Location,
		day:      cfg.Date,
		flights:  map[int64]*Flight{},
		nextFLID: cfg.FirstFLID,
		seqn:     cfg.FirstSEQN,
		refKeys:  map[string][]string{},
	}
	for range airlines {
		g.flnoNext = append(g.flnoNext, 1000+g.rng.IntN(4000))
	}
	g.referenceLists()
	sched := g.schedule()
	g.snapshot(sched)
	for _, f := range sched {
		g.plan(f, time.Time{})
	}
	g.additions()
	sort.SliceStable(g.events, func(i, j int) bool {
		if !g.events[i].at.Equal(g.events[j].at) {
			return g.events[i].at.Before(g.events[j].at)
		}
		return g.events[i].n < g.events[j].n
	})
	for _, e := range g.events {
		e.run(e.at)
	}
	return Day{Config: cfg, Messages: g.msgs, Expected: g.expected()}
}

type event struct {
	at  time.Time
	n   int
	run func(at time.Time)
}

type gen struct {
	cfg      Config
	rng      *rand.Rand
	loc      *time.Location
	day      time.Time
	flights  map[int64]*Flight
	order    []int64 // FLIDs in creation order
	nextFLID int64
	seqn     int64
	lastAt   time.Time
	msgs     []Message
	events   []event
	evN      int
	flnoNext []int
	refKeys  map[string][]string
	goodFlop []int // indices of good FLOP messages (duplicate sources)
}

func (g *gen) min(t time.Time, m int) time.Time { return t.Add(time.Duration(m) * time.Minute) }
func (g *gen) chance(p float64) bool            { return g.rng.Float64() < p }
func (g *gen) between(lo, hi int) int           { return lo + g.rng.IntN(hi-lo+1) }

func pick[T any](g *gen, s []T) T { return s[g.rng.IntN(len(s))] }

// emit appends a message; body writes the part after META.
func (g *gen) emit(at time.Time, typ, styp string, flid int64, compact bool, body func(w *xw)) *Message {
	if !at.After(g.lastAt) {
		at = g.lastAt.Add(time.Second)
	}
	g.lastAt = at
	m := Message{
		Index: len(g.msgs), At: at, SNDR: g.cfg.Sender, SEQN: g.seqn, Type: typ, Subtype: styp,
		FLID: flid, Outcome: OutcomeApplied, DuplicateOf: -1,
	}
	g.seqn++
	var w xw
	w.start(meta{sndr: m.SNDR, seqn: m.SEQN, at: at, typ: typ, styp: styp}, compact)
	body(&w)
	m.Raw = w.end()
	g.msgs = append(g.msgs, m)
	return &g.msgs[len(g.msgs)-1]
}

// addEvent adds an event; times before the operational window are moved to its start.
func (g *gen) addEvent(at time.Time, notBefore time.Time, run func(at time.Time)) {
	if at.Before(notBefore) {
		at = notBefore
	}
	g.evN++
	g.events = append(g.events, event{at: at, n: g.evN, run: run})
}

// --- reference data -------------------------------------------------------

type airline struct {
	iata, icao, name, terminal string
	intl                       bool
}

var airlines = []airline{
	{"CA", "CCA", "AIR CHINA", "T2", false}, {"MU", "CES", "CHINA EASTERN", "T2", false},
	{"CZ", "CSN", "CHINA SOUTHERN", "T2", false}, {"3U", "CSC", "SICHUAN AIRLINES", "T1", false},
	{"HU", "CHH", "HAINAN AIRLINES", "T2", false}, {"ZH", "CSZ", "SHENZHEN AIRLINES", "T2", false},
	{"MF", "CXA", "XIAMEN AIRLINES", "T2", false}, {"EU", "UEA", "CHENGDU AIRLINES", "T1", false},
	{"TV", "TBA", "TIBET AIRLINES", "T1", false}, {"LH", "DLH", "LUFTHANSA", "T1", true},
	{"SQ", "SIA", "SINGAPORE AIRLINES", "T1", true}, {"TG", "THA", "THAI AIRWAYS", "T1", true},
	{"KE", "KAL", "KOREAN AIR", "T1", true}, {"CX", "CPA", "CATHAY PACIFIC", "T1", true},
}

var domestic = []string{"PEK", "PKX", "PVG", "SHA", "CAN", "SZX", "KMG", "XIY", "HGH", "CKG",
	"LXA", "URC", "XMN", "WUH", "NKG", "TAO", "DLC", "HAK", "SYX", "TSN"}

var international = []string{"HKG", "SIN", "BKK", "ICN", "NRT", "FRA", "LHR", "DXB", "SYD", "MUC"}

type aircraft struct {
	iata, icao string
	pax        int
	wide       bool
}

var fleet = []aircraft{
	{"320", "A320", 158, false}, {"321", "A321", 190, false}, {"32N", "A20N", 186, false},
	{"738", "B738", 162, false}, {"7M8", "B38M", 176, false}, {"330", "A332", 283, true},
	{"333", "A333", 301, true}, {"359", "A359", 312, true}, {"789", "B789", 290, true},
	{"77W", "B77W", 311, true},
}

var delayCodes = []struct{ code, num, desc string }{
	{"AX", "82", "ATC STAFF/EQUIPMENT PROBLEM"}, {"RE", "95", "CREW ROTATION"},
	{"WO", "71", "WEATHER AT DEPARTURE"}, {"TG", "41", "AIRCRAFT TECHNICAL DEFECT"},
	{"PD", "11", "LATE CHECK-IN"}, {"RA", "93", "LATE ARRIVAL OF AIRCRAFT"},
	{"GF", "33", "LOADING EQUIPMENT"}, {"AT", "89", "AIRPORT RESTRICTIONS"},
}

var handlers = []int64{110009, 110010, 110011, 110012}

const (
	contactStands = 40 // stands 101..140 with airbridges and gates G01..G40
	remoteStands  = 60 // stands 401..460
	desks         = 160
	belts         = 14
	chutes        = 24
)

func contactStand(i int) string { return strconv.Itoa(101 + i) }
func isContact(stand string) bool {
	n, err := strconv.Atoi(stand)
	return err == nil && n >= 101 && n < 101+contactStands
}
func gateFor(stand string) string {
	if isContact(stand) {
		n, _ := strconv.Atoi(stand)
		return fmt.Sprintf("G%02d", n-100)
	}
	return ""
}

// referenceLists sends a DNLD of the lists the flights refer to.
func (g *gen) referenceLists() {
	at := g.min(g.day, -180) // 21:00 the evening before
	type rec struct {
		key    string
		fields [][2]string
	}
	list := func(typ, keyName string, recs []rec) {
		keys := make([]string, 0, len(recs))
		m := g.emit(at, typ, "DNLD", 0, false, func(w *xw) {
			w.leaf("RECS", strconv.Itoa(len(recs)))
			for _, r := range recs {
				w.open(typ)
				w.leaf(keyName, r.key)
				for _, f := range r.fields {
					w.leaf(f[0], f[1])
				}
				w.close(typ)
				keys = append(keys, r.key)
			}
		})
		slices.Sort(keys)
		m.RefKeys = keys
		g.refKeys[typ] = keys
		at = g.min(at, 1)
	}
	var recs []rec
	for _, a := range airlines {
		dori := "D"
		if a.intl {
			dori = "I"
		}
		recs = append(recs, rec{a.iata, [][2]string{{"ICOP", a.icao}, {"ONAM", a.name}, {"ONMC", a.name + "中文"}, {"DORI", dori}}})
	}
	list("AIRL", "ITOP", recs)
	recs = nil
	for _, a := range fleet {
		recs = append(recs, rec{a.iata, [][2]string{{"ICAT", a.icao}, {"DESC", a.icao}, {"MAXP", strconv.Itoa(a.pax)}}})
	}
	list("AIRC", "ITAT", recs)
	recs = nil
	for _, c := range append(append([]string{g.cfg.Home}, domestic...), international...) {
		typ := "D"
		if slices.Contains(international, c) {
			typ = "I"
		}
		recs = append(recs, rec{c, [][2]string{{"ANAM", c + " AIRPORT"}, {"ATYP", typ}}})
	}
	list("ARPT", "ITCD", recs)
	recs = nil
	for i := range contactStands + remoteStands {
		s, remote := contactStand(i), "N"
		if i >= contactStands {
			s, remote = strconv.Itoa(401+i-contactStands), "Y"
		}
		recs = append(recs, rec{s, [][2]string{{"STNM", "Stand " + s}, {"SNMC", "机位" + s}, {"STML", "T2"}, {"DIGT", gateFor(s)}, {"REMT", remote}}})
	}
	list("SLST", "SCOD", recs)
	recs = nil
	for i := range contactStands {
		s := fmt.Sprintf("G%02d", i+1)
		recs = append(recs, rec{s, [][2]string{{"GTNM", "Gate " + s}, {"GNMC", "登机口" + s}, {"GCAT", "M"}, {"GTML", "T2"}}})
	}
	list("GLST", "GCOD", recs)
	recs = nil
	for _, d := range delayCodes {
		recs = append(recs, rec{d.code, [][2]string{{"DCDN", d.num}, {"DDES", d.desc}, {"DDSC", d.desc + "中文"}}})
	}
	list("DLYL", "DCOD", recs)
	recs = nil
	for i := range belts {
		b := fmt.Sprintf("B%02d", i+1)
		recs = append(recs, rec{b, [][2]string{{"BTNM", "Belt " + b}, {"BCAT", "M"}, {"BTML", "T2"}}})
	}
	list("BLST", "BCOD", recs)
	recs = nil
	for i := range desks {
		d := fmt.Sprintf("%03d", i+1)
		recs = append(recs, rec{d, [][2]string{{"CTNM", "Desk " + d}, {"CCAT", "M"}, {"CTML", "T2"}, {"CTRA", "N"}}})
	}
	list("CLST", "CCOD", recs)
	recs = nil
	for _, h := range handlers {
		id := strconv.FormatInt(h, 10)
		recs = append(recs, rec{id, [][2]string{{"ONAM", "HANDLER " + id}, {"OCAT", "HDL"}}})
	}
	list("ORGN", "OGID", recs)
}

// --- schedule -------------------------------------------------------------

func (g *gen) newFlight(a airline, mvin string, sodt time.Time, intl bool, ac aircraft) *Flight {
	ai := slices.IndexFunc(airlines, func(x airline) bool { return x.iata == a.iata })
	g.flnoNext[ai] += g.between(1, 7)
	flin := "D"
	if intl {
		flin = "I"
	}
	f := &Flight{
		FLID: g.nextFLID, State: StateActive,
		Airline: a.iata, FlightNumber: a.iata + strconv.Itoa(g.flnoNext[ai]), Movement: mvin,
		Scheduled: sodt, FlightType: "J", Indicator: flin, AircraftType: ac.iata,
		Terminal: a.terminal, MaxPax: ac.pax,
		PaxHandler: pick(g, handlers), FieldHandler: pick(g, handlers), MaintHandler: pick(g, handlers),
		ExtStatus: "SCH", Status: "SCH",
	}
	if g.chance(0.05) {
		f.FlightType = "C"
	}
	g.nextFLID++
	return f
}

// leg fills the route, resources and allocations of a flight on stand.
func (g *gen) leg(f *Flight, other string, stand string, from, to time.Time) {
	t := f.Scheduled
	block := g.between(80, 200)
	if f.Indicator == "I" {
		block = g.between(180, 600)
	}
	typ := f.Indicator
	f.Stand = stand
	f.Stands = []StandAlloc{{Seq: 1, Stand: stand, Start: from, End: to}}
	if f.Movement == "D" {
		f.Route = []RouteStop{{Seq: 1, Airport: other, Arrival: g.min(t, block)}}
		f.FullRoute = []RouteStop{{Seq: 1, Airport: g.cfg.Home, Departure: t}, {Seq: 2, Airport: other, Arrival: g.min(t, block)}}
		gate := gateFor(stand)
		if gate == "" {
			gate = fmt.Sprintf("G%02d", g.between(1, contactStands))
		}
		f.Gates = []GateAlloc{{Seq: 1, Gate: gate, PlannedOpen: g.min(t, -60), PlannedClose: g.min(t, -15), Type: typ}}
		base, n := g.between(1, desks-4), g.between(2, 4)
		for i := range n {
			class := "Y"
			if i == 0 {
				class = "F"
			}
			f.Checkins = append(f.Checkins, CheckinAlloc{Seq: i + 1, Desk: fmt.Sprintf("%03d", base+i), Class: class,
				PlannedOpen: g.min(t, -180), PlannedClose: g.min(t, -45), Type: typ})
		}
		for i := range g.between(1, 2) {
			f.Chutes = append(f.Chutes, ChuteAlloc{Seq: i + 1, Chute: fmt.Sprintf("CH%02d", g.between(1, chutes)), Class: "Y",
				PlannedBegin: g.min(t, -180), PlannedEnd: g.min(t, -40), Type: typ})
		}
		return
	}
	f.Route = []RouteStop{{Seq: 1, Airport: other, Departure: g.min(t, -block)}}
	f.FullRoute = []RouteStop{{Seq: 1, Airport: other, Departure: g.min(t, -block)}, {Seq: 2, Airport: g.cfg.Home, Arrival: t}}
	f.Carousels = []CarouselAlloc{{Seq: 1, Belt: fmt.Sprintf("B%02d", g.between(1, belts)), Class: "Y",
		PlannedOpen: g.min(t, 10), PlannedClose: g.min(t, 50), Type: typ}}
	if gate := gateFor(stand); gate != "" && g.chance(0.5) {
		f.Gates = []GateAlloc{{Seq: 1, Gate: gate, PlannedOpen: g.min(t, -10), PlannedClose: g.min(t, 20), Type: typ}}
	}
}

func (g *gen) standFor() string {
	if g.chance(0.6) {
		return contactStand(g.rng.IntN(contactStands))
	}
	return strconv.Itoa(401 + g.rng.IntN(remoteStands))
}

func (g *gen) registration() string { return fmt.Sprintf("B%04d", g.rng.IntN(10000)) }

// children adds up to room code-share children of master.
func (g *gen) children(master *Flight, room int) []*Flight {
	if room <= 0 || !g.chance(0.15) {
		return nil
	}
	var out []*Flight
	for range min(room, g.between(1, 2)) {
		a := pick(g, airlines)
		for a.iata == master.Airline {
			a = pick(g, airlines)
		}
		c := g.newFlight(a, master.Movement, master.Scheduled, master.Indicator == "I", fleetByIATA(master.AircraftType))
		c.Indicator = master.Indicator
		c.Terminal = master.Terminal
		c.MasterAirline, c.MasterFlight, c.MasterFLID = master.Airline, master.FlightNumber, master.FLID
		c.Route = slices.Clone(master.Route)
		c.FullRoute = slices.Clone(master.FullRoute)
		out = append(out, c)
	}
	return out
}

func fleetByIATA(code string) aircraft {
	for _, a := range fleet {
		if a.iata == code {
			return a
		}
	}
	return fleet[0]
}

// pairOrSingle creates the flights of one aircraft rotation: an arrival and a
// departure linked by TAOP/TAFL/TAID, or a single leg; room caps the count.
func (g *gen) rotation(room int, earliest time.Time) []*Flight {
	a := pick(g, airlines)
	intl := a.intl || g.chance(0.12)
	other := pick(g, domestic)
	if intl {
		other = pick(g, international)
	}
	ac := pick(g, fleet)
	if intl && !ac.wide && g.chance(0.6) {
		ac = fleet[5+g.rng.IntN(5)]
	}
	stand := g.standFor()
	span := int(g.day.Add(24*time.Hour).Sub(earliest) / time.Minute)
	off := g.between(0, max(span-60, 1)) // minutes after earliest
	sta := earliest.Add(time.Duration(off) * time.Minute)
	if sta.Before(g.min(g.day, 5*60)) && earliest.Equal(g.day) {
		sta = g.min(g.day, 5*60+g.rng.IntN(18*60))
	}
	turn := g.between(45, 150)
	std := g.min(sta, turn)
	reg := g.registration()
	var out []*Flight
	switch {
	case room >= 2 && std.Before(g.day.Add(24*time.Hour)) && g.chance(0.8):
		arr := g.newFlight(a, "A", sta, intl, ac)
		dep := g.newFlight(a, "D", std, intl, ac)
		for _, f := range []*Flight{arr, dep} {
			f.Registration = reg
		}
		g.leg(arr, other, stand, g.min(sta, -10), g.min(std, 10))
		g.leg(dep, pick(g, domestic), stand, g.min(sta, -10), g.min(std, 10))
		if intl {
			dep.FullRoute[1].Airport, dep.Route[0].Airport = other, other
		}
		arr.LinkedAirline, arr.LinkedFlight, arr.LinkedFLID = dep.Airline, dep.FlightNumber, dep.FLID
		dep.LinkedAirline, dep.LinkedFlight, dep.LinkedFLID = arr.Airline, arr.FlightNumber, arr.FLID
		out = append(out, arr, dep)
	case g.chance(0.5):
		arr := g.newFlight(a, "A", sta, intl, ac)
		arr.Registration = reg
		g.leg(arr, other, stand, g.min(sta, -10), g.min(sta, 120))
		out = append(out, arr)
	default:
		dep := g.newFlight(a, "D", sta, intl, ac)
		dep.Registration = reg
		g.leg(dep, other, stand, g.min(sta, -90), g.min(sta, 10))
		out = append(out, dep)
	}
	n := len(out)
	for i := range n {
		out = append(out, g.children(out[i], room-len(out))...)
	}
	// one route stop in ten is a multi-leg departure with an intermediate stop
	for _, f := range out[:n] {
		if f.Movement == "D" && g.chance(0.1) {
			mid := pick(g, domestic)
			last := f.FullRoute[1]
			f.FullRoute = []RouteStop{f.FullRoute[0],
				{Seq: 2, Airport: mid, Arrival: g.min(f.Scheduled, 90), Departure: g.min(f.Scheduled, 140)},
				{Seq: 3, Airport: last.Airport, Arrival: g.min(last.Arrival, 140)}}
			f.Route = []RouteStop{{Seq: 1, Airport: mid, Arrival: g.min(f.Scheduled, 90)}, {Seq: 2, Airport: last.Airport, Arrival: g.min(last.Arrival, 140)}}
		}
	}
	return out
}

// schedule builds the snapshot flights.
func (g *gen) schedule() []*Flight {
	var out []*Flight
	for len(out) < g.cfg.Flights {
		out = append(out, g.rotation(g.cfg.Flights-len(out), g.day)...)
	}
	return out
}

func (g *gen) register(f *Flight) {
	g.flights[f.FLID] = f
	g.order = append(g.order, f.FLID)
}

// snapshot sends the daily schedule SCHD DNLD (22:00 the evening before).
func (g *gen) snapshot(fs []*Flight) {
	recs := make([]Flight, len(fs))
	for i, f := range fs {
		g.register(f)
		recs[i] = f.clone()
	}
	m := g.emit(g.min(g.day, -120), "SCHD", "DNLD", 0, true, func(w *xw) {
		w.open("SCHD")
		w.leaf("RECS", strconv.Itoa(len(fs)))
		for _, f := range fs {
			w.fltr(f)
		}
		w.close("SCHD")
	})
	m.Records = recs
}

// additions plans SCHD ADFT messages adding flights during the day.
func (g *gen) additions() {
	for range g.cfg.Additions {
		at := g.min(g.day, g.between(6*60, 17*60))
		fs := g.rotation(1, g.min(at, 120))
		f := fs[0]
		g.addEvent(at, at, func(at time.Time) {
			g.register(f)
			rec := f.clone()
			m := g.emit(at, "SCHD", "ADFT", 0, false, func(w *xw) {
				w.open("SCHD")
				w.leaf("RECS", "1")
				w.fltr(f)
				w.close("SCHD")
			})
			m.Records = []Flight{rec}
			g.afterGood()
		})
		g.plan(f, g.min(at, 1))
	}
}

// --- operations -------------------------------------------------------------

// flop sends one good FLOP for f and applies it to the model.
func (g *gen) flop(at time.Time, f *Flight, c Change) {
	c.Flight.FLID = f.FLID
	m := g.emit(at, "FLOP", c.Subtype, f.FLID, false, func(w *xw) { w.flop(f, c) })
	m.Change = &c
	f.apply(c)
	g.goodFlop = append(g.goodFlop, m.Index)
	g.afterGood()
}

// on schedules fn for f at t unless f is deleted by then (or cancelled /
// diverted, when live is set: operational milestones of a flight that does not
// operate are not sent).
func (g *gen) on(f *Flight, t, notBefore time.Time, live bool, fn func(at time.Time)) {
	g.addEvent(t, notBefore, func(at time.Time) {
		if f.State == StateDeleted {
			return
		}
		if live && (!f.Cancelled.IsZero() || f.Diversion != nil) {
			return
		}
		fn(at)
	})
}

// plan schedules the operational flow of f; notBefore is the earliest time
// (zero: one hour before the operation day).
func (g *gen) plan(f *Flight, notBefore time.Time) {
	if notBefore.IsZero() {
		notBefore = g.min(g.day, -60)
	}
	if f.MasterFLID != 0 {
		g.planChild(f, notBefore)
		return
	}
	if f.Movement == "D" {
		g.planDeparture(f, notBefore)
	} else {
		g.planArrival(f, notBefore)
	}
}

func (g *gen) planChild(f *Flight, nb time.Time) {
	t := f.Scheduled
	g.on(f, g.min(t, -120), nb, true, func(at time.Time) {
		g.flop(at, f, Change{Subtype: "ESTT", Flight: Flight{Estimated: t}})
	})
	if g.chance(0.03) {
		g.on(f, g.min(t, -90), nb, false, func(at time.Time) { g.flop(at, f, Change{Subtype: "FDEL"}) })
	}
}

// cancellation plans CNCL (and sometimes the un-cancel) or FDEL around t.
func (g *gen) cancellation(f *Flight, t, nb time.Time) {
	switch r := g.rng.Float64(); {
	case r < 0.03:
		g.on(f, g.min(t, -130), nb, false, func(at time.Time) {
			g.flop(at, f, Change{Subtype: "CNCL", Flight: Flight{Cancelled: at.Truncate(time.Minute)}})
		})
		if g.chance(0.4) {
			g.on(f, g.min(t, -100), nb, false, func(at time.Time) {
				g.flop(at, f, Change{Subtype: "CNCL"})
			})
		}
	case r < 0.04:
		g.on(f, g.min(t, -g.between(60, 200)), nb, false, func(at time.Time) {
			g.flop(at, f, Change{Subtype: "FDEL"})
		})
	}
}

// standChange plans a stand change: STND then the replaced PSDT list.
func (g *gen) standChange(f *Flight, t, nb time.Time) {
	g.on(f, t, nb, true, func(at time.Time) {
		s := g.standFor()
		for s == f.Stand {
			s = g.standFor()
		}
		stands := slices.Clone(f.Stands)
		if len(stands) == 0 {
			stands = []StandAlloc{{Seq: 1}}
		}
		stands[len(stands)-1].Stand = s
		g.flop(at, f, Change{Subtype: "STND", Flight: Flight{Stand: s}})
		g.flop(at, f, Change{Subtype: "PSDT", Flight: Flight{Stands: stands}})
	})
}

func (g *gen) planDeparture(f *Flight, nb time.Time) {
	std := f.Scheduled
	delay := 0
	if g.chance(0.3) {
		delay = 5 * g.between(1, 24)
	}
	off := g.min(std, delay)
	g.cancellation(f, std, nb)
	g.on(f, g.min(std, -170), nb, true, func(at time.Time) {
		c := slices.Clone(f.Checkins)
		for i := range c {
			c[i].Open = g.min(c[i].PlannedOpen, g.between(-10, 10))
		}
		g.flop(at, f, Change{Subtype: "CKDT", Flight: Flight{Checkins: c}})
	})
	g.on(f, g.min(std, -165), nb, true, func(at time.Time) {
		g.flop(at, f, Change{Subtype: "ESTT", Flight: Flight{Estimated: std}})
	})
	g.on(f, g.min(std, -150), nb, true, func(at time.Time) {
		g.flop(at, f, Change{Subtype: "EOBT", Flight: Flight{EstOffBlock: std}})
	})
	if delay > 0 {
		g.on(f, g.min(std, -g.between(60, 120)), nb, true, func(at time.Time) {
			d := g.delays(std, delay)
			g.flop(at, f, Change{Subtype: "DELY", Flight: Flight{Delays: d}})
			g.flop(at, f, Change{Subtype: "ESTT", Flight: Flight{Estimated: off}})
			g.flop(at, f, Change{Subtype: "EOBT", Flight: Flight{EstOffBlock: off}})
		})
		if g.chance(0.15) { // delays re-coded: remove all, then send the new coding
			g.on(f, g.min(std, -50), nb, true, func(at time.Time) {
				g.flop(at, f, Change{Subtype: "DELY", ClearDelays: true})
				if g.chance(0.7) {
					g.flop(at, f, Change{Subtype: "DELY", Flight: Flight{Delays: g.delays(std, delay)}})
				}
			})
		}
	}
	if g.chance(0.15) {
		g.standChange(f, g.min(std, -100), nb)
	}
	if g.chance(0.12) {
		g.on(f, g.min(std, -75), nb, true, func(at time.Time) {
			gs := slices.Clone(f.Gates)
			gs[0].Gate = fmt.Sprintf("G%02d", g.between(1, contactStands))
			g.flop(at, f, Change{Subtype: "GTDT", Flight: Flight{Gates: gs}})
		})
	}
	g.on(f, g.min(off, -60), nb, true, func(at time.Time) {
		gs := slices.Clone(f.Gates)
		gs[0].Open = at.Truncate(time.Minute)
		g.flop(at, f, Change{Subtype: "GTDT", Flight: Flight{Gates: gs}})
	})
	g.on(f, g.min(off, -45), nb, true, func(at time.Time) {
		c := slices.Clone(f.Checkins)
		for i := range c {
			c[i].Close = at.Truncate(time.Minute)
		}
		g.flop(at, f, Change{Subtype: "CKDT", Flight: Flight{Checkins: c}})
	})
	g.on(f, g.min(off, -40), nb, true, func(at time.Time) {
		g.flop(at, f, Change{Subtype: "BOTM", Flight: Flight{BoardingOpen: at.Truncate(time.Minute)}})
		c := slices.Clone(f.Chutes)
		for i := range c {
			c[i].Begin = c[i].PlannedBegin
			c[i].End = at.Truncate(time.Minute)
		}
		g.flop(at, f, Change{Subtype: "CHDT", Flight: Flight{Chutes: c}})
	})
	g.on(f, g.min(off, -30), nb, true, func(at time.Time) {
		g.flop(at, f, Change{Subtype: "TOBT", Flight: Flight{TargetOffBlock: off}})
	})
	g.on(f, g.min(off, -15), nb, true, func(at time.Time) {
		g.flop(at, f, Change{Subtype: "LACL", Flight: Flight{LastCall: at.Truncate(time.Minute)}})
	})
	g.on(f, g.min(off, -5), nb, true, func(at time.Time) {
		gs := slices.Clone(f.Gates)
		gs[0].Close = at.Truncate(time.Minute)
		g.flop(at, f, Change{Subtype: "GTDT", Flight: Flight{Gates: gs}})
	})
	g.on(f, g.min(off, -3), nb, true, func(at time.Time) {
		if !isContact(f.Stand) {
			return
		}
		ab := append(slices.Clone(f.Airbridges), AirbridgeOp{Seq: len(f.Airbridges) + 1, Airbridge: "AB" + f.Stand, Op: "D", Time: at.Truncate(time.Minute)})
		g.flop(at, f, Change{Subtype: "ABTM", Flight: Flight{Airbridges: ab}})
	})
	g.on(f, off, nb, true, func(at time.Time) {
		ch := append(slices.Clone(f.Chocks), Chock{Seq: len(f.Chocks) + 1, Time: at.Truncate(time.Minute), Indicator: "OFF", Stand: f.Stand})
		g.flop(at, f, Change{Subtype: "CHOT", Flight: Flight{Chocks: ch}})
	})
	g.on(f, g.min(off, 12), nb, true, func(at time.Time) {
		g.flop(at, f, Change{Subtype: "ACTT", Flight: Flight{Actual: at.Truncate(time.Minute)}})
	})
	if delay > 0 && g.chance(0.3) { // destination ETA moved: merge one ERUT stop by RTNO
		g.on(f, g.min(off, 20), nb, true, func(at time.Time) {
			last := f.FullRoute[len(f.FullRoute)-1]
			last.Arrival = g.min(last.Arrival, delay)
			g.flop(at, f, Change{Subtype: "ERUT", Flight: Flight{FullRoute: []RouteStop{last}}})
		})
	}
	if g.chance(0.01) {
		g.on(f, g.min(off, 40), nb, true, func(at time.Time) {
			if f.Actual.IsZero() {
				return
			}
			g.flop(at, f, Change{Subtype: "FRET", Flight: Flight{Return: &Return{Type: pick(g, []string{"A", "G"}), Reason: "TECHNICAL PROBLEM"}}})
		})
	}
}

func (g *gen) delays(std time.Time, total int) []Delay {
	first := pick(g, delayCodes)
	if total < 30 || g.chance(0.5) {
		return []Delay{{Code: first.code, Start: std, Minutes: total, Comment: first.desc}}
	}
	second := pick(g, delayCodes)
	for second.code == first.code {
		second = pick(g, delayCodes)
	}
	a := total / 2
	d := []Delay{{Code: first.code, Start: std, Minutes: a, Comment: first.desc},
		{Code: second.code, Start: g.min(std, a), Minutes: total - a, Comment: second.desc}}
	slices.SortFunc(d, func(x, y Delay) int { return cmp.Compare(x.Code, y.Code) })
	return d
}

func (g *gen) planArrival(f *Flight, nb time.Time) {
	sta := f.Scheduled
	delta := g.between(-15, 20)
	if g.chance(0.3) {
		delta = g.between(20, 120)
	}
	eta := g.min(sta, delta)
	g.cancellation(f, sta, nb)
	g.on(f, g.min(sta, -240), nb, true, func(at time.Time) {
		g.flop(at, f, Change{Subtype: "ESTT", Flight: Flight{Estimated: sta}})
	})
	g.on(f, g.min(sta, -120), nb, true, func(at time.Time) {
		g.flop(at, f, Change{Subtype: "ESTT", Flight: Flight{Estimated: g.min(sta, delta/2)}})
	})
	g.on(f, g.min(eta, -45), nb, true, func(at time.Time) {
		g.flop(at, f, Change{Subtype: "ESTT", Flight: Flight{Estimated: eta}})
	})
	if delta > 15 && g.chance(0.3) {
		g.on(f, g.min(sta, -60), nb, true, func(at time.Time) {
			g.flop(at, f, Change{Subtype: "DELY", Flight: Flight{Delays: g.delays(sta, delta)}})
		})
	}
	if g.chance(0.025) {
		alt := pick(g, domestic)
		g.on(f, g.min(eta, -40), nb, true, func(at time.Time) {
			g.flop(at, f, Change{Subtype: "FDIV", Flight: Flight{Diversion: &Diversion{Airport: alt, Direction: "TO", Reason: "WEATHER"}}})
		})
		if g.chance(0.35) {
			g.on(f, g.min(eta, -25), nb, false, func(at time.Time) {
				if f.Diversion != nil {
					g.flop(at, f, Change{Subtype: "FDIV"})
				}
			})
		}
	}
	if g.chance(0.1) {
		g.standChange(f, g.min(eta, -30), nb)
	}
	g.on(f, eta, nb, true, func(at time.Time) {
		g.flop(at, f, Change{Subtype: "ACTT", Flight: Flight{Actual: at.Truncate(time.Minute)}})
	})
	g.on(f, g.min(eta, 5), nb, true, func(at time.Time) {
		ch := append(slices.Clone(f.Chocks), Chock{Seq: len(f.Chocks) + 1, Time: at.Truncate(time.Minute), Indicator: "ON", Stand: f.Stand})
		g.flop(at, f, Change{Subtype: "CHOT", Flight: Flight{Chocks: ch}})
	})
	g.on(f, g.min(eta, 7), nb, true, func(at time.Time) {
		if !isContact(f.Stand) {
			return
		}
		ab := append(slices.Clone(f.Airbridges), AirbridgeOp{Seq: len(f.Airbridges) + 1, Airbridge: "AB" + f.Stand, Op: "A", Time: at.Truncate(time.Minute)})
		g.flop(at, f, Change{Subtype: "ABTM", Flight: Flight{Airbridges: ab}})
	})
	g.on(f, g.min(eta, 15), nb, true, func(at time.Time) {
		c := slices.Clone(f.Carousels)
		c[0].FirstBag = at.Truncate(time.Minute)
		g.flop(at, f, Change{Subtype: "CLDT", Flight: Flight{Carousels: c}})
	})
	g.on(f, g.min(eta, 40), nb, true, func(at time.Time) {
		c := slices.Clone(f.Carousels)
		c[0].LastBag = at.Truncate(time.Minute)
		g.flop(at, f, Change{Subtype: "CLDT", Flight: Flight{Carousels: c}})
	})
}

// --- bad messages ---------------------------------------------------------

// afterGood follows a good operational message with a bad one with probability BadShare.
func (g *gen) afterGood() {
	if g.cfg.BadShare <= 0 || !g.chance(g.cfg.BadShare) {
		return
	}
	at := g.lastAt
	switch g.rng.IntN(3) {
	case 0:
		g.duplicate(at)
	case 1:
		g.malformed(at)
	default:
		g.protocol(at)
	}
}

func (g *gen) duplicate(at time.Time) {
	if len(g.goodFlop) == 0 {
		g.malformed(at)
		return
	}
	lo := max(0, len(g.goodFlop)-200)
	orig := g.msgs[g.goodFlop[lo+g.rng.IntN(len(g.goodFlop)-lo)]]
	if !at.After(g.lastAt) {
		at = g.lastAt.Add(time.Second)
	}
	g.lastAt = at
	g.msgs = append(g.msgs, Message{
		Index: len(g.msgs), At: at, SNDR: orig.SNDR, SEQN: orig.SEQN, Type: orig.Type, Subtype: orig.Subtype,
		FLID: orig.FLID, Raw: orig.Raw, Outcome: OutcomeDuplicate, DuplicateOf: orig.Index,
	})
}

// anyFlight returns a random known flight (the target of a bad message).
func (g *gen) anyFlight() *Flight { return g.flights[g.order[g.rng.IntN(len(g.order))]] }

func (g *gen) malformed(at time.Time) {
	f := g.anyFlight()
	kind := g.rng.IntN(4)
	var bad string
	m := g.emit(at, "FLOP", "STND", f.FLID, false, func(w *xw) {
		w.open("FLOP")
		w.leaf("FLID", strconv.FormatInt(f.FLID, 10))
		w.leaf("FFID", ffid(f))
		w.leaf("STND", "999")
		w.close("FLOP")
	})
	raw := string(m.Raw)
	switch kind {
	case 0:
		bad = "truncated document"
		raw = raw[:len(raw)*2/3]
	case 1:
		bad = "second </MSG> after the root (ABNR/03_ADD)"
		raw += "</MSG>\n"
	case 2:
		bad = "mismatched end tag"
		raw = strings.Replace(raw, "</STND>", "</STDN>", 1)
	default:
		bad = "META without TYPE"
		raw = strings.Replace(raw, "\t\t<TYPE>FLOP</TYPE>\n", "", 1)
	}
	m.Raw, m.Bad, m.Outcome = []byte(raw), bad, OutcomeMalformed
}

func (g *gen) protocol(at time.Time) {
	f := g.anyFlight()
	kinds := []struct {
		styp, bad string
		body      func(w *xw)
	}{
		{"FDIV", `FDIV DDIR="TOO"`, func(w *xw) { w.leaf("FDIV", "WEATHER", "DDES", "CKG", "DDIR", "TOO") }},
		{"FDIV", `FDIV DDES set, DDIR=""`, func(w *xw) { w.leaf("FDIV", "WEATHER", "DDES", "CKG", "DDIR", "") }},
		{"ESTT", "ESTT with an impossible date", func(w *xw) { w.leaf("ESTT", "31FEB"+g.day.Format("06")+"1200") }},
		{"CHOT", `CHOT CHID="IN"`, func(w *xw) {
			w.open("CHOT", "CSNO", "1")
			w.leaf("CHTM", sis8(g.day))
			w.leaf("CHID", "IN")
			w.close("CHOT")
		}},
		{"FRET", "FRET reason without REID", func(w *xw) { w.leaf("FRET", "EXIT DOOR FAULT") }},
		{"STND", "FLOP without FLID", nil},
	}
	k := kinds[g.rng.IntN(len(kinds))]
	m := g.emit(at, "FLOP", k.styp, f.FLID, false, func(w *xw) {
		w.open("FLOP")
		if k.body == nil {
			w.leaf("FFID", ffid(f))
			w.leaf("STND", "101")
		} else {
			w.leaf("FLID", strconv.FormatInt(f.FLID, 10))
			w.leaf("FFID", ffid(f))
			k.body(w)
		}
		w.close("FLOP")
	})
	m.Bad, m.Outcome = k.bad, OutcomeProtocol
}

func sis8(day time.Time) string { return timeText(day.Add(12 * time.Hour)) }

// --- expected -------------------------------------------------------------

func (g *gen) expected() Expected {
	ids := slices.Clone(g.order)
	slices.Sort(ids)
	fs := make([]Flight, 0, len(ids))
	for _, id := range ids {
		fs = append(fs, g.flights[id].clone())
	}
	return Expected{RefLists: g.refKeys, Flights: withCodeShares(fs)}
}

// withCodeShares sorts fs by FLID and derives each master's CodeShares from its ACTIVE children
// (MAFL, INV-21): children whose master is not in fs are left out.
func withCodeShares(fs []Flight) []Flight {
	slices.SortFunc(fs, func(a, b Flight) int { return int(a.FLID - b.FLID) })
	for i := range fs {
		fs[i].CodeShares = nil
	}
	for i := range fs {
		c := &fs[i]
		if c.State != StateActive || c.MasterFLID == 0 || c.MasterFLID == c.FLID {
			continue
		}
		j, ok := slices.BinarySearchFunc(fs, c.MasterFLID, func(f Flight, id int64) int { return int(f.FLID - id) })
		if !ok {
			continue
		}
		fs[j].CodeShares = append(fs[j].CodeShares, CodeShare{FLID: c.FLID, FlightNumber: c.FlightNumber})
	}
	return fs
}
