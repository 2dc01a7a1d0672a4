package sis

import (
	"encoding/json"
	"fmt"
	"time"
)

// Field is a single-valued SIS element or attribute that keeps apart the three
// states the merge rules depend on:
//
//   - absent: Present == false (the element/attribute does not occur);
//   - present but empty: Present && Empty (`<X></X>`, `<X/>`, `X=""`, or only blanks);
//   - present with a value: Present && !Empty, Value holds the parsed value.
//
// JSON: absent is omitted (use the `omitzero` tag option) or null, empty is "",
// a value is the JSON of Value.
type Field[T any] struct {
	Present bool
	Empty   bool
	Value   T
}

// Val returns a present, non-empty field holding v.
func Val[T any](v T) Field[T] { return Field[T]{Present: true, Value: v} }

// EmptyField returns a present but empty field.
func EmptyField[T any]() Field[T] { return Field[T]{Present: true, Empty: true} }

// Get returns the value and whether the field carries one (present and not empty).
func (f Field[T]) Get() (T, bool) { return f.Value, f.Present && !f.Empty }

// HasValue reports whether the field is present and not empty.
func (f Field[T]) HasValue() bool { return f.Present && !f.Empty }

// IsZero reports whether the field is absent; it drives `omitzero`.
func (f Field[T]) IsZero() bool { return !f.Present }

// MarshalJSON encodes absent as null, empty as "" and a value as its JSON.
func (f Field[T]) MarshalJSON() ([]byte, error) {
	switch {
	case !f.Present:
		return []byte("null"), nil
	case f.Empty:
		return []byte(`""`), nil
	}
	return json.Marshal(f.Value)
}

// UnmarshalJSON is the inverse of MarshalJSON (for T other than string a JSON ""
// means empty; for string, "" means empty too because values are never blank).
func (f *Field[T]) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "null":
		*f = Field[T]{}
		return nil
	case `""`:
		*f = EmptyField[T]()
		return nil
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = Val(v)
	return nil
}

// List is a repeating SIS element (a collection). Present tells whether the
// element occurred at all: a collection the record does not carry (Present ==
// false) must not touch stored rows, while a carried collection replaces or
// merges per docs/sis.md §e.3. Items holds the non-empty entries in input order
// (never nil when Present). ClearAll is set when one entry had the bare
// "remove all" form that docs/sis.md §e.2 defines for DELY, ERUT and SRVT.
type List[T any] struct {
	Present  bool `json:"-"`
	ClearAll bool `json:"clearAll,omitempty"`
	Items    []T  `json:"items"`
}

// IsZero reports whether the collection is absent; it drives `omitzero`.
func (l List[T]) IsZero() bool { return !l.Present }

// Clock is a local wall-clock time of day (SIS HHMM), JSON "HH:MM".
type Clock struct {
	Hour   int
	Minute int
}

// Minutes returns the minutes since midnight.
func (c Clock) Minutes() int { return c.Hour*60 + c.Minute }

func (c Clock) String() string { return fmt.Sprintf("%02d:%02d", c.Hour, c.Minute) }

// MarshalJSON encodes the clock as "HH:MM".
func (c Clock) MarshalJSON() ([]byte, error) { return json.Marshal(c.String()) }

// Options configures Decode. Zero values select the defaults.
type Options struct {
	// Location is the airport time zone in which every SIS time is a wall-clock
	// time (default Asia/Shanghai).
	Location *time.Location
	// MaxBytes is the largest accepted message (default 16 MiB, the MEDIUMTEXT limit).
	MaxBytes int
	// MaxDepth is the deepest accepted element nesting (default 64; SIS needs 5).
	MaxDepth int
}

// Default limits.
const (
	DefaultMaxBytes = 16 << 20
	DefaultMaxDepth = 64
	DefaultLocation = "Asia/Shanghai"
)

// Kind is what the pipeline does with a message.
type Kind string

