package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/msgx/msgx/pkg/cmdline"
	"github.com/msgx/msgx/pkg/config"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/kafkaverify"
)

func init() {
	register("kafka", command{
		summary: "the Kafka topics: kafka verify (compare them with PostgreSQL) | kafka reseed (republish the flights' states)",
		run:     kafkaCmd,
	})
}

const kafkaUsage = `The Kafka topics:
  msgxctl kafka verify [--timeout D] [--json]
  msgxctl kafka reseed (--flids F1,F2,… | --all) [--dry-run] [--reason R] [--actor A] [--timeout D] [--json]

verify reads PostgreSQL (one snapshot), then both topics (MSGX_KAFKA_TOPIC_CHANGES and
MSGX_KAFKA_TOPIC_STATE) as a read_committed consumer from the start to the high-water mark, and
checks that every SENT KAFKA:msg event is on the changes topic once per (flid, state_version)
(duplicates identical but for the epoch header), that each FLID's versions are in order on both
topics, and that the last record of each flight on the state topic is its stored state (a
tombstone for a deleted or purged flight). It prints what it compared and what it could not
(changes whose events MSGX_EVENT_RETENTION deleted, states not sent yet or sent after the
snapshot, tombstones compaction removed), then every difference. Exit 0: Kafka agrees with
PostgreSQL; 1: differences (listed) or a failure; 2: a bad command line or configuration.

reseed republishes the current state of each selected flight to the state topic (a tombstone for
a deleted or purged one) when the topic lacks its current version, e.g. after the topic was
deleted and created again (docs/runbook.md). It reads the state topic first (read_committed);
then, per 500 flights in one transaction, it enqueues the state events the dispatcher sends
(fenced and transactional, in order with the flights' other states; never a version older than
the topic holds) and writes an audit row (replay_audit, kafka-reseed). Safe while msgx runs; a
flight whose current version the topic holds is left as it is. --dry-run reports and changes
nothing. Exit 0: done (then kafka verify once the dispatcher has sent them); 1: a failure
(nothing changed when the topic cannot be read); 2: a bad command line or configuration.`

var kafkaSynopsis = map[string]string{
	"verify": "[--timeout D] [--json]",
	"reseed": "(--flids F1,F2,… | --all) [--dry-run] [--reason R] [--actor A] [--timeout D] [--json]",
}

// kafkaFailure is the error of kafka sub when Kafka failed: a missing topic is the command
// line's or configuration's (exit 2, fixed as topicFix says), anything else names the brokers.
func kafkaFailure(sub string, cfg config.Config, err error, topicFix string) error {
	if errors.Is(err, kafka.ErrTopicMissing) {
		return &cmdline.UsageError{Msg: "msgxctl kafka " + sub + ": " + err.Error(), Fix: topicFix}
	}
	return cmdline.WithHint(fmt.Errorf("kafka %s: %w", sub, err),
		fmt.Sprintf("check that a broker answers at MSGX_KAFKA_BROKERS (%s) with the MSGX_KAFKA_TLS/SASL settings", strings.Join(cfg.Kafka.Brokers, ",")))
}

func kafkaCmd(ctx context.Context, cfg config.Config, args []string, out io.Writer) error {
	sub, args, err := subcommand("kafka", kafkaUsage, []string{"verify", "reseed"}, args, out)
	if err != nil {
		return err
	}
	fs, asJSON := flags("kafka "+sub, kafkaSynopsis[sub], kafkaUsage, out)
	timeout := fs.Duration("timeout", 10*time.Minute, "give up reading after this long")
	var reseed *reseedFlags
	if sub == "reseed" {
		reseed = newReseedFlags(fs)
	}
	if err := fs.NoArgs(args); err != nil {
		return err
	}
	if *timeout <= 0 {
		return fs.Usagef("--timeout must be positive, got %s", *timeout)
	}
	if reseed != nil {
		if err := reseed.check(fs); err != nil {
			return err
		}
	}
	if err := cfg.KafkaRefusals(); err != nil {
		return badConfiguration("kafka "+sub, err)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	if reseed != nil {
		return reseed.run(ctx, cfg, pool, *asJSON, out)
	}
	r, err := kafkaverify.Verify(ctx, pool, cfg.Kafka, cfg.Location())
	if err != nil {
		return kafkaFailure("verify", cfg, err, "set MSGX_KAFKA_TOPIC_CHANGES and MSGX_KAFKA_TOPIC_STATE to the topics msgx writes")
	}
	if *asJSON {
		err = writeJSON(out, cfg.Location(), r)
	} else {
		err = writeVerifyText(out, r, cfg.Jobs.EventRetention)
	}
	if err != nil || r.OK() {
		return err
	}
	return fmt.Errorf("kafka verify: %d difference(s) between Kafka and PostgreSQL", len(r.Differences))
}

// writeVerifyText prints what was compared, what was not, and every difference.
func writeVerifyText(out io.Writer, r kafkaverify.Report, retention time.Duration) error {
	c, s := r.Changes, r.State
	fmt.Fprintf(out, "%s: %d records read; %d SENT events compared, %d found with their value (%d identical duplicates)\n",
		c.Topic, c.Records, c.SentEvents, c.Matched, c.IdenticalDuplicates)
	var unsent []string
	for _, st := range slices.Sorted(maps.Keys(c.Unsent)) {
		unsent = append(unsent, fmt.Sprintf("%s %d", st, c.Unsent[st]))
	}
	fmt.Fprintf(out, "  not compared: %d versions whose events are no longer in PostgreSQL (SENT events are deleted after MSGX_EVENT_RETENTION, %s); %d whose events are not SENT%s\n",
		c.NotInPostgreSQL, retention, sum(c.Unsent), parenthesised(strings.Join(unsent, ", ")))
	older := ""
	if s.WithoutInstants > 0 {
		older = fmt.Sprintf("%d of them written before msgx published instants", s.WithoutInstants)
	}
	fmt.Fprintf(out, "%s: %d records read, %d flights; %d compared with their stored state, %d agree%s\n",
		s.Topic, s.Records, s.FLIDs, s.Compared, s.Matched, parenthesised(older))
	fmt.Fprintf(out, "  not compared: %d flights whose newest state is not sent yet; %d states sent after PostgreSQL was read; %d deleted or purged flights without a record (tombstones compacted away)\n",
		s.Pending, s.NewerThanSnapshot, s.TombstonesGone)
	f := r.Failover
	fmt.Fprintf(out, "database timeline %d (recorded: %v); %d change records found on Kafka that the database did not know as sent, %d of them lost by the database (a failover); %d SENT events matched such a record\n",
		f.Timeline, f.Timelines, f.Held, f.HeldBeyond, c.MatchedHeld)
	if r.OK() {
		_, err := fmt.Fprintln(out, "Kafka agrees with PostgreSQL: no difference")
		return err
	}
	fmt.Fprintf(out, "%d difference(s):\n", len(r.Differences))
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tTOPIC\tFLID\tVERSION\tRECORD\tDETAIL")
	for _, d := range r.Differences {
		at := "-"
		if d.Offset >= 0 {
			at = fmt.Sprintf("%d@%d", d.Partition, d.Offset)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", d.Kind, d.Topic, d.FLID, d.StateVersion, at, d.Detail)
	}
	return tw.Flush()
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func parenthesised(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}
