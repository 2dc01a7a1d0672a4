package main

import (
	"bytes"
	"context"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/stack"
	"github.com/msgx/msgx/pkg/dev/stack/stacktest"
)

// TestDemoFailsOnOneDifferentFlight runs the demo on a small day in its own databases and roles,
// changes one field of one flight in PostgreSQL after the pipeline drained and before the
// summary, and requires the demo to fail (main exits 1 on any error of demo) with the flight,
// the field and both values printed. Then the hints it printed are run as printed, after the
// demo stopped everything: msgxctl status and replay --dry-run, as the roles the hints name.
func TestDemoFailsOnOneDifferentFlight(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	root, err := stack.Root()
	require.NoError(t, err)
	binDir := t.TempDir()
	require.NoError(t, stack.Build(ctx, binDir))

	d, prefix := stacktest.Scratch(t, "demo")
	o := options{flights: 20, rate: 400, seed: 7, bad: 0.05,
		pgServer: d.PGServer, mysqlServer: d.MySQLServer, pgDB: d.PGDatabase, mailDB: d.MySQLDB, rolePrefix: prefix,
		root: root, binDir: binDir, prebuilt: true, logDir: t.TempDir()}

	var changed int64
	o.beforeSummary = func(ctx context.Context, pool *pgxpool.Pool) error {
		return pool.QueryRow(ctx, `UPDATE flight SET stnd = 'Z99'
			WHERE flid = (SELECT min(flid) FROM flight WHERE state = 'ACTIVE') RETURNING flid`).Scan(&changed)
	}
	var out bytes.Buffer
	err = demo(ctx, o, &out)
	text := out.String()
	require.ErrorIs(t, err, errMismatch, text)
	require.NotZero(t, changed)
	require.Regexp(t, `flights = model +\d+ flights compared .*: MISMATCH`, text)
	require.Contains(t, text, "FLID "+strconv.FormatInt(changed, 10)+` stnd: want `, "the flight and the field")
	require.Contains(t, text, `got "Z99"`, "the stored value")
	require.Contains(t, text, "verdict                    MISMATCH")
	// Only the injected difference (and the state topic, which carries the true state) differ.
	require.Regexp(t, `intended outcomes .*: ok`, text)
	require.Regexp(t, `database sessions +every binary's PostgreSQL session as its own role t_\w+_<binary>: ok; mailbox accounts connected: .*t_\w+_ingest`, text)
	require.Regexp(t, `msgx.flight.changes \d+ events \(expected \d+: .*\): ok`, text)

	// The hints, run as printed after the demo ended (nothing of it runs any more).
	// The early update is the one replayable case: every hint shows something.
	early := regexp.MustCompile(`(?m)^early update +msg_id (\d+): a stand change for FLID (\d+), .*: SKIPPED no-match:\S+$`).FindStringSubmatch(text)
	require.NotNil(t, early, text)
	for _, cmd := range []string{"status", "show " + early[1], "replay --dry-run --ids " + early[1]} {
		m := regexp.MustCompile(`(?m)^  (MSGX_PG_URL='[^']+' \S+/msgxctl ` + regexp.QuoteMeta(cmd) + `)$`).FindStringSubmatch(text)
		require.NotNil(t, m, "a hint runs msgxctl %s:\n%s", cmd, text)
		require.Contains(t, m[1], "/"+o.pgDB+"?", "the hint names the demo's database")
		sh := exec.CommandContext(ctx, "sh", "-c", m[1])
		sh.Dir = root
		sh.Env = stack.CleanEnv() // the hint's own settings decide
		got, err := sh.CombinedOutput()
		require.NoError(t, err, "%s:\n%s", m[1], got)
		require.NotEmpty(t, got)
		switch {
		case cmd == "status":
			require.Regexp(t, `(?i)watermark`, string(got))
		case strings.HasPrefix(cmd, "show"):
			require.Contains(t, string(got), "no-match:")
		default:
			require.Contains(t, string(got), "would requeue 1", "the replay hint finds the early update")
		}
	}
}
