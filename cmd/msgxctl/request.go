package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/cmdline"
	"github.com/msgx/msgx/pkg/config"
	"github.com/msgx/msgx/pkg/request"
)

func init() {
	register("request", command{summary: "ask the AODB: schedule --from DAY --to DAY | list NAME | list-open | show ID (docs/requests.md)", run: requestCmd})
}

const requestUsage = `Asks the AODB for data (docs/requests.md):
  msgxctl request schedule --from YYYY-MM-DD --to YYYY-MM-DD --reason why [--dry-run] [--wait D] [--json]
  msgxctl request list NAME --reason why [--dry-run] [--wait D] [--json]     (NAME: one of the 23 list codes)
  msgxctl request list-open [--json]
  msgxctl request show ID [--json]`

var requestSubs = []string{"schedule", "list", "list-open", "show"}

// requestEnv is what the request commands use; tests build it over their own databases.
// msgxctl only registers: the jobs stage's request sweep writes coutmsgs (the one mailbox user
// with a coutmsgs grant, pkg/roles).
type requestEnv struct {
	pool   *pgxpool.Pool
	store  *request.Store
	shadow bool
	clock  clock.Clock
	// poll is how often --wait looks at the request.
	poll time.Duration
	loc  *time.Location // the airport's time zone: times are printed in it
}

func requestCmd(ctx context.Context, cfg config.Config, args []string, out io.Writer) error {
	if len(args) == 0 || cmdline.AsksHelp(args) {
		return runRequest(ctx, requestEnv{}, args, out) // prints the usage; opens nothing
	}
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	store, err := request.NewStore(pool, cfg.RequestConfig())
	if err != nil {
		return err
	}
	env := requestEnv{pool: pool, store: store, shadow: cfg.Mailbox.Shadow, clock: clock.System{}, poll: time.Second, loc: cfg.Location()}
	return runRequest(ctx, env, args, out)
}

func runRequest(ctx context.Context, env requestEnv, args []string, out io.Writer) error {
	sub, args, err := subcommand("request", requestUsage, requestSubs, args, out)
	if err != nil {
		return err
	}
	switch sub {
	case "list-open":
		return requestListOpen(ctx, env, args, out)
	case "show":
		return requestShow(ctx, env, args, out)
	}
	return requestAsk(ctx, env, sub, args, out)
}

// requestAsk registers one request with its audit row in one transaction; the jobs stage sends
// it at its next request sweep. --wait follows it until it leaves REGISTERED (docs/requests.md).
func requestAsk(ctx context.Context, env requestEnv, sub string, args []string, out io.Writer) error {
	synopsis := "--from YYYY-MM-DD --to YYYY-MM-DD --reason why [--dry-run] [--wait D] [--json]"
	if sub == "list" {
		synopsis = "NAME --reason why [--dry-run] [--wait D] [--json]"
	}
	fs, asJSON := flags("request "+sub, synopsis, requestUsage, out)
	fromS := fs.String("from", "", "first operation day (YYYY-MM-DD, airport calendar)")
	toS := fs.String("to", "", "last operation day (YYYY-MM-DD)")
	reason := fs.String("reason", "", "why (audit; required unless --dry-run)")
	actor := fs.String("actor", defaultActor(), "who (audit)")
	dry := fs.Bool("dry-run", false, "show the request and what it would supersede; write and send nothing")
	wait := fs.Duration("wait", 0, "wait up to this long until the jobs stage has sent the request (0: do not wait)")
	pos, err := fs.Parse(args)
	if err != nil {
		return err
	}
	spec, err := requestSpec(fs, sub, pos, *fromS, *toS)
	if err != nil {
		return err
	}
	spec.Actor, spec.Reason = *actor, *reason
	now := env.clock.Now()
	if *dry {
		return requestPreview(ctx, env, spec, now, *asJSON, out)
	}
	if env.shadow {
		return errors.New("request: shadow mode (MSGX_SHADOW=true) sends nothing to the AODB")
	}
	if *reason == "" {
		return fs.Usagef("--reason is required (audit)")
	}
	reg, err := env.store.RegisterAudited(ctx, spec, *actor, *reason, now)
	if err != nil {
		return err
	}
	r := reg.Request
	if *wait > 0 {
		if r, err = waitSent(ctx, env, r.ID, *wait); err != nil {
			return err
		}
	}
	if *asJSON {
		return writeJSON(out, env.loc, map[string]any{"request": airportRequest(env.loc, r), "asked": reg.Asked, "superseded": reg.Superseded})
	}
	requestRegistered(out, env, r, reg)
	return nil
}

// requestSpec is the operator's request a command line asks for: list NAME, or schedule with
// --from and --to (actor and reason are the caller's).
func requestSpec(fs *cmdline.FlagSet, sub string, pos []string, from, to string) (request.Spec, error) {
	spec := request.Spec{Kind: request.List, Origin: request.Operator}
	switch {
	case sub == "list" && len(pos) != 1:
		return spec, fs.Usagef("want one list NAME, got %d argument(s)", len(pos))
	case sub == "list":
		spec.ListCode = pos[0]
		return spec, nil
	case len(pos) > 0:
		return spec, fs.Usagef("unexpected argument %q", pos[0])
	}
	var err error
	spec.Kind = request.Schedule
	if spec.From, err = time.Parse(time.DateOnly, from); err != nil {
		return spec, fs.Usagef("--from: want YYYY-MM-DD, got %q", from)
	}
	if spec.To, err = time.Parse(time.DateOnly, to); err != nil {
		return spec, fs.Usagef("--to: want YYYY-MM-DD, got %q", to)
	}
	return spec, nil
}

