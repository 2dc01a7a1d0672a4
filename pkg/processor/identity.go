package processor

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/identity"
	"github.com/msgx/msgx/pkg/sis"
)

// identity is SNDR|TYPE|STYP|SEQN, plus |YYYYMMDD of DTTM when configured.
func (p *Engine) identity(m sis.Meta) string {
	key := m.SNDR + "|" + m.TYPE + "|" + m.STYP + "|" + m.SEQN
	if p.cfg.IdentityIncludeDay {
		key += "|" + m.DTTM.Format("20060102")
	}
	return key
}

// owner is the message an identity is bound to, with its DTTM.
type owner struct {
	id   int64
	sha  []byte
	dttm time.Time
}

// Rule is the engine's identity rule (checked against the stored one at start, pkg/identity).
func (c Config) Rule() identity.Rule {
	return identity.Rule{Window: c.IdentityWindow, IncludeDay: c.IdentityIncludeDay}
}

// bind decides every identity of the batch in msg_id order (PRE-7 with a lifetime) and stores
// the bindings it changes. A key not bound yet binds to its message. A key bound to a message
// whose DTTM is within the identity window of this one's makes it a duplicate of that message
// (w.dup). A key bound outside the window was reused (a SEQN reset or wrap): the message is a new
// one (w.reused) and, when it is the newer of the two, the key is bound to it again. The keys'
// rows are locked, so the decision holds until the commit.
func (p *Engine) bind(ctx context.Context, tx pgx.Tx, now time.Time, batch []work) error {
	var keys []string
	for i := range batch {
		batch[i].dup, batch[i].reused = nil, false // apply may run again after a lost round trip
		if batch[i].identity != "" {
			keys = append(keys, batch[i].identity)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	rows, err := tx.Query(ctx, lockIdentitiesSQL, keys)
	if err != nil {
		return fmt.Errorf("read identities: %w", err)
	}
	owners := make(map[string]owner, len(keys))
	var k string
	var o owner
	if _, err = pgx.ForEachRow(rows, []any{&k, &o.id, &o.sha, &o.dttm}, func() error {
		owners[k] = o
		return nil
	}); err != nil {
		return fmt.Errorf("read identities: %w", err)
	}
	rule := p.cfg.Rule()
	changed := map[string]owner{}
	var order []string
	for i := range batch {
		w := &batch[i]
		if w.identity == "" {
			continue
		}
		mine := owner{id: w.row.id, sha: w.sha, dttm: w.msg.Meta.DTTM}
		o, ok := owners[w.identity]
		switch {
		case ok && o.id == w.row.id: // its own binding (a retry or a replay)
			continue
		case ok && rule.Same(o.dttm, mine.dttm):
			w.dup = &o
			continue
		case ok:
			w.reused = true
			if !mine.dttm.After(o.dttm) {
				continue // an older message with a reused key: processed, the newer keeps the key
			}
		}
		if _, seen := changed[w.identity]; !seen {
			order = append(order, w.identity)
		}
		owners[w.identity], changed[w.identity] = mine, mine
	}
	if len(order) == 0 {
		return nil
	}
	ids, shas, dttms := make([]int64, len(order)), make([][]byte, len(order)), make([]time.Time, len(order))
	for i, k := range order {
		ids[i], shas[i], dttms[i] = changed[k].id, changed[k].sha, changed[k].dttm
	}
	if _, err := tx.Exec(ctx, bindIdentitiesSQL, order, ids, shas, dttms, now); err != nil {
		return fmt.Errorf("bind identities: %w", err)
	}
	return nil
}
