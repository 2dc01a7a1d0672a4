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

const identityAbout = `identity show prints the identity rule stored in the database (MSGX_IDENTITY_WINDOW,
MSGX_IDENTITY_INCLUDE_DAY); a processor whose configuration disagrees refuses to start.
identity set changes it, audited; see "Change the identity rule" in docs/runbook.md.`

func identityCmd(ctx context.Context, cfg config.Config, args []string, out io.Writer) error {
	sub, args, err := subcommand("identity", identityAbout, []string{"show", "set"}, args, out)
	if err != nil {
		return err
	}
	fs, asJSON := flags("identity "+sub, "[--window 168h --include-day=false --reason \"…\" [--actor who]] [--json]", identityAbout, out)
	window := fs.Duration("window", 0, "identity window (MSGX_IDENTITY_WINDOW); set only")
	includeDay := fs.Bool("include-day", false, "the key includes the DTTM day (MSGX_IDENTITY_INCLUDE_DAY); set only")
	reason := fs.String("reason", "", "why the rule changes (audited); set only")
	actor := fs.String("actor", defaultActor(), "who changes it (audited)")
	if err := fs.NoArgs(args); err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if sub == "set" && (!given["window"] || !given["include-day"]) {
		return fs.Usagef("both --window and --include-day are required (the whole rule is set at once)")
	}
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	if sub == "show" {
		s, ok, err := identity.Load(ctx, pool)
		switch {
		case err != nil:
			return err
		case *asJSON:
			return writeJSON(out, cfg.Location(), map[string]any{"stored": ok, "window": identity.Duration(s.Window),
				"include_day": s.IncludeDay, "set_at": s.SetAt, "set_by": s.SetBy, "reason": s.Reason})
		case !ok:
			fmt.Fprintln(out, "no identity rule stored yet: the first processor start stores its configuration")
		default:
			fmt.Fprintf(out, "identity rule: %s (set %s by %s: %s)\n", s.Rule, stamp(cfg.Location(), s.SetAt), s.SetBy, s.Reason)
		}
		return nil
	}
	r := identity.Rule{Window: *window, IncludeDay: *includeDay}
	before, ok, err := identity.Set(ctx, pool, r, *actor, *reason, time.Now())
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(out, cfg.Location(), map[string]any{"window": identity.Duration(r.Window), "include_day": r.IncludeDay,
			"before_stored": ok, "before_window": identity.Duration(before.Window), "before_include_day": before.IncludeDay})
	}
	was := "none"
	if ok {
		was = before.Rule.String()
	}
	fmt.Fprintf(out, "identity rule set: %s (was: %s); configure every processor to match before it starts (docs/runbook.md)\n", r, was)
	return nil
}
