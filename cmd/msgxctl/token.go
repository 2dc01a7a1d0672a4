package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/msgx/msgx/pkg/cmdline"
	"github.com/msgx/msgx/pkg/config"
	"github.com/msgx/msgx/pkg/httpauth"
)

func init() {
	register("token", command{
		summary: "token new CLIENT --scope …: make a bearer token (API, console); token list; token revoke CLIENT --reason R: refuse a client's tokens (or an OIDC user, oidc:NAME) on every replica",
		run:     tokenCmd,
	})
}

const tokenAbout = `token new makes an API bearer token for CLIENT: prints the token (for the client's Secret)
and the MSGX_API_TOKENS (or MSGX_CONSOLE_TOKENS) entry holding its SHA-256 hash (msgx's Secret).
Nothing is stored anywhere.

The scopes are send, read and operate (there is no other): send posts messages to the compat
entry, read reads the API's flights and views every console page, operate also acts in the
console (replay, skip, requests).

token list lists the configured tokens (MSGX_CONSOLE_TOKENS, MSGX_API_TOKENS: client, scopes,
the start of the hash) and which are revoked, and the revoked users of the console's OpenID
Connect log-in. token revoke CLIENT refuses CLIENT's tokens, audited, while their entries are
still deployed: a console token at once on every console replica (its logins and sessions), an
API token on every ingest replica within 5 s; remove the entries at the next deployment. token
revoke oidc:NAME does the same for a user of the OpenID Connect log-in (their identity, as their
console sessions name it): their sessions end and their logins through the provider are refused.`

// tokenCmd dispatches token new, list and revoke.
func tokenCmd(ctx context.Context, cfg config.Config, args []string, out io.Writer) error {
	sub, args, err := subcommand("token", tokenAbout, []string{"new", "list", "revoke"}, args, out)
	if err != nil {
		return err
	}
	switch sub {
	case "list":
		return tokenList(ctx, cfg, args, out)
	case "revoke":
		return tokenRevoke(ctx, cfg, args, out)
	}
	return tokenNew(args, out)
}

// tokenNew prints a new token (for the client's Secret) and the entry to add to
// MSGX_API_TOKENS (msgx's Secret holds only the hash).
func tokenNew(args []string, out io.Writer) error {
	fs, asJSON := flags("token new", "CLIENT --scope read[,send][,operate] [--json]", tokenAbout, out)
	scope := fs.String("scope", "", "comma-separated scopes: send (POST /cminmsgs/send), read (GET /flights/…, /all/flights; the console's pages), operate (the console's actions)")
	pos, err := fs.Parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fs.Usagef("want one CLIENT, got %d argument(s)", len(pos))
	}
	client := pos[0]
	if *scope == "" {
		return fs.Usagef("--scope is required (send, read, operate, comma-separated)")
	}
	var scopes []httpauth.Scope
	for s := range strings.SplitSeq(*scope, ",") {
		sc, err := httpauth.ParseScope(strings.TrimSpace(s))
		if err != nil {
			return fs.Usagef("--scope: %s", err)
		}
		scopes = append(scopes, sc)
	}
	token, entry, err := httpauth.NewToken(client, scopes...)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(out, time.UTC, map[string]string{"client": client, "token": token, "api_tokens_entry": fmt.Sprint(entry)})
	}
	fmt.Fprintf(out, "token (give it to %s only; msgx does not keep it):\n  %s\n", client, token)
	fmt.Fprintf(out, "MSGX_API_TOKENS entry (append with a comma; docs/security.md):\n  %s\n", entry)
	return nil
}

// configuredToken is one configured token: where it is configured, and its revocation.
type configuredToken struct {
	Where   string               `json:"where"` // console or api
	Client  string               `json:"client"`
	Scopes  []httpauth.Scope     `json:"scopes"`
	SHA256  string               `json:"sha256_prefix"`
	Revoked *httpauth.Revocation `json:"revoked,omitempty"`
	hash    [32]byte
}

// configuredTokens are the tokens of MSGX_CONSOLE_TOKENS and MSGX_API_TOKENS, with the
// revocations read from the database.
func configuredTokens(ctx context.Context, cfg config.Config, db httpauth.Querier) ([]configuredToken, error) {
	revoked, err := httpauth.Revocations(ctx, db)
	if err != nil {
		return nil, err
	}
	var out []configuredToken
	for _, l := range []struct {
		where string
		cs    httpauth.Clients
	}{{"console", cfg.Console.Tokens}, {"api", cfg.API.Access.Tokens}} {
		for _, c := range l.cs {
			t := configuredToken{Where: l.where, Client: c.Name, Scopes: c.Scopes, SHA256: fmt.Sprintf("%x", c.Hash[:6]), hash: c.Hash}
			if r, ok := revoked[c.Hash]; ok {
				t.Revoked = &r
			}
			out = append(out, t)
		}
	}
	// The revoked users of the console's OpenID Connect log-in: configured at the provider, not here.
	n := len(out)
	for _, r := range revoked {
		if strings.HasPrefix(r.Client, httpauth.ProviderUserPrefix) {
			out = append(out, configuredToken{Where: "console", Client: r.Client, SHA256: fmt.Sprintf("%x", r.Hash[:6]), Revoked: &r, hash: r.Hash})
		}
	}
	slices.SortStableFunc(out[n:], func(a, b configuredToken) int { return strings.Compare(a.Client+a.SHA256, b.Client+b.SHA256) })
	return out, nil
}

