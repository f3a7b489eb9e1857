package sdk

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// A plugin process holds little live memory — a few MiB — so with the
// runtime's default GOGC of 100 its heap goal sits at the 4 MiB minimum and
// it collects garbage every few dozen requests of a realistic read, each
// cycle costing milliseconds of CPU across its goroutines; the host, whose
// live heap is larger, collects far less often for the same work. Serve
// therefore keeps the plugin's heap goal near gcFloorBytes: after every
// cycle it sets the GC percentage that puts the next goal there, and
// leaves it at 100 once the live heap is large enough to reach it anyway.
// A plugin started with GOGC set keeps what it was given; a low
// GOMEMLIMIT lowers the floor, and the memory limit still applies.
const gcFloorBytes = 32 << 20

// heapMinimum is the runtime's smallest heap goal at a GC percentage of
// 100; it scales with the percentage.
const heapMinimum = 4 << 20

// gcFloorFor is the heap goal a plugin keeps with memLimit as its
// GOMEMLIMIT: gcFloorBytes, or a quarter of a lower limit; 0 when the
// floor is not worth keeping.
func gcFloorFor(memLimit int64) uint64 {
	floor := uint64(gcFloorBytes)
	if memLimit > 0 && memLimit < math.MaxInt64 {
		floor = min(floor, uint64(memLimit)/4)
	}
	if floor <= 2*heapMinimum {
		return 0
	}
	return floor
}

// gcPercentFor is the GC percentage that puts the heap goal of a process
// with live bytes of live heap at floor: never below the default 100, and
// never so high that the runtime's heap minimum, which grows with it,
// passes the floor.
func gcPercentFor(live, floor uint64) int {
	most := int(floor * 100 / heapMinimum)
	if live == 0 {
		return most
	}
	return max(100, min(most, int(floor*100/live)-100))
}

// keepGCFloor holds the heap goal near floor for the rest of the process.
func keepGCFloor(floor uint64) {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	percent := 100
	tune := func() bool {
		metrics.Read(sample)
		if p := gcPercentFor(sample[0].Value.Uint64(), floor); p != percent {
			percent = p
			debug.SetGCPercent(p)
		}
		return true
	}
	tune()
	afterEachGC(tune)
}

// afterEachGC calls fn, on the runtime's cleanup goroutine, after each
// garbage collection cycle until fn returns false.
func afterEachGC(fn func() bool) {
	sentinel := new([32]byte) // large enough to stay out of the tiny allocator
	runtime.AddCleanup(sentinel, func(fn func() bool) {
		if fn() {
			afterEachGC(fn)
		}
	}, fn)
}
