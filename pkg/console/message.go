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

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/procstate"
	"github.com/msgx/msgx/pkg/status"
)

// messagePage is one message (status.ReadMessage) with its identity, the events it caused and
// whether it may be replayed from here.
type messagePage struct {
	M          status.Message
	Raw        string         // the text byte-exact as stored
	BytesOnly  bool           // no text copy: Raw shows the mailbox bytes, invalid UTF-8 replaced
	Decoded    []decodedField // its leaf elements and attributes
	Attempts   []procstate.Attempt
	Audit      []status.Audit
	Duplicates []duplicate
	Owner      int64 // the message its identity is bound to; 0: none
	BoundAt    time.Time
	Events     []msgEvent
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

func (s *Server) messageLookup(w http.ResponseWriter, r *http.Request) error {
	id, err := strconv.ParseInt(strings.TrimSpace(r.URL.Query().Get("id")), 10, 64)
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
	p := messagePage{M: m, Raw: raw, Decoded: decodedFields(raw), Attempts: st.Attempts, Audit: st.Audit}
	if m.Raw == nil && m.RawBytes != nil {
		p.Raw, p.BytesOnly = strings.ToValidUTF8(string(m.RawBytes), "\uFFFD"), true
	}
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
	if p.Events, err = collect[msgEvent](s, r, messageEventsSQL, id); err != nil {
		return fmt.Errorf("read events: %w", err)
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