// requestPreview prints what registering spec would do (--dry-run): the request, its XML and
// the open requests it would supersede.
func requestPreview(ctx context.Context, env requestEnv, spec request.Spec, now time.Time, asJSON bool, out io.Writer) error {
	prev, err := env.store.Preview(ctx, spec, now)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(out, env.loc, map[string]any{"dry_run": true, "request": airportRequest(env.loc, prev.Request),
			"asked": prev.Asked, "would_supersede": prev.Superseded})
	}
	fmt.Fprintf(out, "dry run: would register %s %s (SEQN %06d, ROUTINGID %s) and write to coutmsgs:\n%s",
		prev.Request.Kind, prev.Request.Scope, prev.Request.SEQN, prev.Request.RoutingID, prev.Request.XML)
	superseded(out, "would expire", prev)
	if env.shadow {
		fmt.Fprintln(out, "shadow mode: the real command would refuse (nothing is sent in shadow mode)")
	}
	return nil
}

// requestRegistered prints a registered request as it is now, and the requests it superseded.
func requestRegistered(out io.Writer, env requestEnv, r request.Request, reg request.Registration) {
	switch r.Status {
	case request.Registered:
		fmt.Fprintf(out, "request %d: %s %s REGISTERED (SEQN %06d); the jobs stage writes it to coutmsgs at its next request sweep; answer expected within %s\n",
			r.ID, r.Kind, r.Scope, r.SEQN, env.store.Config().Timeout)
	default:
		fmt.Fprintf(out, "request %d: %s %s %s (coutmsgs id %d, SEQN %06d); answer expected within %s of registration\n",
			r.ID, r.Kind, r.Scope, r.Status, r.OutMsgID, r.SEQN, env.store.Config().Timeout)
	}
	superseded(out, "expired", reg)
}

// superseded prints the open requests a registration expires first (verb: what it did or would
// do), and the range an RQFD asks for when it widened over theirs.
func superseded(out io.Writer, verb string, reg request.Registration) {
	if len(reg.Superseded) == 0 {
		return
	}
	fmt.Fprintf(out, "%s the open request(s) %v first (superseded: one open request per list and operation day; an answer made before this request is sent is refused)\n", verb, reg.Superseded)
	if reg.Asked != reg.Request.Scope {
		fmt.Fprintf(out, "asks for %s, not only %s: every day the expired requests asked for is asked again\n", reg.Request.Scope, reg.Asked)
	}
}

func requestListOpen(ctx context.Context, env requestEnv, args []string, out io.Writer) error {
	fs, asJSON := flags("request list-open", "[--json]", "Lists the requests not answered yet.", out)
	if err := fs.NoArgs(args); err != nil {
		return err
	}
	list, err := env.store.ListOpen(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		for i := range list {
			list[i] = airportRequest(env.loc, list[i])
		}
		return writeJSON(out, env.loc, list)
	}
	if len(list) == 0 {
		fmt.Fprintln(out, "no open requests")
		return nil
	}
	now := env.clock.Now()
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "REQ_ID\tKIND\tSCOPE\tSTATUS\tORIGIN\tAGE\tCOUTMSGS_ID")
	for _, r := range list {
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%d\n", r.ID, r.Kind, r.Scope, r.Status, r.Origin,
			now.Sub(r.RegisteredAt).Round(time.Second), r.OutMsgID)
	}
	return w.Flush()
}

func requestShow(ctx context.Context, env requestEnv, args []string, out io.Writer) error {
	fs, asJSON := flags("request show", "ID [--json]", "Shows one request, its outbound message and its answer.", out)
	pos, err := fs.Parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fs.Usagef("want one request ID, got %d argument(s)", len(pos))
	}
	id, err := strconv.ParseInt(pos[0], 10, 64)
	if err != nil {
		return fs.Usagef("request ID %q is not a number", pos[0])
	}
	r, err := env.store.Get(ctx, id)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(out, env.loc, airportRequest(env.loc, r))
	}
	ts := func(t time.Time) string { return stamp(env.loc, t) }
	fmt.Fprintf(out, "request %d: %s %s, %s (origin %s, actor %s)\n", r.ID, r.Kind, r.Scope, r.Status, r.Origin, r.Actor)
	fmt.Fprintf(out, "  registered %s  sent %s  waiting %s  closed %s %s\n", ts(r.RegisteredAt), ts(r.SentAt), ts(r.WaitingAt), ts(r.ClosedAt), r.CloseReason)
	fmt.Fprintf(out, "  SNDR %s SEQN %06d DTTM %s ROUTINGID %s coutmsgs id %d\n", r.Sender, r.SEQN, r.DTTM.In(env.loc).Format("20060102150405"), r.RoutingID, r.OutMsgID)
	if r.ResponseID != 0 {
		fmt.Fprintf(out, "  answered by message %d (%s match)\n", r.ResponseID, r.MatchKind)
	}
	fmt.Fprintf(out, "  outbound message:\n%s", r.XML)
	return nil
}

// waitSent polls request id until it leaves REGISTERED or d passed; it returns the last state.
func waitSent(ctx context.Context, env requestEnv, id int64, d time.Duration) (request.Request, error) {
	deadline := time.Now().Add(d)
	t := time.NewTicker(env.poll)
	defer t.Stop()
	for {
		r, err := env.store.Get(ctx, id)
		if err != nil || r.Status != request.Registered || !time.Now().Before(deadline) {
			return r, err
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-t.C:
		}
	}
}

// airportRequest is r with the days it asks for (dates, which PostgreSQL keeps without a zone)
// read as their midnight in the airport's time zone, so that they print as the airport's days.
func airportRequest(loc *time.Location, r request.Request) request.Request {
	r.From, r.To = *airportWall(loc, &r.From), *airportWall(loc, &r.To)
	return r
}
