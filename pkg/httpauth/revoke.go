package httpauth

import (
	"context"
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Revocation is a token an operator revoked (token_revoked, msgxctl token revoke): the console
// refuses its logins and its sessions on every replica from their next request, while its
// MSGX_CONSOLE_TOKENS entry is still deployed.
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
