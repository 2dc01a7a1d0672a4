package mailbox_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/mailbox"
)

// TestCharsets: the start check reads the connection's and the columns' charsets, and refuses a
// connection that does not talk utf8mb4.
func TestCharsets(t *testing.T) {
	t.Parallel()
	db, mb := setup(t)
	ctx := context.Background()
	c, err := mb.Charsets(ctx)
	require.NoError(t, err)
	require.Equal(t, mailbox.Charsets{Connection: "utf8mb4", Results: "utf8mb4", Inbound: "utf8mb4", Outbound: "utf8mb4"}, c)
	require.NoError(t, c.Check())
	require.Empty(t, c.Warning())

	_, err = db.SQL.ExecContext(ctx, `ALTER TABLE cminmsgs MODIFY CMINMSGS_CLOB_MSG mediumtext CHARACTER SET gbk NOT NULL`)
	require.NoError(t, err)
	_, err = db.SQL.ExecContext(ctx, `ALTER TABLE coutmsgs MODIFY COUTMSGS_CLOB_MSG mediumblob`)
	require.NoError(t, err)
	c, err = mb.Charsets(ctx)
	require.NoError(t, err)
	require.Equal(t, "gbk", c.Inbound)
	require.Equal(t, "binary", c.Outbound)
	require.NoError(t, c.Check())

	_, err = db.SQL.ExecContext(ctx, `ALTER TABLE cminmsgs MODIFY CMINMSGS_CLOB_MSG mediumtext CHARACTER SET latin1 NOT NULL`)
	require.NoError(t, err)
	c, err = mb.Charsets(ctx)
	require.NoError(t, err)
	require.Contains(t, c.Warning(), "latin1")

	gbk, err := mailbox.Open(db.DSN + "&charset=gbk")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, gbk.Close()) })
	c, err = gbk.Charsets(ctx)
	require.NoError(t, err)
	require.Equal(t, "gbk", c.Connection)
	require.ErrorIs(t, c.Check(), mailbox.ErrCharset)
}
