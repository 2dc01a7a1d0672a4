package mailbox_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// MarkIf asks its guard, with the rows locked, which of the unmarked rows it may write, and
// writes only those (only NULL → at, INV-7). A guard that fails writes nothing, and its error
// says what failed.
func TestMarkIf(t *testing.T) {
	t.Parallel()
	db, mb := setup(t)
	ctx := context.Background()
	earlier := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, marked := range []*time.Time{nil, nil, &earlier} { // rows 1, 2, and 3 marked already
		_, err := db.SQL.ExecContext(ctx, `INSERT INTO cminmsgs (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_PROCESSED, CMINMSGS_STATUS) VALUES ('x', ?, 'VALID')`, marked)
		require.NoError(t, err)
	}
	markedAt := func(id int64) *time.Time {
		t.Helper()
		var at sql.NullTime
		require.NoError(t, db.SQL.QueryRowContext(ctx, `SELECT CMINMSGS_DATE_PROCESSED FROM cminmsgs WHERE CMINMSGS_ID = ?`, id).Scan(&at))
		if !at.Valid {
			return nil
		}
		return &at.Time
	}
	at := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)

	_, err := mb.MarkIf(ctx, []int64{1, 2}, at, "", func(context.Context, []int64) ([]int64, error) {
		return nil, errors.New("database is down")
	})
	require.ErrorContains(t, err, "check the rows to mark: database is down")
	require.Nil(t, markedAt(1), "a failed guard wrote a marker")

	var asked []int64
	n, err := mb.MarkIf(ctx, []int64{1, 2, 3, 4}, at, "DONE", func(_ context.Context, unmarked []int64) ([]int64, error) {
		asked = unmarked
		return []int64{1, 3}, nil // 3 is not the guard's to allow: it was not asked
	})
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	require.Equal(t, []int64{1, 2}, asked, "the guard is asked about the unmarked rows that exist")
	require.Equal(t, at, *markedAt(1))
	require.Nil(t, markedAt(2), "a row the guard left out was written")
	require.Equal(t, earlier, *markedAt(3), "a marker was overwritten")
	var status string
	require.NoError(t, db.SQL.QueryRowContext(ctx, `SELECT CMINMSGS_STATUS FROM cminmsgs WHERE CMINMSGS_ID = 1`).Scan(&status))
	require.Equal(t, "DONE", status)
}
