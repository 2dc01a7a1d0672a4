package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/procstate"
)

// msgxctl show lists every attempt of a message; a refused replay prints the refusal and fails
// with procstate.ErrRefused (exit 1), requeuing nothing.
func TestShowAttemptsAndRefusedReplay(t *testing.T) {
	t.Parallel()
	db, cfg := ctlDB(t, "")
	ctx := context.Background()
	at := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	_, err := db.Pool.Exec(ctx, `
		INSERT INTO proc_state (msg_id, raw, status, error_class, reason, attempts, enqueued_at, finished_at)
		VALUES (7, '<MSG>', 'DEAD', 'MALFORMED', 'not well-formed', 1, $1, $1),
		       (8, '<MSG/>', 'DEAD', 'EXHAUSTED', 'after 5 attempts: INFRA: timeout', 5, $1, $1)`, at)
	require.NoError(t, err)
	_, err = db.Pool.Exec(ctx, `INSERT INTO msg_attempt (msg_id, attempt, at, epoch, outcome, error_class, reason)
		VALUES (8, 1, $1, 3, 'FAILED', 'INFRA', 'timeout 1'), (8, 2, $1, 4, 'DEAD', 'EXHAUSTED', 'after 5 attempts: INFRA: timeout')`, at)
	require.NoError(t, err)

	var out bytes.Buffer
	require.NoError(t, showCmd(ctx, cfg, []string{"8", "--json"}, &out))
	var doc struct {
		Attempts []procstate.Attempt `json:"attempt_history"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc))
	require.Len(t, doc.Attempts, 2)
	require.Equal(t, "timeout 1", doc.Attempts[0].Reason)
	require.Equal(t, int64(4), doc.Attempts[1].Epoch)

	out.Reset()
	require.NoError(t, showCmd(ctx, cfg, []string{"8"}, &out))
	require.Contains(t, out.String(), "attempt history:\n  #1 2026-12-02T08:00:00Z epoch 3 FAILED INFRA timeout 1\n")

	out.Reset()
	err = replayCmd(ctx, cfg, []string{"--ids", "7,8", "--reason", "try", "--actor", "ops"}, &out)
	require.ErrorIs(t, err, procstate.ErrRefused)
	require.Contains(t, out.String(), "refused 7: class MALFORMED is never replayed")
	var status string
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT status FROM proc_state WHERE msg_id = 8`).Scan(&status))
	require.Equal(t, "DEAD", status, "a refused request requeues nothing")
}
