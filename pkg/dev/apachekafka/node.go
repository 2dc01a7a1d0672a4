package apachekafka

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// StopTimeout bounds a graceful stop (SIGTERM): a broker that has not exited by then is killed.
const StopTimeout = time.Minute

// Node is one Apache Kafka process, broker and controller in one, on 127.0.0.1. Its data
// directory and ports stay the same across Stop, Kill and Restart.
type Node struct {
	ID      int32
	dir     string
	ports   ports
	java    []string // the command line that starts it
	cluster *Cluster

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{} // closed when the process has exited
	frozen bool
}

// Addr is the client listener's address (host:port).
func (n *Node) Addr() string { return "127.0.0.1:" + strconv.Itoa(n.ports.client) }

// Dir is the node's directory: server.properties, data/ and server.log.
func (n *Node) Dir() string { return n.dir }

// LogFile is the node's log: the broker's log4j output and anything the JVM prints, appended
// across restarts.
func (n *Node) LogFile() string { return filepath.Join(n.dir, "server.log") }

// Running reports whether the process is alive (frozen counts as alive).
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.aliveLocked()
}

// Frozen reports whether the process is stopped by SIGSTOP.
func (n *Node) Frozen() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.aliveLocked() && n.frozen
}

func (n *Node) aliveLocked() bool {
	if n.cmd == nil {
		return false
	}
	select {
	case <-n.done:
		return false
	default:
		return true
	}
}

// Pid is the JVM's process id (0 when it is not running).
func (n *Node) Pid() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.aliveLocked() {
		return 0
	}
	return n.cmd.Process.Pid
}

// PeakRSS is the most resident memory the running JVM has had, in bytes (VmHWM).
func (n *Node) PeakRSS() (int64, error) {
	pid := n.Pid()
	if pid == 0 {
		return 0, fmt.Errorf("node %d is not running", n.ID)
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("node %d status: %w", n.ID, err)
	}
	for line := range strings.Lines(string(data)) {
		if kb, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			v, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(kb), " kB"), 10, 64)
			return v << 10, err
		}
	}
	return 0, fmt.Errorf("node %d status: no VmHWM", n.ID)
}

// start launches the JVM, its output appended to the log file. The JVM gets SIGKILL if this
// process dies first (Pdeathsig), so a killed test leaves no broker behind. (Linux sends it when
// the forking thread ends; the Go runtime ends a thread only under a goroutine that locked it
// and exited, which this package never does.)
func (n *Node) start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.aliveLocked() {
		return fmt.Errorf("node %d is already running", n.ID)
	}
	out, err := os.OpenFile(n.LogFile(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("node %d log: %w", n.ID, err)
	}
	defer out.Close() // the child has its own copy
	cmd := exec.Command(n.java[0], n.java[1:]...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = n.dir, out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start node %d: %w", n.ID, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait() // the exit status is read from cmd.ProcessState
		close(done)
	}()
	n.cmd, n.done, n.frozen = cmd, done, false
	return nil
}

// exited returns the channel closed when the current process exits and whether there is one.
func (n *Node) exited() (<-chan struct{}, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return nil, false
	}
	return n.done, true
}

// signal sends sig to the running process; false when there is none.
func (n *Node) signal(sig syscall.Signal) (bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.aliveLocked() {
		return false, nil
	}
	if err := n.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return true, fmt.Errorf("node %d: %s: %w", n.ID, sig, err)
	}
	switch sig {
	case syscall.SIGSTOP:
		n.frozen = true
	case syscall.SIGCONT:
		n.frozen = false
	}
	return true, nil
}

// Kill ends the process with SIGKILL, as a crash would, and waits until it is gone. No-op when
// it is not running.
func (n *Node) Kill() error {
	alive, err := n.signal(syscall.SIGKILL)
	if err != nil || !alive {
		return err
	}
	done, _ := n.exited()
	<-done
	return nil
}

// Stop asks the broker to shut down (SIGTERM, a controlled shutdown that hands its partitions
// over) and waits for it to exit; after StopTimeout or when ctx ends it is killed and Stop
// reports that. No-op when it is not running. A frozen node is thawed so it can shut down.
func (n *Node) Stop(ctx context.Context) error {
	alive, err := n.signal(syscall.SIGTERM)
	if err != nil || !alive {
		return err
	}
	if _, err := n.signal(syscall.SIGCONT); err != nil {
		return err
	}
	done, _ := n.exited()
	timer := time.NewTimer(StopTimeout)
	defer timer.Stop()
	select {
	case <-done:
		return nil
	case <-timer.C:
	case <-ctx.Done():
	}
	if err := n.Kill(); err != nil {
		return err
	}
	return fmt.Errorf("node %d did not stop on SIGTERM; killed it", n.ID)
}

// Restart starts the node again on the same data and ports, stopping it first if it runs, and
// waits until it serves clients again and the quorum has a leader.
func (n *Node) Restart(ctx context.Context) error {
	if err := n.Stop(ctx); err != nil {
		return err
	}
	if err := n.start(); err != nil {
		return err
	}
	return n.cluster.waitReady(ctx, n)
}

// Freeze stops the process with SIGSTOP: it holds its sockets and answers nothing, like a
// paused VM or a long GC pause.
func (n *Node) Freeze() error {
	alive, err := n.signal(syscall.SIGSTOP)
	if err == nil && !alive {
		err = fmt.Errorf("node %d is not running", n.ID)
	}
	return err
}

// Thaw resumes a frozen process (SIGCONT).
func (n *Node) Thaw() error {
	alive, err := n.signal(syscall.SIGCONT)
	if err == nil && !alive {
		err = fmt.Errorf("node %d is not running", n.ID)
	}
	return err
}

// exitError describes a process that has exited, for errors while waiting for it.
func (n *Node) exitError() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return fmt.Errorf("node %d exited (%s); log tail:\n%s", n.ID, n.cmd.ProcessState, n.tail(40))
}

// tail returns the last lines of the node's log.
func (n *Node) tail(lines int) string {
	data, err := os.ReadFile(n.LogFile())
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}
