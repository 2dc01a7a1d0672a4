package procstate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/msgx/msgx/pkg/sis"
)

// ErrRefused is returned (wrapped) by Replay when it refuses the request or any message it
// names; nothing is requeued then. msgxctl exits 1 on it.
var ErrRefused = errors.New("replay refused")

// ReplayRequest selects messages to requeue: by class, or by ids.
type ReplayRequest struct {
	Class  Class
	IDs    []int64
	Actor  string
	Reason string
	DryRun bool
	// Force lets the replayed messages overwrite what later-created messages set (INV-24b);
	// its audit row's action is replay-forced.
	Force bool
	Now   time.Time
	// Location is the airport zone the processor decodes in (MSGX_AIRPORT_TZ; nil: UTC).
	Location *time.Location
}

// ReplayItem is one message the request selected.
type ReplayItem struct {
	MsgID  int64   `json:"msg_id"`
	Status string  `json:"status"`
	Class  string  `json:"class"`
	Reason string  `json:"reason"`
	FLIDs  []int64 `json:"flids,omitempty"`
	// UnknownFLIDs are the flights it names that are not stored now: a SKIPPED no-match message
	// replayed while its flight is still unknown ends SKIPPED no-match again.
	UnknownFLIDs []int64 `json:"unknown_flids,omitempty"`
	// LaterTouches are later messages that already changed the same flights: replaying this
	// one applies it on top of their effects.
	LaterTouches []int64 `json:"later_touches,omitempty"`
	// Predicted is what its replay would do now (a dry run's only).
	Predicted *Prediction `json:"predicted,omitempty"`
}

// ReplayRefusal is a requested id that cannot be replayed, with why.
type ReplayRefusal struct {
	MsgID int64  `json:"msg_id"`
	Why   string `json:"why"`
}

// ReplayReport is what a replay did (or, dry, would do).
type ReplayReport struct {
	DryRun   bool            `json:"dry_run"`
	Items    []ReplayItem    `json:"items"`
	Refused  []ReplayRefusal `json:"refused,omitempty"`
	Requeued int64           `json:"requeued"`
}

// Replay requeues FAILED/DEAD messages of replayable classes, and (by id) SKIPPED no-match
// messages, as PENDING, with an audit row that keeps the error text each one had, or (DryRun)
// reports what it would do. The attempt history (msg_attempt) is never touched. It refuses
// MALFORMED and PROTOCOL, and a request naming any message it cannot replay: the report lists
// the refusals, nothing is requeued and the error wraps ErrRefused.
func Replay(ctx context.Context, pool *pgxpool.Pool, req ReplayRequest) (ReplayReport, error) {
	rep := ReplayReport{DryRun: req.DryRun}
	if err := req.check(); err != nil {
		return rep, err
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		rep.Items, rep.Refused = nil, nil
		if len(req.IDs) > 0 {
			refused, err := refusals(ctx, tx, req.IDs)
			if err != nil {
				return err
			}
			rep.Refused = refused
		}
		cands, err := candidates(ctx, tx, req)
		if err != nil {
			return err
		}
		var ids []int64
		var errs []string // the error text each replayed message had (replay_audit.errors)
		var pr *predictor
		if req.DryRun {
			if pr, err = newPredictor(ctx, tx, req.Force); err != nil {
				return err
			}
		}
		opt := sis.Options{Location: req.Location}
		for _, c := range cands {
			item := c.item
			var m *sis.Message
			var derr error
			if c.raw != nil { // decoded once, as the engine decodes it
				if m, derr = sis.DecodePartialString(*c.raw, opt); derr == nil {
					item.FLIDs = m.FLIDs() // undecodable text names none
				}
			}
			if err := touches(ctx, tx, &item); err != nil {
				return err
			}
			if pr != nil {
				p, err := pr.predict(ctx, item.MsgID, c.raw, m, derr)
				if err != nil {
					return err
				}
				item.Predicted = &p
			}
			rep.Items = append(rep.Items, item)
			ids = append(ids, item.MsgID)
			errs = append(errs, strings.TrimSpace(item.Status+" "+item.Class)+": "+item.Reason)
		}
		if req.DryRun || len(ids) == 0 || len(rep.Refused) > 0 {
			return nil
		}
		rep.Requeued, err = requeue(ctx, tx, req, ids, errs)
		return err
	})
	if err == nil && len(rep.Refused) > 0 {
		why := make([]string, len(rep.Refused))
		for i, r := range rep.Refused {
			why[i] = fmt.Sprintf("%d: %s", r.MsgID, r.Why)
		}
		err = fmt.Errorf("replay: %w (nothing requeued): %s", ErrRefused, strings.Join(why, "; "))
	}
	return rep, err
}

