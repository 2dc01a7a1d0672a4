package migrate_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/migrate"
)

// A database that does not exist and a schema that is not migrated name their fix; other errors
// have no hint.
func TestHint(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	u, err := url.Parse(db.URL)
	require.NoError(t, err)
	u.Path = "/msgx_no_such_database_hint_test"
	_, err = pgx.Connect(context.Background(), u.String())
	require.ErrorContains(t, err, `database "msgx_no_such_database_hint_test" does not exist`)
	require.Contains(t, migrate.Hint(err), "run make up")
	require.Contains(t, migrate.Hint(err), "make demo leaves msgx_demo", "names the demo's database")
	require.Contains(t, migrate.Hint(fmt.Errorf("leader: %w", err)), "msgxctl migrate against MSGX_PG_URL", "wrapped errors too")

	_, err = db.Pool.Exec(context.Background(), `SELECT * FROM msgx_hint_no_such_table`)
	require.Contains(t, migrate.Hint(err), "run msgxctl migrate against MSGX_PG_URL")

	_, err = db.Pool.Exec(context.Background(), `SELECT 1/0`)
	require.Error(t, err)
	require.Empty(t, migrate.Hint(err))
	require.Empty(t, migrate.Hint(nil))
}
