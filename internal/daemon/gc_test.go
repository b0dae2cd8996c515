package daemon

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

func TestTheMemoryLimitFollowsTheLiveHeapAboveItsFloor(t *testing.T) {
	for _, c := range []struct {
		live, other uint64
		want        int64
	}{
		{0, 0, memoryFloor},
		{5 << 20, 0, memoryFloor},
		{6 << 20, 0, memoryFloor},
		{7 << 20, 0, 28 << 20},
		{100 << 20, 0, 400 << 20},
		// Stacks and the runtime's own memory count on top.
		{5 << 20, 10 << 20, 30 << 20},
		{100 << 20, 50 << 20, 450 << 20},
	} {
		if got := memoryLimitFor(c.live, c.other); got != c.want {
			t.Errorf("live heap %d MiB, other %d MiB: limit %d MiB, want %d MiB", c.live>>20, c.other>>20, got>>20, c.want>>20)
		}
	}
}

// readGC is the current GOGC and memory limit (without changing them).
func readGC() (percent int, limit int64) {
	percent = debug.SetGCPercent(-1)
	debug.SetGCPercent(percent)
	return percent, debug.SetMemoryLimit(-1)
}

func TestTuneGCSetsBothUnlessTheEnvironmentDoes(t *testing.T) {
	percent, limit := readGC()
	t.Cleanup(func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	})
	for _, c := range []struct {
		env         map[string]string
		wantPercent int
		wantLimit   int64
	}{
		{map[string]string{}, gcPercent, memoryFloor},
		{map[string]string{"GOGC": "100"}, 77, memoryFloor},
		{map[string]string{"GOMEMLIMIT": "1GiB"}, gcPercent, 12345 << 20},
		{map[string]string{"GOGC": "100", "GOMEMLIMIT": "1GiB"}, 77, 12345 << 20},
	} {
		// What the runtime took from the environment stands for itself:
		// tuneGC must leave it as it is.
		debug.SetGCPercent(77)
		debug.SetMemoryLimit(12345 << 20)
		ctx, cancel := context.WithCancel(context.Background())
		tuneGC(ctx, func(k string) string { return c.env[k] })
		cancel()
		if p, l := readGC(); p != c.wantPercent || l != c.wantLimit {
			t.Errorf("environment %v: GOGC %d and limit %d MiB, want %d and %d MiB", c.env, p, l>>20, c.wantPercent, c.wantLimit>>20)
		}
	}
}

func TestSettleProcsSetsOnePUnlessTheEnvironmentSetsGOMAXPROCS(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(procs) })
	for _, c := range []struct {
		env  map[string]string
		want int
	}{
		{map[string]string{}, serveProcs},
		{map[string]string{"GOGC": "100"}, serveProcs},
		// What the runtime took from the environment stands.
		{map[string]string{"GOMAXPROCS": "3"}, 3},
	} {
		runtime.GOMAXPROCS(3)
		settleProcs(func(k string) string { return c.env[k] })
		if got := runtime.GOMAXPROCS(0); got != c.want {
			t.Errorf("environment %v: GOMAXPROCS %d, want %d", c.env, got, c.want)
		}
	}
}

// followLiveHeap skips a sample it cannot read: every metric it reads
// must be one this Go has.
func TestTheMemoryMetricsAreThere(t *testing.T) {
	for _, name := range append([]string{"/gc/heap/live:bytes", "/memory/classes/total:bytes"}, heapClasses...) {
		s := []metrics.Sample{{Name: name}}
		metrics.Read(s)
		if s[0].Value.Kind() != metrics.KindUint64 {
			t.Errorf("metric %s: kind %v, want a uint64", name, s[0].Value.Kind())
		}
	}
}
