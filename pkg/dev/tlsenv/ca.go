// Package tlsenv gives tests real TLS endpoints: a throw-away certificate authority and server
// certificate made at run time (crypto/x509; SANs 127.0.0.1 and localhost), a private
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
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/msgx/msgx/pkg/dev/privdb"
)

// CA is a throw-away certificate authority and one server certificate it signed, as PEM files
// in Dir.
type CA struct {
	Dir      string
	CAFile   string // the CA certificate: clients trust it
	CertFile string // the server certificate (SANs 127.0.0.1, ::1, localhost)
	KeyFile  string // its private key (mode 0600)
	Pool     *x509.CertPool
	Cert     tls.Certificate
}

// NewCA makes a CA and a server certificate valid for an hour, written into dir.
func NewCA(dir string) (*CA, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "msgx tlsenv test CA"},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("create CA: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("create server certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	ca := &CA{Dir: dir, CAFile: filepath.Join(dir, "ca.pem"), CertFile: filepath.Join(dir, "server.pem"),
		KeyFile: filepath.Join(dir, "server.key"), Pool: x509.NewCertPool()}
	ca.Pool.AddCert(caCert)
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	for _, f := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{
		{ca.CAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644},
		{ca.CertFile, certPEM, 0o644},
		{ca.KeyFile, keyPEM, 0o600},
	} {
		if err := os.WriteFile(f.path, f.data, f.mode); err != nil {
			return nil, err
		}
	}
	if ca.Cert, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return nil, err
	}
	return ca, nil
}

// ServerTLS is a server-side tls.Config with the server certificate.
func (c *CA) ServerTLS() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{c.Cert}, MinVersion: tls.VersionTLS12}
}

// ClientTLS is a client-side tls.Config that trusts only the CA and verifies the host name.
func (c *CA) ClientTLS() *tls.Config {
	return &tls.Config{RootCAs: c.Pool, MinVersion: tls.VersionTLS12}
}

// serverFiles are the CA's files as pkg/dev/privdb's servers take them.
func (c *CA) serverFiles() *privdb.TLS {
	return &privdb.TLS{CAFile: c.CAFile, CertFile: c.CertFile, KeyFile: c.KeyFile}
}
