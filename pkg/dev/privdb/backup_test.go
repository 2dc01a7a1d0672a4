package privdb

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/devca"
)

// The restores the chaos scenarios rehearse, each as an operator makes it: a base backup started
// without archive recovery keeps the timeline and the system identifier and has only what the
// backup had; a point-in-time recovery from the archive ends on a new timeline with what was
// committed before its target; a logical dump restored into a cluster made anew has another
// system identifier and timeline 1. The cluster is made as the fault suite makes it: TLS only,
// with a password.
func TestBackupsAndRestores(t *testing.T) {
	t.Parallel()
	ca, err := devca.New(t.TempDir(), time.Hour)
	require.NoError(t, err)
	const password = "pw-backups"
	p, err := StartPostgresWith(Options{Password: password, TLS: &TLS{CAFile: ca.CAFile, CertFile: ca.CertFile, KeyFile: ca.KeyFile}})
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	ctx := context.Background()
	query := func(q string) (rows, timeline int64, sysID string) {
		t.Helper()
		conn, err := pgx.Connect(ctx, p.AdminURL())
		require.NoError(t, err)
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, q)
		require.NoError(t, err)
		require.NoError(t, conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM kept), ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint,
			(SELECT system_identifier::text FROM pg_control_system())`).Scan(&rows, &timeline, &sysID))
		return rows, timeline, sysID
	}
	_, tl, sys := query(`CREATE TABLE kept (i int); INSERT INTO kept VALUES (1)`)
	require.Equal(t, int64(1), tl)

	require.NoError(t, p.EnableArchive(ctx))
	b, err := p.BaseBackup()
	require.NoError(t, err)
	defer func() { require.NoError(t, b.Close()) }()
	query(`INSERT INTO kept VALUES (2)`)
	var target time.Time
	require.NoError(t, p.QueryRow(ctx, `SELECT clock_timestamp()`, &target))
	require.NoError(t, p.SwitchWAL(ctx))
	query(`INSERT INTO kept VALUES (3)`)
	require.NoError(t, p.SwitchWAL(ctx))
	require.NoError(t, p.Kill())
	require.NoError(t, p.RestoreBackup(b, Recovery{Target: target}))
	n, tl2, sys2 := query(``)
	require.Equal(t, [3]any{int64(2), int64(2), sys}, [3]any{n, tl2, sys2}, "recovered to the target (row 2, not row 3), on a new timeline")

	b2, err := p.BaseBackup()
	require.NoError(t, err)
	defer func() { require.NoError(t, b2.Close()) }()
	query(`INSERT INTO kept VALUES (4)`)
	require.NoError(t, p.Kill())
	require.NoError(t, p.RestoreBackup(b2, Recovery{}))
	n, tl3, sys3 := query(``)
	require.Equal(t, [3]any{int64(2), tl2, sys}, [3]any{n, tl3, sys3}, "without archive recovery: the backup's rows, its timeline")

	require.NoError(t, p.NewTimeline())
	_, tl4, _ := query(``)
	require.Equal(t, tl3+1, tl4)

	d, err := p.Dump("postgres")
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	require.NoError(t, p.Kill())
	require.NoError(t, p.Reinit())
	require.NoError(t, p.CreateDatabase(ctx, "restored"))
	require.NoError(t, p.RestoreDump(d, "restored"))
	conn, err := pgx.Connect(ctx, p.URL("postgres", password, "restored"))
	require.NoError(t, err)
	defer conn.Close(ctx)
	var sys5 string
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*), ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint,
		(SELECT system_identifier::text FROM pg_control_system()) FROM kept`).Scan(&n, &tl, &sys5))
	require.Equal(t, [2]int64{2, 1}, [2]int64{n, tl}, "the dump's rows, timeline 1")
	require.NotEqual(t, sys, sys5, "another cluster")
}
