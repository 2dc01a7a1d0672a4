package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/procstate"
	"github.com/msgx/msgx/pkg/status"
)

// messagePage is one message (status.ReadMessage) with its identity, the events it caused and
// whether it may be replayed from here.
type messagePage struct {
	M          status.Message
	Raw        string         // the text byte-exact as stored (its first rawShown bytes)
	RawSize    int            // the whole text's size in bytes
	BytesOnly  bool           // no text copy: Raw shows the mailbox bytes, invalid UTF-8 replaced
	Decoded    []decodedField // one page of its leaf elements and attributes
	Fields     pager          // which page of them
	Attempts   []procstate.Attempt
	Audit      []status.Audit
	Duplicates []duplicate
	Owner      int64 // the message its identity is bound to; 0: none
	BoundAt    time.Time
	Events     []msgEvent // one page of the events it caused
	EventPage  pager
	Replayable bool
	Predicted  *procstate.Prediction // what a replay would do now (replayable messages)
	FLID       string                // the flight the message's text names
	Notes      []note
	FormID     string // the one-time id of the schedule request form
}

// note is an operator's note or acknowledgement on a message.
type note struct {
	Text, Actor string
	Acked       bool
	At          time.Time
}

var flidRE = regexp.MustCompile(`<FLID>\s*([0-9]+)\s*</FLID>`)

// namedFlight is the FLID a message's text names (a no-match reason does not carry it).
func namedFlight(raw string) string {
	if m := flidRE.FindStringSubmatch(raw); m != nil {
		return m[1]
	}
	return ""
}

type duplicate struct {
	MsgID          int64
	Status         string
	ContentDiffers bool
}

type msgEvent struct {
	EventID   int64
	Target    string
	FLID      string
	Type      string
	Version   int64
	Status    string
	SentAt    *time.Time
	LastError string
}

// messageLookup opens the message ?id= names, or searches messages (messageSearch).
func (s *Server) messageLookup(w http.ResponseWriter, r *http.Request) error {
	q := strings.TrimSpace(r.URL.Query().Get("id"))
	if q == "" {
		return s.messageSearch(w, r)
	}
	id, err := strconv.ParseInt(q, 10, 64)
	if err != nil {
		return userError{"A message id is a number."}
	}
	http.Redirect(w, r, "/messages/"+strconv.FormatInt(id, 10), http.StatusSeeOther)
	return nil
}

func (s *Server) message(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		return errNotFound
	}
	st, err := status.ReadMessage(ctx, s.d.Pool, id)
	if errors.Is(err, status.ErrNoMessage) {
		return errNotFound
	}
	if err != nil {
		return err
	}
	m := st.Message
	var raw string
	if m.Raw != nil {
		raw = *m.Raw
	}
	p := messagePage{M: m, Raw: raw, Attempts: st.Attempts, Audit: st.Audit}
	p.Decoded, p.Fields = fieldsOf(raw, r.URL.Query().Get("fields"))
	if m.Raw == nil && m.RawBytes != nil {
		p.Raw, p.BytesOnly = strings.ToValidUTF8(string(m.RawBytes), "\uFFFD"), true
	}
	p.RawSize, p.Raw = len(p.Raw), prefix(p.Raw, rawShown)
	if m.IdentityKey != "" {
		if p.Duplicates, err = collect[duplicate](s, r, duplicatesSQL, m.IdentityKey, id); err != nil {
			return fmt.Errorf("read duplicates: %w", err)
		}
		switch err := s.d.Pool.QueryRow(ctx, identityOwnerSQL, m.IdentityKey).Scan(&p.Owner, &p.BoundAt); {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return fmt.Errorf("read identity: %w", err)
		}
	}
	if err := s.messageEvents(r, id, &p); err != nil {
		return err
	}
	ok, _ := procstate.Replayable(procstate.Status(m.Status), procstate.Class(m.Class), m.Reason)
	p.Replayable = ok && !m.Archived // replay reads proc_state only
	if p.Replayable {
		if p.Predicted, err = s.predict(ctx, id); err != nil {
			return err
		}
	}
	p.FLID, p.FormID = namedFlight(raw), newFormID()
	if p.Notes, err = collect[note](s, r, messageNotesSQL, id); err != nil {
		return fmt.Errorf("read notes: %w", err)
	}
	s.render(w, r, http.StatusOK, "message", fmt.Sprintf("Message %d", id), p)
	return nil
}

