package mailbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/mailbox"
	"github.com/msgx/msgx/pkg/roles"
)

func TestTransactions(t *testing.T) {
	t.Parallel()
	db, _ := setup(t)
	ctx := context.Background()
	users := db.Users(t)
	_, err := db.SQL.Exec("GRANT PROCESS ON *.* TO " + roles.MySQLUser(roles.MySQLOptions{Prefix: users.Prefix}, roles.Ingest))
	require.NoError(t, err)
	mb, err := mailbox.Open(users.DSN(roles.Ingest))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, mb.Close()) })

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
