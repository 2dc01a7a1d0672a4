package settings

import (
	"net/url"
	"reflect"
	"strings"

	"github.com/msgx/msgx/pkg/envconf"
)

// Redacted is what the start-up log shows of a secret.
const Redacted = "[redacted]"

// Redactor is a part whose settings need more than the name rules of Values to hide a secret
// (a password inside a DSN): it rewrites its own values in place.
type Redactor interface {
	Redact(values map[string]string)
}

// Values returns every variable of cfg (a composition, or any tagged struct) by name with its
// effective value, for the start-up log: the password of MSGX_PG_URL, every password, token,
// key and secret variable, and whatever a part of cfg that is a Redactor hides, are redacted.
func Values(cfg any) map[string]string {
	vals := envconf.Values(cfg)
	for name, v := range vals {
		switch {
		case v == "":
		case name == "MSGX_PG_URL":
			vals[name] = redactURL(v)
		case strings.Contains(name, "PASSWORD"), strings.Contains(name, "TOKEN"), strings.HasSuffix(name, "_KEY"), strings.Contains(name, "SECRET"):
			vals[name] = Redacted
		}
	}
	v := reflect.Indirect(reflect.ValueOf(cfg))
	for i := range v.NumField() {
		if f := v.Field(i); f.CanInterface() {
			if r, ok := f.Interface().(Redactor); ok {
				r.Redact(vals)
			}
		}
	}
	return vals
}

// redactURL hides the password of a PostgreSQL URL, in its user info or its query.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return Redacted // cannot tell where the password is
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", Redacted)
		u.RawQuery = q.Encode()
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), Redacted)
	}
	return u.String()
}
