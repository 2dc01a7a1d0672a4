package console

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/request"
)

// requestsPage is the requests to the AODB: open and latest closed, the RQFD and RQRD forms
// (each with its one-time id, its values and its error), and the outcome of a dry run
// (Preview) or of a registration (Registered, shown after the redirect).
type requestsPage struct {
	Open       []request.Request
	Closed     []closedRequest
	Shadow     bool
	Preview    *request.Registration
	Confirm    *requestForm // set with Preview when Send was pressed: the form to confirm
	Registered *request.Request
	RQFD, RQRD requestForm
}

// requestForm is one form: what the user typed, and why it was refused.
type requestForm struct {
	Kind                           string // RQFD or RQRD: set on a form to confirm
	FormID, From, To, List, Reason string
	Error                          string
}

type closedRequest struct {
	ID                                 int64
	Kind, Scope, Status, Origin, Actor string
	Reason                             string
	RegisteredAt                       time.Time
	ClosedAt                           *time.Time
	CloseReason                        string
	answer
}

// answer is the message that answered a request (0: none yet) and, for a schedule answer, the
// flights it created, changed and left unchanged (schd_snap_log).
type answer struct {
	AnswerID                    int64
	Schedule                    bool
	Created, Changed, Unchanged int64
}

// requestPage is one request with its answer.
type requestPage struct {
	R       request.Request
	A       answer
	Deleted int64 // flights the answer left DELETED (a schedule answer never deletes)
}

// requestDetail is one request: what was asked and sent, and its answer; an unknown id is a 404.
func (s *Server) requestDetail(w http.ResponseWriter, r *http.Request) error {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		return errNotFound
	}
	var p requestPage
	p.R, err = s.d.Requests.Get(r.Context(), id)
	if errors.Is(err, request.ErrNotFound) {
		return errNotFound
	}
	if err != nil {
		return fmt.Errorf("read request %d: %w", id, err)
	}
	a := &p.A
	if err := s.d.Pool.QueryRow(r.Context(), requestAnswerSQL, id).Scan(&a.AnswerID, &a.Schedule, &a.Created, &a.Changed, &a.Unchanged); err != nil {
		return fmt.Errorf("read the answer of request %d: %w", id, err)
	}
	if a.AnswerID != 0 {
		if err := s.d.Pool.QueryRow(r.Context(), answerDeletedSQL, a.AnswerID).Scan(&p.Deleted); err != nil {
			return fmt.Errorf("count the flights answer %d deleted: %w", a.AnswerID, err)
		}
	}
	s.render(w, r, http.StatusOK, "request", fmt.Sprintf("Request %d", id), p)
	return nil
}

func (s *Server) requests(w http.ResponseWriter, r *http.Request) error {
	p, err := s.requestLists(r)
	if err != nil {
		return err
	}
	if id, err := strconv.ParseInt(r.URL.Query().Get("registered"), 10, 64); err == nil {
		req, err := s.d.Requests.Get(r.Context(), id)
		if errors.Is(err, request.ErrNotFound) {
			return errNotFound
		}
		if err != nil {
			return fmt.Errorf("read request %d: %w", id, err)
		}
		p.Registered = &req
	}
	s.render(w, r, http.StatusOK, "requests", "Requests", p)
	return nil
}

// requestLists is the requests page with its lists read and fresh forms.
func (s *Server) requestLists(r *http.Request) (requestsPage, error) {
	open, err := s.d.Requests.ListOpen(r.Context())
	if err != nil {
		return requestsPage{}, err
	}
	closed, err := collect[closedRequest](s, r, closedRequestsSQL, 50)
	if err != nil {
		return requestsPage{}, fmt.Errorf("list closed requests: %w", err)
	}
	return requestsPage{Open: open, Closed: closed, Shadow: s.d.Shadow,
		RQFD: requestForm{FormID: newFormID()}, RQRD: requestForm{FormID: newFormID()}}, nil
}

func newFormID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// sendRequest previews (dry run) or registers an RQFD or RQRD (msgxctl request). A refused form
// comes back with its values and the error beside it (400); a registration redirects to the
// requests page naming it (Post/Redirect/Get), and a form posted again shows the request its
// first post registered.
func (s *Server) sendRequest(w http.ResponseWriter, r *http.Request) error {
	p, err := s.requestLists(r)
	if err != nil {
		return err
	}
	form := requestForm{FormID: r.PostFormValue("form_id"), From: r.PostFormValue("from"), To: r.PostFormValue("to"),
		List: strings.TrimSpace(r.PostFormValue("list")), Reason: strings.TrimSpace(r.PostFormValue("reason"))}
	spec, err := requestSpec(r)
	if err == nil {
		err = s.previewOrRegister(w, r, spec, form.FormID, &p)
	}
	if err == nil && p.Preview != nil && r.PostFormValue("mode") == "send" {
		confirm := form
		confirm.Kind = string(spec.Kind)
		p.Confirm = &confirm
	}
	var ue userError
	switch {
	case errors.As(err, &ue):
		form.Error = ue.msg
	case err != nil:
		return err
	case p.Preview == nil:
		return nil // redirected
	}
	if spec.Kind == request.List {
		p.RQRD = form
	} else {
		p.RQFD = form
	}
	code := http.StatusOK
	if form.Error != "" {
		code = http.StatusBadRequest
	}
	s.render(w, r, code, "requests", "Requests", p)
	return nil
}

