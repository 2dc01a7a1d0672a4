package rehearse_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/deploy/k8s/rehearse"
	"github.com/msgx/msgx/pkg/dev/simulate"
	"github.com/msgx/msgx/pkg/dev/stack"
	"github.com/msgx/msgx/pkg/dev/verify"
	"github.com/msgx/msgx/pkg/kafka"
)

// traffic writes a simulated airport day into the mailbox as the AODB does (a simulated AODB
// answers msgx's requests) while every process is replaced as a rollout replaces it (restart), waits until
// the pipeline has drained it and runs the demo's checks: every flight equals the model, every
// message its outcome and marker, both topics read by a read_committed consumer over TLS as the
// read-only principal.
func (r *rehearsal) traffic() {
	t, ctx := r.t, r.ctx
	cfg := simulate.DefaultConfig()
	cfg.Seed, cfg.Flights, cfg.Additions = 41, r.form.flights, max(1, r.form.flights/50)
	day := simulate.Generate(cfg.Today())
	consumer, err := stack.ConsumeWith(r.readerConfig(), []string{topicChanges, topicState}, func(stack.Record) {})
	require.NoError(t, err)
	t.Cleanup(func() { _ = consumer.Close() })

	adminDSN := r.srv.my.DSN(r.srv.my.User, r.srv.my.Password, r.srv.mailbox.Name)
	aodb, err := simulate.StartAODB(adminDSN, day.AODBModel(), simulate.AODBConfig{}, 200*time.Millisecond)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, aodb.Stop()) })
	w, err := simulate.NewWriter(r.srv.mailbox.SQL, simulate.WriterConfig{
		Conns: 4, Pace: simulate.PaceSteady, Rate: r.form.rate, HoldShare: 0.05, RollbackShare: r.form.rollback, Seed: 41,
	})
	require.NoError(t, err)
	started := time.Now()
	type result struct {
		w   simulate.Written
		err error
	}
	done := make(chan result, 1)
	go func() {
		wr, err := w.Write(ctx, day.Messages)
		done <- result{wr, err}
	}()
	r.restart()
	res := <-done
	require.NoError(t, res.err)
	written := res.w

	pool, err := pgxpool.New(ctx, r.srv.pg.URL("postgres", r.srv.pg.Password, "msgx"))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, err = stack.WaitDrained(ctx, pool, slices.Max(written.IDs), 200*time.Millisecond, 3*time.Second, 5*time.Minute)
	require.NoError(t, err, "the pipeline did not drain the day")
	extra, err := verify.Answers(ctx, r.srv.mailbox.SQL, written)
	require.NoError(t, err)
	rep, err := verify.Day(ctx, verify.Input{Pool: pool, Mailbox: r.srv.mailbox.SQL, Day: day, Written: written,
		Extra: extra, Records: consumer.Records, Wait: time.Minute})
	require.NoError(t, err)
	require.True(t, rep.OK(), "the demo's checks failed:\n%s", strings.Join(rep.Failed(3), "\n"))
	t.Logf("traffic: %s; %d messages (%d answers of the AODB) drained in %s; %d flights equal the model, %d lost, %d duplicate records",
		day.Summary(), len(written.IDs), len(extra), time.Since(started).Round(time.Millisecond), rep.Flights, rep.Lost, rep.Duplicates)
	r.flid = firstFLID(t, ctx, pool)
}

