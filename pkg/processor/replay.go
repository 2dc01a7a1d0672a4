package processor

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/msgx/msgx/pkg/sis"
)

// ReplayableClasses are the classes replay may requeue. MALFORMED and PROTOCOL are final: the
// same bytes would fail the same way.
var ReplayableClasses = []Class{ClassCodec, ClassUnsupported, ClassInfra, ClassExhausted}

// ReplayRequest selects messages to requeue: by class, or by ids.
type ReplayRequest struct {
	Class  Class
	IDs    []int64
	Actor  string
	Reason string
	DryRun bool
	Now    time.Time
}

// ReplayItem is one message the request selected.
type ReplayItem struct {
	MsgID  int64   `json:"msg_id"`
	Status string  `json:"status"`
	Class  string  `json:"class"`
	Reason string  `json:"reason"`
	FLIDs  []int64 `json:"flids,omitempty"`
	// LaterTouches are later messages that already changed the same flights: replaying this
	// one applies it on top of their effects.
	LaterTouches []int64 `json:"later_touches,omitempty"`
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

// Replay requeues FAILED/DEAD messages of replayable classes as PENDING, with an audit row, or
// (DryRun) reports what it would do. It refuses MALFORMED and PROTOCOL.
func Replay(ctx context.Context, pool *pgxpool.Pool, req ReplayRequest) (ReplayReport, error) {
	rep := ReplayReport{DryRun: req.DryRun}
	if req.Class == "" && len(req.IDs) == 0 {
		return rep, fmt.Errorf("replay: choose --class or --ids")
	}
	if req.Class != "" && !slices.Contains(ReplayableClasses, req.Class) {
		return rep, fmt.Errorf("replay: class %s is never replayed (only %v): the same bytes would fail the same way", req.Class, ReplayableClasses)
	}
	if !req.DryRun && (req.Actor == "" || req.Reason == "") {
		return rep, fmt.Errorf("replay: --actor and --reason are required (audit)")
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
		rows, err := tx.Query(ctx, replayCandidatesSQL, string(req.Class), req.IDs)
		if err != nil {
			return fmt.Errorf("select replay candidates: %w", err)
		}
		type cand struct {
			item ReplayItem
			raw  *string
		}
		var cands []cand
		for rows.Next() {
			var c cand
			if err := rows.Scan(&c.item.MsgID, &c.item.Status, &c.item.Class, &c.item.Reason, &c.raw); err != nil {
				rows.Close()
				return fmt.Errorf("select replay candidates: %w", err)
			}
			if slices.Contains(ReplayableClasses, Class(c.item.Class)) {
				cands = append(cands, c)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("select replay candidates: %w", err)
		}
		var ids []int64
		for _, c := range cands {
			if c.raw != nil {
				c.item.FLIDs = flidsOf(*c.raw)
			}
			if len(c.item.FLIDs) > 0 {
				keys := make([]string, len(c.item.FLIDs))
				for i, f := range c.item.FLIDs {
					keys[i] = strconv.FormatInt(f, 10)
				}
				r, err := tx.Query(ctx, laterTouchesSQL, keys, c.item.MsgID, c.item.FLIDs)
				if err != nil {
					return fmt.Errorf("find later touches: %w", err)
				}
				later, err := pgx.CollectRows(r, pgx.RowTo[int64])
				if err != nil {
					return fmt.Errorf("find later touches: %w", err)
				}
				c.item.LaterTouches = later
			}
			rep.Items = append(rep.Items, c.item)
			ids = append(ids, c.item.MsgID)
		}
		if req.DryRun || len(ids) == 0 {
			return nil
		}
		tag, err := tx.Exec(ctx, requeueSQL, ids)
		if err != nil {
			return fmt.Errorf("requeue: %w", err)
		}
		rep.Requeued = tag.RowsAffected()
		selector := "class=" + string(req.Class)
		if len(req.IDs) > 0 {
			selector = fmt.Sprintf("ids=%v", req.IDs)
		}
		if _, err := tx.Exec(ctx, auditSQL, req.Actor, req.Reason, selector, ids, req.Now); err != nil {
			return fmt.Errorf("write replay audit: %w", err)
		}
		return nil
	})
	return rep, err
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
	var status, class string
	_, err = pgx.ForEachRow(rows, []any{&id, &status, &class}, func() error {
		found[id] = true
		switch {
		case Status(status) != StatusFailed && Status(status) != StatusDead:
			out = append(out, ReplayRefusal{id, "status " + status + " is not FAILED or DEAD"})
		case !slices.Contains(ReplayableClasses, Class(class)):
			out = append(out, ReplayRefusal{id, "class " + class + " is never replayed"})
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

// flidsOf lists the flights a message names (best effort: undecodable text names none).
func flidsOf(raw string) []int64 {
	m, err := sis.Decode([]byte(raw), sis.Options{})
	if err != nil {
		return nil
	}
	var out []int64
	if m.Flop != nil {
		out = append(out, m.Flop.FLID)
	}
	if m.Schedule != nil {
		for _, r := range m.Schedule.Records {
			if v, ok := r.FLID.Get(); ok {
				out = append(out, v)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
