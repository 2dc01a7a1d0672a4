package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/msgx/msgx/pkg/config"
	"github.com/msgx/msgx/pkg/procstate"
)

func init() {
	register("replay", command{summary: "requeue FAILED/DEAD messages by --class or --ids (--dry-run first)", run: replayCmd})
}

func replayCmd(ctx context.Context, cfg config.Config, args []string, out io.Writer) error {
	fs, asJSON := flags("replay", "(--class C | --ids 1,2,…) [--dry-run] [--force] [--reason R] [--actor A] [--json]",
		"Requeues FAILED/DEAD messages as PENDING with a fresh attempt budget and an audit row. Run it with --dry-run first: it shows which later messages already changed the same flights, what each replay would end as, and what later-created messages set that it leaves alone unless --force.", out)
	class := fs.String("class", "", fmt.Sprintf("replay every FAILED/DEAD message of this class (%s)", classList(procstate.ReplayableClasses)))
	dry := fs.Bool("dry-run", false, "only report what would be requeued and which later messages touched the same flights")
	force := fs.Bool("force", false, "the replayed messages overwrite what later-created messages set (audited as replay-forced)")
	change := newChangeFlags(fs, "comma-separated msg_ids", "why (audit; required unless --dry-run)")
	reason, actor := change.reason, change.actor
	ids, err := change.parse(args)
	if err != nil {
		return err
	}
	c := procstate.Class(strings.ToUpper(*class))
	switch {
	case (c == "") == (len(ids) == 0):
		return fs.Usagef("give exactly one of --class or --ids")
	case c != "" && !slices.Contains(procstate.Classes, c):
		return fs.Usagef("unknown class %s (one of %s)", *class, classList(procstate.ReplayableClasses))
	case c != "" && !slices.Contains(procstate.ReplayableClasses, c):
		return fs.Refusef("class %s is never replayed (only %s): the same bytes would fail the same way", c, classList(procstate.ReplayableClasses))
	case !*dry && strings.TrimSpace(*reason) == "":
		return fs.Usagef("--reason is required (audit; --actor defaults to %s)", defaultActor())
	case !*dry && strings.TrimSpace(*actor) == "":
		return fs.Usagef("--actor must not be empty (audit)")
	}
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	rep, err := procstate.Replay(ctx, pool, procstate.ReplayRequest{
		Class: c, IDs: ids, Actor: *actor, Reason: *reason, DryRun: *dry, Force: *force, Now: time.Now(), Location: cfg.Location(),
	})
	if err != nil && !errors.Is(err, procstate.ErrRefused) {
		return err
	}
	refused := err // procstate.ErrRefused: the report (with the refusals) is printed, then the error (exit 1)
	if *asJSON {
		if err := writeJSON(out, cfg.Location(), rep); err != nil {
			return err
		}
		return refused
	}
	verb := "requeued"
	if rep.DryRun {
		verb = "would requeue"
	}
	fmt.Fprintf(out, "%s %d message(s)\n", verb, len(rep.Items))
	for _, it := range rep.Items {
		fmt.Fprintf(out, "  %d %s %s flights %v: %s\n", it.MsgID, it.Status, it.Class, it.FLIDs, it.Reason)
		if len(it.UnknownFLIDs) > 0 {
			fmt.Fprintf(out, "    flights not known yet: %v (it would end SKIPPED no-match again)\n", it.UnknownFLIDs)
		}
		if len(it.LaterTouches) > 0 {
			fmt.Fprintf(out, "    later messages already changed these flights: %v\n", it.LaterTouches)
		}
		printPrediction(out, it.Predicted, *force)
	}
	for _, r := range rep.Refused {
		fmt.Fprintf(out, "  refused %d: %s\n", r.MsgID, r.Why)
	}
	if refused != nil {
		return refused
	}
	if len(rep.Refused) > 0 && len(rep.Items) == 0 {
		return fmt.Errorf("replay: every message asked for was refused")
	}
	return nil
}

func classList(cs []procstate.Class) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = string(c)
	}
	return strings.Join(s, ", ")
}

// printPrediction prints what a dry run predicts a replay ends as, and what later-created
// messages set that it leaves alone (or, forced, overwrites).
func printPrediction(out io.Writer, p *procstate.Prediction, force bool) {
	if p == nil {
		return
	}
	if p.Status == "" {
		fmt.Fprintf(out, "    would end: not predicted (its kind's handler decides)\n")
	} else {
		fmt.Fprintf(out, "    would end: %s %s %s\n", p.Status, p.Class, p.Reason)
	}
	verb := "kept (set by later-created messages; --force overwrites)"
	if force {
		verb = "overwritten (forced)"
	}
	for _, n := range p.Newer {
		fmt.Fprintf(out, "    %s of flight %d, set by message %d: %s\n", n.Unit, n.FLID, n.MsgID, verb)
	}
}
