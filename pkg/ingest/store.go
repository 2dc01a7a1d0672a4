package ingest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/msgx/msgx/pkg/mailbox"
	"github.com/msgx/msgx/pkg/sis"
	"github.com/msgx/msgx/pkg/wake"
)

// Every PostgreSQL statement of ingest, with bound parameters only. Time always comes in as a
// parameter from the injected clock; no statement calls now().

const (
	loadCursorSQL = `SELECT watermark, gap_start, gap_first_seen_at, gap_horizon FROM inbox_cursor`

	// enqueueFreshSQL inserts PENDING rows for a batch of mailbox messages in one statement when
	// no row of the batch's id range ($8..$9) is enqueued yet, the usual case, and otherwise none:
	// a plain insert, where ON CONFLICT would make PostgreSQL insert each row speculatively and
	// confirm it, about a third more time a row. A row the compat entry enqueues meanwhile fails
	// it with a unique violation (enqueue then takes enqueueSQL's way).
	enqueueFreshSQL = `INSERT INTO proc_state (msg_id, raw, raw_bytes, raw_sha256, status, received_at, enqueued_at, late)
SELECT m.msg_id, m.raw, m.raw_bytes, m.raw_sha256, 'PENDING', m.received_at, $6, $7
  FROM unnest($1::bigint[], $2::text[], $3::bytea[], $4::bytea[], $5::timestamp[]) AS m(msg_id, raw, raw_bytes, raw_sha256, received_at)
 WHERE NOT EXISTS (SELECT 1 FROM proc_state WHERE msg_id BETWEEN $8 AND $9)`

	// enqueueSQL inserts PENDING rows for a batch of mailbox messages in one statement. A rescan
	// or a row the compat entry enqueued first conflicts and is left as it is.
	enqueueSQL = `INSERT INTO proc_state (msg_id, raw, raw_bytes, raw_sha256, status, received_at, enqueued_at, late)
SELECT m.msg_id, m.raw, m.raw_bytes, m.raw_sha256, 'PENDING', m.received_at, $6, $7
  FROM unnest($1::bigint[], $2::text[], $3::bytea[], $4::bytea[], $5::timestamp[]) AS m(msg_id, raw, raw_bytes, raw_sha256, received_at)
    ON CONFLICT (msg_id) DO NOTHING
RETURNING msg_id`

	// skipSQL records the skipped ids of a permanent gap in the ledger.
	// passed_by says how they were judged permanent (aged or proved).
	skipSQL = `INSERT INTO inbox_gap (msg_id, first_seen_at, skipped_at, reprobe_until, passed_by)
SELECT id, $3, $4, $5, $6 FROM generate_series($1::bigint, $2::bigint) AS id
    ON CONFLICT (msg_id) DO NOTHING`

	// moveCursorSQL writes the new cursor if the watermark is still the one the step started from.
	moveCursorSQL = `UPDATE inbox_cursor
   SET watermark = $2, gap_start = $3, gap_first_seen_at = $4, updated_at = $5, gap_horizon = $6,
       max_commit_delay = $7
 WHERE watermark = $1 AND $2 >= watermark`

	// compatEnqueueSQL enqueues one row inserted by the compat entry (usually above W: INV-4).
	// An id the poller already skipped is a late row.
	compatEnqueueSQL = `INSERT INTO proc_state (msg_id, raw, raw_sha256, status, received_at, enqueued_at, late)
VALUES ($1, $2, $3, 'PENDING', $4, $5, EXISTS (SELECT 1 FROM inbox_gap WHERE msg_id = $1))
    ON CONFLICT (msg_id) DO NOTHING`

	// reprobeRangesSQL returns the skipped ids still under re-probe as islands of consecutive ids.
	reprobeRangesSQL = `SELECT min(msg_id), max(msg_id)
  FROM (SELECT msg_id, msg_id - row_number() OVER (ORDER BY msg_id) AS island
          FROM inbox_gap
         WHERE found_at IS NULL AND reprobe_until > $1) AS g
 GROUP BY island
 ORDER BY 1
 LIMIT $2`

	// ledgerStatsSQL counts the skipped ids still under re-probe and their oldest first-seen time.
	ledgerStatsSQL = `SELECT count(*), min(first_seen_at)
  FROM inbox_gap
 WHERE found_at IS NULL AND reprobe_until > $1`

	// markFoundSQL closes the ledger entries of late rows.
	markFoundSQL = `UPDATE inbox_gap SET found_at = $2
 WHERE msg_id = ANY($1::bigint[]) AND found_at IS NULL
RETURNING msg_id, first_seen_at, skipped_at`
)

// DB is what ingest needs from PostgreSQL (a *pgxpool.Pool).
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// errCursorMoved means inbox_cursor was changed by someone else since this instance loaded it.
var errCursorMoved = errors.New("inbox_cursor moved under this instance")

