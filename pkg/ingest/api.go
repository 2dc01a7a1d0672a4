package ingest

import (
	"errors"
	"net"
	"time"

	"github.com/msgx/msgx/pkg/envconf"
	"github.com/msgx/msgx/pkg/httpauth"
)

// APIConfig are the settings of ingest's API listener (compat entry and read API): its address,
// who may call it (pkg/httpauth) and the API's own PostgreSQL pool, so that reads never take the
// connections of the poll loop.
type APIConfig struct {
	Addr             string          `envconfig:"MSGX_API_ADDR" default:"127.0.0.1:8091" desc:"ingest: listen address of the authenticated API (POST /cminmsgs/send, GET /flights/{flid}, GET /all/flights); the ops endpoints stay on MSGX_HTTP_ADDR"`
	Access           httpauth.Config // tokens, rate and concurrency limits
	PGMaxConns       int32           `envconfig:"MSGX_API_PG_MAX_CONNS" default:"4" desc:"ingest: connections of the API's own PostgreSQL pool (read API and compat enqueue)"`
	StatementTimeout time.Duration   `envconfig:"MSGX_API_STATEMENT_TIMEOUT" default:"5s" desc:"ingest: PostgreSQL statement_timeout of the API's pool"`
}

// Validate reports every bad value, one line each.
func (c APIConfig) Validate() error {
	var p envconf.Problems
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		p.Add("MSGX_API_ADDR", "must be host:port, got %q", c.Addr)
	}
	p.Join(c.Access.Validate())
	p.Between("MSGX_API_PG_MAX_CONNS", int64(c.PGMaxConns), 1, 100)
	p.Positive("MSGX_API_STATEMENT_TIMEOUT", c.StatementTimeout)
	return p.Err()
}

// ProductionRefusals are what a production ingest refuses of its API: no tokens (every request
// would be refused).
func (c APIConfig) ProductionRefusals() error {
	if len(c.Access.Tokens) == 0 {
		return errors.New("MSGX_API_TOKENS: production ingest requires API tokens (msgxctl token new); without them every API request is refused")
	}
	return nil
}

// ShadowRefusal refuses the compat entry in production shadow mode, which writes nothing to MySQL.
func (c CompatConfig) ShadowRefusal(shadow bool) error {
	var p envconf.Problems
	if shadow && c.Enabled {
		p.Add("MSGX_COMPAT_ENTRY", "must be false in production shadow mode (MSGX_SHADOW=true writes nothing to MySQL)")
	}
	return p.Err()
}
