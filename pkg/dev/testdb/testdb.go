// Package testdb gives each test its own PostgreSQL schema with every migration applied, on the
// real server (MSGX_TEST_PG_URL, default postgres://postgres@127.0.0.1:5432/test). Schemas are
// dropped when the test ends, so tests run in parallel and leave nothing behind.
package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/migrate"
)

// DefaultURL is the developer machine's PostgreSQL (trust auth).
const DefaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// AdminURL is the server URL tests connect to before choosing their schema.
func AdminURL() string {
	if u := os.Getenv("MSGX_TEST_PG_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// DB is one test's schema.
type DB struct {
	Schema string
	URL    string // AdminURL with search_path set to Schema: give it to code under test
	Pool   *pgxpool.Pool

	adminURL string
	rolesMu  sync.Mutex
	roles    *Roles
}

// New creates a fresh schema, applies the migrations and returns a pool bound to it.
func New(t testing.TB) *DB {
	t.Helper()
	return NewAt(t, AdminURL())
}

// NewAt is New on the server of adminURL (a superuser's URL), e.g. a private TLS cluster
// (pkg/dev/tlsenv).
func NewAt(t testing.TB, adminURL string) *DB {
	t.Helper()
	ctx := context.Background()
	schema := "t_" + RandomSuffix()

	admin, err := pgx.Connect(ctx, adminURL)
	require.NoError(t, err, "connect to PostgreSQL at %s", adminURL)
	_, err = admin.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize())
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := admin.Exec(context.Background(), "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		require.NoError(t, err)
		require.NoError(t, admin.Close(context.Background()))
	})

	u := WithSearchPath(adminURL, schema)
	conn, err := pgx.Connect(ctx, u)
	require.NoError(t, err)
	_, err = migrate.Up(ctx, conn)
	require.NoError(t, err, "migrate schema %s", schema)
	require.NoError(t, conn.Close(ctx))

	pool, err := pgxpool.New(ctx, u)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return &DB{Schema: schema, URL: u, Pool: pool, adminURL: adminURL}
}

// Int64s is the one bigint column that sql selects in the schema, row by row.
func (d *DB) Int64s(t testing.TB, sql string, args ...any) []int64 {
	t.Helper()
	rows, err := d.Pool.Query(context.Background(), sql, args...)
	require.NoError(t, err, sql)
	out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err, sql)
	return out
}

// WithSearchPath returns dsn with its search_path set to schema. Test sessions also commit
// without waiting for the WAL flush (synchronous_commit=off): a commit is still atomic and
// visible, and survives the death of any client process; only a server crash could lose it.
// And the server checks every second that the test is still there while a statement runs
// (client_connection_check_interval): a test killed at its timeout in the middle of a long
// statement would otherwise leave it running in the server, loading every later test and
// benchmark (seen: an EXPLAIN that ran on for half an hour).
func WithSearchPath(dsn, schema string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		panic(fmt.Sprintf("testdb: bad URL %q: %v", dsn, err))
	}
	q := u.Query()
	q.Set("search_path", schema)
	q.Set("synchronous_commit", "off")
	q.Set("client_connection_check_interval", "1s")
	u.RawQuery = q.Encode()
	return u.String()
}

// RandomSuffix returns 12 random lower-case hex characters.
func RandomSuffix() string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

// AllEvents is every event the flight writers wrote, as one relation named msg_event, for
// tests that read what was enqueued: "FROM " + testdb.AllEvents. It is outbox.Events (testdb
// cannot import outbox, whose tests import testdb; TestAllEventsIsOutboxEvents keeps the two
// equal).
const AllEvents = `(
    SELECT event_id, target, partition_key, event_type, state_version, msg_id, payload, body, status, attempts,
           next_attempt_at, created_at, sent_at, last_error
      FROM msg_event_delivery
    UNION ALL
    SELECT event_id, 'KAFKA:schd', partition_key, event_type, state_version, msg_id, NULL::jsonb, body, status, attempts,
           next_attempt_at, created_at, sent_at, last_error
      FROM msg_state_out
    UNION ALL
    SELECT event_id, 'KAFKA:schd', partition_key, event_type, state_version, msg_id, NULL::jsonb, body, 'PENDING', 0,
           NULL::timestamptz, created_at, NULL::timestamptz, NULL::text
      FROM msg_state_log) AS msg_event`
