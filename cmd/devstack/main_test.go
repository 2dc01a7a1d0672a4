package main

import (
	"context"
	"database/sql"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/stack"
	"github.com/msgx/msgx/pkg/dev/stack/stacktest"
	"github.com/msgx/msgx/pkg/roles"
)

// TestDevstackRunsEachBinaryAsItsRole brings the local stack up on its own databases, roles and
// ports, and checks what `make up` promises: every binary's PostgreSQL sessions are its own
// role's, ingest's mailbox session its own user's, the read API refuses a request without the
// printed token and answers one with it, and the printed msgxctl status line works as printed.
func TestDevstackRunsEachBinaryAsItsRole(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	binDir := t.TempDir()
	require.NoError(t, stack.Build(ctx, binDir))

	d, prefix := stacktest.Scratch(t, "devstack")
	o := options{fresh: true, pgServer: d.PGServer, mysqlServer: d.MySQLServer, pgDB: d.PGDatabase, mailDB: d.MySQLDB,
		rolePrefix: prefix, restartDelay: time.Second, binDir: binDir, prebuilt: true, randomPorts: true,
		logDir: t.TempDir(), dataDir: t.TempDir()}

	up := make(chan *stack.Stack, 1)
	o.up = func(s *stack.Stack) { up <- s }
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	out, err := os.CreateTemp(t.TempDir(), "out") // the supervisor writes from its own goroutines
	require.NoError(t, err)
	defer out.Close()
	output := func() string {
		b, err := os.ReadFile(out.Name())
		require.NoError(t, err)
		return string(b)
	}
	done := make(chan error, 1)
	go func() { done <- devstack(runCtx, o, out) }()
	var s *stack.Stack
	select {
	case s = <-up:
	case err := <-done:
		t.Fatalf("devstack ended before it was up: %v\n%s", err, output())
	case <-ctx.Done():
		t.Fatalf("devstack not up:\n%s", output())
	}
	text := output()

	// Every binary's pools (its main pool, the leader session, ingest's API pool) as its role.
	conn, err := pgx.Connect(ctx, o.pgServer+"/"+o.pgDB+"?sslmode=disable")
	require.NoError(t, err)
	defer conn.Close(context.Background())
	sessions := map[string]string{}
	require.Eventually(t, func() bool {
		rows, err := conn.Query(ctx, `SELECT DISTINCT application_name, usename::text FROM pg_stat_activity
			WHERE datname = current_database() AND application_name LIKE 'msgx-%'`)
		require.NoError(t, err)
		var app, user string
		_, err = pgx.ForEachRow(rows, []any{&app, &user}, func() error { sessions[app] = user; return nil })
		require.NoError(t, err)
		return len(sessions) >= 2*len(stack.Binaries)
	}, time.Minute, 200*time.Millisecond, "every binary and its leader session connected")
	for app, user := range sessions {
		bin, _, _ := strings.Cut(strings.TrimPrefix(app, "msgx-"), "-")
		require.Equal(t, roles.Name(o.rolePrefix, roles.Role(bin)), user, "%s's session", app)
	}
	my, err := sql.Open("mysql", o.mysqlServer+o.mailDB)
	require.NoError(t, err)
	defer my.Close()
	var ingestUser string
	require.NoError(t, my.QueryRowContext(ctx, `SELECT USER FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND USER LIKE ? LIMIT 1`,
		o.rolePrefix+"ingest").Scan(&ingestUser))

	// The API: the printed token opens it, nothing else does.
	token := regexp.MustCompile(`export MSGX_TOKEN=(\S+)`).FindStringSubmatch(text)
	require.NotNil(t, token, text)
	api := "http://" + s.Proc("ingest").APIAddr + "/flights/1"
	require.Contains(t, text, "curl -H \"Authorization: Bearer $MSGX_TOKEN\" "+api[:len(api)-1], "the read API line names ingest's API address")
	get := func(auth string) int {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, api, nil)
		require.NoError(t, err)
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusUnauthorized, get(""))
	require.Equal(t, http.StatusNotFound, get(token[1]), "authorised; flight 1 does not exist")

	// The console: the printed URL and token log in (a session cookie, a redirect to the
	// pipeline), and its PostgreSQL sessions are the console role's.
	cm := regexp.MustCompile(`(?m)^  console +(http://\S+/login) +log in with the token (\S+)`).FindStringSubmatch(text)
	require.NotNil(t, cm, text)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.PostForm(cm[1], url.Values{"token": {cm[2]}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "the printed token logs in")
	require.NotEmpty(t, resp.Cookies())
	var consoleUser string
	require.NoError(t, conn.QueryRow(ctx, `SELECT usename::text FROM pg_stat_activity WHERE datname = current_database()
		AND application_name LIKE 'msgx-console%' LIMIT 1`).Scan(&consoleUser))
	require.Equal(t, roles.Name(o.rolePrefix, roles.Console), consoleUser)

	// The status line, run as printed.
	m := regexp.MustCompile(`(?m)^  status: +(MSGX_PG_URL='[^']+' \S+/msgxctl status)`).FindStringSubmatch(text)
	require.NotNil(t, m, text)
	require.Contains(t, m[1], roles.Name(o.rolePrefix, roles.Reader)+":", "as the read-only role")
	sh := exec.CommandContext(ctx, "sh", "-c", m[1])
	sh.Env = stack.CleanEnv()
	got, err := sh.CombinedOutput()
	require.NoError(t, err, "%s:\n%s", m[1], got)
	require.Regexp(t, `(?m)^watermark +0$`, string(got))

	stop()
	require.NoError(t, <-done, output())
	require.Contains(t, output(), "devstack: stopping")
}