func firstFLID(t *testing.T, ctx context.Context, pool *pgxpool.Pool) int64 {
	t.Helper()
	var flid int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT min(flid) FROM flight`).Scan(&flid))
	return flid
}

// readerConfig reaches the brokers as the read-only principal, over TLS with SCRAM-SHA-512.
func (r *rehearsal) readerConfig() kafka.Config {
	return kafka.Config{Brokers: r.srv.kafka.Addrs(), TLS: true, TLSCAFile: r.srv.ca.CAFile,
		SASLMechanism: "SCRAM-SHA-512", SASLUser: r.srv.reader.User, SASLPassword: r.srv.reader.Password}
}

// operate is install step 8 and an operator's first look: msgxctl status and kafka verify as
// deploy/k8s/msgxctl.sh runs them, a console login with a token, the read API with a token.
func (r *rehearsal) operate() {
	t := r.t
	status := r.msgxctl("status")
	for _, role := range []string{"ingest", "processor", "dispatcher", "jobs"} {
		require.Regexp(t, `leader `+role+`\s+epoch`, status, "msgxctl status names the %s leader", role)
	}
	verified := r.msgxctl("kafka", "verify")
	t.Logf("msgxctl kafka verify:\n%s", verified)

	// The console behind a TLS-terminating proxy, as the ingress runs it (its session cookies
	// are Secure: a browser sends them over HTTPS only): log in with the operator's token, then
	// the pipeline page.
	backend, err := url.Parse("http://" + r.proc("msgx-console").getenv("MSGX_CONSOLE_ADDR"))
	require.NoError(t, err)
	ingress := httptest.NewTLSServer(httputil.NewSingleHostReverseProxy(backend))
	defer ingress.Close()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	cl := ingress.Client()
	cl.Jar, cl.Timeout = jar, 10*time.Second
	req, err := http.NewRequest(http.MethodPost, ingress.URL+"/login", strings.NewReader(url.Values{"token": {r.tokens["rehearsal-operator"]}, "next": {"/"}}.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", ingress.URL)
	resp, err := cl.Do(req)
	require.NoError(t, err)
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "console login, then the pipeline page: %s", page)
	require.Contains(t, string(page), "rehearsal-operator", "the page names who is logged in")

	// The read API: one flight with the API client's token.
	api := "http://" + r.proc("msgx-ingest").getenv("MSGX_API_ADDR")
	req, err = http.NewRequest(http.MethodGet, fmt.Sprintf("%s/flights/%d", api, r.flid), nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+r.tokens["rehearsal-api"])
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "read API: %s", body)
	var fl struct {
		FLID int64 `json:"flid"`
	}
	require.NoError(t, json.Unmarshal(body, &fl), "%s", body)
	require.Equal(t, r.flid, fl.FLID)
	t.Logf("console login over HTTPS (a TLS-terminating proxy) and the pipeline page: 200; read API GET /flights/%d: 200", r.flid)
}

// msgxctl runs msgxctl as deploy/k8s/msgxctl.sh runs it in the cluster: the shared ConfigMap,
// the jobs Deployment's mounts, MSGX_PG_URL of msgx-pg-reader (status, show) or msgx-pg-admin,
// and for the kafka commands the read-only principal of msgx-kafka-reader with the dispatcher's
// SASL mechanism.
func (r *rehearsal) msgxctl(args ...string) string {
	t := r.t
	jobs := r.container("msgx-jobs", "jobs")
	pgSecret := "msgx-pg-admin"
	if args[0] == "status" || args[0] == "show" {
		pgSecret = "msgx-pg-reader"
	}
	c := rehearse.Container{Workload: "msgxctl.sh", Name: "msgxctl", Mounts: jobs.Mounts, Env: []rehearse.Var{
		{FromConfigMap: configMap(t, r.rel)},
		{Name: "MSGX_PG_URL", FromSecret: pgSecret, Key: "url"},
	}}
	mech := ""
	for _, v := range r.container("msgx-dispatcher", "dispatcher").Env {
		if v.Name == "MSGX_KAFKA_SASL_MECHANISM" {
			mech = v.Value
		}
	}
	if args[0] == "kafka" && mech != "" {
		c.Env = append(c.Env, rehearse.Var{Name: "MSGX_KAFKA_SASL_MECHANISM", Value: mech},
			rehearse.Var{Name: "MSGX_KAFKA_SASL_USER", FromSecret: "msgx-kafka-reader", Key: "sasl-user"},
			rehearse.Var{Name: "MSGX_KAFKA_SASL_PASSWORD", FromSecret: "msgx-kafka-reader", Key: "sasl-password"})
	}
	env := r.environ(c, nil)
	if r.toolShim != nil {
		env = r.toolShim(env)
	}
	return run(t, "msgxctl.sh "+strings.Join(args, " "), append([]string{r.binDir + "/msgxctl"}, args...), env)
}
