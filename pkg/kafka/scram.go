package kafka

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

// scram is a SCRAM client (RFC 5802, no channel binding) for sarama's SASL/SCRAM mechanisms,
// written on the standard library so the adapter needs no further dependency.
type scram struct {
	newHash         func() hash.Hash
	user, password  string
	authzID         string
	nonce           string
	clientFirstBare string
	serverSignature []byte
	step            int
	done            bool
}

func sha256Hash() hash.Hash { return sha256.New() }
func sha512Hash() hash.Hash { return sha512.New() }

func newSCRAM(h func() hash.Hash) *scram { return &scram{newHash: h} }

func (s *scram) Begin(user, password, authzID string) error {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return err
	}
	s.user, s.password, s.authzID = user, password, authzID
	s.nonce = base64.RawStdEncoding.EncodeToString(b[:])
	s.step, s.done = 0, false
	return nil
}

func (s *scram) Done() bool { return s.done }

func (s *scram) Step(challenge string) (string, error) {
	s.step++
	switch s.step {
	case 1:
		esc := strings.NewReplacer("=", "=3D", ",", "=2C")
		s.clientFirstBare = "n=" + esc.Replace(s.user) + ",r=" + s.nonce
		gs2 := "n,,"
		if s.authzID != "" {
			gs2 = "n,a=" + esc.Replace(s.authzID) + ","
		}
		return gs2 + s.clientFirstBare, nil
	case 2:
		return s.final(challenge)
	case 3:
		attrs := parseSCRAM(challenge)
		if e, ok := attrs["e"]; ok {
			return "", fmt.Errorf("scram: server error %s", e)
		}
		v, err := base64.StdEncoding.DecodeString(attrs["v"])
		if err != nil || subtle.ConstantTimeCompare(v, s.serverSignature) != 1 {
			return "", errors.New("scram: server signature does not verify")
		}
		s.done = true
		return "", nil
	default:
		return "", errors.New("scram: unexpected step")
	}
}

func (s *scram) final(serverFirst string) (string, error) {
	attrs := parseSCRAM(serverFirst)
	nonce, saltB64, iterS := attrs["r"], attrs["s"], attrs["i"]
	if !strings.HasPrefix(nonce, s.nonce) || saltB64 == "" || iterS == "" {
		return "", errors.New("scram: bad server-first message")
	}
	salt, err := base64.StdEncoding.DecodeString(saltB64)
	if err != nil {
		return "", fmt.Errorf("scram: salt: %w", err)
	}
	iter, err := strconv.Atoi(iterS)
	if err != nil || iter < 1 {
		return "", errors.New("scram: bad iteration count")
	}
	salted, err := pbkdf2.Key(s.newHash, s.password, salt, iter, s.newHash().Size())
	if err != nil {
		return "", fmt.Errorf("scram: pbkdf2: %w", err)
	}
	mac := func(key []byte, msg string) []byte {
		m := hmac.New(s.newHash, key)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	clientKey := mac(salted, "Client Key")
	h := s.newHash()
	h.Write(clientKey)
	storedKey := h.Sum(nil)
	withoutProof := "c=biws,r=" + nonce
	if s.authzID != "" {
		withoutProof = "c=" + base64.StdEncoding.EncodeToString([]byte("n,a="+s.authzID+",")) + ",r=" + nonce
	}
	authMsg := s.clientFirstBare + "," + serverFirst + "," + withoutProof
	sig := mac(storedKey, authMsg)
	proof := make([]byte, len(clientKey))
	for i := range clientKey {
		proof[i] = clientKey[i] ^ sig[i]
	}
	s.serverSignature = mac(mac(salted, "Server Key"), authMsg)
	return withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof), nil
}

func parseSCRAM(msg string) map[string]string {
	out := map[string]string{}
	for _, part := range strings.Split(msg, ",") {
		if k, v, ok := strings.Cut(part, "="); ok {
			out[k] = v
		}
	}
	return out
}
