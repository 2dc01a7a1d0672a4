package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/config"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/settings"
)

// msgxctl status shows each leader's renewal age and marks one not renewed within the session
// timeout as stale.
func TestStatusShowsRenewalAgeAndStaleLeader(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	now := time.Now()
	_, err := db.Pool.Exec(ctx, `INSERT INTO leader_lease (role, epoch, holder, backend_pid, acquired_at, renewed_at) VALUES
	  ('processor', 3, 'live:1', 0, $1, $2), ('dispatcher', 2, 'gone:2', 0, $1, $3)`,
		now.Add(-time.Hour), now.Add(-time.Second), now.Add(-40*time.Second))
	require.NoError(t, err)
	cfg := config.Config{Process: settings.Process{PGURL: db.URL}, Leader: leader.Config{SessionTimeout: 5 * time.Second}}
	var out bytes.Buffer
	require.NoError(t, statusCmd(ctx, cfg, nil, &out))
	lines := map[string]string{}
	for _, l := range bytes.Split(out.Bytes(), []byte("\n")) {
		for _, role := range []string{"processor", "dispatcher"} {
			if bytes.HasPrefix(l, []byte("leader "+role)) {
				lines[role] = string(l)
			}
		}
	}
	require.Regexp(t, `epoch 3, live:1 since .*, renewed 1\.\ds ago$`, lines["processor"])
	require.Regexp(t, `epoch 2, gone:2 since .*, renewed 40\.\ds ago STALE`, lines["dispatcher"])
}
