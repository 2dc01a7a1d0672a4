package roles_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/replication"
	"github.com/msgx/msgx/pkg/roles"
)

// The two roles that write markers read the standbys' replay positions (pg_read_all_stats), so
// a marker waiting for a standby (MSGX_MARKER_STANDBYS) is written once the standby replayed
// its commit; a role without the membership (ingest) cannot read them.
func TestMarkerRolesReadTheStandbys(t *testing.T) {
	t.Parallel()
	primary := testdb.PrimaryWithStandby(t)
	db := testdb.NewAt(t, primary.AdminURL())
	r := db.Roles(t)
	cfg := replication.Config{Standbys: 1, Wait: 20 * time.Second}
	for _, role := range []roles.Role{roles.Processor, roles.Jobs} {
		pool := r.Pool(t, role)
		var logs bytes.Buffer
		w := replication.NewWaiter(cfg, clock.System{}, nil)
		w.Check(ctx, pool, zerolog.New(&logs))
		require.Contains(t, logs.String(), "written once the standbys have replayed their commit", role)
		_, err := db.Pool.Exec(ctx, `SELECT pg_current_xact_id()`) // a commit with a record
		require.NoError(t, err)
		require.NoError(t, w.Await(ctx, pool, 1, zerolog.Nop()), "%s reads the standby's replay position", role)
	}
	var logs bytes.Buffer
	replication.NewWaiter(cfg, clock.System{}, nil).Check(ctx, r.Pool(t, roles.Ingest), zerolog.New(&logs))
	require.Contains(t, logs.String(), "this role cannot read the standbys' replay positions")
}
