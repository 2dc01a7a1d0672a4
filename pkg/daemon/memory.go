package daemon

import (
	"os"
	"runtime/debug"
)

// DefaultMemoryLimit is the Go runtime's soft memory limit of a binary started without
// GOMEMLIMIT: the garbage collector works harder near it, so that a binary's resident memory
// stays under 64 MB. The limit counts the runtime's memory, not the pages of the binary's code
// and of libc it touches (the processor: about 15 MB), so it leaves room for them. It
// changes the collector's pacing only while the heap is near it (its cost: docs/decisions.md); a
// deployment that gives a binary more memory says so with GOMEMLIMIT (deploy/k8s sets it to the container's memory limit).
const DefaultMemoryLimit = 44 << 20

// LimitMemory applies DefaultMemoryLimit unless GOMEMLIMIT is set (LogStart logs the limit in
// force).
func LimitMemory() {
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(DefaultMemoryLimit)
	}
}
