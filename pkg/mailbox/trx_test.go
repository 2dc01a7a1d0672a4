package mailbox_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/mailboxtest"
	"github.com/msgx/msgx/pkg/mailbox"
	"github.com/msgx/msgx/pkg/roles"
)

// withProcess opens the mailbox as ingest's user granted PROCESS.
func withProcess(t *testing.T, db *mailboxtest.DB) *mailbox.Mailbox {
	t.Helper()
	users := db.Users(t)
	_, err := db.SQL.Exec("GRANT PROCESS ON *.* TO " + roles.MySQLUser(roles.MySQLOptions{Prefix: users.Prefix}, roles.Ingest))
	require.NoError(t, err)
	mb, err := mailbox.Open(users.DSN(roles.Ingest))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, mb.Close()) })
	return mb
}

func TestTransactions(t *testing.T) {
	t.Parallel()
	db, _ := setup(t)
	ctx := context.Background()
	mb := withProcess(t, db)

	tx, err := db.SQL.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	_, err = tx.Exec(`INSERT INTO cminmsgs (CMINMSGS_CLOB_MSG) VALUES ('<MSG>held</MSG>')`)
	require.NoError(t, err)
	_, err = db.SQL.Exec(`INSERT INTO cminmsgs (CMINMSGS_CLOB_MSG) VALUES ('<MSG>committed</MSG>')`)
	require.NoError(t, err)

	var l mailbox.TrxList
	require.Eventually(t, func() bool { // InnoDB's copy of the list refreshes after 100 ms unread
		l, err = mb.Transactions(ctx)
		return err == nil && !l.OwnStarted.IsZero()
	}, 10*time.Second, 50*time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, int64(2), l.Horizon, "the highest committed id of the reader's snapshot")
	require.False(t, l.ReadOnly)
	require.Equal(t, int64(1), l.AutoIncStep)
	require.Equal(t, "InnoDB", l.Engine)
	require.WithinDuration(t, l.Now, l.OwnStarted, 2*time.Second)
	held := false
	for _, o := range l.Others {
		held = held || (o.Thread != 0 && !o.ReadOnly && !o.Started.After(l.Now))
	}
	require.True(t, held, "the open insert is listed: %+v", l.Others)

	_, err = mb.Transactions(ctx)
	require.ErrorIs(t, err, mailbox.ErrTrxListTooSoon)

	// Without PROCESS the list is refused.
	plain := db.Users(t)
	nb, err := mailbox.Open(plain.DSN(roles.Ingest))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, nb.Close()) })
	_, err = nb.Transactions(ctx)
	require.ErrorIs(t, err, mailbox.ErrNoProcess)
}

// TestTransactionsNeverStaleWithAPoller: another session reads INNODB_TRX every 20 ms (a
// monitoring tool), so InnoDB keeps answering from its cached copy. A read whose list is such a
// copy must say so (no own start), even on the pooled connection an earlier read used and whose
// row the copy still shows; a read that claims to be fresh must list a transaction opened after
// the copy was made.
func TestTransactionsNeverStaleWithAPoller(t *testing.T) {
	t.Parallel()
	db, _ := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mb := withProcess(t, db)

	var first mailbox.TrxList
	var err error
	require.Eventually(t, func() bool {
		first, err = mb.Transactions(ctx)
		return err == nil && !first.OwnStarted.IsZero()
	}, 10*time.Second, 50*time.Millisecond, "a fresh first read")

	pollCtx, stopPolling := context.WithCancel(ctx)
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for pollCtx.Err() == nil {
			rows, err := db.SQL.QueryContext(pollCtx, `SELECT trx_id FROM information_schema.INNODB_TRX`)
			if err == nil {
				for rows.Next() {
				}
				_ = rows.Close()
			}
			select {
			case <-pollCtx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	defer func() { stopPolling(); <-polled }()

	tx, err := db.SQL.BeginTx(context.Background(), nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	var holder int64
	require.NoError(t, tx.QueryRow(`SELECT CONNECTION_ID()`).Scan(&holder))
	_, err = tx.Exec(`INSERT INTO cminmsgs (CMINMSGS_CLOB_MSG) VALUES ('<MSG>held</MSG>')`)
	require.NoError(t, err)

	// reads reads the list until the deadline, or until a fresh read when untilFresh; it returns
	// the fresh reads, each of which must list the insert.
	reads := func(d time.Duration, untilFresh bool) int {
		fresh := 0
		for deadline := time.Now().Add(d); time.Now().Before(deadline) && (!untilFresh || fresh == 0); {
			l, err := mb.Transactions(ctx)
			if errors.Is(err, mailbox.ErrTrxListTooSoon) {
				continue
			}
			require.NoError(t, err)
			if l.OwnStarted.IsZero() {
				continue // a copy, and it says so
			}
			fresh++
			listed := false
			for _, o := range l.Others {
				listed = listed || o.Thread == holder
			}
			require.True(t, listed, "a read that claims to be fresh lists the insert opened after the copy: %+v", l)
		}
		return fresh
	}
	t.Logf("%d fresh reads while polled", reads(2*time.Second, false))
	stopPolling()
	<-polled
	require.Positive(t, reads(5*time.Second, true), "once nobody else polls, a read is fresh again")
}
