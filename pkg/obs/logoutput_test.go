package obs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

// stuckWriter is an output that takes nothing until released: every Write blocks, and the first
// one says so on entered.
type stuckWriter struct {
	entered chan struct{}
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	got     bytes.Buffer
}

func newStuckWriter() *stuckWriter {
	return &stuckWriter{entered: make(chan struct{}), release: make(chan struct{})}
}

func (w *stuckWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.entered) })
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.got.Write(p)
}

func (w *stuckWriter) lines() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Split(strings.TrimSuffix(w.got.String(), "\n"), "\n")
}

// within runs f in a goroutine and fails the test unless it returns within a generous bound: a
// guard against a hang, not a performance assertion.
func within(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("logging blocked")
	}
}

// TestLoggingNeverBlocksOnAStuckOutput: while the output takes nothing, the goroutine that logs
// goes on; the lines beyond the queue are dropped and counted exactly; once the output moves,
// Close writes the queued lines in order.
func TestLoggingNeverBlocksOnAStuckOutput(t *testing.T) {
	t.Parallel()
	w := newStuckWriter()
	out := NewLogOutput(w, 8)
	log := NewLogger(out, "info", "test")

	log.Info().Int("n", 0).Msg("line")
	<-w.entered // the writer goroutine holds line 0 and is stuck in the output
	within(t, func() {
		for i := 1; i <= 8+100; i++ {
			log.Info().Int("n", i).Msg("line")
		}
	})
	require.Equal(t, 100.0, testutil.ToFloat64(out.Dropped()), "the queue holds 8 lines; the other 100 are dropped")

	close(w.release)
	require.NoError(t, out.Close(context.Background()))
	got := w.lines()
	require.Len(t, got, 9)
	for i, line := range got {
		require.Contains(t, line, fmt.Sprintf(`"n":%d,`, i))
		require.Contains(t, line, `"component":"test"`)
	}
}

// TestCloseWritesEveryQueuedLine: at exit no line is lost; lines written after Close are
// dropped and counted.
func TestCloseWritesEveryQueuedLine(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	out := NewLogOutput(&buf, 1000)
	log := NewLogger(out, "info", "test")
	for i := range 1000 {
		log.Info().Int("n", i).Msg("line")
	}
	require.NoError(t, out.Close(context.Background()))
	require.Equal(t, 1000, strings.Count(buf.String(), "\n"))
	require.Equal(t, 0.0, testutil.ToFloat64(out.Dropped()))

	log.Info().Msg("after close")
	require.Equal(t, 1.0, testutil.ToFloat64(out.Dropped()))
	require.Equal(t, 1000, strings.Count(buf.String(), "\n"))
	require.NoError(t, out.Close(context.Background()), "closing again only waits again")
}

// TestCloseGivesUpOnAStuckOutput: an output that never moves does not hold the exit.
func TestCloseGivesUpOnAStuckOutput(t *testing.T) {
	t.Parallel()
	w := newStuckWriter()
	out := NewLogOutput(w, 8)
	_, _ = out.Write([]byte("a\n"))
	_, _ = out.Write([]byte("b\n"))
	<-w.entered
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := out.Close(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.Contains(t, err.Error(), "1 lines not written")
	close(w.release)
	require.NoError(t, out.Close(context.Background()))
	require.Equal(t, []string{"a", "b"}, w.lines())
}

// helperEnv makes the test binary, run again by TestStderrPipeNobodyReads, the helper process.
const helperEnv = "MSGX_OBS_LOG_HELPER"

// TestStderrPipeNobodyReads runs a real process whose stderr is a pipe nobody reads (a stuck log
// collector): it logs far more than the pipe holds, finishes its work, counts the lines it
// dropped and exits without waiting for the pipe.
func TestStderrPipeNobodyReads(t *testing.T) {
	t.Parallel()
	if os.Getenv(helperEnv) != "" {
		t.Skip("the helper process runs TestLogHelperProcess")
	}
	r, w, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close(); _ = w.Close() })
	cmd := exec.Command(os.Args[0], "-test.run=^TestLogHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, w
	within(t, func() { require.NoError(t, cmd.Run(), stdout.String()) })

	t.Logf("helper: %s", stdout.String())
	fields := strings.Fields(stdout.String())
	require.GreaterOrEqual(t, len(fields), 3, stdout.String())
	require.Equal(t, "logged", fields[0])
	logged, err := strconv.Atoi(fields[1])
	require.NoError(t, err)
	require.Equal(t, helperLines, logged, "every line of work was done")
	dropped, err := strconv.ParseFloat(fields[2], 64)
	require.NoError(t, err)
	require.Greater(t, dropped, 0.0, "the lines the pipe could not take were counted")
}

// helperLines is what the helper logs: lines of about 300 bytes, many times a pipe's buffer.
const helperLines = 20000

// TestLogHelperProcess is the process of TestStderrPipeNobodyReads: a binary's logging set up as
// cmd/*/main.go sets it up, on its real stderr.
func TestLogHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		t.Skip("run by TestStderrPipeNobodyReads")
	}
	out := NewLogOutput(os.Stderr, LogQueueLines)
	log := NewLogger(out, "info", "helper")
	pad := strings.Repeat("x", 256)
	n := 0
	for i := range helperLines {
		log.Info().Int("n", i).Str("pad", pad).Msg("work")
		n++
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // nobody reads the pipe: the exit does not wait for it
	_ = out.Close(ctx)
	fmt.Printf("logged %d %v\n", n, testutil.ToFloat64(out.Dropped()))
}