// Message kinds.
const (
	KindScheduleSnapshot Kind = "SCHEDULE_SNAPSHOT" // SCHD DNLD, RESP
	KindScheduleAdd      Kind = "SCHEDULE_ADD"      // SCHD ADFT and any other STYP except DEL
	KindScheduleDelete   Kind = "SCHEDULE_DELETE"   // SCHD DEL
	KindSeason           Kind = "SEASON"            // SCHS
	KindFlightUpdate     Kind = "FLIGHT_UPDATE"     // FLOP, every subtype but FDEL
	KindFlightDelete     Kind = "FLIGHT_DELETE"     // FLOP FDEL
	KindRefList          Kind = "REF_LIST"          // the 23 reference list TYPEs
	KindUnsupported      Kind = "UNSUPPORTED"       // anything else (not an error)
)

// Message is one decoded SIS message. Exactly one body pointer matching Kind is
// set (none for KindUnsupported unless it is a FLOP with an unknown subtype,
// which carries Flop with the FLID/FFID/Subtype and no payload).
type Message struct {
	Meta     Meta
	Kind     Kind
	Schedule *Schedule `json:",omitempty"`
	Season   *Season   `json:",omitempty"`
	Flop     *FlightOp `json:",omitempty"`
	RefList  *RefList  `json:",omitempty"`
	Warnings []string  `json:",omitempty"`
}

// Meta is the message envelope, every value trimmed; TYPE and STYP are upper-cased.
type Meta struct {
	SNDR    string
	SEQN    string
	TYPE    string
	STYP    string
	DTTM    time.Time
	DTTMRaw string
}

// Schedule is the SCHD body.
type Schedule struct {
	DeclaredRecs int
	Records      []FlightRecord
}

// Season is the SCHS body. SDAT/EDAT are local midnights.
type Season struct {
	SNAM         string
	APCD         string
	SDAT         time.Time
	EDAT         time.Time
	DeclaredRecs int
	Records      []SeasonRecord
}

// SeasonRecord is a seasonal pattern FLTR (docs/sis.md §b.2).
type SeasonRecord struct {
	ALCD Field[string]    `json:",omitzero"`
	ALSC Field[string]    `json:",omitzero"`
	FLNO Field[string]    `json:",omitzero"`
	MVIN Field[string]    `json:",omitzero"`
	STDT Field[time.Time] `json:",omitzero"`
	EDDT Field[time.Time] `json:",omitzero"`
	// DYOP is the raw 7-character day mask; Days[0] is Monday.
	DYOP Field[string]          `json:",omitzero"`
	Days [7]bool                `json:"-"`
	SCHT Field[Clock]           `json:",omitzero"`
	FLTY Field[string]          `json:",omitzero"`
	FLIN Field[string]          `json:",omitzero"`
	ROUT List[SeasonRouteEntry] `json:",omitzero"`
	ERUT List[SeasonRouteEntry] `json:",omitzero"`
	ACFT Field[string]          `json:",omitzero"`
	RENO Field[string]          `json:",omitzero"`
	TAOP Field[string]          `json:",omitzero"`
	TAFL Field[string]          `json:",omitzero"`
	TRML Field[string]          `json:",omitzero"`
	MAXP Field[int]             `json:",omitzero"`
	CSOP Field[string]          `json:",omitzero"`
	CSFT Field[string]          `json:",omitzero"`
}

// SeasonTime is an SCHS route time: HHMM, or a full DDMONYYHHMM (as in the ERUT
// samples), in which case At holds the full time and Clock its time of day.
type SeasonTime struct {
	Clock Clock
	At    time.Time `json:",omitzero"`
}

// SeasonRouteEntry is an SCHS ROUT/ERUT entry; SADC/SDDC are signed day offsets.
type SeasonRouteEntry struct {
	RTNO Field[int]        `json:",omitzero"`
	APCD Field[string]     `json:",omitzero"`
	SCAT Field[SeasonTime] `json:",omitzero"`
	SADC Field[int]        `json:",omitzero"`
	SCDT Field[SeasonTime] `json:",omitzero"`
	SDDC Field[int]        `json:",omitzero"`
}

