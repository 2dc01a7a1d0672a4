package chaos

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"time"

	"github.com/msgx/msgx/pkg/clock"
)

// purgeEvery is how often the purging AODB looks for marked rows: at once, for a person.
const purgeEvery = 20 * time.Millisecond

// purgeBatch bounds the rows one purge statement deletes.
const purgeBatch = 500

// purger plays an AODB that deletes every mailbox row it sees marked, at once (the AODB team
// purges on the marker, docs/spec.md §3.1), for as long as the scenario runs. It records every
// row it deleted: the comparison judges those against what the simulator wrote, as marked.
type purger struct {
	db     *sql.DB
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	purged map[int64]bool
	failed int   // purge rounds that failed (a MariaDB error); the next round tries again
	last   error // the last failure
}

// startPurge starts purging the mailbox of db until stop.
func startPurge(ctx context.Context, db *sql.DB) *purger {
	ctx, cancel := context.WithCancel(ctx)
	p := &purger{db: db, cancel: cancel, done: make(chan struct{}), purged: map[int64]bool{}}
	go func() {
		defer close(p.done)
		for {
			n, err := p.round(ctx)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				p.mu.Lock()
				p.failed, p.last = p.failed+1, err
				p.mu.Unlock()
			}
			if n < purgeBatch && !clock.WallSleep(ctx, purgeEvery) {
				return
			}
		}
	}()
	return p
}

// round deletes up to purgeBatch marked rows and records them. The marker is only ever set,
// never taken back (INV-7), so a row selected as marked is still marked when it is deleted.
func (p *purger) round(ctx context.Context) (int, error) {
	rows, err := p.db.QueryContext(ctx, `SELECT CMINMSGS_ID FROM cminmsgs WHERE CMINMSGS_DATE_PROCESSED IS NOT NULL ORDER BY CMINMSGS_ID LIMIT ?`, purgeBatch)
	if err != nil {
		return 0, err
	}
	var ids []any
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, err
		}
		ids = append(ids, id)
	}
	if err := errorsOf(rows); err != nil || len(ids) == 0 {
		return 0, err
	}
	q := `DELETE FROM cminmsgs WHERE CMINMSGS_DATE_PROCESSED IS NOT NULL AND CMINMSGS_ID IN (?` + strings.Repeat(",?", len(ids)-1) + `)`
	if _, err := p.db.ExecContext(ctx, q, ids...); err != nil {
		return 0, err
	}
	p.mu.Lock()
	for _, id := range ids {
		p.purged[id.(int64)] = true
	}
	p.mu.Unlock()
	return len(ids), nil
}

// errorsOf closes rows and returns the error of its iteration.
func errorsOf(rows *sql.Rows) error {
	err := rows.Err()
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	return err
}

// stop ends the purge and returns the rows it deleted, the rounds that failed and the last
// failure.
func (p *purger) stop() (map[int64]bool, int, error) {
	p.cancel()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.purged, p.failed, p.last
}

// endPurge stops the purge and reports what it did; it returns the rows it deleted.
func (r *Run) endPurge(p *purger) map[int64]bool {
	purged, failed, last := p.stop()
	r.Observe("the AODB purged %d marked mailbox rows at once", len(purged))
	if failed > 0 {
		r.Observe("%d purge rounds failed (last: %v)", failed, last)
	}
	return purged
}