// previewOrRegister fills p.Preview for a dry run and for a send not yet confirmed (nothing goes
// to the AODB before the operator saw what it sends and confirmed it), or registers and
// redirects.
func (s *Server) previewOrRegister(w http.ResponseWriter, r *http.Request, spec request.Spec, formID string, p *requestsPage) error {
	now := s.d.Now()
	send := r.PostFormValue("mode") == "send"
	if send && s.d.Shadow {
		return userError{"Shadow mode (MSGX_SHADOW=true): nothing is sent to the AODB."}
	}
	if send && spec.Reason == "" {
		return userError{"A request needs a reason (it is written to the audit)."}
	}
	if !send || r.PostFormValue("confirm") == "" {
		prev, err := s.d.Requests.Preview(r.Context(), spec, now)
		if err != nil {
			return userError{err.Error()}
		}
		p.Preview = &prev
		return nil
	}
	id, err := s.registerOnce(r.Context(), formID, spec, now)
	if err != nil {
		return err
	}
	s.d.Log.Info().Str("user", sessionOf(r).User).Int64("request", id).Msg("console request")
	http.Redirect(w, r, "/requests?registered="+strconv.FormatInt(id, 10), http.StatusSeeOther)
	return nil
}

// registerOnce registers spec unless the form formID already did (then it returns that
// request): the form id is taken first, and given back if the registration fails.
func (s *Server) registerOnce(ctx context.Context, formID string, spec request.Spec, now time.Time) (int64, error) {
	if len(formID) != 32 {
		return 0, userError{"This form has no id: reload the page and try again."}
	}
	tag, err := s.d.Pool.Exec(ctx, formTakeSQL, formID, now)
	if err != nil {
		return 0, fmt.Errorf("take form id: %w", err)
	}
	if tag.RowsAffected() == 0 {
		var id *int64
		if err := s.d.Pool.QueryRow(ctx, formReadSQL, formID).Scan(&id); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return 0, fmt.Errorf("read form id: %w", err)
		}
		if id == nil {
			return 0, userError{"This form is being sent already."}
		}
		return *id, nil
	}
	reg, err := s.d.Requests.RegisterAudited(ctx, spec, spec.Actor, spec.Reason, now)
	if err != nil {
		if _, derr := s.d.Pool.Exec(ctx, formReleaseSQL, formID); derr != nil {
			return 0, fmt.Errorf("release form id: %w", derr)
		}
		return 0, userError{err.Error()}
	}
	if _, err := s.d.Pool.Exec(ctx, formDoneSQL, formID, reg.Request.ID); err != nil {
		return 0, fmt.Errorf("record form id: %w", err)
	}
	return reg.Request.ID, nil
}

// requestSpec reads a request form.
func requestSpec(r *http.Request) (request.Spec, error) {
	spec := request.Spec{Origin: request.Operator, Actor: actor(r), Reason: strings.TrimSpace(r.PostFormValue("reason"))}
	switch r.PostFormValue("kind") {
	case string(request.Schedule):
		spec.Kind = request.Schedule
		var err1, err2 error
		spec.From, err1 = time.Parse(time.DateOnly, r.PostFormValue("from"))
		spec.To, err2 = time.Parse(time.DateOnly, r.PostFormValue("to"))
		if err1 != nil || err2 != nil {
			return spec, userError{"An RQFD needs its first and last operation day (YYYY-MM-DD)."}
		}
	case string(request.List):
		spec.Kind, spec.ListCode = request.List, strings.TrimSpace(r.PostFormValue("list"))
		if spec.ListCode == "" {
			return spec, userError{"An RQRD needs a list code."}
		}
	default:
		return spec, userError{"Choose RQFD or RQRD."}
	}
	return spec, nil
}

// scheduleConfirm asks to confirm the schedule request of a flight's day: what would be sent.
type scheduleConfirm struct {
	FLID        int64
	Msg, FormID string
	Back        string
	Preview     request.Registration
}

// flightSchedule registers an RQFD of one flight's operation day (the dead letters' "request this
// flight's schedule") after the operator confirmed what it sends, and redirects to it.
func (s *Server) flightSchedule(w http.ResponseWriter, r *http.Request) error {
	flid, err := strconv.ParseInt(r.PostFormValue("flid"), 10, 64)
	if err != nil {
		return userError{"A FLID is a number."}
	}
	var day time.Time
	switch err := s.d.Pool.QueryRow(r.Context(), flightDaySQL, flid).Scan(&day); {
	case errors.Is(err, pgx.ErrNoRows):
		return userError{fmt.Sprintf("Flight %d is not known here, so its day is not either: ask for the day's schedule on the Requests page.", flid)}
	case err != nil:
		return fmt.Errorf("read flight day: %w", err)
	}
	if s.d.Shadow {
		return userError{"Shadow mode (MSGX_SHADOW=true): nothing is sent to the AODB."}
	}
	reason := fmt.Sprintf("schedule of flight %d (dead letters)", flid)
	if m := r.PostFormValue("msg"); m != "" {
		reason = fmt.Sprintf("schedule of flight %d (dead letter %s)", flid, m)
	}
	spec := request.Spec{Kind: request.Schedule, From: day, To: day, Origin: request.Operator, Actor: actor(r), Reason: reason}
	if r.PostFormValue("confirm") == "" { // nothing goes to the AODB before the operator confirms what
		prev, err := s.d.Requests.Preview(r.Context(), spec, s.d.Now())
		if err != nil {
			return userError{err.Error()}
		}
		s.render(w, r, http.StatusOK, "schedule_confirm", "Confirm", scheduleConfirm{FLID: flid, Msg: r.PostFormValue("msg"),
			FormID: r.PostFormValue("form_id"), Back: safeNext(r.PostFormValue("back")), Preview: prev})
		return nil
	}
	id, err := s.registerOnce(r.Context(), r.PostFormValue("form_id"), spec, s.d.Now())
	if err != nil {
		return err
	}
	http.Redirect(w, r, "/requests?registered="+strconv.FormatInt(id, 10), http.StatusSeeOther)
	return nil
}
