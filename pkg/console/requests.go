package console

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/msgx/msgx/pkg/request"
)

// requestsPage is the requests to the AODB: open and latest closed, the form, and the outcome
// of a dry run (Preview) or a registration (Registered).
type requestsPage struct {
	Open       []request.Request
	Closed     []closedRequest
	Shadow     bool
	Preview    *request.Registration
	Registered *request.Registration
	Form       *requestForm // the values sent, shown again
}

// requestForm is what the user typed in the request form.
type requestForm struct {
	Kind, From, To, List, Reason string
}

type closedRequest struct {
	ID                                 int64
	Kind, Scope, Status, Origin, Actor string
	Reason                             string
	RegisteredAt                       time.Time
	ClosedAt                           *time.Time
	CloseReason                        string
}

func (s *Server) requests(w http.ResponseWriter, r *http.Request) error {
	p, err := s.requestLists(r)
	if err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, "requests", "Requests", p)
	return nil
}

// requestLists is the requests page with its lists read.
func (s *Server) requestLists(r *http.Request) (requestsPage, error) {
	open, err := s.d.Requests.ListOpen(r.Context())
	if err != nil {
		return requestsPage{}, err
	}
	closed, err := collect[closedRequest](s, r, closedRequestsSQL, 50)
	if err != nil {
		return requestsPage{}, fmt.Errorf("list closed requests: %w", err)
	}
	return requestsPage{Open: open, Closed: closed, Shadow: s.d.Shadow}, nil
}

// sendRequest registers an RQFD or RQRD (msgxctl request), or previews it (dry run).
func (s *Server) sendRequest(w http.ResponseWriter, r *http.Request) error {
	spec, err := requestSpec(r)
	if err != nil {
		return err
	}
	now := s.d.Now()
	var p requestsPage
	if r.PostFormValue("mode") != "send" {
		prev, err := s.d.Requests.Preview(r.Context(), spec, now)
		if err != nil {
			return userError{err.Error()}
		}
		if p, err = s.requestLists(r); err != nil {
			return err
		}
		p.Preview = &prev
	} else {
		if s.d.Shadow {
			return userError{"Shadow mode (MSGX_SHADOW=true): nothing is sent to the AODB."}
		}
		if spec.Reason == "" {
			return userError{"A request needs a reason (it is written to the audit)."}
		}
		reg, err := s.d.Requests.RegisterAudited(r.Context(), spec, spec.Actor, spec.Reason, now)
		if err != nil {
			return userError{err.Error()}
		}
		s.d.Log.Info().Str("user", sessionOf(r).User).Int64("request", reg.Request.ID).Msg("console request")
		if p, err = s.requestLists(r); err != nil { // the lists with the new request
			return err
		}
		p.Registered = &reg
	}
	p.Form = &requestForm{Kind: string(spec.Kind), From: r.PostFormValue("from"), To: r.PostFormValue("to"),
		List: spec.ListCode, Reason: spec.Reason}
	s.render(w, r, http.StatusOK, "requests", "Requests", p)
	return nil
}

// requestSpec reads the request form.
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
	default:
		return spec, userError{"Choose RQFD or RQRD."}
	}
	return spec, nil
}
