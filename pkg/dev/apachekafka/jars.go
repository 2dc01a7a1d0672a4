package apachekafka

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// EnsureScript is the script that puts the broker's jars on the machine, relative to the
// repository root.
const EnsureScript = "scripts/ensure-kafka.sh"

var jars struct {
	mu  sync.Mutex
	lib string
}

// Jars returns the directory holding the pinned Apache Kafka's jars: scripts/ensure-kafka.sh runs
// once per process (it resolves them from Maven Central on first use, into a cache outside the
// clone that MSGX_KAFKA_HOME overrides, and checks their SHA-256 sums). A failed run is tried
// again by the next call.
func Jars(ctx context.Context) (string, error) {
	jars.mu.Lock()
	defer jars.mu.Unlock()
	if jars.lib != "" {
		return jars.lib, nil
	}
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "..", filepath.FromSlash(EnsureScript))
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s: %w: %s", EnsureScript, err, strings.TrimSpace(stderr.String()))
	}
	lib := strings.TrimSpace(stdout.String())
	if lib == "" {
		return "", fmt.Errorf("%s printed no directory", EnsureScript)
	}
	jars.lib = lib
	return lib, nil
}
