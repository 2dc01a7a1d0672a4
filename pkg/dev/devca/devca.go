// Package devca makes throw-away certificate authorities for development: a CA and one server
// certificate it signed (SANs 127.0.0.1, ::1 and localhost), written as PEM files, for the private
// database servers (pkg/dev/privdb), the development broker (cmd/devbroker) and the tests' TLS
// endpoints (pkg/dev/tlsenv). The fault suite (pkg/dev/chaos) uses it to run msgx over TLS the way
// production does. Never for production: the key is written unencrypted and lives as long as
// the run.
package devca

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

// New makes a CA and a server certificate valid for validFor (from a minute ago), written into
// dir: ca.pem, server.pem and server.key (mode 0600).
func New(dir string, validFor time.Duration) (*CA, error) {
	now := time.Now()
	caKey, caDER, err := sign(&x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "msgx development CA"},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}, now, validFor, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("create CA: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, der, err := sign(&x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "localhost"},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback},
	}, now, validFor, caCert, caKey)
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

// sign makes a P-256 key and the DER certificate of tmpl for it, valid for validFor from a
// minute before now, signed by parent with parentKey (parent nil: tmpl signs itself, as a CA does).
func sign(tmpl *x509.Certificate, now time.Time, validFor time.Duration, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Minute), now.Add(validFor)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, err
	}
	return key, der, nil
}

// ServerTLS is a server-side tls.Config with the server certificate.
func (c *CA) ServerTLS() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{c.Cert}, MinVersion: tls.VersionTLS12}
}

// ClientTLS is a client-side tls.Config that trusts only the CA and verifies the host name.
func (c *CA) ClientTLS() *tls.Config {
	return &tls.Config{RootCAs: c.Pool, MinVersion: tls.VersionTLS12}
}