// FlightRecord is a FLTR (docs/sis.md §c.1) and also the payload of a FLOP (only the
// subtype's elements are present there). Every time is a wall-clock time in the
// configured airport location.
type FlightRecord struct {
	FLID Field[int64]             `json:",omitzero"`
	FFID Field[string]            `json:",omitzero"`
	ALCD Field[string]            `json:",omitzero"`
	ALSC Field[string]            `json:",omitzero"`
	FLNO Field[string]            `json:",omitzero"`
	MVIN Field[string]            `json:",omitzero"`
	SODT Field[time.Time]         `json:",omitzero"`
	FLTY Field[string]            `json:",omitzero"`
	FLIN Field[string]            `json:",omitzero"`
	ROUT List[RouteEntry]         `json:",omitzero"`
	ERUT List[RouteEntry]         `json:",omitzero"`
	ACFT Field[string]            `json:",omitzero"`
	RENO Field[string]            `json:",omitzero"`
	TAOP Field[string]            `json:",omitzero"`
	TAFL Field[string]            `json:",omitzero"`
	TAID Field[int64]             `json:",omitzero"`
	TRML Field[string]            `json:",omitzero"`
	MAXP Field[int]               `json:",omitzero"`
	STND Field[string]            `json:",omitzero"`
	PSDT List[StandAllocation]    `json:",omitzero"`
	PHAG Field[int64]             `json:",omitzero"`
	FHAG Field[int64]             `json:",omitzero"`
	MHAG Field[int64]             `json:",omitzero"`
	EXSC Field[string]            `json:",omitzero"`
	EXSR Field[string]            `json:",omitzero"`
	FTSS Field[string]            `json:",omitzero"`
	CHDT List[ChuteAllocation]    `json:",omitzero"`
	GTDT List[GateAllocation]     `json:",omitzero"`
	CKDT List[CheckinAllocation]  `json:",omitzero"`
	CLDT List[CarouselAllocation] `json:",omitzero"`
	FDIV Field[Diversion]         `json:",omitzero"`
	FRET Field[Irregular]         `json:",omitzero"`
	FLAB Field[Irregular]         `json:",omitzero"`
	CSOP Field[string]            `json:",omitzero"`
	CSFT Field[string]            `json:",omitzero"`
	MAID Field[int64]             `json:",omitzero"`
	ESTT Field[time.Time]         `json:",omitzero"`
	ACTT Field[time.Time]         `json:",omitzero"`
	APPT Field[time.Time]         `json:",omitzero"`
	BOTM Field[time.Time]         `json:",omitzero"`
	LACL Field[time.Time]         `json:",omitzero"`
	FINT Field[time.Time]         `json:",omitzero"`
	CNCL Field[time.Time]         `json:",omitzero"`
	EGSR Field[time.Time]         `json:",omitzero"`
	EGST Field[time.Time]         `json:",omitzero"`
	PEDT Field[time.Time]         `json:",omitzero"`
	NEAT Field[time.Time]         `json:",omitzero"`
	PADT Field[time.Time]         `json:",omitzero"`
	NAAT Field[time.Time]         `json:",omitzero"`
	COBT Field[time.Time]         `json:",omitzero"`
	CTOT Field[time.Time]         `json:",omitzero"`
	TOBT Field[time.Time]         `json:",omitzero"`
	EOBT Field[time.Time]         `json:",omitzero"`
	IEST Field[time.Time]         `json:",omitzero"`
	RUNW Field[string]            `json:",omitzero"`
	PORT List[Port]               `json:",omitzero"`
	TIPT List[TractorInPlace]     `json:",omitzero"`
	PSHT List[Push]               `json:",omitzero"`
	DELY List[Delay]              `json:",omitzero"`
	SRVT List[Service]            `json:",omitzero"`
	ABTM List[Airbridge]          `json:",omitzero"`
	CHOT List[Chock]              `json:",omitzero"`
	VIPF List[VIP]                `json:",omitzero"`
	REMC Field[string]            `json:",omitzero"`
	VIPP Field[int]               `json:",omitzero"`
	VIPR Field[int]               `json:",omitzero"`
	LBNO Field[int]               `json:",omitzero"`
	LBWT Field[string]            `json:",omitzero"` // decimal(11,2), kept as validated text
	PAXC Field[int]               `json:",omitzero"`
}

