package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/msgx/msgx/pkg/config"
	"github.com/msgx/msgx/pkg/httpauth"
)

func init() {
	register("token", command{
		summary: "token new CLIENT --scope read[,send][,operate]: make a bearer token (API, console) and its MSGX_API_TOKENS / MSGX_CONSOLE_TOKENS entry",
		run:     tokenCmd,
	})
}

// tokenCmd prints a new token (for the client's Secret) and the entry to add to
// MSGX_API_TOKENS (msgx's Secret holds only the hash). Nothing is stored anywhere.
func tokenCmd(_ context.Context, _ config.Config, args []string, out io.Writer) error {
	const about = `Makes an API bearer token for CLIENT: prints the token (for the client's Secret) and the
MSGX_API_TOKENS (or MSGX_CONSOLE_TOKENS) entry holding its SHA-256 hash (msgx's Secret). Nothing is stored anywhere.

The scopes are send, read and operate (there is no other): send posts messages to the compat
entry, read reads the API's flights and views every console page, operate also acts in the
console (replay, skip, requests).`
	_, args, err := subcommand("token", about, []string{"new"}, args, out)
	if err != nil {
		return err
	}
	fs, asJSON := flags("token new", "CLIENT --scope read[,send][,operate] [--json]", about, out)
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
