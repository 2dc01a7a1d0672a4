package request

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/msgx/msgx/pkg/procstate"
)

// Kind is the request type (req_track.req_type, the outbound META TYPE).
type Kind string

// Request kinds (docs/sis.md §f.4).
const (
	Schedule Kind = "RQFD" // schedule of a range of operation days; answered by SCHD RESP
	List     Kind = "RQRD" // one reference list; answered by that list's RESP
)

// Status is a request's place in its life cycle (doc.go).
type Status string

// Statuses.
const (
	Registered Status = "REGISTERED"
	Sent       Status = "SENT"
	Waiting    Status = "WAITING"
	Done       Status = "DONE"
	Expired    Status = "EXPIRED"
)

// Statuses lists every status in life-cycle order.
var Statuses = []Status{Registered, Sent, Waiting, Done, Expired}

// Open reports whether s is not final.
func (s Status) Open() bool { return s == Registered || s == Sent || s == Waiting }

// Answerable reports whether a response may close a request in s: it was sent.
func (s Status) Answerable() bool { return s == Sent || s == Waiting }

// Origin is who asked.
type Origin string

// Origins.
const (
	Operator  Origin = "operator"  // msgxctl request …
	Bootstrap Origin = "bootstrap" // empty flight table at first start
	SelfHeal  Origin = "self-heal" // FLOPs for unknown flights of one operation day
)

// Close reasons (req_track.close_reason).
const (
	ReasonApplied    = "applied"    // DONE: the response was applied
	ReasonTimeout    = "timeout"    // EXPIRED: no response within the timeout
	ReasonSuperseded = "superseded" // EXPIRED: a newer request of its days (RQFD) or its list (RQRD) was registered
)

// Match kinds (req_track.match_kind).
const (
	// MatchEcho: the response named the request (an echoed token). The SIS catalogue has no such
	// field today (docs/sis.md §f.4), so no response matches this way yet.
	MatchEcho = "echo"
	// MatchFallback: an open request of the response's kind and scope, sent no later than the
	// response's DTTM (docs/requests.md).
	MatchFallback = "fallback"
)

// SkipNoOpenRequest is the guard's result (a metric label) for a response no open request
// matches: the kind of its SKIPPED reason.
const SkipNoOpenRequest = string(procstate.SkipNoOpenRequest)

// MaxSEQN is the largest outbound SEQN (six digits in META).
const MaxSEQN = 999999

// NextSEQN is the SEQN after last: last+1, and 1 after MaxSEQN (the documented wrap: 0 is sent
// only once, by the very first request after the counter was created).
func NextSEQN(last int) int {
	if last >= MaxSEQN || last < 0 {
		return 1
	}
	return last + 1
}

// Spec is what to ask for.
type Spec struct {
	Kind Kind
	// From and To are the operation days of an RQFD (dates; only year, month and day count).
	From, To time.Time
	// ListCode is the reference list of an RQRD (one of the 23 codes).
	ListCode string
	Origin   Origin
	Actor    string
	// Reason is why (required from operators; the triggers write what fired them).
	Reason string
}

// MaxDays bounds an RQFD's day range.
const MaxDays = 31

// ErrBadSpec marks a request that cannot be made.
var ErrBadSpec = errors.New("request: bad request")

// Validate reports a spec that cannot be sent (the list code is checked by the encoder).
func (s Spec) Validate() error {
	switch s.Kind {
	case Schedule:
		if s.From.IsZero() || s.To.IsZero() {
			return fmt.Errorf("%w: RQFD needs --from and --to", ErrBadSpec)
		}
		f, t := Day(s.From), Day(s.To)
		if t.Before(f) {
			return fmt.Errorf("%w: RQFD --to %s before --from %s", ErrBadSpec, t.Format(time.DateOnly), f.Format(time.DateOnly))
		}
		if n := int(t.Sub(f)/(24*time.Hour)) + 1; n > MaxDays {
			return fmt.Errorf("%w: RQFD covers %d days, at most %d", ErrBadSpec, n, MaxDays)
		}
	case List:
		if s.ListCode == "" {
			return fmt.Errorf("%w: RQRD needs a list code", ErrBadSpec)
		}
	default:
		return fmt.Errorf("%w: unknown kind %q", ErrBadSpec, s.Kind)
	}
	switch s.Origin {
	case Operator, Bootstrap, SelfHeal:
	default:
		return fmt.Errorf("%w: unknown origin %q", ErrBadSpec, s.Origin)
	}
	return nil
}

// Scope is the request's scope key: "YYYY-MM-DD..YYYY-MM-DD" for an RQFD, the list code for an RQRD.
func (s Spec) Scope() string {
	if s.Kind == Schedule {
		return DayScope(s.From, s.To)
	}
	return s.ListCode
}

// DayScope is the scope key of an RQFD for [from, to].
func DayScope(from, to time.Time) string {
	return Day(from).Format(time.DateOnly) + ".." + Day(to).Format(time.DateOnly)
}

// Gaps returns the runs of consecutive days of [from, to] not in taken, as [first, last] pairs
// in order.
func Gaps(from, to time.Time, taken []time.Time) [][2]time.Time {
	held := make(map[time.Time]bool, len(taken))
	for _, d := range taken {
		held[Day(d)] = true
	}
	var out [][2]time.Time
	for d := Day(from); !d.After(Day(to)); d = d.AddDate(0, 0, 1) {
		switch {
		case held[d]:
		case len(out) > 0 && out[len(out)-1][1].AddDate(0, 0, 1).Equal(d):
			out[len(out)-1][1] = d
		default:
			out = append(out, [2]time.Time{d, d})
		}
	}
	return out
}

