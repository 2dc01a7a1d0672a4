package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
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
	requireNoDuplicateLogKeys(t, o.logDir)

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

// requireNoDuplicateLogKeys: no JSON log line any binary wrote into dir has a key twice in one
// object (zerolog writes every field it is given, so a sub-logger repeating its parent's key
// makes two).
func requireNoDuplicateLogKeys(t *testing.T, dir string) {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	require.NoError(t, err)
	require.NotEmpty(t, logs)
	lines := 0
	for _, path := range logs {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		for n, line := range bytes.Split(b, []byte("\n")) {
			if !bytes.HasPrefix(line, []byte("{")) {
				continue
			}
			lines++
			dups, err := duplicateKeys(line)
			require.NoError(t, err, "%s:%d: %s", path, n+1, line)
			require.Empty(t, dups, "%s:%d: duplicate keys in %s", path, n+1, line)
		}
	}
	require.Positive(t, lines, "the binaries logged JSON lines")
}

// duplicateKeys lists the keys that occur twice in one object of the JSON value in b.
func duplicateKeys(b []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	var dups []string
	var walk func() error
	walk = func() error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key := k.(string)
				if seen[key] {
					dups = append(dups, key)
				}
				seen[key] = true
				if err := walk(); err != nil {
					return err
				}
			}
			_, err = dec.Token() // '}'
			return err
		case json.Delim('['):
			for dec.More() {
				if err := walk(); err != nil {
					return err
				}
			}
			_, err = dec.Token() // ']'
			return err
		}
		return nil
	}
	return dups, walk()
}

func TestDuplicateKeys(t *testing.T) {
	t.Parallel()
	dups, err := duplicateKeys([]byte(`{"component":"processor","a":{"b":1,"b":2},"component":"requests","l":[{"x":1,"x":1}]}`))
	require.NoError(t, err)
	require.Equal(t, []string{"b", "component", "x"}, dups)
	dups, err = duplicateKeys([]byte(`{"component":"processor","part":"requests"}`))
	require.NoError(t, err)
	require.Empty(t, dups)
}
