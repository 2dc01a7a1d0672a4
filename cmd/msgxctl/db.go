package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/msgx/msgx/pkg/cmdline"
	"github.com/msgx/msgx/pkg/config"
	"github.com/msgx/msgx/pkg/outbox"
)

func init() {
	register("db", command{summary: "the database msgx runs on: db show (restore epoch, timelines), db restored (confirm a restore; audited)", run: dbCmd})
}

const dbAbout = `db show prints the server msgx runs on (system identifier, timeline), what the dispatcher last
saw of it, the id generation event ids are drawn in (timeline + restore epoch), the timelines
recorded, every raise of the restore epoch and a confirmation not acted on yet.

db restored records that the database was restored from a backup on purpose. It is accepted
only while the dispatcher refuses to send with "the database is behind event ids Kafka holds"
(db show says so) after a restore you did (docs/runbook.md, "Restore from a PostgreSQL backup"):
its next try raises the restore epoch above every id Kafka holds and sends again. Never run it
for an old primary left behind by a failover: fence that server instead. Audited (replay_audit,
action db-restored).`

func dbCmd(ctx context.Context, cfg config.Config, args []string, out io.Writer) error {
	sub, args, err := subcommand("db", dbAbout, []string{"show", "restored"}, args, out)
	if err != nil {
		return err
	}
	fs, asJSON := flags("db "+sub, "[--reason \"…\" [--actor who]] [--json]", dbAbout, out)
	reason := fs.String("reason", "", "why: which backup was restored, and how (audited); restored only")
	actor := fs.String("actor", defaultActor(), "who confirms it (audited); restored only")
	if err := fs.NoArgs(args); err != nil {
		return err
	}
	if sub == "restored" && strings.TrimSpace(*reason) == "" {
		return fs.Usagef("--reason is required: say which backup was restored, and how")
	}
	if sub == "show" && *reason != "" {
		return fs.Usagef("--reason is for db restored")
	}
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	loc := cfg.Location()
	if sub == "restored" {
		err = outbox.ConfirmRestore(ctx, pool, outbox.Admin{Actor: *actor, Reason: *reason}, time.Now())
		if errors.Is(err, outbox.ErrNothingToConfirm) {
			return cmdline.WithHint(err, "run it only while the dispatcher refuses the restored database (its log: \"Kafka holds event ids of a newer generation than this database draws\"); msgxctl db show says whether it does")
		}
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(out, loc, map[string]any{"confirmed_by": *actor, "reason": *reason})
		}
		_, err = fmt.Fprintln(out, "restore confirmed: the dispatcher's next try (within MSGX_BACKOFF_MAX) raises the restore epoch above every event id Kafka holds and sends again; msgxctl db show shows the raise")
		return err
	}
	id, err := outbox.ReadIdentity(ctx, pool)
	if err != nil {
		return err
	}
	timelines, _, err := outbox.Timelines(ctx, pool)
	if err != nil {
		return err
	}
	restores, err := outbox.Restores(ctx, pool)
	if err != nil {
		return err
	}
	if timelines == nil {
		timelines = []int64{}
	}
	if *asJSON {
		return writeJSON(out, loc, map[string]any{"system_identifier": id.SystemID, "timeline": id.Timeline, "restore_epoch": id.Epoch,
			"id_generation": id.Generation(), "seen_system_identifier": id.SeenSystemID, "seen_timeline": id.SeenTimeline, "seen_at": id.SeenAt,
			"timelines": timelines, "restores": restores, "refused_at": id.RefusedAt, "refused_kafka_event_id": id.RefusedKafkaID,
			"confirmation": id.Confirmed})
	}
	return writeDBText(out, loc, id, timelines, restores)
}

// writeDBText prints db show's answer.
func writeDBText(out io.Writer, loc *time.Location, id outbox.Identity, timelines []int64, restores []outbox.Restore) error {
	sysID := func(v int64) string {
		if v == 0 {
			return "unknown"
		}
		return fmt.Sprint(v)
	}
	fmt.Fprintf(out, "server: system identifier %s, timeline %d\n", sysID(id.SystemID), id.Timeline)
	if id.SeenAt.IsZero() {
		fmt.Fprintln(out, "the dispatcher has not started a term on it since the restore epoch was introduced")
	} else {
		fmt.Fprintf(out, "the dispatcher last saw: system identifier %s, timeline %d, at %s\n", sysID(id.SeenSystemID), id.SeenTimeline, stamp(loc, id.SeenAt))
	}
	fmt.Fprintf(out, "event ids: generation %d (timeline %d + restore epoch %d); timelines recorded: %v\n", id.Generation(), id.Timeline, id.Epoch, timelines)
	if len(restores) == 0 {
		fmt.Fprintln(out, "the restore epoch was never raised")
	}
	for _, r := range restores {
		fmt.Fprintf(out, "restore epoch %d (was %d) raised %s, %s: %s; %d unsent events renumbered; Kafka's highest event id then %d\n",
			r.Epoch, r.PreviousEpoch, stamp(loc, r.RaisedAt), r.Kind, r.Detail, r.Renumbered, r.KafkaEventID)
	}
	if !id.RefusedAt.IsZero() {
		fmt.Fprintf(out, "the dispatcher refuses to send from this database since %s: Kafka holds event id %d (generation %d), above the generation it draws; "+
			"an old primary left behind by a failover (fence it), or a restore of yours (then msgxctl db restored --reason …)\n",
			stamp(loc, id.RefusedAt), id.RefusedKafkaID, outbox.GenerationOf(id.RefusedKafkaID))
	}
	if c := id.Confirmed; c != nil {
		fmt.Fprintf(out, "restore confirmed by %s at %s (%s): the dispatcher's next term start acts on it\n", c.By, stamp(loc, c.At), c.Reason)
	}
	return nil
}