// RouteEntry is a ROUT or ERUT entry (RTNO attribute).
type RouteEntry struct {
	RTNO Field[int]       `json:",omitzero"`
	APCD Field[string]    `json:",omitzero"`
	SCAT Field[time.Time] `json:",omitzero"`
	SCDT Field[time.Time] `json:",omitzero"`
}

// StandAllocation is a PSDT entry (PSNO attribute).
type StandAllocation struct {
	PSNO Field[int]       `json:",omitzero"`
	PSST Field[string]    `json:",omitzero"`
	STST Field[time.Time] `json:",omitzero"`
	STET Field[time.Time] `json:",omitzero"`
}

// GateAllocation is a GTDT entry (GTNO attribute).
type GateAllocation struct {
	GTNO Field[int]       `json:",omitzero"`
	GATE Field[string]    `json:",omitzero"`
	PGOT Field[time.Time] `json:",omitzero"`
	PGCT Field[time.Time] `json:",omitzero"`
	GOTM Field[time.Time] `json:",omitzero"`
	GCTM Field[time.Time] `json:",omitzero"`
	GTYP Field[string]    `json:",omitzero"`
}

// CheckinAllocation is a CKDT entry (CKNO attribute).
type CheckinAllocation struct {
	CKNO Field[int]       `json:",omitzero"`
	CHKC Field[string]    `json:",omitzero"`
	CCLS Field[string]    `json:",omitzero"`
	PCOT Field[time.Time] `json:",omitzero"`
	PCCT Field[time.Time] `json:",omitzero"`
	COTM Field[time.Time] `json:",omitzero"`
	CCTM Field[time.Time] `json:",omitzero"`
	CTYP Field[string]    `json:",omitzero"`
}

// CarouselAllocation is a CLDT entry (CLNO attribute).
type CarouselAllocation struct {
	CLNO Field[int]       `json:",omitzero"`
	BELT Field[string]    `json:",omitzero"`
	BCLS Field[string]    `json:",omitzero"`
	PCOT Field[time.Time] `json:",omitzero"`
	PCCT Field[time.Time] `json:",omitzero"`
	FBAG Field[time.Time] `json:",omitzero"`
	LBAG Field[time.Time] `json:",omitzero"`
	BTYP Field[string]    `json:",omitzero"`
}

// ChuteAllocation is a CHDT entry (CHNO attribute).
type ChuteAllocation struct {
	CHNO Field[int]       `json:",omitzero"`
	CHUT Field[string]    `json:",omitzero"`
	CCLS Field[string]    `json:",omitzero"`
	PCBT Field[time.Time] `json:",omitzero"`
	PCET Field[time.Time] `json:",omitzero"`
	CBTM Field[time.Time] `json:",omitzero"`
	CETM Field[time.Time] `json:",omitzero"`
	CTYP Field[string]    `json:",omitzero"`
}

// Chock is a CHOT entry (CSNO attribute); CHID is ON or OFF.
type Chock struct {
	CSNO Field[int]       `json:",omitzero"`
	CHTM Field[time.Time] `json:",omitzero"`
	CHID Field[string]    `json:",omitzero"`
	CHST Field[string]    `json:",omitzero"`
}

// Airbridge is an ABTM entry (ASNO attribute); ABOP is A (attach) or D (detach).
type Airbridge struct {
	ASNO Field[int]       `json:",omitzero"`
	ABDG Field[string]    `json:",omitzero"`
	ABOP Field[string]    `json:",omitzero"`
	AOTM Field[time.Time] `json:",omitzero"`
}

// Delay is a DELY entry: attributes CODE, STRT, DURA and the comment text.
// DURA is converted to minutes (HHMM -> h*60+m).
type Delay struct {
	CODE    Field[string]    `json:",omitzero"`
	STRT    Field[time.Time] `json:",omitzero"`
	DURA    Field[int]       `json:",omitzero"`
	Comment Field[string]    `json:",omitzero"`
}

// Service is an SRVT entry, keyed by SRTC.
type Service struct {
	SRTC Field[string]    `json:",omitzero"`
	SRQT Field[int]       `json:",omitzero"`
	SRST Field[time.Time] `json:",omitzero"`
	SRET Field[time.Time] `json:",omitzero"`
	SRPR Field[int64]     `json:",omitzero"`
	SANR Field[string]    `json:",omitzero"`
	SARR Field[string]    `json:",omitzero"`
}

