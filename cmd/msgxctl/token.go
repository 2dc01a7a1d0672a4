package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

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
	const usage = "usage: msgxctl token new CLIENT --scope read[,send][,operate]"
	if len(args) < 2 || args[0] != "new" || strings.HasPrefix(args[1], "-") {
		return fmt.Errorf("%s", usage)
	}
	client := args[1]
	fs := flag.NewFlagSet("token new", flag.ContinueOnError)
	fs.SetOutput(out)
	scope := fs.String("scope", "", "comma-separated scopes: send (POST /cminmsgs/send), read (GET /flights/…, /all/flights; the console's pages), operate (the console's actions)")
	if err := fs.Parse(args[2:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q; %s", fs.Arg(0), usage)
	}
	if *scope == "" {
		return fmt.Errorf("--scope is required (send, read or send,read); %s", usage)
	}
	var scopes []httpauth.Scope
	for s := range strings.SplitSeq(*scope, ",") {
		sc, err := httpauth.ParseScope(strings.TrimSpace(s))
		if err != nil {
			return err
		}
		scopes = append(scopes, sc)
	}
	token, entry, err := httpauth.NewToken(client, scopes...)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "token (give it to %s only; msgx does not keep it):\n  %s\n", client, token)
	fmt.Fprintf(out, "MSGX_API_TOKENS entry (append with a comma; docs/security.md):\n  %s\n", entry)
	return nil
}
