// Command simulate writes a simulated airport day of SIS messages into the
// legacy mailbox (cminmsgs) and can save what it sent as the expected final
// flight states. See docs/simulate.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/rs/zerolog"

	"github.com/msgx/msgx/pkg/cmdline"
	"github.com/msgx/msgx/pkg/dev/mailboxdb"
	"github.com/msgx/msgx/pkg/dev/simulate"
	"github.com/msgx/msgx/pkg/envconf"
	"github.com/msgx/msgx/pkg/mailbox"
	"github.com/msgx/msgx/pkg/obs"
	"github.com/msgx/msgx/pkg/settings"
)

// env is read once (the binaries' own MSGX_ variables and defaults); flags override it.
type env struct {
	settings.Process
	mailbox.Config
}

type options struct {
	day      simulate.Config
	writer   simulate.WriterConfig
	dsn      string
	create   bool
	dryRun   bool
	expected string
}

func main() {
	var e env
	if err := envconf.Process(&e); err != nil && !cmdline.AsksHelp(os.Args[1:]) {
		fmt.Fprintf(os.Stderr, "simulate: bad environment: %v\n", err)
		os.Exit(2)
	}
	opts, err := parseFlags(os.Args[1:], e)
	if err != nil {
		os.Exit(cmdline.Exit(os.Stderr, "simulate", err))
	}
	logs := obs.NewLogOutput(os.Stderr, obs.LogQueueLines) // logging never blocks the work
	log := obs.NewLogger(logs, e.LogLevel, "simulate")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	err = run(ctx, opts, log, os.Stdout)
	stop()
	if err != nil {
		log.Error().Err(err).Msg("simulate failed")
	}
	_ = logs.CloseWithin(obs.LogFlushTimeout) // os.Exit skips deferred calls: write the queued lines first
	if err != nil {
		os.Exit(1)
	}
}

func parseFlags(args []string, e env) (options, error) {
	fs := cmdline.New("simulate", "[--seed S] [--flights N] [--pace fast|steady|timeline] [flags]", "Writes a deterministic simulated airport day in SIS XML into the mailbox.", os.Stdout)
	def := simulate.DefaultConfig()
	var o options
	var date, tz, pace string
	fs.Uint64Var(&o.day.Seed, "seed", 1, "random seed (same seed, same day)")
	fs.IntVar(&o.day.Flights, "flights", def.Flights, "flights in the daily schedule snapshot")
	fs.IntVar(&o.day.Additions, "additions", -1, "flights added during the day by SCHD ADFT (default flights/50)")
	fs.Float64Var(&o.day.BadShare, "bad", def.BadShare, "probability of a bad message after each operational message")
	fs.StringVar(&date, "date", "", "operation day YYYY-MM-DD (default today in the airport time zone)")
	fs.StringVar(&tz, "tz", e.AirportTZ, "airport time zone (env MSGX_AIRPORT_TZ)")
	fs.StringVar(&o.dsn, "dsn", e.MySQLDSN, "mailbox DSN (env MSGX_MYSQL_DSN)")
	fs.BoolVar(&o.create, "create", false, "create the mailbox database and tables if missing (dev stack only)")
	fs.BoolVar(&o.dryRun, "dry-run", false, "generate only; write nothing to MySQL")
	fs.StringVar(&o.expected, "expected", "", "write the expected final states as JSON to this file")
	fs.StringVar(&pace, "pace", string(simulate.PaceFast), "fast, steady (-rate msgs/s) or timeline (-compress factor)")
	fs.Float64Var(&o.writer.Rate, "rate", 200, "messages per second for -pace steady")
	fs.Float64Var(&o.writer.Compress, "compress", 60, "timeline compression factor for -pace timeline")
	fs.IntVar(&o.writer.Conns, "conns", 4, "concurrent MySQL connections")
	fs.IntVar(&o.writer.Batch, "batch", 1, "messages per INSERT statement")
	fs.Float64Var(&o.writer.HoldShare, "hold", 0.05, "share of transactions held open while later ids commit")
	fs.IntVar(&o.writer.HoldFor, "hold-for", 5, "most later commits a held transaction waits for")
	fs.Float64Var(&o.writer.RollbackShare, "rollback", 0.01, "share of inserts first attempted and rolled back (id gaps)")
	if err := fs.NoArgs(args); err != nil {
		return o, err
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return o, fmt.Errorf("time zone %q: %w", tz, err)
	}
	o.day.Location = loc
	o.day.Date = time.Now().In(loc)
	if date != "" {
		if o.day.Date, err = time.ParseInLocation("2006-01-02", date, loc); err != nil {
			return o, fmt.Errorf("date %q: %w", date, err)
		}
	}
	if o.day.Additions < 0 {
		o.day.Additions = max(o.day.Flights/50, 1)
	}
	o.writer.Pace = simulate.Pace(pace)
	o.writer.Seed = o.day.Seed
	return o, errors.Join(o.day.Validate(), o.writer.Validate())
}

func run(ctx context.Context, o options, log zerolog.Logger, stdout io.Writer) error {
	start := time.Now()
	day := simulate.Generate(o.day)
	log.Info().Int("messages", len(day.Messages)).Str("date", day.Config.Date.Format("2006-01-02")).
		Dur("took", time.Since(start)).Msg("day generated")
	if o.expected != "" {
		if err := writeExpected(o.expected, day.Expected); err != nil {
			return err
		}
	}
	var written simulate.Written
	if !o.dryRun {
		var err error
		if written, err = write(ctx, o, day, log); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(stdout, "simulate: %s gaps=%d out_of_order_commits=%d took=%s\n",
		day.Summary(), len(written.Gaps), written.OutOfOrder, time.Since(start).Round(time.Millisecond))
	return err
}

func write(ctx context.Context, o options, day simulate.Day, log zerolog.Logger) (simulate.Written, error) {
	dsn := o.dsn
	if o.create {
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			return simulate.Written{}, fmt.Errorf("parse MySQL DSN: %w", err)
		}
		name := cfg.DBName
		cfg.DBName = ""
		if dsn, err = mailboxdb.CreateDatabase(ctx, cfg.FormatDSN(), name); err != nil {
			return simulate.Written{}, err
		}
	}
	db, err := simulate.OpenMailbox(dsn)
	if err != nil {
		return simulate.Written{}, err
	}
	defer db.Close()
	total := len(day.Messages)
	step := max(total/20, 1)
	o.writer.Progress = func(n int) {
		if n%step == 0 || n == total {
			log.Info().Int("committed", n).Int("total", total).Msg("writing")
		}
	}
	w, err := simulate.NewWriter(db, o.writer)
	if err != nil {
		return simulate.Written{}, err
	}
	return w.Write(ctx, day.Messages)
}

func writeExpected(path string, e simulate.Expected) error {
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return fmt.Errorf("encode expected states: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write expected states: %w", err)
	}
	return nil
}
