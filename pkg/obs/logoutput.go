package obs

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// LogQueueLines bounds the lines a binary's LogOutput holds while its output is slow: enough
// for a burst of warnings, small enough that a stuck output costs little memory.
const LogQueueLines = 4096

// LogFlushTimeout bounds how long a binary waits at exit for its queued log lines to be written.
const LogFlushTimeout = 5 * time.Second

// LogOutput is a binary's log output (stderr) behind a bounded queue, so that logging never
// blocks the work: Write copies the line into the queue and returns at once, one goroutine
// writes the queue to the output in order, and a line that finds the queue full is dropped and
// counted (msgx_log_lines_dropped_total) instead of waiting. Close writes what is queued, so
// that a normal exit loses no line. Safe for concurrent use; one Write is one line (zerolog
// writes each event with a single Write).
type LogOutput struct {
	out     io.Writer
	queue   chan []byte
	dropped prometheus.Counter
	done    chan struct{} // closed when the writer goroutine has written everything and ended

	mu     sync.RWMutex // held for reading by Write, for writing by Close
	closed bool
}

// NewLogOutput starts the goroutine that writes to out and returns the output; lines bounds
// the queue (LogQueueLines for a binary). Close ends it.
func NewLogOutput(out io.Writer, lines int) *LogOutput {
	o := &LogOutput{
		out:   out,
		queue: make(chan []byte, max(lines, 1)),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "msgx_log_lines_dropped_total",
			Help: "Log lines dropped because the log output (stderr) did not take them as fast as they came; logging never waits for it.",
		}),
		done: make(chan struct{}),
	}
	go o.drain()
	return o
}

// Write queues one line, or drops and counts it when the queue is full or the output closed.
// It never blocks on the output and never fails: a log line is not worth stopping the work.
func (o *LogOutput) Write(p []byte) (int, error) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	if o.closed {
		o.dropped.Inc()
		return len(p), nil
	}
	select {
	case o.queue <- append([]byte(nil), p...): // the caller reuses p once Write returns
	default:
		o.dropped.Inc()
	}
	return len(p), nil
}

// drain writes the queued lines to the output until Close has closed the queue and it is empty.
// A failed write is dropped and counted too: there is nowhere else to report it.
func (o *LogOutput) drain() {
	defer close(o.done)
	for line := range o.queue {
		if _, err := o.out.Write(line); err != nil {
			o.dropped.Inc()
		}
	}
}

// Dropped is the counter msgx_log_lines_dropped_total, to register on the binary's registry.
func (o *LogOutput) Dropped() prometheus.Collector { return o.dropped }

// Close stops taking lines (later ones are dropped and counted) and waits until the queued
// lines are written, or until ctx ends: an output that blocks for good must not hold the exit.
// Closing again only waits again.
func (o *LogOutput) Close(ctx context.Context) error {
	o.mu.Lock()
	if !o.closed {
		o.closed = true
		close(o.queue)
	}
	o.mu.Unlock()
	select {
	case <-o.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("flush the log output: %d lines not written: %w", len(o.queue), ctx.Err())
	}
}

// CloseWithin is Close bounded by timeout (LogFlushTimeout at a binary's exit).
func (o *LogOutput) CloseWithin(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return o.Close(ctx)
}