// VIP is a VIPF entry, keyed by VPCD, with its VIPT service children.
type VIP struct {
	VPCD Field[string]    `json:",omitzero"`
	VFES Field[int]       `json:",omitzero"`
	VIPT List[VIPService] `json:",omitzero"`
}

// VIPService is a VIPT child of VIPF.
type VIPService struct {
	VSCD Field[string]    `json:",omitzero"`
	VTQY Field[int64]     `json:",omitzero"`
	VTST Field[time.Time] `json:",omitzero"`
	VTET Field[time.Time] `json:",omitzero"`
}

// Port is a PORT entry: door open (POID O) or close (POID C) time.
type Port struct {
	POTM Field[time.Time] `json:",omitzero"`
	POID Field[string]    `json:",omitzero"`
}

// TractorInPlace is a TIPT entry; it patches the stand row whose stand is TRST.
type TractorInPlace struct {
	TRTM Field[time.Time] `json:",omitzero"`
	TRST Field[string]    `json:",omitzero"`
}

// Push is a PSHT entry; it patches the stand row whose stand is PUST.
type Push struct {
	PSHN Field[int]       `json:",omitzero"`
	PSTM Field[time.Time] `json:",omitzero"`
	PSID Field[string]    `json:",omitzero"`
	PUST Field[string]    `json:",omitzero"`
}

// Diversion is FDIV: DDES airport, DDIR TO/FROM, element text = reason.
// The Field wrapping it is Empty when DDES is empty (docs/sis.md §e.2: clear).
type Diversion struct {
	DDES   string
	DDIR   string
	Reason string `json:",omitempty"`
}

// Irregular is FLAB (Indicator = ARES, O/G) or FRET (Indicator = REID, A/G) with
// the element text as reason. The Field wrapping it is Empty when neither an
// indicator nor a reason is given (clear).
type Irregular struct {
	Indicator string
	Reason    string `json:",omitempty"`
}

// FlightOp is a FLOP block. Payload holds the subtype's own elements
// (SubtypeElements[Subtype]) with the same types a FLTR uses; every other field
// of Payload is absent. For FDEL the payload is empty.
type FlightOp struct {
	FLID    int64
	FFID    string `json:",omitempty"`
	Subtype string
	Payload FlightRecord
}

// RefList is a reference-data list message (docs/sis.md §b.6).
type RefList struct {
	Type string
	// Action is the STYP: DNLD, RESP, ADD, UPD or DEL.
	Action string
	// DeclaredRecs is RECS (advisory; -1 when absent).
	DeclaredRecs int
	Records      []RefRecord
}

// RefRecord is one record of a reference list: Key is the value of the list's
// key field (RefListKeys), Fields are all child elements in input order.
type RefRecord struct {
	Key    string
	Fields []RefField
}

// RefField is one element of a reference record: trimmed text, attributes and
// child elements (e.g. AIRL SUBC) in input order. Empty repeated entries are kept
// (Value ""); Values drops them.
type RefField struct {
	Name     string
	Value    string     `json:",omitempty"`
	Attrs    []RefAttr  `json:",omitempty"`
	Children []RefField `json:",omitempty"`
}

// RefAttr is an attribute of a reference field.
type RefAttr struct {
	Name  string
	Value string
}

// Get returns the value of the first field named name.
func (r RefRecord) Get(name string) (string, bool) {
	for _, f := range r.Fields {
		if f.Name == name {
			return f.Value, true
		}
	}
	return "", false
}

// Values returns the non-empty values of every field named name, in order.
func (r RefRecord) Values(name string) []string {
	var out []string
	for _, f := range r.Fields {
		if f.Name == name && f.Value != "" {
			out = append(out, f.Value)
		}
	}
	return out
}

// Attr returns the value of the attribute named name.
func (f RefField) Attr(name string) (string, bool) {
	for _, a := range f.Attrs {
		if a.Name == name {
			return a.Value, true
		}
	}
	return "", false
}
