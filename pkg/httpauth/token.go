// Package httpauth guards msgx's authenticated HTTP listeners — ingest's API (compat entry and
// read API) and the console's login — with per-client bearer tokens with scopes; the API also
// with a per-client rate limit and a global concurrency limit (Gate).
//
// Configuration holds only the SHA-256 of each token (MSGX_API_TOKENS, entries
// "client:scope+scope:sha256hex"); the token itself lives with its client (a Secret). A request's
// token is hashed and compared with every configured hash in constant time. The answers say what
// is missing:
//
//	401 no or unknown token            WWW-Authenticate: Bearer realm="msgx" [error="invalid_token"]
//	403 the client lacks the scope     WWW-Authenticate: Bearer error="insufficient_scope" scope="…"
//	429 the client's rate is exceeded  Retry-After: seconds until its next request is allowed
//	429 too many requests in flight    Retry-After: 1
//
// One client may have several hashes (token rotation: add the new one, roll out, move the
// client, remove the old one; docs/security.md).
package httpauth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Scope is one permission of a client.
type Scope string

// The scopes of msgx's API and console.
const (
	ScopeSend    Scope = "send"    // POST /cminmsgs/send: writes into the production mailbox
	ScopeRead    Scope = "read"    // GET /flights/{flid}, GET /all/flights; the console's pages
	ScopeOperate Scope = "operate" // the console's actions: replay, skip, requests to the AODB
)

// Scopes are every scope, in the order documentation lists them.
var Scopes = []Scope{ScopeSend, ScopeRead, ScopeOperate}

// ParseScope returns the scope called s.
func ParseScope(s string) (Scope, error) {
	if !slices.Contains(Scopes, Scope(s)) {
		return "", fmt.Errorf("unknown scope %q (one of %v)", s, Scopes)
	}
	return Scope(s), nil
}

// Client is one configured token: the client's name, its scopes and the token's SHA-256.
type Client struct {
	Name   string
	Scopes []Scope
	Hash   [sha256.Size]byte
}

// Has reports whether the client holds scope s.
func (c Client) Has(s Scope) bool { return slices.Contains(c.Scopes, s) }

// String is the configuration entry of c: client:scope+scope:sha256hex.
func (c Client) String() string {
	ss := make([]string, len(c.Scopes))
	for i, s := range c.Scopes {
		ss[i] = string(s)
	}
	return c.Name + ":" + strings.Join(ss, "+") + ":" + hex.EncodeToString(c.Hash[:])
}

// Clients is the value of MSGX_API_TOKENS: comma-separated entries client:scope+scope:sha256hex
// (whitespace and newlines around entries are ignored, so a mounted file works too).
type Clients []Client

var clientName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// UnmarshalText parses the entries; it never echoes a hash back in an error.
func (cs *Clients) UnmarshalText(b []byte) error {
	var out Clients
	seen := map[[sha256.Size]byte]bool{}
	for i, e := range strings.FieldsFunc(string(b), func(r rune) bool { return r == ',' || r == '\n' || r == '\r' }) {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		parts := strings.Split(e, ":")
		if len(parts) != 3 {
			return fmt.Errorf("entry %d: want client:scope+scope:sha256hex", i+1)
		}
		c := Client{Name: parts[0]}
		if !clientName.MatchString(c.Name) {
			return fmt.Errorf("entry %d: client name %q: use letters, digits, '_', '.', '-'", i+1, c.Name)
		}
		for s := range strings.SplitSeq(parts[1], "+") {
			sc, err := ParseScope(s)
			if err != nil {
				return fmt.Errorf("entry %d (%s): %w", i+1, c.Name, err)
			}
			if !c.Has(sc) {
				c.Scopes = append(c.Scopes, sc)
			}
		}
		h, err := hex.DecodeString(parts[2])
		if err != nil || len(h) != sha256.Size {
			return fmt.Errorf("entry %d (%s): the hash must be 64 hex digits (SHA-256 of the token; msgxctl token new makes both)", i+1, c.Name)
		}
		copy(c.Hash[:], h)
		if seen[c.Hash] {
			return fmt.Errorf("entry %d (%s): the same token hash is configured twice", i+1, c.Name)
		}
		seen[c.Hash] = true
		out = append(out, c)
	}
	*cs = out
	return nil
}

// Lookup returns the client whose hash matches token. Every configured hash is compared, in
// constant time, whatever matches: the one token check of the API and the console.
func (cs Clients) Lookup(token string) (Client, bool) {
	i := cs.index(token)
	if i < 0 {
		return Client{}, false
	}
	return cs[i], true
}

func (cs Clients) index(token string) int {
	h := Hash(token)
	found := -1
	for i := range cs {
		if subtle.ConstantTimeCompare(h[:], cs[i].Hash[:]) == 1 {
			found = i
		}
	}
	return found
}

// MarshalText is the inverse of UnmarshalText.
func (cs Clients) MarshalText() ([]byte, error) {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = c.String()
	}
	return []byte(strings.Join(s, ",")), nil
}

// TokenPrefix starts every token msgx makes, so that a leaked one is easy to recognise.
const TokenPrefix = "msgx_"

// NewToken makes a random token (256 bits) for client with scopes and returns it with its
// configuration entry. Only the entry goes into msgx's configuration.
func NewToken(client string, scopes ...Scope) (token string, entry Client, err error) {
	if !clientName.MatchString(client) {
		return "", Client{}, fmt.Errorf("client name %q: use letters, digits, '_', '.', '-'", client)
	}
	if len(scopes) == 0 {
		return "", Client{}, errors.New("a token needs at least one scope")
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", Client{}, err
	}
	token = TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	entry = Client{Name: client, Hash: Hash(token)}
	for _, s := range scopes {
		if !entry.Has(s) {
			entry.Scopes = append(entry.Scopes, s)
		}
	}
	return token, entry, nil
}

// Hash is the SHA-256 of a token as configuration holds it.
func Hash(token string) [sha256.Size]byte { return sha256.Sum256([]byte(token)) }
