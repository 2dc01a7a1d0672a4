package processor

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/identity"
)

// Rule is the engine's identity rule (checked against the stored one at start, pkg/identity).
func (c Config) Rule() identity.Rule {
	return identity.Rule{Window: c.IdentityWindow, IncludeDay: c.IdentityIncludeDay}
}

// bind decides every identity of the batch in msg_id order by the binding rule
// (identity.Rule.Bind: w.dup, w.reused) and stores the bindings it changes. The keys' rows are
// locked, so the decision holds until the commit.
func (p *Engine) bind(ctx context.Context, tx pgx.Tx, now time.Time, batch []work) error {
	var claims []identity.Claim
	var at []int // the batch index of each claim
	for i := range batch {
		w := &batch[i]
		w.dup, w.reused = nil, false // apply may run again after a lost round trip
		if w.identity != "" {
			claims = append(claims, identity.Claim{Key: w.identity,
				Binding: identity.Binding{MsgID: w.row.id, SHA256: w.sha, DTTM: w.msg.Meta.DTTM}})
			at = append(at, i)
		}
	}
	if len(claims) == 0 {
		return nil
	}
	bound, err := lockBindings(ctx, tx, claims)
	if err != nil {
		return err
	}
	stored := make(map[string]bool, len(bound)) // Bind adds the batch's bindings to bound
	for k := range bound {
		stored[k] = true
	}
	verdicts, changed := p.cfg.Rule().Bind(bound, claims)
	for j, v := range verdicts {
		batch[at[j]].dup, batch[at[j]].reused = v.Dup, v.Reused
	}
	var fresh, again bindings
	for _, c := range changed {
		if stored[c.Key] {
			again.add(c)
		} else {
			fresh.add(c)
		}
	}
	if err := fresh.store(ctx, tx, insertIdentitiesSQL, now); err != nil {
		return err
	}
	return again.store(ctx, tx, bindIdentitiesSQL, now)
}

// bindings are the columns of the msg_identity rows one statement writes.
type bindings struct {
	keys  []string
	ids   []int64
	shas  [][]byte
	dttms []time.Time
}

func (b *bindings) add(c identity.Claim) {
	b.keys, b.ids = append(b.keys, c.Key), append(b.ids, c.MsgID)
	b.shas, b.dttms = append(b.shas, c.SHA256), append(b.dttms, c.DTTM)
}

// store writes the bindings with query (insertIdentitiesSQL or bindIdentitiesSQL), if any.
func (b *bindings) store(ctx context.Context, tx pgx.Tx, query string, now time.Time) error {
	if len(b.keys) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, query, b.keys, b.ids, b.shas, b.dttms, now); err != nil {
		return fmt.Errorf("bind identities: %w", err)
	}
	return nil
}

// lockBindings reads and locks the current bindings of the claims' keys.
func lockBindings(ctx context.Context, tx pgx.Tx, claims []identity.Claim) (map[string]identity.Binding, error) {
	keys := make([]string, len(claims))
	for i, c := range claims {
		keys[i] = c.Key
	}
	rows, err := tx.Query(ctx, lockIdentitiesSQL, keys)
	if err != nil {
		return nil, fmt.Errorf("read identities: %w", err)
	}
	bound := make(map[string]identity.Binding, len(keys))
	var k string
	var b identity.Binding
	if _, err = pgx.ForEachRow(rows, []any{&k, &b.MsgID, &b.SHA256, &b.DTTM}, func() error {
		bound[k] = b
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read identities: %w", err)
	}
	return bound, nil
}
