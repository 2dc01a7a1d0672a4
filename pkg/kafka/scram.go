package kafka

import (
	"crypto/sha256"
	"crypto/sha512"
	"errors"
	"fmt"
	"strings"

	"github.com/IBM/sarama"
	"github.com/xdg-go/scram"
)

// scramMinIterations is the lowest PBKDF2 iteration count the client accepts from a server
// (RFC 7677 recommends at least 4096; Kafka refuses credentials below it too). A lower count
// offered by a server is a downgrade and ends the handshake.
const scramMinIterations = 4096

// scramClient adapts github.com/xdg-go/scram (SASLprep, iteration floor, server signature
// check) to sarama's SCRAMClient, as sarama's own example does. It also refuses a server nonce
// that does not extend the client's with a part of its own.
type scramClient struct {
	hash  scram.HashGeneratorFcn
	conv  *scram.ClientConversation
	nonce string // the client nonce sent in client-first
}

var _ sarama.SCRAMClient = (*scramClient)(nil)

func newSCRAM(mechanism sarama.SASLMechanism) (*scramClient, error) {
	switch mechanism {
	case sarama.SASLTypeSCRAMSHA256:
		return &scramClient{hash: sha256.New}, nil
	case sarama.SASLTypeSCRAMSHA512:
		return &scramClient{hash: sha512.New}, nil
	}
	return nil, fmt.Errorf("kafka: %s is not a SCRAM mechanism", mechanism)
}

func (s *scramClient) Begin(user, password, authzID string) error {
	c, err := s.hash.NewClient(user, password, authzID)
	if err != nil {
		return fmt.Errorf("scram: %w", err)
	}
	s.conv = c.WithMinIterations(scramMinIterations).NewConversation()
	s.nonce = ""
	return nil
}

func (s *scramClient) Step(challenge string) (string, error) {
	if s.conv == nil {
		return "", errors.New("scram: Step before Begin")
	}
	if s.nonce != "" {
		if r := scramAttr(challenge, "r"); r != "" && r == s.nonce {
			return "", errors.New("scram: server nonce adds nothing to the client nonce")
		}
	}
	resp, err := s.conv.Step(challenge)
	if err != nil {
		return "", fmt.Errorf("scram: %w", err)
	}
	if s.nonce == "" {
		s.nonce = scramAttr(resp, "r")
	}
	return resp, nil
}

// Done is true only after a conversation that verified the server signature.
func (s *scramClient) Done() bool { return s.conv != nil && s.conv.Done() && s.conv.Valid() }

// scramAttr returns the value of attribute key in a SCRAM message ("" if absent).
func scramAttr(msg, key string) string {
	for _, part := range strings.Split(msg, ",") {
		if k, v, ok := strings.Cut(part, "="); ok && k == key {
			return v
		}
	}
	return ""
}
