package daemon

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
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

// SmallHeapGCPercent is the garbage collector's target (GOGC) of the binaries whose live heap is
// a few MB (ingest, the dispatcher) when GOGC is not set. With the default, 100, a collection
// runs each time the heap has grown by its live size: every few MB allocated. At 400 the heap
// grows to five times its live size first, still bounded by the memory limit (LimitMemory). Not
// the processor's: its live heap is several times larger and the memory limit already sets its
// pace in a drain.
const SmallHeapGCPercent = 400

// CollectLess sets the garbage collector's target to SmallHeapGCPercent unless GOGC is set
// (LogStart logs the target in force).
func CollectLess() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(SmallHeapGCPercent)
	}
}

// MemoryLimit is the Go runtime's soft memory limit in force (math.MaxInt64: none).
func MemoryLimit() int64 { return debug.SetMemoryLimit(-1) }

// gcPercent is the garbage collector's target in force (GOGC; -1: off).
func gcPercent() int64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64()) // off reads as the largest uint64: -1
}
