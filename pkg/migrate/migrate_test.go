package migrate_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/migrate"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestLoadParsesEveryMigration(t *testing.T) {
	t.Parallel()
	ms, err := migrate.Load()
	require.NoError(t, err)
	require.NotEmpty(t, ms)
	for i, m := range ms {
		require.NotContains(t, m.Up, "-- migrate:down", m.Name)
		require.NotEmpty(t, strings.TrimSpace(m.Up), m.Name)
		if i > 0 {
			require.Greater(t, m.Version, ms[i-1].Version)
		}
	}
}

// Two migration runs started at once (two Kubernetes Jobs) apply each file exactly once.
func TestConcurrentUpAppliesOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, testdb.AdminURL())
	require.NoError(t, err)
	schema := "t_" + testdb.RandomSuffix()
	_, err = admin.Exec(ctx, "CREATE SCHEMA "+schema)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		_ = admin.Close(context.Background())
	})

	url := testdb.WithSearchPath(testdb.AdminURL(), schema)
	const runs = 4
	applied := make([][]string, runs)
	errs := make([]error, runs)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := pgx.Connect(ctx, url)
			if err != nil {
				errs[i] = err
				return
			}
			defer conn.Close(ctx)
			applied[i], errs[i] = migrate.Up(ctx, conn)
		}()
	}
	wg.Wait()
	ms, err := migrate.Load()
	require.NoError(t, err)
	total := 0
	for i := range runs {
		require.NoError(t, errs[i])
		total += len(applied[i])
	}
	require.Equal(t, len(ms), total, "every migration applied exactly once across the concurrent runs")

	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	again, err := migrate.Up(ctx, conn)
	require.NoError(t, err)
	require.Empty(t, again)
	var n int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n))
	require.Equal(t, len(ms), n)
}
