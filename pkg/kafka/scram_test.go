package kafka

import (
	"testing"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/xdg-go/scram"
)

// TestSCRAMClientAgainstServer runs whole conversations against xdg-go's own server: the right
// password (with characters SASLprep normalises) authenticates and the server signature is
// checked; a wrong one does not.
func TestSCRAMClientAgainstServer(t *testing.T) {
	t.Parallel()
	for _, mech := range []sarama.SASLMechanism{sarama.SASLTypeSCRAMSHA256, sarama.SASLTypeSCRAMSHA512} {
		t.Run(string(mech), func(t *testing.T) {
			t.Parallel()
			c, err := newSCRAM(mech)
			require.NoError(t, err)
			// U+2168 (ROMAN NUMERAL NINE) is "IX" after SASLprep (NFKC).
			server := scramServer(t, c.hash, "msgx", "p\u2168,=x", 4096)

			require.NoError(t, c.Begin("msgx", "pIX,=x", ""))
			require.NoError(t, converse(c, server.NewConversation()))
			require.True(t, c.Done())

			require.NoError(t, c.Begin("msgx", "wrong", ""))
			require.Error(t, converse(c, server.NewConversation()))
			require.False(t, c.Done())
		})
	}
	_, err := newSCRAM(sarama.SASLTypePlaintext)
	require.Error(t, err)
}

// TestSCRAMClientRefusesDowngrades: an iteration count under 4096 and a server nonce that only
// echoes the client's end the handshake before the client sends a proof.
func TestSCRAMClientRefusesDowngrades(t *testing.T) {
	t.Parallel()
	c, err := newSCRAM(sarama.SASLTypeSCRAMSHA512)
	require.NoError(t, err)

	require.NoError(t, c.Begin("msgx", "secret", ""))
	first, err := c.Step("")
	require.NoError(t, err)
	nonce := scramAttr(first, "r")
	require.NotEmpty(t, nonce)
	_, err = c.Step("r=" + nonce + "srv,s=c2FsdA==,i=1")
	require.ErrorContains(t, err, "iteration")

	require.NoError(t, c.Begin("msgx", "secret", ""))
	first, err = c.Step("")
	require.NoError(t, err)
	nonce = scramAttr(first, "r")
	_, err = c.Step("r=" + nonce + ",s=c2FsdA==,i=4096")
	require.ErrorContains(t, err, "nonce")
}

func scramServer(t *testing.T, h scram.HashGeneratorFcn, user, pass string, iters int) *scram.Server {
	t.Helper()
	client, err := h.NewClient(user, pass, "")
	require.NoError(t, err)
	creds := client.GetStoredCredentials(scram.KeyFactors{Salt: "0123456789abcdef", Iters: iters})
	server, err := h.NewServer(func(string) (scram.StoredCredentials, error) { return creds, nil })
	require.NoError(t, err)
	return server
}

// converse runs the client against the server until both are done or one fails.
func converse(c *scramClient, s *scram.ServerConversation) error {
	challenge := ""
	for !c.Done() {
		resp, err := c.Step(challenge)
		if err != nil {
			return err
		}
		if c.Done() {
			return nil
		}
		if challenge, err = s.Step(resp); err != nil {
			// Give the client the server's error message (e=...), as the broker would.
			_, cerr := c.Step(challenge)
			if cerr != nil {
				return cerr
			}
			return err
		}
	}
	return nil
}
