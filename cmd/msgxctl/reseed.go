package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/msgx/msgx/pkg/cmdline"
	"github.com/msgx/msgx/pkg/config"
	"github.com/msgx/msgx/pkg/outbox"
	"github.com/msgx/msgx/pkg/reseed"
)

// reseedFlags are kafka reseed's flags beside kafka's own.
type reseedFlags struct {
	flids         *string
	all, dryRun   *bool
	reason, actor *string
	ids           []int64
}

func newReseedFlags(fs *cmdline.FlagSet) *reseedFlags {
	return &reseedFlags{
		flids:  fs.String("flids", "", "comma-separated FLIDs to reseed"),
		all:    fs.Bool("all", false, "reseed every stored flight and every purged one"),
		dryRun: fs.Bool("dry-run", false, "show what would be enqueued, change nothing"),
		reason: fs.String("reason", "", "why (written to the audit row)"),
		actor:  fs.String("actor", defaultActor(), "who (audit)"),
	}
}

// check validates the selection once the flags are parsed.
func (r *reseedFlags) check(fs *cmdline.FlagSet) error {
	ids, err := parseIDs(fs, *r.flids)
	if err != nil {
		return err
	}
	if (len(ids) > 0) == *r.all {
		return fs.Usagef("give exactly one of --flids or --all")
	}
	r.ids = ids
	return nil
}

func (r *reseedFlags) run(ctx context.Context, cfg config.Config, pool *pgxpool.Pool, asJSON bool, out io.Writer) error {
	rep, err := reseed.Run(ctx, pool, cfg.Kafka, reseed.Request{FLIDs: r.ids, All: *r.all,
		Who: outbox.Admin{Actor: *r.actor, Reason: *r.reason, DryRun: *r.dryRun}, Loc: cfg.Location(), Now: time.Now()})
	if err != nil {
		return kafkaFailure("reseed", cfg, err, "create the topic as docs/kafka.md says, or set MSGX_KAFKA_TOPIC_STATE to the topic msgx writes")
	}
	if asJSON {
		return writeJSON(out, cfg.Location(), rep)
	}
	verb := "enqueued for the dispatcher"
	if rep.DryRun {
		verb = "would be enqueued (dry run: nothing changed)"
	}
	fmt.Fprintf(out, "%s: %d records read; %d flights selected\n", rep.Topic, rep.Read, len(rep.Flights))
	fmt.Fprintf(out, "  %d %s, %d already on the topic at their current version, %d unknown\n",
		rep.Count(reseed.Enqueued), verb, rep.Count(reseed.Current), rep.Count(reseed.Unknown))
	for _, f := range rep.Flights {
		if f.Outcome == reseed.Current {
			continue
		}
		what := "state"
		if f.Tombstone {
			what = "tombstone"
		}
		switch f.Outcome {
		case reseed.Enqueued:
			fmt.Fprintf(out, "  FLID %d: %s version %d (the topic holds %d)\n", f.FLID, what, f.Version, f.Held)
		default:
			fmt.Fprintf(out, "  FLID %d: unknown (neither stored nor ever sent)\n", f.FLID)
		}
	}
	return nil
}
