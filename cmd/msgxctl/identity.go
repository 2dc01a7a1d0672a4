package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/msgx/msgx/pkg/config"
	"github.com/msgx/msgx/pkg/identity"
)

func init() {
	register("identity", command{summary: "show or set the stored identity rule (window, include-day; audited)", run: identityCmd})
}

const identityUsage = `usage: msgxctl identity show [--json] | msgxctl identity set --window 168h --include-day=false --reason "…" [--actor who]`

func identityCmd(ctx context.Context, cfg config.Config, args []string, out io.Writer) error {
	if len(args) == 0 || (args[0] != "show" && args[0] != "set") {
		return fmt.Errorf(identityUsage)
	}
	fs := flag.NewFlagSet("identity "+args[0], flag.ContinueOnError)
	window := fs.Duration("window", 0, "identity window (MSGX_IDENTITY_WINDOW)")
	includeDay := fs.Bool("include-day", false, "the key includes the DTTM day (MSGX_IDENTITY_INCLUDE_DAY)")
	reason := fs.String("reason", "", "why the rule changes (audited)")
	actor := fs.String("actor", defaultActor(), "who changes it (audited)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	if args[0] == "show" {
		s, ok, err := identity.Load(ctx, pool)
		switch {
		case err != nil:
			return err
		case *asJSON:
			return writeJSON(out, map[string]any{"stored": ok, "window": identity.Duration(s.Window),
				"include_day": s.IncludeDay, "set_at": s.SetAt, "set_by": s.SetBy, "reason": s.Reason})
		case !ok:
			fmt.Fprintln(out, "no identity rule stored yet: the first processor start stores its configuration")
		default:
			fmt.Fprintf(out, "identity rule: %s (set %s by %s: %s)\n", s.Rule, s.SetAt.UTC().Format(time.RFC3339), s.SetBy, s.Reason)
		}
		return nil
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if !given["window"] || !given["include-day"] {
		return fmt.Errorf("identity set: both --window and --include-day are required (the whole rule is set at once)\n%s", identityUsage)
	}
	r := identity.Rule{Window: *window, IncludeDay: *includeDay}
	before, ok, err := identity.Set(ctx, pool, r, *actor, *reason, time.Now())
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(out, map[string]any{"window": identity.Duration(r.Window), "include_day": r.IncludeDay,
			"before_stored": ok, "before_window": identity.Duration(before.Window), "before_include_day": before.IncludeDay})
	}
	was := "none"
	if ok {
		was = before.Rule.String()
	}
	fmt.Fprintf(out, "identity rule set: %s (was: %s); configure every processor to match before it starts (docs/runbook.md)\n", r, was)
	return nil
}
