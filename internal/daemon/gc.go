package daemon

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"time"
)

// The garbage collector's settings for serve (and the tray app, which
// runs it). Most of a tool call's garbage is the go-sdk's: every JSON
// decode of a message allocates a 32 KiB read buffer, several per call
// (docs/BENCHMARKS.md, issue 27). Collecting a quarter as often as Go's
// default (GOGC 300) makes a call cheaper, but lets the heap grow to four
// times what is live; a memory limit holds it. A fixed limit would make
// the collector run almost without pause once the live heap came near it
// (many workspaces, many gateway servers: a 16 MiB limit already doubled
// a call's CPU in make bench), so the limit follows the live heap: never
// below memoryFloor, and liveHeadroom times what is live plus the
// runtime's memory outside the heap (goroutine stacks, its own
// structures), which the limit counts too but collecting does not shrink.
const (
	gcPercent    = 300
	memoryFloor  = 24 << 20
	liveHeadroom = 4
	// memoryEvery is how often the limit is moved after the live heap.
	memoryEvery = 2 * time.Second
)

// serveProcs is how many threads run the core's Go code at once
// (GOMAXPROCS) once it has started. A tool call passes from goroutine to
// goroutine several times in the go-sdk (the HTTP handler, the session's
// reader, the handler, back); with more than one P each hand-over may wake
// another thread, which on a busy or virtual machine is the slowest step
// of a call. The core's work is short and waits on I/O (git and the
// agents run in processes of their own), so one P is enough: on the
// bench's 2 cores it cut a status call's CPU by 14-28 %, one session's
// p99 from 1.4-2.8 ms to 1.0-1.8 ms per round, and the RSS under load by
// 5 MB (docs/BENCHMARKS.md, issue 27).
// A goroutine that runs long is still preempted every 10 ms. Start-up
// keeps every core until settleAfter after the projects are loaded: there
// the tool schemas, the tray's D-Bus menu, the agents' supervision and
// the status cache's first reads overlap, and on one P the tray was ready
// 70-100 ms later (45 ms later when one P began as soon as the projects
// were loaded).
const (
	serveProcs  = 1
	settleAfter = 2 * time.Second
)

// settleProcs runs the core's Go code on serveProcs Ps from now on, unless
// the environment sets GOMAXPROCS: called once start-up is done.
func settleProcs(getenv func(string) string) {
	if getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(serveProcs)
	}
}

// tuneGC sets GOGC unless the environment sets it, and the memory limit,
// following the live heap until ctx ends, unless the environment sets
// GOMEMLIMIT.
func tuneGC(ctx context.Context, getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(memoryFloor)
	go followLiveHeap(ctx)
}

// memoryLimitFor is the memory limit for a live heap of live bytes and
// other bytes of the runtime's memory outside the heap.
func memoryLimitFor(live, other uint64) int64 {
	return max(memoryFloor, int64(min(live, 1<<40))*liveHeadroom+int64(min(other, 1<<40)))
}

// heapClasses are the metrics of the runtime's memory that are the heap's.
var heapClasses = []string{"/memory/classes/heap/objects:bytes", "/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes", "/memory/classes/heap/released:bytes"}

// followLiveHeap moves the memory limit after the live heap (as the last
// collection found it) until ctx ends.
func followLiveHeap(ctx context.Context) {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/total:bytes"}}
	for _, name := range heapClasses {
		sample = append(sample, metrics.Sample{Name: name})
	}
	tick := time.NewTicker(memoryEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		metrics.Read(sample)
		if slices.ContainsFunc(sample, func(s metrics.Sample) bool { return s.Value.Kind() != metrics.KindUint64 }) {
			continue
		}
		other := sample[1].Value.Uint64()
		for _, s := range sample[2:] {
			other -= min(other, s.Value.Uint64())
		}
		debug.SetMemoryLimit(memoryLimitFor(sample[0].Value.Uint64(), other))
	}
}