func loadCursor(ctx context.Context, db DB) (cursor, error) {
	var (
		c       cursor
		start   pgtype.Int8
		seen    pgtype.Timestamptz
		horizon pgtype.Int8
	)
	if err := db.QueryRow(ctx, loadCursorSQL).Scan(&c.W, &start, &seen, &horizon); err != nil {
		return cursor{}, fmt.Errorf("load inbox cursor: %w", err)
	}
	if start.Valid {
		c.GapStart = start.Int64
	}
	if seen.Valid {
		c.FirstSeen = seen.Time
	}
	if horizon.Valid {
		c.Horizon = horizon.Int64
	}
	return c, nil
}

// copies are the columns of a batch of raw copies, in the arrays unnest takes.
type copies struct {
	ids      []int64
	raws     []pgtype.Text
	bytes    [][]byte // the mailbox bytes where raws[i] is not them (see rawCopy), else nil
	sums     [][]byte
	received []pgtype.Timestamp
	// unstorable lists ids whose text PostgreSQL cannot hold (see rawCopy).
	unstorable []int64
	// chinese holds the rows declaring GB2312, GBK or GB18030 and how their bytes were read.
	chinese map[int64]sis.Text
}

func newCopies(msgs []mailbox.Message) copies {
	c := copies{
		ids:      make([]int64, len(msgs)),
		raws:     make([]pgtype.Text, len(msgs)),
		bytes:    make([][]byte, len(msgs)),
		sums:     make([][]byte, len(msgs)),
		received: make([]pgtype.Timestamp, len(msgs)),
	}
	for i, m := range msgs {
		c.ids[i] = m.ID
		raw, sum, text, ok := rawCopy(m.Text)
		c.raws[i], c.sums[i] = raw, sum
		if !ok {
			c.unstorable = append(c.unstorable, m.ID)
		}
		if !raw.Valid || raw.String != m.Text {
			c.bytes[i] = []byte(m.Text)
		}
		if text.Form == sis.FormConverted || text.Form == sis.FormDeclared {
			if c.chinese == nil {
				c.chinese = map[int64]sis.Text{}
			}
			c.chinese[m.ID] = sis.Text{Declared: text.Declared, Form: text.Form}
		}
		c.received[i] = receivedAt(m.ReceivedAt)
	}
	return c
}

// rawCopy returns the text to store, the SHA-256 of the mailbox text and how it was read
// (docs/sis.md §a.4). The stored text is the mailbox text exactly, except for bytes in a declared
// GB2312, GBK or GB18030 charset (a binary column): PostgreSQL text holds UTF-8 only, so their
// UTF-8 reading is stored under the unchanged declaration, and encoding it in that charset
// gives the mailbox bytes back exactly (the SHA-256 is of those). A NUL byte, or bytes that are
// text in no charset msgx reads, cannot be stored as text: raw NULL, so they cannot block
// ingest. In both cases the caller keeps the mailbox bytes themselves (raw_bytes), from which the
// processor reads the message (CODEC_ERROR for an encoding it does not read, MALFORMED for a NUL
// byte or invalid UTF-8 under a UTF-8 declaration).
func rawCopy(text string) (pgtype.Text, []byte, sis.Text, bool) {
	sum := sha256.Sum256([]byte(text))
	if strings.IndexByte(text, 0) >= 0 {
		return pgtype.Text{}, sum[:], sis.Text{}, false
	}
	read, err := sis.ReadText(text)
	if err != nil {
		read = sis.Text{UTF8: text} // an encoding msgx does not read: the processor's CODEC_ERROR
	}
	if !utf8.ValidString(read.UTF8) {
		return pgtype.Text{}, sum[:], read, false
	}
	return pgtype.Text{String: read.UTF8, Valid: true}, sum[:], read, true
}

func receivedAt(t time.Time) pgtype.Timestamp {
	if t.IsZero() {
		return pgtype.Timestamp{}
	}
	return pgtype.Timestamp{Time: t, Valid: true}
}

// enqueue inserts c as PENDING rows and returns the ids actually inserted: all of them by a plain
// insert when none of their id range is enqueued, else those not enqueued yet.
func enqueue(ctx context.Context, tx pgx.Tx, c copies, now time.Time, late bool) ([]int64, error) {
	if len(c.ids) == 0 {
		return nil, nil
	}
	fresh, err := enqueueFresh(ctx, tx, c, now, late)
	if err != nil {
		return nil, err
	}
	if fresh {
		return c.ids, nil
	}
	rows, err := tx.Query(ctx, enqueueSQL, c.ids, c.raws, c.bytes, c.sums, c.received, now, late)
	if err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	return ids, nil
}