// Day returns t's calendar date at UTC midnight (the representation of an operation day).
func Day(t time.Time) time.Time { return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC) }

// Request is one req_track row (JSON: msgxctl request … --json).
type Request struct {
	ID     int64     `json:"req_id"`
	Kind   Kind      `json:"kind"`
	Scope  string    `json:"scope"`
	From   time.Time `json:"from"` // RQFD days (zero for RQRD)
	To     time.Time `json:"to"`
	Status Status    `json:"status"`
	Origin Origin    `json:"origin"`
	Actor  string    `json:"actor"`
	Reason string    `json:"reason"`

	Sender    string    `json:"sndr"`
	RoutingID string    `json:"routing_id"`
	SEQN      int       `json:"seqn"`
	DTTM      time.Time `json:"dttm"` // META DTTM, airport wall clock
	XML       string    `json:"xml"`  // the outbound message, built once

	RegisteredAt time.Time `json:"registered_at"`
	SentAt       time.Time `json:"sent_at"` // zero until SENT
	WaitingAt    time.Time `json:"waiting_at"`
	ClosedAt     time.Time `json:"closed_at"`
	OutMsgID     int64     `json:"coutmsgs_id"`     // COUTMSGS_ID, 0 until SENT
	ResponseID   int64     `json:"response_msg_id"` // msg_id of the applied response
	CloseReason  string    `json:"close_reason"`
	MatchKind    string    `json:"match_kind"`
}

// span is the number of operation days an RQFD asked for (0 for an RQRD): the narrowest request
// covering a response is the likeliest asker.
func (r Request) span() int {
	if r.Kind != Schedule {
		return 0
	}
	return int(Day(r.To).Sub(Day(r.From))/(24*time.Hour)) + 1
}

// ListCode is the list of an RQRD (its scope).
func (r Request) ListCode() string {
	if r.Kind == List {
		return r.Scope
	}
	return ""
}

// Due reports whether the open request r has expired at now: timeout after registration.
func Due(r Request, now time.Time, timeout time.Duration) bool {
	return r.Status.Open() && !now.Before(r.RegisteredAt.Add(timeout))
}

// Response is what the RESP guard knows of an incoming response.
type Response struct {
	Kind Kind
	// ListCode is the TYPE of a list RESP.
	ListCode string
	// Days are the operation days of a SCHD RESP's records (empty: an empty schedule).
	Days []time.Time
	// DTTM is the response's META DTTM as an instant (read in the airport zone).
	DTTM time.Time
}

// Refusal says why no request matched.
type Refusal string

// Refusals (the detail after SkipNoOpenRequest, except AwaitingSend).
const (
	NoCandidate      Refusal = "none"        // no answerable request of that kind and scope
	DTTMBeforeSent   Refusal = "before-sent" // requests exist, all sent after the response's DTTM (to the second)
	OutOfRequestDays Refusal = "other-days"  // RQFD open, but none covers the response's days
	// AwaitingSend: only a REGISTERED request would match; its outbound row may exist already (a
	// send interrupted before its local commit), so the response waits for the send to be
	// confirmed instead of being skipped.
	AwaitingSend Refusal = "awaiting-send"
)

// Matched is the request a response answers.
type Matched struct {
	Request Request
}

// Match picks the request a response answers among cands (the open requests of the response's
// kind within their timeout: SENT and WAITING, and REGISTERED). The rule (docs/requests.md): a
// SENT or WAITING request of the same kind and scope — the same list code, or an RQFD whose day
// range holds every operation day of the response — sent no later than the response's DTTM, both
// compared as instants to the second (DTTM's unit): an answer made before its request was sent
// is not its answer. Among several the narrowest range wins, then the oldest sent. Every such
// match is a fallback match (the catalogue has no echoed field). ok is false with the refusal
// otherwise; AwaitingSend when only a REGISTERED request would match.
func Match(resp Response, cands []Request) (Matched, Refusal, bool) {
	ranked := slices.Clone(cands)
	slices.SortFunc(ranked, func(a, b Request) int {
		if c := a.span() - b.span(); c != 0 {
			return c
		}
		if c := a.SentAt.Compare(b.SentAt); c != 0 {
			return c
		}
		return int(a.ID - b.ID)
	})
	refusal, waiting := NoCandidate, false
	for _, r := range ranked {
		if r.Kind != resp.Kind || !(r.Status.Answerable() || r.Status == Registered) {
			continue
		}
		if r.Kind == List && r.Scope != resp.ListCode {
			continue
		}
		if r.Kind == Schedule && !covers(r, resp.Days) {
			if refusal == NoCandidate {
				refusal = OutOfRequestDays
			}
			continue
		}
		if r.Status == Registered {
			waiting = waiting || !before(resp.DTTM, r.RegisteredAt)
			continue
		}
		if before(resp.DTTM, r.SentAt) {
			refusal = DTTMBeforeSent
		} else {
			return Matched{Request: r}, "", true
		}
	}
	if waiting {
		return Matched{}, AwaitingSend, false
	}
	return Matched{}, refusal, false
}

// before reports whether dttm lies before t, both to the second (DTTM's unit).
func before(dttm, t time.Time) bool {
	return dttm.Truncate(time.Second).Before(t.Truncate(time.Second))
}

func covers(r Request, days []time.Time) bool {
	from, to := Day(r.From), Day(r.To)
	for _, d := range days {
		d = Day(d)
		if d.Before(from) || d.After(to) {
			return false
		}
	}
	return true
}