// A message page shows fieldsPage of its fields and eventsPage of its events at a time and the
// first rawShown bytes of its text (the whole text is its file): a day's schedule answer is
// megabytes, thousands of fields and two events per flight.
const (
	fieldsPage = 200
	eventsPage = 200
	rawShown   = 64 << 10
)

// prefix is s cut to at most n bytes, at a character's start.
func prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// fieldsOf is page q of a message's fields (a page past the end is the last).
func fieldsOf(raw, q string) ([]decodedField, pager) {
	n, err := strconv.Atoi(q)
	if err != nil || n < 1 {
		n = 1
	}
	rows, total := decodedFields(raw, (n-1)*fieldsPage, fieldsPage)
	p := newPager(total, fieldsPage, q)
	if p.Page != n { // past the end
		rows, _ = decodedFields(raw, (p.Page-1)*fieldsPage, fieldsPage)
	}
	return rows, p
}

// pager is one page of a list: its 1-based first and last item, the page and the last page.
type pager struct {
	Total, From, To int
	Page, Last      int
}

// newPager is page q (a 1-based number; anything else is the first page, and a page past the
// end is the last) of total items, size a page.
func newPager(total, size int, q string) pager {
	p := pager{Total: total, Page: 1, Last: max(1, (total+size-1)/size)}
	if n, err := strconv.Atoi(q); err == nil && n > 1 {
		p.Page = min(n, p.Last)
	}
	p.From, p.To = (p.Page-1)*size+1, min(p.Page*size, total)
	if total == 0 {
		p.From = 1
	}
	return p
}

// messageEvents reads the page of the events message id caused that the query asks for
// (?events=N, eventsPage a page): a schedule answer causes two per flight.
func (s *Server) messageEvents(r *http.Request, id int64, p *messagePage) error {
	var n int
	if err := s.d.Pool.QueryRow(r.Context(), messageEventCountSQL, id).Scan(&n); err != nil {
		return fmt.Errorf("count events: %w", err)
	}
	p.EventPage = newPager(n, eventsPage, r.URL.Query().Get("events"))
	var err error
	if p.Events, err = collect[msgEvent](s, r, messageEventsSQL, id, eventsPage, p.EventPage.From-1); err != nil {
		return fmt.Errorf("read events: %w", err)
	}
	return nil
}

// messageRaw serves a message's text byte-exact as stored, as plain text (nosniff: never
// rendered as markup): the mailbox bytes where they are kept apart (status.Message.RawBytes).
func (s *Server) messageRaw(w http.ResponseWriter, r *http.Request) error {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		return errNotFound
	}
	st, err := status.ReadMessage(r.Context(), s.d.Pool, id)
	m := st.Message
	if errors.Is(err, status.ErrNoMessage) || (err == nil && m.Raw == nil && m.RawBytes == nil) {
		return errNotFound
	}
	if err != nil {
		return err
	}
	w.Header().Set("Content-Disposition", fmt.Sprintf(`inline; filename="msg-%d.xml"`, id))
	if m.RawBytes != nil { // the mailbox bytes themselves, in the charset their declaration names
		w.Header().Set("Content-Type", "text/plain")
		_, err = w.Write(m.RawBytes)
		return err
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, err = w.Write([]byte(*m.Raw))
	return err
}

// predict is what a replay of message id would do now: procstate.Replay's dry run.
func (s *Server) predict(ctx context.Context, id int64) (*procstate.Prediction, error) {
	rep, err := procstate.Replay(ctx, s.d.Pool, procstate.ReplayRequest{IDs: []int64{id}, DryRun: true, Now: s.d.Now(), Location: s.d.Location})
	if err != nil {
		return nil, fmt.Errorf("predict the replay of %d: %w", id, err)
	}
	if len(rep.Items) != 1 {
		return nil, nil
	}
	return rep.Items[0].Predicted, nil
}
