package mailbox

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
)

// TrxList is one read of InnoDB's list of open transactions (information_schema.INNODB_TRX),
// taken inside a transaction of the reader's own whose snapshot began before the read. It is what
// ingest's gap proof judges (pkg/ingest, proof.go).
type TrxList struct {
	// Now is the database's clock (NOW(6)) when the list was read, in the session's time zone.
	Now time.Time
	// Horizon is the highest mailbox id committed in the reader's snapshot (0: none). Every id
	// below it was allocated before the snapshot began.
	Horizon int64
	// OwnStarted is the start (trx_started, whole seconds) of the reader's own transaction, zero
	// when the list does not show it: then the list is InnoDB's copy from before the reader's
	// transaction began (it refreshes its copy only after 100 ms unread).
	OwnStarted time.Time
	// Others are the other open transactions.
	Others []Trx
	// PreparedXA is the number of prepared XA transactions (XA RECOVER).
	PreparedXA int
	// ReadOnly is the server's read_only (a replica, usually), and AutoIncStep its
	// auto_increment_increment (above 1 on a multi-writer cluster): the list then does not show
	// the transactions of the server where the mailbox rows are inserted.
	ReadOnly    bool
	AutoIncStep int64
	// Engine is cminmsgs' storage engine: the list shows InnoDB's transactions only.
	Engine string
}

// Trx is one open InnoDB transaction of another session.
type Trx struct {
	Started time.Time // trx_started: whole seconds of the server's system clock, in its time zone
	State   string    // trx_state: RUNNING, LOCK WAIT, ROLLING BACK, COMMITTING
	Thread  int64     // trx_mysql_thread_id; 0 for a transaction no session holds (a recovered or detached XA)
	// ReadOnly is a transaction started READ ONLY, and NonLocking an autocommit non-locking
	// SELECT: neither can insert a row.
	ReadOnly, NonLocking bool
}

// ErrNoProcess means the mailbox account may not read InnoDB's transaction list (PROCESS).
// (On MySQL 8 the list of prepared XA transactions needs XA_RECOVER_ADMIN as well.)
var ErrNoProcess = errors.New("mailbox: the account may not read InnoDB's transaction list (PROCESS privilege) or the prepared XA transactions")

// ErrTrxListTooSoon means the last read of the transaction list was less than TrxListIdle ago:
// InnoDB would answer from its copy of that read.
var ErrTrxListTooSoon = errors.New("mailbox: transaction list read again too soon")

// TrxListIdle is how long the transaction list is left unread between two reads: InnoDB refills
// its copy of the list only when it was last read more than 100 ms ago, so reading it more often
// would keep answering the same copy.
const TrxListIdle = 150 * time.Millisecond

// trxReads spaces the reads of the transaction list (real time: it is about InnoDB's cache).
type trxReads struct {
	mu   sync.Mutex
	last time.Time
}

func (r *trxReads) take() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.last.IsZero() && time.Since(r.last) < TrxListIdle {
		return false
	}
	r.last = time.Now()
	return true
}

// done restarts the spacing at the end of a read.
func (r *trxReads) done() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last = time.Now()
}

// Transactions reads InnoDB's list of open transactions (see TrxList). It returns ErrNoProcess
// without the privilege and ErrTrxListTooSoon within TrxListIdle of the last read.
func (m *Mailbox) Transactions(ctx context.Context) (TrxList, error) {
	if !m.trx.take() {
		return TrxList{}, ErrTrxListTooSoon
	}
	conn, err := m.db.Conn(ctx)
	if err != nil {
		return TrxList{}, fmt.Errorf("read transaction list: %w", err)
	}
	defer conn.Close()
	var l TrxList
	if l.PreparedXA, err = countRows(ctx, conn, xaRecoverSQL); err != nil {
		if isAccessDenied(err) {
			return TrxList{}, fmt.Errorf("%w: %w", ErrNoProcess, err)
		}
		return TrxList{}, fmt.Errorf("read prepared XA transactions: %w", err)
	}
	if _, err := conn.ExecContext(ctx, trxIsolationSQL); err != nil {
		return TrxList{}, fmt.Errorf("read transaction list: %w", err)
	}
	if _, err := conn.ExecContext(ctx, trxStartSQL); err != nil {
		return TrxList{}, fmt.Errorf("read transaction list: %w", err)
	}
	err = readTrxList(ctx, conn, &l)
	end := trxEndSQL
	if err != nil {
		end = trxEndOnErrorSQL
	}
	if _, endErr := conn.ExecContext(context.WithoutCancel(ctx), end); endErr != nil && err == nil {
		err = fmt.Errorf("end transaction list read: %w", endErr)
	}
	m.trx.done() // the spacing counts from the read's end: InnoDB's copy is as old as the read
	if err != nil {
		return TrxList{}, err
	}
	return l, nil
}

func readTrxList(ctx context.Context, conn *sql.Conn, l *TrxList) error {
	var b [8]byte
	_, _ = rand.Read(b[:])
	nonce := hex.EncodeToString(b[:])
	rows, err := conn.QueryContext(ctx, fmt.Sprintf(trxListSQL, nonce), "%msgx trx-list "+nonce+"%")
	if err != nil {
		if isAccessDenied(err) {
			return fmt.Errorf("%w: %w", ErrNoProcess, err)
		}
		return fmt.Errorf("read transaction list: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			t   Trx
			own bool
		)
		if err := rows.Scan(&l.Now, &l.Horizon, &l.ReadOnly, &l.AutoIncStep, &l.Engine, &own, &t.Started, &t.State, &t.Thread, &t.ReadOnly, &t.NonLocking); err != nil {
			return fmt.Errorf("scan transaction list: %w", err)
		}
		if own {
			l.OwnStarted = t.Started
			continue
		}
		l.Others = append(l.Others, t)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read transaction list: %w", err)
	}
	return nil
}

func countRows(ctx context.Context, conn *sql.Conn, query string) (int, error) {
	rows, err := conn.QueryContext(ctx, query)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
	}
	return n, rows.Err()
}

// isAccessDenied reports MySQL's "you need the X privilege" (1227) and "access denied" (1142, 1143).
func isAccessDenied(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1227 || me.Number == 1142 || me.Number == 1143)
}
