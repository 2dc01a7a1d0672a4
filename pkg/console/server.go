// Package console is msgx's operator web console (cmd/console): server-rendered pages over
// PostgreSQL — the pipeline, a flight's story, a message's history, dead letters and replay,
// requests to the AODB. Users log in with pkg/httpauth tokens or, when configured, through an
// OpenID Connect provider whose groups map to the scopes (oidc.go): reading needs scope read;
// acting (replay, skip, request) needs scope operate, a CSRF token, and goes through the functions msgxctl uses, which write the
// audit rows (actor "console:<user>"). Pages are html/template (every value escaped), embedded
// with the stylesheet and one small script of its own (static/console.js: the pipeline's live
// update, select-all); every page works without it.
package console

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/msgx/msgx/pkg/console/consoleconf"
	"github.com/msgx/msgx/pkg/outbox"
	"github.com/msgx/msgx/pkg/request"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Deps is what the console needs.
type Deps struct {
	Pool     *pgxpool.Pool
	Config   consoleconf.Config
	Location *time.Location // airport time zone: every time is shown in it
	Outbox   *outbox.Store
	Requests *request.Store
	Shadow   bool // MSGX_SHADOW: requests are refused (nothing is sent)
	// LeaseTimeout is the leaders' session timeout (MSGX_LEADER_SESSION_TIMEOUT): a renewal
	// older than it is a stale lease in the verdict. 0: 5 s.
	LeaseTimeout time.Duration
	Now          func() time.Time
	Log          zerolog.Logger
	Metrics      *Metrics // nil: a private registry
}

// Server serves the console.
type Server struct {
	d        Deps
	sess     *sessions
	throttle *loginThrottle
	oidc     *oidcClient // nil: OIDC log-in is off
	pages    map[string]*template.Template
}

// New builds the server.
func New(d Deps) (*Server, error) {
	if err := d.Config.Validate(); err != nil {
		return nil, err
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.LeaseTimeout <= 0 {
		d.LeaseTimeout = 5 * time.Second
	}
	if d.Location == nil {
		d.Location = time.UTC
	}
	if d.Metrics == nil {
		d.Metrics = NewMetrics(prometheus.NewRegistry())
	}
	sess, err := newSessions(d.Pool, d.Config)
	if err != nil {
		return nil, err
	}
	s := &Server{d: d, sess: sess, throttle: newLoginThrottle(), pages: map[string]*template.Template{}}
	if d.Config.OIDC.Enabled() {
		s.oidc = newOIDCClient(d.Config.OIDC)
	}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("list templates: %w", err)
	}
	for _, n := range names {
		base := n[len("templates/") : len(n)-len(".html")]
		if base == "layout" {
			continue
		}
		t, err := template.New("layout.html").Funcs(s.funcs()).ParseFS(templateFS, "templates/layout.html", n)
		if err != nil {
			return nil, fmt.Errorf("parse template %s: %w", n, err)
		}
		s.pages[base] = t
	}
	return s, nil
}

// Handler returns the console's routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /login", s.loginPage)
	mux.HandleFunc("POST /login", s.login)
	if s.oidc != nil {
		mux.HandleFunc("GET "+flowPath, s.oidcStart)
		mux.HandleFunc("GET "+consoleconf.CallbackPath, s.oidcCallback)
	}
	mux.Handle("POST /logout", s.act(s.logout, false))
	mux.Handle("GET /{$}", s.view(s.pipeline))
	mux.Handle("GET /flights", s.view(s.flightSearch))
	mux.Handle("GET /flights.csv", s.view(s.flightsCSV))
	mux.Handle("GET /messages.csv", s.view(s.messageSearchCSV))
	mux.Handle("GET /dead.csv", s.view(s.deadCSV))
	mux.Handle("GET /flights/{flid}", s.view(s.flight))
	mux.Handle("GET /messages", s.view(s.messageLookup))
	mux.Handle("GET /messages/{id}", s.view(s.message))
	mux.Handle("GET /messages/{id}/raw", s.view(s.messageRaw))
	mux.Handle("GET /dead", s.view(s.dead))
	mux.Handle("POST /dead/replay", s.act(s.replay, true))
	mux.Handle("POST /dead/events", s.act(s.deadEvents, true))
	mux.Handle("POST /dead/note", s.act(s.note, true))
	mux.Handle("GET /requests", s.view(s.requests))
	mux.Handle("GET /requests/{id}", s.view(s.requestDetail))
	mux.Handle("POST /requests", s.act(s.sendRequest, true))
	mux.Handle("POST /requests/flight", s.act(s.flightSchedule, true))
	return secureHeaders(saneInput(mux))
}

// maxForm bounds a form's body: the largest legitimate one is a group's ids (maxIDs of them).
const maxForm = 64 << 10

// saneInput refuses, with a plain 400, a query or form that is not valid UTF-8 or holds a NUL
// (PostgreSQL refuses both in text) or a form over maxForm; handlers see only sane input.
func saneInput(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, maxForm)
			if err := r.ParseForm(); err != nil {
				http.Error(w, "Bad request: the form is too large or malformed.", http.StatusBadRequest)
				return
			}
		}
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil || !saneValues(q) || !saneValues(r.PostForm) || !utf8.ValidString(r.URL.Path) {
			http.Error(w, "Bad request: the input is not valid text.", http.StatusBadRequest)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func saneValues(vs url.Values) bool {
	for k, list := range vs {
		if !utf8.ValidString(k) || strings.ContainsRune(k, 0) {
			return false
		}
		for _, v := range list {
			if !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
				return false
			}
		}
	}
	return true
}

