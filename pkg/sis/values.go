package sis

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// lengthLimit is the allowed length of a text value, counted in characters.
type lengthLimit struct{ min, max int }

// columnLimits is the one table of column length limits (docs/sis.md §c.1 and the
// peer column widths of §g), keyed by element or attribute name as it occurs in
// flight records, FLOP payloads and the SCHS season. Values longer than the
// column are rejected (PROTOCOL), never truncated.
var columnLimits = map[string]lengthLimit{
	"ALCD": {2, 3}, "ALSC": {1, 10}, "FLNO": {1, 12}, "MVIN": {1, 1}, "FLTY": {1, 1},
	"FLIN": {1, 1}, "ACFT": {1, 3}, "RENO": {1, 10}, "TAOP": {2, 3}, "TAFL": {1, 12},
	"TRML": {1, 5}, "STND": {1, 8}, "EXSC": {1, 8}, "EXSR": {1, 256}, "FTSS": {1, 8},
	"CSOP": {2, 3}, "CSFT": {1, 12}, "RUNW": {1, 8}, "REMC": {1, 80}, "FFID": {1, 64},
	// route, resources and allocations
	"APCD": {1, 8}, "PSST": {1, 8}, "GATE": {1, 8}, "CHKC": {1, 8}, "BELT": {1, 8},
	"CHUT": {1, 8}, "CHST": {1, 8}, "ABDG": {1, 8}, "PUST": {1, 8}, "TRST": {1, 8},
	"GTYP": {1, 1}, "CTYP": {1, 1}, "BTYP": {1, 1}, "CCLS": {1, 1}, "BCLS": {1, 1},
	"ABOP": {1, 1}, "CHID": {1, 3}, "PSID": {1, 3}, "POID": {1, 1},
	// irregular operations
	"DDES": {1, 3}, "DDIR": {1, 4}, "ARES": {1, 1}, "REID": {1, 1},
	"FDIV#reason": {1, 30}, "FRET#reason": {1, 30}, "FLAB#reason": {1, 30},
	// delays, services, VIPs
	"CODE": {1, 3}, "DELY#comment": {1, 80}, "SRTC": {1, 4}, "SANR": {1, 8},
	"SARR": {1, 256}, "VPCD": {1, 10}, "VSCD": {1, 10},
	// SCHS header
	"SNAM": {1, 40}, "SCHS/APCD": {1, 3},
}

// checkLen enforces columnLimits[key] on v.
func checkLen(key, path, v string) *Error {
	if msg := lenMsg(key, v); msg != "" {
		return protocol(path, v, msg)
	}
	return nil
}

// lenMsg returns why v breaks columnLimits[key], or "".
func lenMsg(key, v string) string {
	lim, ok := columnLimits[key]
	if !ok {
		return ""
	}
	n := len(v)
	if !isASCII(v) {
		n = utf8.RuneCountInString(v)
	}
	if n >= lim.min && n <= lim.max {
		return ""
	}
	if lim.min == lim.max {
		return "length must be " + strconv.Itoa(lim.max) + " characters"
	}
	return "length must be " + strconv.Itoa(lim.min) + "-" + strconv.Itoa(lim.max) + " characters"
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// enumValues are the closed code sets (exact case). Open sets that the samples
// show extended (CTYP=E, PSID=IN) are length-checked only.
var enumValues = map[string][]string{
	"MVIN": {"A", "D"},
	"FLIN": {"D", "I", "M"},
	"DDIR": {"TO", "FROM"},
	"ARES": {"O", "G"},
	"REID": {"A", "G"},
	"POID": {"O", "C"},
	"CHID": {"ON", "OFF"},
	"ABOP": {"A", "D"},
}

// enumMsg returns why v is outside enumValues[key], or "".
func enumMsg(key, v string) string {
	set, ok := enumValues[key]
	if !ok {
		return ""
	}
	for _, s := range set {
		if v == s {
			return ""
		}
	}
	return "must be one of " + strings.Join(set, "/")
}

var months = [12]string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}

func digits2(s string) (int, bool) {
	if len(s) != 2 || s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9' {
		return 0, false
	}
	return int(s[0]-'0')*10 + int(s[1]-'0'), true
}

func parseMonth(s string) (time.Month, bool) {
	if len(s) != 3 {
		return 0, false
	}
	var u [3]byte
	for i := 0; i < 3; i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		u[i] = c
	}
	for i, m := range months {
		if m == string(u[:]) {
			return time.Month(i + 1), true
		}
	}
	return 0, false
}

