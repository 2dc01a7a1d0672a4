package httpauth

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Revocation is a token an operator revoked (token_revoked, msgxctl token revoke): the console
// refuses its logins and its sessions on every replica from their next request, and the ingest
// API (Gate with a RevokedSet) its requests within RevokedRefresh, while its MSGX_CONSOLE_TOKENS or
// MSGX_API_TOKENS entry is still deployed.
type Revocation struct {
	Hash      [sha256.Size]byte `json:"-"`
	Client    string            `json:"client"`
	RevokedAt time.Time         `json:"revoked_at"`
	Actor     string            `json:"actor"`
	Reason    string            `json:"reason"`
}

// Beginner begins transactions (a pool).
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Querier runs queries (a pool, a connection or a transaction).
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Revoke records c's token as revoked by actor for reason, with its audit row (replay_audit
// action token-revoke); false when it was revoked already (nothing written).
func Revoke(ctx context.Context, db Beginner, c Client, actor, reason string, now time.Time) (bool, error) {
	if actor == "" || reason == "" {
		return false, fmt.Errorf("revoke %s's token: an actor and a reason are required (audit)", c.Name)
	}
	done := false
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, revokeSQL, c.Hash[:], c.Name, now, actor, reason)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		done = true
		_, err = tx.Exec(ctx, revokeAuditSQL, actor, reason, "token "+c.Name+" sha256:"+fmt.Sprintf("%x", c.Hash[:6]), now)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("revoke %s's token: %w", c.Name, err)
	}
	return done, nil
}

// Revocations lists every revoked token, by hash.
func Revocations(ctx context.Context, db Querier) (map[[sha256.Size]byte]Revocation, error) {
	rows, err := db.Query(ctx, revocationsSQL)
	if err != nil {
		return nil, fmt.Errorf("read revoked tokens: %w", err)
	}
	out := map[[sha256.Size]byte]Revocation{}
	var hash []byte
	var r Revocation
	_, err = pgx.ForEachRow(rows, []any{&hash, &r.Client, &r.RevokedAt, &r.Actor, &r.Reason}, func() error {
		copy(r.Hash[:], hash)
		out[r.Hash] = r
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read revoked tokens: %w", err)
	}
	return out, nil
}

// RevokedSet is the set of revoked tokens (token_revoked) as one process sees it: read again at
// most every period, by the request that finds it older, outside the lock (the other requests
// meanwhile use the set read last), so a revocation reaches every replica within the period
// without a restart. The first read is made before any answer. While the table cannot be read the
// last set read stays in force (Failed is told), and the next read is tried a period later.
type RevokedSet struct {
	db     Querier
	period time.Duration
	now    func() time.Time
	// Failed, when set, is told every failed read.
	Failed func(error)

	first  sync.Once
	mu     sync.Mutex
	hashes map[[sha256.Size]byte]Revocation
	readAt time.Time
}

// RevokedRefresh is the period of the API's RevokedSet: the bound within which a revocation
// reaches every ingest replica.
const RevokedRefresh = 5 * time.Second

// revokedReadTimeout bounds one read of the set.
const revokedReadTimeout = time.Second

// NewRevokedSet returns the set over db, read again at most every period (clock now).
func NewRevokedSet(db Querier, period time.Duration, now func() time.Time) *RevokedSet {
	return &RevokedSet{db: db, period: period, now: now}
}

// Revoked reports whether the token hashing to h was revoked.
func (s *RevokedSet) Revoked(ctx context.Context, h [sha256.Size]byte) bool {
	s.first.Do(func() { s.read(ctx, s.now()) })
	s.mu.Lock()
	now := s.now()
	due := now.Sub(s.readAt) >= s.period
	if due {
		s.readAt = now // one request reads; the others go on with the set read last
	}
	s.mu.Unlock()
	if due {
		s.read(ctx, now)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, revoked := s.hashes[h]
	return revoked
}

// read reads the set (at now) and keeps it, or keeps the last one and tells Failed. The read is
// the process's, not the request's: a client that leaves does not cancel it.
func (s *RevokedSet) read(ctx context.Context, now time.Time) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), revokedReadTimeout)
	defer cancel()
	hashes, err := Revocations(ctx, s.db)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.readAt = now
	if err == nil {
		s.hashes = hashes
	} else if s.Failed != nil {
		s.Failed(err)
	}
}

// ProviderUserPrefix starts the name of a console user who logged in through the OpenID Connect
// provider (oidc:NAME).
const ProviderUserPrefix = "oidc:"

// ProviderIdentities are the identities of user (oidc:NAME), each the SHA-256 of the provider's
// issuer and the user's subject, as their console sessions name them: what Revoke takes to end
// their sessions and refuse their logins through the provider. None when the user has no session
// left (never logged in, or every session expired over a day ago).
func ProviderIdentities(ctx context.Context, db Querier, user string) ([][sha256.Size]byte, error) {
	rows, err := db.Query(ctx, providerIdentitiesSQL, user)
	if err != nil {
		return nil, fmt.Errorf("read %s's sessions: %w", user, err)
	}
	var out [][sha256.Size]byte
	var hash []byte
	_, err = pgx.ForEachRow(rows, []any{&hash}, func() error {
		var h [sha256.Size]byte
		copy(h[:], hash)
		out = append(out, h)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s's sessions: %w", user, err)
	}
	return out, nil
}