// secureHeaders allows only the console's own script file (no inline script) and forbids
// framing and sniffing: even a template mistake cannot run a message's script.
func secureHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}

type sessionKey struct{}

func sessionOf(r *http.Request) Session {
	s, _ := r.Context().Value(sessionKey{}).(Session)
	return s
}

// view lets a logged-in user in; others go to the login page (and come back after).
func (s *Server) view(h func(http.ResponseWriter, *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sess, ok, err := s.sess.read(r, s.d.Now(), false)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if !ok {
			to := "/login?next=" + url.QueryEscape(r.URL.RequestURI())
			if _, err := r.Cookie(cookieName); err == nil {
				to += "&ended=1" // a session cookie the console no longer honours: say so
			}
			http.Redirect(w, r, to, http.StatusSeeOther)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), sessionKey{}, sess))
		start := time.Now()
		if err := h(w, r); err != nil {
			s.fail(w, r, err)
		}
		s.d.Metrics.pages.WithLabelValues(r.Pattern).Observe(time.Since(start).Seconds())
	})
}

// act is view for actions: a POST with the session's CSRF token, and (operate) an operator.
func (s *Server) act(h func(http.ResponseWriter, *http.Request) error, operate bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sess, ok, err := s.sess.read(r, s.d.Now(), true)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if !ok {
			s.refuse(w, r, http.StatusUnauthorized, "Your session has ended: log in again.")
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), sessionKey{}, sess))
		if !s.sess.checkCSRF(sess, r.PostFormValue("csrf")) {
			s.d.Metrics.actions.WithLabelValues(r.URL.Path, "refused").Inc()
			s.refuse(w, r, http.StatusForbidden, "This form has expired (CSRF token missing or wrong): reload the page and try again.")
			return
		}
		if operate && !sess.CanOperate() {
			s.d.Metrics.actions.WithLabelValues(r.URL.Path, "refused").Inc()
			s.d.Log.Warn().Str("user", sess.User).Str("path", r.URL.Path).Msg("viewer refused an action")
			s.refuse(w, r, http.StatusForbidden, "You have the read scope only: only an operator (operate scope) may act.")
			return
		}
		if err := h(w, r); err != nil {
			s.d.Metrics.actions.WithLabelValues(r.URL.Path, "failed").Inc()
			s.fail(w, r, err)
			return
		}
		outcome := "done"
		if r.PostFormValue("mode") == "dry" || r.PostFormValue("dry") != "" {
			outcome = "dry_run"
		}
		s.d.Metrics.actions.WithLabelValues(r.URL.Path, outcome).Inc()
	})
}

// errNotFound makes a 404 page.
var errNotFound = errors.New("not found")

// userError is a request the user can correct (400 with the message shown).
type userError struct{ msg string }

func (e userError) Error() string { return e.msg }

func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var ue userError
	switch {
	case errors.Is(err, errNotFound):
		s.refuse(w, r, http.StatusNotFound, "Not found.")
	case errors.As(err, &ue):
		s.refuse(w, r, http.StatusBadRequest, ue.msg)
	default:
		s.d.Log.Error().Err(err).Str("path", r.URL.Path).Msg("console page failed")
		s.refuse(w, r, http.StatusInternalServerError, "The page could not be built; the console's log has the cause.")
	}
}

func (s *Server) refuse(w http.ResponseWriter, r *http.Request, code int, msg string) {
	s.render(w, r, code, "error", "Refused", errorPage{Code: code, Message: msg})
}

// errorPage is a refusal: the status code and what the user can do about it.
type errorPage struct {
	Code    int
	Message string
}

// collect runs a query of the page's and collects its rows into Ts, column by position.
func collect[T any](s *Server, r *http.Request, sql string, args ...any) ([]T, error) {
	rows, err := s.d.Pool.Query(r.Context(), sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[T])
}

// page is what every template receives.
type page struct {
	Title   string
	Session Session
	CSRF    string
	Zone    string
	Refresh int // seconds; 0: no refresh
	Data    any
}

func (s *Server) render(w http.ResponseWriter, r *http.Request, code int, name, title string, data any) {
	p := page{Title: title, Session: sessionOf(r), Zone: s.zone(), Data: data}
	if p.Session.User != "" {
		p.CSRF = s.sess.csrf(p.Session)
	}
	if name == "pipeline" {
		p.Refresh = int(s.d.Config.Refresh.Seconds())
	}
	var buf bytes.Buffer
	t := s.pages[name]
	if t == nil {
		http.Error(w, "no template "+name, http.StatusInternalServerError)
		return
	}
	if err := t.ExecuteTemplate(&buf, "layout.html", p); err != nil {
		s.d.Log.Error().Err(err).Str("template", name).Msg("render")
		http.Error(w, "render failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// zone names the airport zone with its current offset: "Asia/Shanghai (UTC+08:00)".
func (s *Server) zone() string {
	return s.d.Location.String() + " (UTC" + s.d.Now().In(s.d.Location).Format("-07:00") + ")"
}
