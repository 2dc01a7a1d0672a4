package flight

import (
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Every time field of every state and change event is written as its wall clock and, beside it,
// its instant in the airport's zone. time.Time's layout formatting and zone arithmetic were a
// tenth of the processor's CPU, so the two are written here with integer arithmetic; Instant
// stays the reference (TestWallClockMatchesTime compares the two).

// appendWall appends the wall clock of Unix microseconds us as TimeLayout formats it. The digits
// are written into a fixed array and appended at once: one capacity check, not one per digit.
func appendWall(b []byte, us int64) []byte {
	secs := floorDiv(us, 1e6)
	days := floorDiv(secs, 86400)
	rem := secs - days*86400
	y, m, d := civil(days)
	if y < 0 || y > 9999 {
		return time.UnixMicro(us).UTC().AppendFormat(b, TimeLayout)
	}
	var w [len(TimeLayout)]byte
	put2(w[0:], y/100)
	put2(w[2:], y%100)
	w[4] = '-'
	put2(w[5:], m)
	w[7] = '-'
	put2(w[8:], d)
	w[10] = 'T'
	put2(w[11:], rem/3600)
	w[13] = ':'
	put2(w[14:], rem/60%60)
	w[16] = ':'
	put2(w[17:], rem%60)
	return append(b, w[:]...)
}

// appendOffset appends a UTC offset in seconds as time.RFC3339 writes it: Z, or ±hh:mm.
func appendOffset(b []byte, off int64) []byte {
	if off == 0 {
		return append(b, 'Z')
	}
	sign := byte('+')
	mins := off / 60
	if mins < 0 {
		sign, mins = '-', -mins
	}
	b = append(b, sign)
	b = append2(b, mins/60)
	b = append(b, ':')
	return append2(b, mins%60)
}

// civil returns the proleptic Gregorian date of a day count from 1970-01-01 (H. Hinnant's
// days_from_civil, inverted).
func civil(days int64) (y, m, d int64) {
	z := days + 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	m = mp + 3
	if mp >= 10 {
		m = mp - 9
	}
	y = yoe + era*400
	if m <= 2 {
		y++
	}
	return y, m, d
}

func floorDiv(a, n int64) int64 {
	q := a / n
	if a%n != 0 && (a < 0) != (n < 0) {
		q--
	}
	return q
}

func append2(b []byte, v int64) []byte { return append(b, byte('0'+v/10), byte('0'+v%10)) }

// put2 writes v (0 to 99) as two digits into w[0:2].
func put2(w []byte, v int64) { w[0], w[1] = byte('0'+v/10), byte('0'+v%10) }

// zonePeriod is a stretch of instants [start, end) (Unix microseconds) over which a zone keeps
// one UTC offset (off, seconds).
type zonePeriod struct{ start, end, off int64 }

// periodsFrom and periodsTo bound the table of a zone's periods; a wall time outside it goes
// through Instant. (Past the zone database's explicit transitions, about 2037, ZoneBounds may
// name a year's end as a period's end and then return that end for it: the table stops there.)
var periodsFrom, periodsTo = time.Date(1800, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)

var zonePeriods sync.Map // *time.Location → []zonePeriod

// zoneTable is one zone's periods; lastZone is the one last asked for. A process publishes in
// one zone, so a pointer comparison answers without hashing the location for every time value.
type zoneTable struct {
	loc *time.Location
	ps  []zonePeriod
}

var lastZone atomic.Pointer[zoneTable]

// periodsOf returns loc's offset periods from periodsFrom to past periodsTo, computed once.
func periodsOf(loc *time.Location) []zonePeriod {
	if z := lastZone.Load(); z != nil && z.loc == loc {
		return z.ps
	}
	if ps, ok := zonePeriods.Load(loc); ok {
		lastZone.Store(&zoneTable{loc: loc, ps: ps.([]zonePeriod)})
		return ps.([]zonePeriod)
	}
	var ps []zonePeriod
	for t := periodsFrom.In(loc); ; {
		_, end := t.ZoneBounds()
		if !end.IsZero() && !end.After(t) {
			break // the table ends at the previous period's end
		}
		_, off := t.Zone()
		// Each period starts where the one before ended (ZoneBounds may name an earlier start
		// for a period it split at a year's end).
		p := zonePeriod{start: math.MinInt64, end: math.MaxInt64, off: int64(off)}
		if len(ps) > 0 {
			p.start = t.UnixMicro()
		}
		if !end.IsZero() {
			p.end = end.UnixMicro()
		}
		ps = append(ps, p)
		if end.IsZero() || end.After(periodsTo) {
			break
		}
		t = end
	}
	zonePeriods.Store(loc, ps)
	lastZone.Store(&zoneTable{loc: loc, ps: ps})
	return ps
}

// instantOffset returns loc's UTC offset (seconds) at the one instant wall clock us names, and
// false when it names none or two, as Instant decides.
func instantOffset(us int64, loc *time.Location) (int64, bool) {
	ps := periodsOf(loc)
	last := ps[len(ps)-1]
	if us < periodsFrom.UnixMicro() || (last.end != math.MaxInt64 && us >= last.end+last.off*1e6-2*86400e6) {
		t, ok := Instant(time.UnixMicro(us).UTC(), loc)
		if !ok {
			return 0, false
		}
		_, off := t.Zone()
		return int64(off), true
	}
	// The last period whose wall clock starts at or before us; periods last months and offsets
	// differ by less than a day, so only it and the two before it can hold us.
	i := sort.Search(len(ps), func(i int) bool {
		return ps[i].start != math.MinInt64 && ps[i].start+ps[i].off*1e6 > us
	}) - 1
	var off int64
	n := 0
	for j := max(i-2, 0); j <= min(i+1, len(ps)-1); j++ {
		if inst := us - ps[j].off*1e6; inst >= ps[j].start && inst < ps[j].end {
			off = ps[j].off
			n++
		}
	}
	return off, n == 1
}
