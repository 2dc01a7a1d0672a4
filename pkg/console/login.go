package console

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// loginView is the login page: where to go after, why the last try was refused, whether a
// session just ended, and whether the provider's log-in is offered (OIDC).
type loginView struct {
	Next, Error string
	Ended, OIDC bool
}

// loginView is the login page's view going to next, with the refusal msg ("": none).
func (s *Server) loginView(next, msg string) loginView {
	return loginView{Next: safeNext(next), Error: msg, OIDC: s.d.Config.OIDC.Enabled()}
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	v := s.loginView(r.URL.Query().Get("next"), "")
	v.Ended = r.URL.Query().Get("ended") != ""
	s.render(w, r, http.StatusOK, "login", "Log in", v)
}

// safeNext keeps a redirect inside the console.
func safeNext(next string) string {
	u, err := url.Parse(next)
	if err != nil || next == "" || u.IsAbs() || u.Host != "" || len(next) < 1 || next[0] != '/' || (len(next) > 1 && (next[1] == '/' || next[1] == '\\')) {
		return "/"
	}
	return next
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.PostFormValue("next"))
	host := clientHost(r)
	now := s.d.Now()
	if s.throttled(w, r, host, now, next, s.d.Metrics.logins) {
		return
	}
	cl, ok := s.d.Config.Tokens.Lookup(r.PostFormValue("token"))
	scope := consoleScope(cl)
	if ok && scope != "" {
		revoked, err := s.revoked(r.Context(), cl.Hash[:])
		if err != nil {
			s.fail(w, r, err)
			return
		}
		ok = !revoked // refused like an unknown token: its holder learns nothing more
	}
	if !ok || scope == "" {
		s.throttle.fail(host, now)
		s.d.Metrics.logins.WithLabelValues("refused").Inc()
		s.d.Log.Warn().Str("remote", host).Msg("console login refused")
		s.render(w, r, http.StatusUnauthorized, "login", "Log in", s.loginView(next, "Unknown token."))
		return
	}
	if !s.startSession(w, r, tokenIdentity(cl, scope), now, next) {
		return
	}
	s.d.Metrics.logins.WithLabelValues("ok").Inc()
	s.d.Log.Info().Str("user", cl.Name).Str("method", "token").Msg("console login")
}

// throttled answers a log-in from host that must wait (429 with Retry-After, the login page
// going to next), counted as throttled in logins; false: host may try now.
func (s *Server) throttled(w http.ResponseWriter, r *http.Request, host string, now time.Time, next string, logins *prometheus.CounterVec) bool {
	wait := s.throttle.wait(host, now)
	if wait <= 0 {
		return false
	}
	logins.WithLabelValues("throttled").Inc()
	w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds()+0.999)))
	s.render(w, r, http.StatusTooManyRequests, "login", "Log in", s.loginView(next,
		"Too many failed logins from this address: wait "+wait.Round(time.Second).String()+" and try again."))
	return true
}

// revoked is whether the token or OIDC user of hash was revoked (msgxctl token revoke).
func (s *Server) revoked(ctx context.Context, hash []byte) (bool, error) {
	var revoked bool
	if err := s.d.Pool.QueryRow(ctx, tokenRevokedSQL, hash).Scan(&revoked); err != nil {
		return false, fmt.Errorf("read token revocation: %w", err)
	}
	return revoked, nil
}

// startSession opens id's session: its cookies, and the browser sent on to next. false: it could
// not (the error page is sent).
func (s *Server) startSession(w http.ResponseWriter, r *http.Request, id identity, now time.Time, next string) bool {
	cookies, err := s.sess.issue(r.Context(), id, now)
	if err != nil {
		s.fail(w, r, err)
		return false
	}
	for _, c := range cookies {
		http.SetCookie(w, c)
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
	return true
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) error {
	if err := s.sess.revoke(r.Context(), sessionOf(r), s.d.Now()); err != nil {
		return err
	}
	for _, c := range s.sess.clear() {
		http.SetCookie(w, c)
	}
	http.Redirect(w, r, "/login", http.StatusSeeOther)
	return nil
}

// actor names a console user in audit rows.
func actor(r *http.Request) string { return "console:" + sessionOf(r).User }

// clientHost is the address a login comes from (the proxy's, behind one).
func clientHost(r *http.Request) string {
	h, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return h
}

// Failed logins are throttled per client address: after loginFailures failures within
// loginWindow, that address is refused without a token check until the window has passed.
const (
	loginFailures = 5
	loginWindow   = time.Minute
	loginHosts    = 10000 // addresses remembered at most; beyond, the oldest window is forgotten
)

// loginThrottle counts failed logins per address.
type loginThrottle struct {
	mu    sync.Mutex
	hosts map[string]*failures
}

type failures struct {
	since time.Time // start of the window
	n     int
}

func newLoginThrottle() *loginThrottle { return &loginThrottle{hosts: map[string]*failures{}} }

// wait is how long host must wait before its next try (0: it may try now).
func (l *loginThrottle) wait(host string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.hosts[host]
	if f == nil {
		return 0
	}
	if end := f.since.Add(loginWindow); !now.Before(end) {
		delete(l.hosts, host)
		return 0
	} else if f.n >= loginFailures {
		return end.Sub(now)
	}
	return 0
}

// fail counts a failed login of host.
func (l *loginThrottle) fail(host string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.hosts[host]
	if f == nil || !now.Before(f.since.Add(loginWindow)) {
		if len(l.hosts) >= loginHosts {
			l.forgetOldest()
		}
		f = &failures{since: now}
		l.hosts[host] = f
	}
	f.n++
}

func (l *loginThrottle) forgetOldest() {
	var oldest string
	var at time.Time
	for h, f := range l.hosts {
		if oldest == "" || f.since.Before(at) {
			oldest, at = h, f.since
		}
	}
	delete(l.hosts, oldest)
}
