package console

import "github.com/msgx/msgx/pkg/envconf"

// ProductionRefusals are the console settings production refuses: sessions signed by a random
// per-process key (they would end at every restart and differ between replicas), and session
// cookies not marked Secure (a browser would send them over plain HTTP).
func (c Config) ProductionRefusals() error {
	var p envconf.Problems
	if c.SessionKey == "" {
		p.Add("MSGX_CONSOLE_SESSION_KEY", "must be set in production (sessions signed by a per-process random key end at every restart and differ between replicas)")
	}
	if !c.TLS {
		p.Add("MSGX_CONSOLE_TLS", "production requires the console behind HTTPS (a TLS-terminating ingress) with MSGX_CONSOLE_TLS=true: its session cookies are then marked Secure")
	}
	return p.Err()
}