func tokenList(ctx context.Context, cfg config.Config, args []string, out io.Writer) error {
	fs, asJSON := flags("token list", "[--json]", tokenAbout, out)
	if err := fs.NoArgs(args); err != nil {
		return err
	}
	return withTokens(ctx, cfg, func(_ *pgxpool.Pool, ts []configuredToken) error {
		if *asJSON {
			return writeJSON(out, cfg.Location(), ts)
		}
		printTokens(out, cfg, ts)
		return nil
	})
}

func printTokens(out io.Writer, cfg config.Config, ts []configuredToken) {
	for _, t := range ts {
		state := "active"
		if r := t.Revoked; r != nil {
			state = fmt.Sprintf("revoked %s by %s: %s", r.RevokedAt.In(cfg.Location()).Format(time.DateTime), r.Actor, r.Reason)
		}
		fmt.Fprintf(out, "%-8s %-20s %-20s sha256:%s…  %s\n", t.Where, t.Client, fmt.Sprint(t.Scopes), t.SHA256, state)
	}
}

// withTokens runs f with a pool and the configured tokens (configuredTokens).
func withTokens(ctx context.Context, cfg config.Config, f func(*pgxpool.Pool, []configuredToken) error) error {
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	ts, err := configuredTokens(ctx, cfg, pool)
	if err != nil {
		return err
	}
	return f(pool, ts)
}

func tokenRevoke(ctx context.Context, cfg config.Config, args []string, out io.Writer) error {
	fs, _ := flags("token revoke", "CLIENT --reason R [--actor A]", tokenAbout, out)
	reason := fs.String("reason", "", "why (audit; required)")
	actor := fs.String("actor", defaultActor(), "who (audit)")
	pos, err := fs.Parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fs.Usagef("want one CLIENT, got %d argument(s)", len(pos))
	}
	if strings.TrimSpace(*reason) == "" || strings.TrimSpace(*actor) == "" {
		return fs.Usagef("--reason and --actor are required (audit)")
	}
	return withTokens(ctx, cfg, func(pool *pgxpool.Pool, ts []configuredToken) error {
		return revokeTokens(ctx, pool, ts, pos[0], *actor, *reason, fs, out)
	})
}

// revokeTokens revokes the tokens of client among ts, console and API, or a provider's user
// (oidc:NAME).
func revokeTokens(ctx context.Context, pool *pgxpool.Pool, ts []configuredToken, client, actor, reason string, fs *cmdline.FlagSet, out io.Writer) error {
	if strings.HasPrefix(client, httpauth.ProviderUserPrefix) {
		return revokeProviderUser(ctx, pool, client, actor, reason, fs, out)
	}
	n := 0
	for _, t := range ts {
		if t.Client != client {
			continue
		}
		n++
		done, err := httpauth.Revoke(ctx, pool, httpauth.Client{Name: t.Client, Hash: t.hash}, actor, reason, time.Now())
		if err != nil {
			return err
		}
		verb := "revoked"
		if !done {
			verb = "already revoked"
		}
		if t.Where == "console" {
			fmt.Fprintf(out, "%s: console token of %s (sha256:%s…); every console replica refuses it from its next request\n", verb, t.Client, t.SHA256)
		} else {
			fmt.Fprintf(out, "%s: API token of %s (sha256:%s…); every ingest replica refuses it within %s\n", verb, t.Client, t.SHA256, httpauth.RevokedRefresh)
		}
	}
	if n == 0 {
		return fs.Refusef("no token of %q in MSGX_CONSOLE_TOKENS or MSGX_API_TOKENS (msgxctl token list)", client)
	}
	fmt.Fprintln(out, "remove its MSGX_CONSOLE_TOKENS or MSGX_API_TOKENS entries at the next deployment")
	return nil
}

// revokeProviderUser ends the console sessions of user, a user of the OpenID Connect log-in, on
// every replica at once and refuses their logins through the provider from then on.
func revokeProviderUser(ctx context.Context, pool *pgxpool.Pool, user, actor, reason string, fs *cmdline.FlagSet, out io.Writer) error {
	ids, err := httpauth.ProviderIdentities(ctx, pool, user)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return fs.Refusef("%s has no console session (never logged in, or none for over a day): remove them from the group at the identity provider", user)
	}
	for _, h := range ids {
		done, err := httpauth.Revoke(ctx, pool, httpauth.Client{Name: user, Hash: h}, actor, reason, time.Now())
		if err != nil {
			return err
		}
		verb := "revoked"
		if !done {
			verb = "already revoked"
		}
		fmt.Fprintf(out, "%s: %s (identity sha256:%x…); every console replica ends their sessions and refuses their logins from its next request\n", verb, user, h[:6])
	}
	fmt.Fprintln(out, "remove them from the group at the identity provider as well")
	return nil
}
