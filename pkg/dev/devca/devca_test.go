package devca_test

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/devca"
)

// The server certificate verifies against the CA for each of its names and for no other CA, is
// valid from a minute ago for validFor, and the files hold the CA and a key only its owner reads.
func TestNewSignsAServerCertificateItsCAVerifies(t *testing.T) {
	t.Parallel()
	ca, err := devca.New(t.TempDir(), time.Hour)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(ca.Cert.Certificate[0])
	require.NoError(t, err)
	for _, name := range []string{"localhost", "127.0.0.1", "::1"} {
		_, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: ca.Pool})
		require.NoError(t, err, name)
	}
	other, err := devca.New(t.TempDir(), time.Hour)
	require.NoError(t, err)
	_, err = leaf.Verify(x509.VerifyOptions{DNSName: "localhost", Roots: other.Pool})
	require.Error(t, err, "another CA's pool")
	require.WithinDuration(t, time.Now().Add(-time.Minute), leaf.NotBefore, 10*time.Second)
	require.WithinDuration(t, time.Now().Add(time.Hour), leaf.NotAfter, 10*time.Second)

	b, err := os.ReadFile(ca.CAFile)
	require.NoError(t, err)
	block, _ := pem.Decode(b)
	require.NotNil(t, block)
	root, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	require.True(t, root.IsCA)
	require.NoError(t, leaf.CheckSignatureFrom(root))
	fi, err := os.Stat(ca.KeyFile)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}
