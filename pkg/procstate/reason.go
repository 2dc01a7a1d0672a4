package procstate

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// SkipKind is what made a message SKIPPED: its reason's text up to the detail.
type SkipKind string

// The reasons a message ends SKIPPED with; the processor writes no other. Each has one
// constructor below, and ParseSkip reads them all.
const (
	SkipDuplicate     SkipKind = "duplicate-of"    // duplicate-of:<msg_id>[ content-differs]: its identity is bound to that message
	SkipIgnored       SkipKind = "ignored"         // ignored:<TYPE>: a TYPE MSGX_IGNORE_TYPES names
	SkipNoMatch       SkipKind = "no-match"        // no-match:FLID (its flight is not stored), no-match:deleted (DELETED): replayable by id
	SkipStaleLate     SkipKind = "stale:late"      // stale:late: <units>: later-created messages had set all it carries (INV-24b)
	SkipNoOpenRequest SkipKind = "no-open-request" // no-open-request[:<refusal>]: an answer no open request matches
)

// NoMatchLike is the SQL LIKE pattern of the no-match reasons (the partial index
// proc_state_no_match is on it).
const NoMatchLike = string(SkipNoMatch) + ":%"

// The details of the reasons. A no-match reason does not carry the FLID: the message's text
// names its flight.
const (
	noMatchUnknown = "FLID"
	noMatchDeleted = "deleted"
	contentDiffers = " content-differs"
	staleSep       = ", "
)

// Skip is the reason of a SKIPPED message, parsed.
type Skip struct {
	Kind SkipKind
	// Of is the message a duplicate's identity is bound to; ContentDiffers: its text differs
	// from that message's (SkipDuplicate).
	Of             int64
	ContentDiffers bool
	Type           string   // the ignored TYPE (SkipIgnored)
	Deleted        bool     // the flight is DELETED, else not stored (SkipNoMatch)
	Units          []string // what later-created messages had set (SkipStaleLate)
	Refusal        string   // why no open request matched; "" none of its kind is open (SkipNoOpenRequest)
}

// Duplicate is the reason of a message whose identity is bound to message of.
func Duplicate(of int64, differs bool) Skip {
	return Skip{Kind: SkipDuplicate, Of: of, ContentDiffers: differs}
}

// Ignored is the reason of a message of an ignored TYPE.
func Ignored(typ string) Skip { return Skip{Kind: SkipIgnored, Type: typ} }

// NoMatch is the reason of a message for a flight that is not stored.
func NoMatch() Skip { return Skip{Kind: SkipNoMatch} }

// NoMatchDeleted is the reason of a message for a DELETED flight.
func NoMatchDeleted() Skip { return Skip{Kind: SkipNoMatch, Deleted: true} }

// StaleLate is the reason of a message all of whose units later-created messages had set.
func StaleLate(units []string) Skip { return Skip{Kind: SkipStaleLate, Units: units} }

// NoOpenRequest is the reason of an answer no open request matches, with why (refusal; "" when
// none of its kind and scope is open).
func NoOpenRequest(refusal string) Skip { return Skip{Kind: SkipNoOpenRequest, Refusal: refusal} }

// String is the reason as proc_state.reason holds it.
func (s Skip) String() string {
	switch s.Kind {
	case SkipDuplicate:
		r := string(s.Kind) + ":" + strconv.FormatInt(s.Of, 10)
		if s.ContentDiffers {
			r += contentDiffers
		}
		return r
	case SkipIgnored:
		return string(s.Kind) + ":" + s.Type
	case SkipNoMatch:
		if s.Deleted {
			return string(s.Kind) + ":" + noMatchDeleted
		}
		return string(s.Kind) + ":" + noMatchUnknown
	case SkipStaleLate:
		return string(s.Kind) + ": " + strings.Join(s.Units, staleSep)
	case SkipNoOpenRequest:
		if s.Refusal != "" {
			return string(s.Kind) + ":" + s.Refusal
		}
	}
	return string(s.Kind)
}

// ErrNotSkip is returned (wrapped) by ParseSkip for a text that is no SKIPPED reason.
var ErrNotSkip = errors.New("not a SKIPPED reason")

// ParseSkip reads a SKIPPED message's reason.
func ParseSkip(reason string) (Skip, error) {
	var s Skip
	ok := false
	if units, stale := strings.CutPrefix(reason, string(SkipStaleLate)+": "); stale {
		s, ok = StaleLate(strings.Split(units, staleSep)), units != ""
	} else {
		kind, detail, colon := strings.Cut(reason, ":")
		s.Kind = SkipKind(kind)
		switch s.Kind {
		case SkipDuplicate:
			id, differs := strings.CutSuffix(detail, contentDiffers)
			n, err := strconv.ParseInt(id, 10, 64)
			s.Of, s.ContentDiffers, ok = n, differs, err == nil && n > 0
		case SkipIgnored:
			s.Type, ok = detail, detail != ""
		case SkipNoMatch:
			s.Deleted, ok = detail == noMatchDeleted, detail == noMatchDeleted || detail == noMatchUnknown
		case SkipNoOpenRequest:
			s.Refusal, ok = detail, detail != "" || !colon
		}
	}
	if !ok {
		return Skip{}, fmt.Errorf("%w: %q", ErrNotSkip, reason)
	}
	return s, nil
}

// IsNoMatch reports whether reason is a no-match reason (replay takes it by id).
func IsNoMatch(reason string) bool {
	s, err := ParseSkip(reason)
	return err == nil && s.Kind == SkipNoMatch
}

// staleNote starts the note a SUCCEEDED message carries when later-created messages had set some
// of its units (INV-24b); the units follow.
const staleNote = string(SkipStaleLate) + " (applied in part; not written): "

// StaleNote is the note of a message applied in part: units are what it did not write.
func StaleNote(units []string) string { return staleNote + strings.Join(units, staleSep) }

// ParseStaleNote finds the StaleNote among a SUCCEEDED message's notes ("; "-separated; the
// note itself holds one) and returns its units.
func ParseStaleNote(reason string) ([]string, bool) {
	i := strings.Index(reason, staleNote)
	if i < 0 || (i > 0 && !strings.HasSuffix(reason[:i], "; ")) {
		return nil, false
	}
	units, _, _ := strings.Cut(reason[i+len(staleNote):], "; ")
	if units == "" {
		return nil, false
	}
	return strings.Split(units, staleSep), true
}