func daysIn(m time.Month, year int) int {
	return time.Date(year, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// ParseDate parses DDMONYY (month case-insensitive, year 2000+YY) as local
// midnight in loc.
func ParseDate(s string, loc *time.Location) (time.Time, bool) {
	if len(s) != 7 {
		return time.Time{}, false
	}
	day, ok1 := digits2(s[0:2])
	mon, ok2 := parseMonth(s[2:5])
	yy, ok3 := digits2(s[5:7])
	if !ok1 || !ok2 || !ok3 || day < 1 || day > daysIn(mon, 2000+yy) {
		return time.Time{}, false
	}
	return wallTime(2000+yy, mon, day, 0, 0, 0, loc), true
}

// wallTime is the time whose wall clock in loc reads the given date and clock. A wall time the
// clocks skip when daylight saving time starts exists in no zone period of loc: it keeps its
// wall clock, at the offset in force before the change, where time.Date would move it by the
// length of the gap (the flight's instant beside it is then none: flight.Instant).
func wallTime(year int, mon time.Month, day, h, m, sec int, loc *time.Location) time.Time {
	t := time.Date(year, mon, day, h, m, sec, 0, loc)
	if t.Day() == day && t.Hour() == h && t.Minute() == m {
		return t
	}
	start, _ := t.ZoneBounds()
	name, off := start.Add(-time.Nanosecond).Zone()
	return time.Date(year, mon, day, h, m, sec, 0, time.FixedZone(name, off))
}

// ParseClock parses HHMM (00-23, 00-59).
func ParseClock(s string) (Clock, bool) {
	if len(s) != 4 {
		return Clock{}, false
	}
	h, ok1 := digits2(s[0:2])
	m, ok2 := digits2(s[2:4])
	if !ok1 || !ok2 || h > 23 || m > 59 {
		return Clock{}, false
	}
	return Clock{Hour: h, Minute: m}, true
}

// ParseDateTime parses DDMONYYHHMM as a wall-clock time in loc.
func ParseDateTime(s string, loc *time.Location) (time.Time, bool) {
	if len(s) != 11 {
		return time.Time{}, false
	}
	d, ok := ParseDate(s[:7], loc)
	if !ok {
		return time.Time{}, false
	}
	c, ok := ParseClock(s[7:])
	if !ok {
		return time.Time{}, false
	}
	return wallTime(d.Year(), d.Month(), d.Day(), c.Hour, c.Minute, 0, loc), true
}

// ParseStamp parses the META DTTM form yyyyMMddHHmmss in loc.
func ParseStamp(s string, loc *time.Location) (time.Time, bool) {
	if len(s) != 14 {
		return time.Time{}, false
	}
	for i := 0; i < 14; i++ {
		if s[i] < '0' || s[i] > '9' {
			return time.Time{}, false
		}
	}
	year, _ := strconv.Atoi(s[0:4])
	mon, _ := digits2(s[4:6])
	day, _ := digits2(s[6:8])
	h, _ := digits2(s[8:10])
	m, _ := digits2(s[10:12])
	sec, _ := digits2(s[12:14])
	if mon < 1 || mon > 12 || day < 1 || day > daysIn(time.Month(mon), year) || h > 23 || m > 59 || sec > 59 {
		return time.Time{}, false
	}
	return wallTime(year, time.Month(mon), day, h, m, sec, loc), true
}

// FormatDateTime formats t as DDMONYYHHMM in its own location.
func FormatDateTime(t time.Time) string {
	var b [11]byte
	put2 := func(i, v int) { b[i], b[i+1] = byte('0'+v/10), byte('0'+v%10) }
	put2(0, t.Day())
	copy(b[2:5], months[t.Month()-1])
	put2(5, t.Year()%100)
	put2(7, t.Hour())
	put2(9, t.Minute())
	return string(b[:])
}

// parseUint parses a plain non-negative decimal of at most maxDigits digits.
func parseUint(s string, maxDigits int) (int64, bool) {
	if s == "" || len(s) > maxDigits {
		return 0, false
	}
	var v int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}

// parseSigned parses an optionally signed small integer (SCHS day offsets).
func parseSigned(s string) (int, bool) {
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	v, ok := parseUint(s, 3)
	if !ok {
		return 0, false
	}
	if neg {
		v = -v
	}
	return int(v), true
}

// isDecimal accepts digits with an optional fraction of up to two digits
// (LBWT decimal(11,2)).
func isDecimal(s string) bool {
	ip, fp, hasDot := strings.Cut(s, ".")
	if _, ok := parseUint(ip, 9); !ok {
		return false
	}
	if hasDot {
		if _, ok := parseUint(fp, 2); !ok {
			return false
		}
	}
	return true
}

// trim removes XML blanks around v.
func trim(v string) string {
	i, j := 0, len(v)
	for i < j && isSpace(v[i]) {
		i++
	}
	for j > i && isSpace(v[j-1]) {
		j--
	}
	return v[i:j]
}
