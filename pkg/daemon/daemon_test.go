package daemon_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/daemon"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/envconf"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/obs"
	"github.com/msgx/msgx/pkg/settings"
)

var t0 = time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)

// wait is how long a test waits for the daemon to reach a state, and tick how often it looks.
const wait, tick = 20 * time.Second, 10 * time.Millisecond

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

type running struct {
	base string
	done chan error
}

// start runs daemon.Run for the processor role on a fresh database with the fake clock.
func start(t *testing.T, ctx context.Context, clk clock.Clock, drain time.Duration, work func(context.Context, leader.Lease) error) running {
	t.Helper()
	db := testdb.New(t)
	var cfg settings.Process
	var lc leader.Config
	envconf.Defaults(&cfg)
	envconf.Defaults(&lc)
	cfg.PGURL, cfg.HTTPAddr = db.URL, "127.0.0.1:0"
	cfg.ShutdownDrain, cfg.LivenessStall = drain, time.Minute
	lc.Retry = 100 * time.Millisecond
	require.NoError(t, cfg.Validate())
	require.NoError(t, lc.Validate())
	pool, err := daemon.OpenPool(ctx, cfg, lc, settings.RoleProcessor, zerolog.Nop())
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	addr := make(chan string, 1)
	r := running{done: make(chan error, 1)}
	go func() {
		r.done <- daemon.Run(ctx, daemon.Spec{
			Role: settings.RoleProcessor, Process: cfg, Leader: lc, Log: zerolog.Nop(), Registry: prometheus.NewRegistry(),
			Pool: pool, Work: work, Clock: clk, Started: func(s *obs.Server) { addr <- s.Addr() },
		})
	}()
	r.base = "http://" + <-addr
	return r
}

func (r running) readiness(t *testing.T) (int, map[string]any) {
	t.Helper()
	code, out, err := r.probe()
	require.NoError(t, err)
	return code, out
}

// probe reads /readyz without failing the test: require.Eventually's conditions run on another
// goroutine, where require must not be called.
func (r running) probe() (int, map[string]any, error) {
	resp, err := http.Get(r.base + "/readyz")
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var out map[string]any
	err = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out, err
}

// role is the role /readyz reports, and its status code ("" while it cannot be read).
func (r running) role() (int, string) {
	code, out, err := r.probe()
	if err != nil {
		return 0, ""
	}
	role, _ := out["role"].(string)
	return code, role
}

// TestHealthzFailsWhenTheLoopHangs: a stage loop that stops ticking (a handler that blocks)
// makes /healthz answer 503 once MSGX_LIVENESS_STALL has passed on the clock; it recovers when
// the loop ticks again.
func TestHealthzFailsWhenTheLoopHangs(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(t0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hang, resume, ticked := make(chan struct{}), make(chan struct{}), make(chan struct{}, 1)
	r := start(t, ctx, clk, 0, func(ctx context.Context, lease leader.Lease) error {
		for {
			lease.Tick("pump")
			select {
			case ticked <- struct{}{}:
			default:
			}
			select { // one iteration: a handler that blocks until told
			case <-ctx.Done():
				return nil
			case <-hang:
				select {
				case <-ctx.Done():
					return nil
				case <-resume:
				}
			case <-time.After(time.Millisecond):
			}
		}
	})
	require.Eventually(t, func() bool { _, role := r.role(); return role == "leader" }, wait, tick, "leadership")
	code, body := get(t, r.base+"/healthz")
	require.Equal(t, http.StatusOK, code, body)

	hang <- struct{}{} // the loop is now inside its blocking iteration, after its tick
	select {
	case <-ticked:
	default:
	}
	clk.Advance(59 * time.Second)
	code, body = get(t, r.base+"/healthz")
	require.Equal(t, http.StatusOK, code, "within the threshold: %s", body)
	clk.Advance(2 * time.Second)
	code, body = get(t, r.base+"/healthz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, "stage loop pump has not ticked for 1m1s")

	resume <- struct{}{}
	<-ticked
	code, body = get(t, r.base+"/healthz")
	require.Equal(t, http.StatusOK, code, body)
	cancel()
	require.NoError(t, <-r.done)
}

// TestShutdownDrainsBeforeClosing: on SIGTERM (the end of ctx) /readyz answers 503 at once and
// the stage loop stops (the lock is released: role standby), while the server keeps serving
// until MSGX_SHUTDOWN_DRAIN has passed on the clock; then Run returns and the port is closed.
func TestShutdownDrainsBeforeClosing(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(t0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan struct{})
	r := start(t, ctx, clk, 5*time.Second, func(ctx context.Context, lease leader.Lease) error {
		lease.Tick("pump")
		<-ctx.Done()
		close(stopped)
		return nil
	})
	require.Eventually(t, func() bool { code, role := r.role(); return code == http.StatusOK && role == "leader" }, wait, tick, "leadership")

	cancel()
	<-stopped // the work stops first
	require.Eventually(t, func() bool { code, _ := r.role(); return code == http.StatusServiceUnavailable }, wait, tick, "readiness to flip")
	code, out := r.readiness(t)
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, true, out["draining"])
	require.Eventually(t, func() bool { _, role := r.role(); return role == "standby" }, wait, tick, "the lock to be released")
	code, body := get(t, r.base+"/healthz")
	require.Equal(t, http.StatusOK, code, "still serving during the drain: %s", body)
	select {
	case err := <-r.done:
		t.Fatalf("Run returned before the drain period passed: %v", err)
	default:
	}

	clk.Advance(4 * time.Second)
	code, _ = get(t, r.base+"/healthz")
	require.Equal(t, http.StatusOK, code, "4s into a 5s drain")
	clk.Advance(time.Second)
	select {
	case err := <-r.done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after the drain")
	}
	_, err := net.Dial("tcp", r.base[len("http://"):])
	require.Error(t, err, "the listener is closed after the drain")
}
