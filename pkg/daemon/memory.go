package daemon

import (
	"os"
	"runtime/debug"
)

// DefaultMemoryLimit is the Go runtime's soft memory limit of a binary started without
// GOMEMLIMIT: the garbage collector works harder near it, so that a binary's resident memory
// stays under 64 MB (the limit counts the runtime's memory, not the binary's code pages). It
// changes the collector's pacing only when the heap nears it (its cost: docs/benchmarks.md); a
// deployment that gives a binary more memory says so with GOMEMLIMIT (deploy/k8s sets it to the container's memory limit).
const DefaultMemoryLimit = 52 << 20

// LimitMemory applies DefaultMemoryLimit unless GOMEMLIMIT is set (LogStart logs the limit in
// force).
func LimitMemory() {
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(DefaultMemoryLimit)
	}
}
