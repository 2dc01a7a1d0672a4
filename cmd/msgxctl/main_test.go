package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/config"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/settings"
)

// ctlConfig is the msgxctl configuration for the database at url in the airport time zone tz
// ("": UTC), a leader counting as stale 5 s after its last renewal.
func ctlConfig(url, tz string) config.Config {
	return config.Config{Process: settings.Process{PGURL: url, AirportTZ: tz}, Leader: leader.Config{SessionTimeout: 5 * time.Second}}
}

// ctlDB is a fresh schema and the msgxctl configuration that reaches it as its owner (ctlConfig).
func ctlDB(t *testing.T, tz string) (*testdb.DB, config.Config) {
	t.Helper()
	db := testdb.New(t)
	return db, ctlConfig(db.URL, tz)
}

// count is the number query q returns.
func count(t *testing.T, db *testdb.DB, q string) int {
	t.Helper()
	var n int
	require.NoError(t, db.Pool.QueryRow(context.Background(), q).Scan(&n))
	return n
}
