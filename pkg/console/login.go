package console

import (
	"net/http"
	"net/url"
)

// loginView is the login page: where to go after, and why the last try was refused.
type loginView struct {
	Next, Error string
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "login", "Log in", loginView{Next: safeNext(r.URL.Query().Get("next"))})
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
	token := r.PostFormValue("token")
	next := safeNext(r.PostFormValue("next"))
	cl, ok := s.d.Config.Tokens.Lookup(token)
	scope := consoleScope(cl)
	if !ok || scope == "" {
		s.d.Metrics.logins.WithLabelValues("refused").Inc()
		s.d.Log.Warn().Str("remote", r.RemoteAddr).Msg("console login refused")
		s.render(w, r, http.StatusUnauthorized, "login", "Log in", loginView{Next: next, Error: "Unknown token."})
		return
	}
	s.d.Metrics.logins.WithLabelValues("ok").Inc()
	http.SetCookie(w, s.sess.issue(cl.Name, scope, s.d.Now()))
	s.d.Log.Info().Str("user", cl.Name).Msg("console login")
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) error {
	http.SetCookie(w, s.sess.clear())
	http.Redirect(w, r, "/login", http.StatusSeeOther)
	return nil
}

// actor names a console user in audit rows.
func actor(r *http.Request) string { return "console:" + sessionOf(r).User }