// enqueueFresh inserts c by enqueueFreshSQL, under a savepoint so that a row the compat entry
// enqueued meanwhile (a unique violation) leaves the transaction usable; it reports whether the
// rows went in.
func enqueueFresh(ctx context.Context, tx pgx.Tx, c copies, now time.Time, late bool) (bool, error) {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("enqueue: %w", err)
	}
	defer func() { _ = sp.Rollback(ctx) }() // after Commit, a no-op
	tag, err := sp.Exec(ctx, enqueueFreshSQL, c.ids, c.raws, c.bytes, c.sums, c.received, now, late,
		slices.Min(c.ids), slices.Max(c.ids))
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "23505": // unique_violation
		return false, nil
	case err != nil:
		return false, fmt.Errorf("enqueue: %w", err)
	}
	if err := sp.Commit(ctx); err != nil {
		return false, fmt.Errorf("enqueue: %w", err)
	}
	return tag.RowsAffected() == int64(len(c.ids)), nil
}

// recordSkip adds the skipped ids of sk to the gap ledger.
func recordSkip(ctx context.Context, tx pgx.Tx, sk skip, now, reprobeUntil time.Time) error {
	if _, err := tx.Exec(ctx, skipSQL, sk.from, sk.to, sk.since, now, reprobeUntil, string(sk.by)); err != nil {
		return fmt.Errorf("record skipped ids %d..%d: %w", sk.from, sk.to, err)
	}
	return nil
}

// moveCursor writes next, guarded by the watermark the step started from, with the age at which
// this ingest judges a gap permanent (the readers of the gap judge it by that).
func moveCursor(ctx context.Context, tx pgx.Tx, from int64, next cursor, now time.Time, maxCommitDelay time.Duration) error {
	var (
		start, horizon pgtype.Int8
		seen           pgtype.Timestamptz
	)
	if next.GapStart != 0 {
		start = pgtype.Int8{Int64: next.GapStart, Valid: true}
		seen = pgtype.Timestamptz{Time: next.FirstSeen, Valid: true}
		horizon = pgtype.Int8{Int64: next.Horizon, Valid: true}
	}
	tag, err := tx.Exec(ctx, moveCursorSQL, from, next.W, start, seen, now, horizon, maxCommitDelay)
	if err != nil {
		return fmt.Errorf("move watermark: %w", err)
	}
	if tag.RowsAffected() != 1 {
		return errCursorMoved
	}
	if next.W > from {
		return wake.Notify(ctx, tx, wake.Inbox) // the pump has work
	}
	return nil
}

// compatEnqueue enqueues one compat row; inserted is false when it was already there.
func compatEnqueue(ctx context.Context, db DB, id int64, text string, received, now time.Time) (inserted bool, err error) {
	raw, sum, _, _ := rawCopy(text)
	tag, err := db.Exec(ctx, compatEnqueueSQL, id, raw, sum, receivedAt(received), now)
	if err != nil {
		return false, fmt.Errorf("enqueue compat row %d: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}

// reprobeRanges returns up to limit islands of skipped ids still under re-probe.
func reprobeRanges(ctx context.Context, db DB, now time.Time, limit int) ([]mailbox.IDRange, error) {
	rows, err := db.Query(ctx, reprobeRangesSQL, now, limit)
	if err != nil {
		return nil, fmt.Errorf("list skipped ids: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (mailbox.IDRange, error) {
		var ir mailbox.IDRange
		err := r.Scan(&ir.From, &ir.To)
		return ir, err
	})
	if err != nil {
		return nil, fmt.Errorf("list skipped ids: %w", err)
	}
	return out, nil
}

// ledgerStats counts the skipped ids under re-probe and returns the oldest first-seen time.
func ledgerStats(ctx context.Context, db DB, now time.Time) (int64, time.Time, error) {
	var (
		n      int64
		oldest pgtype.Timestamptz
	)
	if err := db.QueryRow(ctx, ledgerStatsSQL, now).Scan(&n, &oldest); err != nil {
		return 0, time.Time{}, fmt.Errorf("count skipped ids: %w", err)
	}
	return n, oldest.Time, nil
}

// foundGap is a ledger entry closed by a late row.
type foundGap struct {
	ID                   int64
	FirstSeen, SkippedAt time.Time
}

// markFound closes the ledger entries of ids.
func markFound(ctx context.Context, tx pgx.Tx, ids []int64, now time.Time) ([]foundGap, error) {
	rows, err := tx.Query(ctx, markFoundSQL, ids, now)
	if err != nil {
		return nil, fmt.Errorf("close ledger entries: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (foundGap, error) {
		var g foundGap
		err := r.Scan(&g.ID, &g.FirstSeen, &g.SkippedAt)
		return g, err
	})
	if err != nil {
		return nil, fmt.Errorf("close ledger entries: %w", err)
	}
	return out, nil
}