// check refuses a request that selects nothing, names a class that is never replayed, or (not
// dry) lacks its audit fields.
func (req ReplayRequest) check() error {
	if req.Class == "" && len(req.IDs) == 0 {
		return fmt.Errorf("replay: choose --class or --ids")
	}
	if req.Class != "" && !slices.Contains(ReplayableClasses, req.Class) {
		return fmt.Errorf("replay: %w: class %s is never replayed (only %v): the same bytes would fail the same way", ErrRefused, req.Class, ReplayableClasses)
	}
	if !req.DryRun && (req.Actor == "" || req.Reason == "") {
		return fmt.Errorf("replay: --actor and --reason are required (audit)")
	}
	return nil
}

// candidate is a message the request selects that the replay rule allows, with its text.
type candidate struct {
	item ReplayItem
	raw  *string
}

// candidates reads the messages the request selects and keeps the replayable ones.
func candidates(ctx context.Context, tx pgx.Tx, req ReplayRequest) ([]candidate, error) {
	rows, err := tx.Query(ctx, replayCandidatesSQL, string(req.Class), req.IDs, NoMatchLike)
	if err != nil {
		return nil, fmt.Errorf("select replay candidates: %w", err)
	}
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (candidate, error) {
		var c candidate
		err := r.Scan(&c.item.MsgID, &c.item.Status, &c.item.Class, &c.item.Reason, &c.raw)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("select replay candidates: %w", err)
	}
	return slices.DeleteFunc(all, func(c candidate) bool {
		ok, _ := Replayable(Status(c.item.Status), Class(c.item.Class), c.item.Reason)
		return !ok
	}), nil
}

// touches completes an item that names flights with the later messages that already changed
// them and the flights not stored now.
func touches(ctx context.Context, tx pgx.Tx, item *ReplayItem) error {
	if len(item.FLIDs) == 0 {
		return nil
	}
	keys := make([]string, len(item.FLIDs))
	for i, f := range item.FLIDs {
		keys[i] = strconv.FormatInt(f, 10)
	}
	r, err := tx.Query(ctx, laterTouchesSQL, keys, item.MsgID, item.FLIDs)
	if err != nil {
		return fmt.Errorf("find later touches: %w", err)
	}
	if item.LaterTouches, err = pgx.CollectRows(r, pgx.RowTo[int64]); err != nil {
		return fmt.Errorf("find later touches: %w", err)
	}
	r, err = tx.Query(ctx, unknownFlightsSQL, item.FLIDs)
	if err != nil {
		return fmt.Errorf("find unknown flights: %w", err)
	}
	if item.UnknownFLIDs, err = pgx.CollectRows(r, pgx.RowTo[int64]); err != nil {
		return fmt.Errorf("find unknown flights: %w", err)
	}
	return nil
}

// requeue makes ids PENDING again (guarded by the replay rule) and writes the audit row with the
// error text each one had; it returns how many rows it requeued.
func requeue(ctx context.Context, tx pgx.Tx, req ReplayRequest, ids []int64, errs []string) (int64, error) {
	classes := make([]string, len(ReplayableClasses))
	for i, c := range ReplayableClasses {
		classes[i] = string(c)
	}
	if _, err := tx.Exec(ctx, lockDebtsSQL, ids); err != nil {
		return 0, fmt.Errorf("lock the marker debts naming the rows: %w", err)
	}
	tag, err := tx.Exec(ctx, requeueSQL, ids, classes, NoMatchLike, req.Force)
	if err != nil {
		return 0, fmt.Errorf("requeue: %w", err)
	}
	selector := "class=" + string(req.Class)
	if len(req.IDs) > 0 {
		selector = fmt.Sprintf("ids=%v", req.IDs)
	}
	action := "replay"
	if req.Force {
		action = "replay-forced"
	}
	if _, err := tx.Exec(ctx, auditSQL, action, req.Actor, req.Reason, selector, ids, req.Now, errs); err != nil {
		return tag.RowsAffected(), fmt.Errorf("write replay audit: %w", err)
	}
	return tag.RowsAffected(), nil
}

// refusals explains each requested id that replay will not touch.
func refusals(ctx context.Context, tx pgx.Tx, ids []int64) ([]ReplayRefusal, error) {
	rows, err := tx.Query(ctx, replayExistingSQL, ids)
	if err != nil {
		return nil, fmt.Errorf("look up ids: %w", err)
	}
	found := map[int64]bool{}
	var out []ReplayRefusal
	var id int64
	var status, class, reason string
	_, err = pgx.ForEachRow(rows, []any{&id, &status, &class, &reason}, func() error {
		found[id] = true
		if ok, why := Replayable(Status(status), Class(class), reason); !ok {
			out = append(out, ReplayRefusal{id, why})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("look up ids: %w", err)
	}
	for _, id := range ids {
		if !found[id] {
			out = append(out, ReplayRefusal{id, "no such message in proc_state (archived or never ingested)"})
		}
	}
	slices.SortFunc(out, func(a, b ReplayRefusal) int { return int(a.MsgID - b.MsgID) })
	return out, nil
}
