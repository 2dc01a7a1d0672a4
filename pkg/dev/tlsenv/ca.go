// Package tlsenv gives tests real TLS endpoints: a throw-away certificate authority and server
// certificate made at run time (pkg/dev/devca; SANs 127.0.0.1 and localhost), a private
// PostgreSQL cluster (initdb/pg_ctl, ssl=on, hostssl + SCRAM only), a private MariaDB instance
// (mariadb-install-db/mariadbd, require_secure_transport) and the in-process Kafka broker with
// TLS and SASL/SCRAM-SHA-512. The database servers listen on 127.0.0.1 on free ports, are
// started once per test process by the first test that asks for them, and are stopped and
// removed by Run (call it from TestMain). Servers left behind by a test process that died are
// removed by the next one.
//
// Development only: tests need root (servers run as the postgres and mysql users).
package tlsenv

import (
	"time"

	"github.com/msgx/msgx/pkg/dev/devca"
	"github.com/msgx/msgx/pkg/dev/privdb"
)

// CA is a throw-away certificate authority and one server certificate it signed, as PEM files
// (pkg/dev/devca).
type CA = devca.CA

// NewCA makes a CA and a server certificate valid for an hour, written into dir.
func NewCA(dir string) (*CA, error) { return devca.New(dir, time.Hour) }

// serverFiles are the CA's files as pkg/dev/privdb's servers take them.
func serverFiles(c *CA) *privdb.TLS {
	return &privdb.TLS{CAFile: c.CAFile, CertFile: c.CertFile, KeyFile: c.KeyFile}
}
