package testdb

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/privdb"
)

// PrimaryWithStandby starts a private PostgreSQL primary with an asynchronous streaming standby
// (a test may pause its WAL senders), both stopped when the test ends, and returns the primary.
func PrimaryWithStandby(t testing.TB) *privdb.Postgres {
	t.Helper()
	primary, standby, err := privdb.StartWithStandby(context.Background(), privdb.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, errors.Join(standby.Close(), primary.Close())) })
	return primary
}
